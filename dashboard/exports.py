"""The Scores page's downloads: a table as CSV, the pairs as JSONL (both examples, every metric, details)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from core.data import Comparison
from core.engine import ComparisonScores
from core.formatting import SIGNIFICANT_DIGITS

if TYPE_CHECKING:
    import pandas as pd


def export_csv(df: pd.DataFrame, comp: Comparison | None = None) -> bytes:
    """``df`` as CSV. With the comparison, a table of pairs (a ``pair`` column) gets each pair's context back
    as its turns, one per line of the cell (the table shows them joined with ⏎ on one line), so the file loads
    again with its turns (``--context-sep`` newline, the default guess). Floats keep ``SIGNIFICANT_DIGITS``
    (``core.report``), as the command line's outputs."""
    if comp is not None and "pair" in df.columns and "context" in df.columns:
        df = df.assign(context=["\n".join(comp.pairs[int(i)][0].context) for i in df["pair"]])
    return df.to_csv(index=False, float_format=f"%.{SIGNIFICANT_DIGITS}g").encode("utf-8")


def export_jsonl(cs: ComparisonScores, pairs: Sequence[int] | None = None) -> bytes:
    """One JSON object per pair (``pairs``: these pair indices in this order, e.g. the filtered and sorted
    table; default all): both examples (core.data fields), each metric for A and B, details."""
    from core.report import jsonl_line
    comp = cs.comparison
    lines = []
    for i in (range(len(comp.pairs)) if pairs is None else pairs):
        a, b = comp.pairs[i]
        rec = {"pair": i, "id": a.id, "system_a": comp.system_a, "system_b": comp.system_b,
               "context": a.context, "references": a.references or b.references,
               "response_a": a.response, "response_b": b.response,
               "scores_a": {m: float(cs.a(m)[i]) for m in cs.metrics},
               "scores_b": {m: float(cs.b(m)[i]) for m in cs.metrics},
               "human_a": a.scores, "human_b": b.scores,
               "signatures": cs.table.signatures()}
        det = {}
        for m in cs.metrics:
            da, db = cs.table.details(m, i), cs.table.details(m, cs.n + i)
            if da is not None or db is not None:
                det[m] = {"a": da, "b": db}
        if det:
            rec["details"] = det
        lines.append(jsonl_line(rec))
    return ("\n".join(lines) + "\n").encode("utf-8")
