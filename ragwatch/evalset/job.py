"""Which job an evaluation set belongs to, so that several daily jobs can share one ZenML store.

A job is a config that makes and evaluates its own set: its system's ZenML model (`evaluate.system.
model_name`) and its `testset:` block (the `config` part of `ragwatch.config.evalset_fingerprint`: the
block's settings, a `logs:` block included, without input paths and file contents). The `testset`
pipeline tags the `eval_set` it makes with `job_tag(job)` and records the job in the version's
`EVALSET_JOB_KEY` metadata; `evaluate` runs on the newest set of its own job (`readback.latest_eval_set`),
and the stale-set check compares the content of its input files within the job.

Two configs with the same model name and the same `testset:` block are one job: they would make the
same set. A changed `testset:` block is a new job, whose set `testset` must make first.

Example:
    >>> evalset_job("ragwatch-rag", {"config": "3fa2c1d9e0ab77f1", "inputs": "...", "testset": "..."})
    'ragwatch-rag@3fa2c1d9e0ab'
"""

from __future__ import annotations

from collections.abc import Mapping

JOB_TAG_PREFIX = "evalset-job:"
EVALSET_JOB_KEY = "evalset_job"  # the job, in an eval_set version's metadata
_DIGEST_CHARS = 12


def evalset_job(model_name: str, fingerprint: Mapping[str, str]) -> str:
    """"<model_name>@<12 hex digits of the testset block's fingerprint>": readable in a tag and a message."""
    return f"{model_name}@{fingerprint['config'][:_DIGEST_CHARS]}"


def job_tag(job: str) -> str:
    """The ZenML tag of the `eval_set` versions job `job` made."""
    return f"{JOB_TAG_PREFIX}{job}"


def model_of(job: str) -> str:
    """The model name part of a job."""
    return job.rpartition("@")[0]
