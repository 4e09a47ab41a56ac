"""The prompt versions that key a calibration (`calibrations.py`), named once for the judges and their calibrations.

A calibration holds for one judge model, one prompt version and one statement-features version; a prompt
change is a new version, and a judge whose version has no calibration falls back (`calibrations.judge_cutoff`).
"""

from __future__ import annotations

from typing import Literal

# v6: the fixed instructions ahead of the data, the statements in one fence; v5: evidence first; v4: the question
# in verification; v3: verdict first
PROMPT_VERSION = "faithfulness-v6"
# v2: with contexts, the faithfulness verifier checks the answer
SUPPORT_PROMPT_VERSION = "support-v2"
# the statement-features record (`features.StatementFeatures` as `features.statement_features` fills it).
# v2: absent names, quantities and quoted strings recorded by kind; names and quoted strings veto too.
# v1 (unnamed before): numbers and identifiers no context holds veto, read back from the rule's text.
FEATURES_VERSION = "features-v2"
WindowMode = Literal["batched", "per_statement"]


def window_prompt_version(verify: WindowMode) -> str:
    """The prompt version of the window verifier `verify` (the evidence verifier's is `PROMPT_VERSION`)."""
    return f"{PROMPT_VERSION}-{verify}"


# the versions that verify by the judge's P(yes) alone (no statement features)
WINDOW_PROMPT_VERSIONS = (window_prompt_version("batched"), window_prompt_version("per_statement"),
                          SUPPORT_PROMPT_VERSION)
