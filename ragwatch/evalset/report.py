"""What `testset` made, for the terminal: the set's size and sources, every row dropped (counts by reason,
the first few with their line), the synthetic pairs the filters removed, and the items without a
reference answer (answered and judged by every judge that needs none; the metrics that need one skip them).

Example:
    >>> print("\\n".join(evalset_report(samples, imports_report, synthetic_testset)))  # doctest: +SKIP
    evaluation set: 10 items (0 synthetic, 10 imported)
      jsonl:/data/qa.jsonl: 10 of 12 rows imported, 2 dropped: no question (column 'query' missing or empty) x2
        line 4: no question (column 'query' missing or empty)
      3 of 10 items have no reference answer: the system answers them and every judge that needs no ...
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragwatch.evalset.synthetic import Testset
from ragwatch.types import EvalSample

SHOWN_ROWS = 5  # dropped rows listed per source; every one is counted


def evalset_report(samples: Sequence[EvalSample], imports: Mapping[str, Any], synthetic: Testset | None) -> list[str]:
    """Lines saying what the evaluation set holds and what was left out of it, and why.

    `imports`: the import report (`import_labelled_samples`; source -> counts, plus "reference_answers"
    when answers were written); `synthetic`: the generated pairs with their filter reports, or None.
    """
    n_synthetic = len(synthetic.samples) if synthetic is not None else 0
    sources = {name: r for name, r in imports.items() if name != "reference_answers" and isinstance(r, dict)}
    n_imported = sum(int(r.get("imported", 0)) for r in sources.values())
    lines = [f"evaluation set: {len(samples)} items ({n_synthetic} synthetic, {n_imported} imported"
             + (f"; {n_synthetic + n_imported - len(samples)} repeated ids merged" if
                n_synthetic + n_imported > len(samples) else "") + ")"]
    for name, r in sources.items():
        lines += _source_lines(name, r)
    if synthetic is not None and (synthetic.filters or synthetic.failures):
        removed = ", ".join(f"{f.name} {f.removed}" for f in synthetic.filters if f.removed)
        lines.append(f"  synthetic: {n_synthetic} pairs kept; removed by filters: {removed or 'none'}"
                     + (f"; {len(synthetic.failures)} generation failures" if synthetic.failures else ""))
    if written := imports.get("reference_answers"):
        lines.append(f"  reference answers written by the generator: {written.get('written', 0)}"
                     + (f", {written['failed']} failed" if written.get("failed") else ""))
    missing = sum(1 for s in samples if not s.reference_answer)
    if missing:
        lines.append(f"  {missing} of {len(samples)} items have no reference answer: the system answers them and "
                     "every judge that needs no reference scores them (faithfulness, relevance, the checks); "
                     "correctness and similarity say \"no reference answer\" for them "
                     "(evaluate.without_reference: retrieval_only evaluates them by retrieval alone)")
    return lines


def _source_lines(name: str, r: Mapping[str, Any]) -> list[str]:
    imported, skipped = int(r.get("imported", 0)), int(r.get("skipped", 0))
    usable = int(r.get("usable_before_limit", imported))
    head = f"  {name}: {imported} of {usable + skipped} rows imported"
    if usable > imported:
        head += f" ({usable - imported} usable rows left out by limit/sample)"
    if skipped:
        reasons = ", ".join(f"{reason} x{n}" for reason, n in r.get("skipped_by_reason", {}).items())
        head += f", {skipped} dropped: {reasons}"
    if without := int(r.get("without_reference", 0)):
        head += (f"; {without} kept without a reference answer (give them one in the file, or set "
                 "testset.write_reference_answers: true where rows have a source passage)")
    lines = [head]
    shown = r.get("skipped_rows", [])[:SHOWN_ROWS]
    lines += [f"    {row}" for row in shown]
    if skipped > len(shown):
        lines.append(f"    ... {skipped - len(shown)} more (the import step's metadata lists up to 20)")
    return lines
