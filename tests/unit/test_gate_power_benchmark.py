"""benchmarks/gate_power.py with the extractive stand-in generator: every planted regression the
38 questions can show is blocked with reasons naming gated metrics, and no no-op is (the real-model
run is the benchmark's)."""

from __future__ import annotations

import pytest

from benchmarks import gate_power
from ragwatch.report.verdicts import reason_lines

pytestmark = pytest.mark.slow  # builds the sample corpus's index once (cached in .ragwatch/gate_power)

# Each changes the contexts of about 1 question in 10: at 38 questions the drop is seen but an interval
# with the coverage it claims cannot always rule out no change; the gate needs ~60-80 questions.
AT_THE_POWER_LIMIT = ("retriever drops the best hit", "top_k 3 -> 1")


def test_every_regression_blocked_and_no_noop() -> None:
    outcomes, _, n, _gate = gate_power.run("extractive", None)
    assert n >= 30
    assert len(outcomes) == 8
    for o in outcomes:
        if o.change.name in AT_THE_POWER_LIMIT:
            # Never promoted on an improvement, and the interval keeps the drop in view.
            hit = o.comparison.row("system/hit_rate")
            assert hit.diff < 0 and hit.verdict in ("regressed", "inconclusive")
            assert hit.diff_low < -0.1
        elif o.change.regression:
            assert o.decision.status == "regressed", (o.change.name, reason_lines(o.decision))
            assert all(any(m in r for m in gate_power.GATE.gated_metrics) for r in reason_lines(o.decision))
        else:
            assert o.decision.promote, (o.change.name, reason_lines(o.decision))
    table = gate_power.table(outcomes, gate_power.GATE)
    assert any(row.startswith("| contexts shuffled across questions |") and "| block | **blocked** (regressed)" in row
               for row in table.splitlines())
    assert all("WRONG" not in row or any(name in row for name in AT_THE_POWER_LIMIT) for row in table.splitlines())
