"""Does the monitor's prediction-powered level from user feedback cover what it claims? Coverage and
width of its 95% interval, by simulation, through the monitor's own code (`attach_feedback`).

Each repetition is one window: N answers, each with a true user verdict (thumbs: up with probability
p; ratings: 1-5) and a synthetic 1-5 judge score correlated with it (the judge's latent score is the
verdict times `signal` plus standard normal noise, cut into 1-5); feedback is logged on a random fifth
of the answers (exactly round(N / 5), drawn at random). Thumbs label `answer_relevance/pass` (the
judge's score >= 4, derived by `pass_metric` as in a monitor run), ratings label `answer_relevance`.
The level's 95% interval covers when it holds the mean verdict of the population the answers are
drawn from (p for thumbs): what `ragwatch.statistics.ppi` says it estimates.

The "not at random" rows break the level's assumption on purpose: users who were not served rate more
often (a fifth of the answers still, but 3x as likely on a down answer). No interval from the feedback
can cover there: they show what selection bias does, and are not part of the coverage claim.

Usage:
    python -m benchmarks feedback_ppi_coverage                  # ~2-4 min, 2000 repetitions per setting
    python -m benchmarks feedback_ppi_coverage --reps 500
Results: benchmarks/results/feedback_ppi_coverage.md. The simulation is `ragwatch.simulation.feedback`.
"""

from __future__ import annotations

import argparse
import sys
import time

from ragwatch.simulation.feedback import SETTINGS, coverage


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=2000, help="repetitions per setting (default 2000)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    print(f"{args.reps} repetitions per setting, seed {args.seed}; feedback on a random fifth of the judged answers; "
          "95% intervals; the scale: 0-1 for thumbs (answer_relevance/pass), 1-5 for ratings (answer_relevance)\n")
    print("| setting | answers judged | labels | truth | coverage | mean width | labels-alone width | mean lambda "
          "| raw judge mean's interval covers | feedback share's interval covers |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    worst = 1.0
    for setting in SETTINGS:
        r = coverage(setting, args.reps, args.seed)
        if setting.unhappy_click == 1.0:
            worst = min(worst, r["coverage"])
        print(f"| {setting.name} | {setting.n} | {round(setting.n / 5)} | {setting.truth:.3f} | {r['coverage']:.3f} "
              f"| {r['width']:.3f} | {r['labels_only_width']:.3f} | {r['lambda']:.2f} | {r['judge_mean_covers']:.3f} "
              f"| {r['share_covers']:.3f} |")
    print(f"\nlowest coverage where feedback is on a random fifth: {worst:.3f} (the claim: >= 0.93)")
    print(f"total {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
