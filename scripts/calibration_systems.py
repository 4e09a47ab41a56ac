"""Print the fingerprints of the faithfulness calibration's systems under test (S0, S1, S2).

`FaithfulnessCalibration.systems` names them so that a run of one of them is levelled on its own kind of
answers. A fingerprint is `RagSystem.fingerprint()`: the hash of the built-in system's `describe()`, which
holds the index's fingerprint (the bundled corpus's chunk ids and the embedding). This reads the
`describe()` of the latest run of the embedded default in the local store (run `make run` first) and
substitutes each system's config's retrieval and generation settings, the ones the three systems differ in.

    python scripts/calibration_systems.py
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SYSTEMS = {"S0": "configs/evaluate.yaml", "S1": "benchmarks/systems/top1.yaml",
           "S2": "benchmarks/systems/detailed.yaml"}


def main() -> int:
    from ragwatch_zenml import env as zenml_env

    zenml_env.configure_environment()
    zenml_env.ensure_repository()
    from zenml.client import Client

    from ragwatch.config import FullConfig
    from ragwatch.config_loader import load_config
    from ragwatch.rag.base import canonical_fingerprint

    default = load_config(ROOT / SYSTEMS["S0"], FullConfig).evaluate.system
    for run in Client().list_pipeline_runs(sort_by="desc:created", size=50, status="completed").items:
        step = run.steps.get("generate_answers")
        if step is None:
            continue
        answers = step.outputs["rag_answers"][0].load()
        if answers.system.get("kind") == "builtin" and answers.system["top_k"] == default.rag.top_k:
            break
    else:
        print("no completed run of the embedded default in this store: run `make run` first", file=sys.stderr)
        return 2
    print(f"from run {run.name} (its fingerprint {answers.fingerprint})")
    for code, path in SYSTEMS.items():
        system = load_config(ROOT / path, FullConfig).evaluate.system
        described = copy.deepcopy(answers.system)
        described.update(top_k=system.rag.top_k, prompt_template=system.rag.prompt_template,
                         max_context_chars=system.rag.max_context_chars, retrieval_mode=system.rag.retrieval_mode)
        described["generator"].update(model=system.generator.model, temperature=system.generator.temperature,
                                      max_tokens=system.generator.max_tokens, seed=system.generator.seed)
        print(f'"{code}": "{canonical_fingerprint(described)}",  # {path}')
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
