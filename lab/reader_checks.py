"""Two more reader checks as vetoes? A lead-in ending in a colon, and a bare code fragment (2026-11-27).

On the 800 agreed labelled statements of data/judge_dev/rag_statements (statements.jsonl,
new_statements.jsonl, more_statements.jsonl): how many statements each check fires on and how many of
those the readers call unsupported (its precision as a veto). Result: 46 of 74 and 28 of 51, too low
to veto (docs/judges.md, "Where it stands on 800 labelled statements").

    python -m lab.reader_checks
"""

import json
import re
from collections import Counter
from pathlib import Path

R = Path(__file__).resolve().parents[1] / "data" / "judge_dev" / "rag_statements"


def lead_in(statement: str) -> bool:
    text = re.sub(r"```\w*\s*$", "", statement.strip()).strip()
    return text.endswith(":")


def code_fragment(statement: str) -> bool:
    prose = re.sub(r"```.*?(```|$)", " ", statement, flags=re.S) if "```" in statement else statement
    words = re.findall(r"[A-Za-z]{3,}", prose)
    codey = len(re.findall(r"[=(){}\[\];<>]|def |import |--", statement))
    return (("```" in statement and len(words) < 6) or (codey >= 3 and len(words) < 5)
            or statement.lstrip().startswith(("#", "def ", "import ", "from ", "$ ", "```")))


def main() -> None:
    rows = [r for name in ("statements.jsonl", "new_statements.jsonl", "more_statements.jsonl")
            for r in map(json.loads, (R / name).read_text().splitlines())
            if r.get("label") in ("supported", "unsupported")]
    print(f"{len(rows)} agreed labelled statements")
    for name, check in (("lead-in colon", lead_in), ("bare code fragment", code_fragment)):
        fired = [r for r in rows if check(r["statement"])]
        labels = Counter(r["label"] for r in fired)
        print(f"{name}: fires on {len(fired)}, readers call {labels['unsupported']} unsupported "
              f"and {labels['supported']} supported")


if __name__ == "__main__":
    main()
