"""The tables the pages show, computed without Streamlit: the per-example table (both systems side by side, every
metric, the difference A - B), the verdict and what drives it as display tables, slices, υBLEU's extended references
and MME's sub-metrics as rows, and the judge's per-pair table."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from core.data import Comparison, dimensions
from core.engine import ComparisonScores
from core.formatting import fmt_interval, fmt_num
from core.report import no_winner_notes
from core.scoring import metric_class
from core.stats import MIN_RESAMPLED
from core.verdict import Verdict, pair_winner

if TYPE_CHECKING:
    import pandas as pd


def frame(*args, **kwargs) -> pd.DataFrame:
    """``pandas.DataFrame(*args, **kwargs)``. pandas is imported when the first table is built, not with the
    dashboard's modules: the home page draws its verdict before any table, so a first visit shows it without waiting for
    pandas' import (~0.6 s on 2 cores)."""
    import pandas as pd
    return pd.DataFrame(*args, **kwargs)


def _short(texts: Sequence[str]) -> str:
    return " ⏎ ".join(texts)


def per_example_frame(cs: ComparisonScores) -> pd.DataFrame:
    """One row per pair: id, context (turns joined with ⏎), both responses, the reference, each
    metric for A and B and the difference A - B, and human scores when present."""
    comp = cs.comparison
    rows = []
    dims = dimensions(comp.examples())
    for i, (a, b) in enumerate(comp.pairs):
        row: dict[str, Any] = {"pair": i, "id": a.id, "context": _short(a.context), "response A": a.response,
                               "response B": b.response, "reference": a.reference or b.reference}
        for m in cs.metrics:
            va, vb = float(cs.a(m)[i]), float(cs.b(m)[i])
            row[f"{m} A"], row[f"{m} B"] = va, vb
            row[f"{m} A-B"] = va - vb
        for d in dims:
            ha, hb = a.scores.get(d, math.nan), b.scores.get(d, math.nan)
            row[f"human {d} A"], row[f"human {d} B"] = ha, hb
        rows.append(row)
    return frame(rows)


def filter_frame(df: pd.DataFrame, text: str = "", winner: str = "all", metric: str | None = None) -> pd.DataFrame:
    """Rows whose context/responses/reference contain ``text`` (case-insensitive) and, for ``metric``,
    where the metric's winner of the pair (``core.verdict.pair_winner``: higher or lower is better as the
    metric says, the one tie rule) is ``winner`` ("A", "B" or "tie")."""
    out = df
    if text:
        t = text.lower()
        cols = ["id", "context", "response A", "response B", "reference"]
        mask = np.zeros(len(out), dtype=bool)
        for c in cols:
            mask |= out[c].astype(str).str.lower().str.contains(t, regex=False).to_numpy()
        out = out[mask]
    if metric and winner != "all" and f"{metric} A" in out:
        hib = metric_class(metric).higher_is_better
        calls = [pair_winner(a, b, hib) for a, b in zip(out[f"{metric} A"], out[f"{metric} B"])]
        out = out[np.array([c == winner for c in calls], dtype=bool)]
    return out


def long_scores(cs: ComparisonScores) -> pd.DataFrame:
    """Tidy frame (metric, system, value) for distribution plots."""
    rows = []
    for m in cs.metrics:
        for side, name in (("a", cs.comparison.system_a), ("b", cs.comparison.system_b)):
            vals = cs.a(m) if side == "a" else cs.b(m)
            rows += [{"metric": m, "system": name, "value": float(v)} for v in vals if np.isfinite(v)]
    return frame(rows, columns=["metric", "system", "value"])


def rate_interval(lc, level: float = 0.95) -> str:
    """A length-controlled win rate (``core.stats.LengthControlled``) as ``r% [lo%, hi%] (95%)``, or why it has
    none."""
    if not np.isfinite(lc.rate):
        return f"- (not estimated: {lc.why_none or f'its decided pairs come from fewer than {MIN_RESAMPLED} contexts'})"
    if not (np.isfinite(lc.low) and np.isfinite(lc.high)):
        return f"{lc.rate:.1%} [-]"
    return f"{lc.rate:.1%} [{lc.low:.1%}, {lc.high:.1%}] ({level:.0%})"


def headline_frame(verdict: Verdict) -> pd.DataFrame:
    """Display form of the verdict's rows, direction in words first: which system is better and by how much
    (the better system's mean minus the other's, with its interval), then both means, p, A/tie/B and n: narrow
    enough to read without scrolling sideways on a laptop with the sidebar open (A - B with its interval for
    every metric is the chart below it; the means' intervals are in the report and the command line's table). The
    column n is left out when every row has the same n (the page says it under the table: :func:`shared_n`)."""
    out = []
    for r in verdict.table_rows():
        name = f"human: {r.metric[len('human:'):]}" if r.kind == "human" else r.metric
        margin = "; ".join(no_winner_notes(r, verdict.level)) or "-"
        if r.winner == "A":
            margin = fmt_interval(r.diff, r.low, r.high, signed=True)
        elif r.winner == "B":
            margin = fmt_interval(-r.diff, -r.high, -r.low, signed=True)
        out.append({"metric": name,
                    "better": "not scored" if r.n == 0 else r.better(verdict.system_a, verdict.system_b),
                    "better by [95% CI]": margin, "A mean": fmt_num(r.mean_a), "B mean": fmt_num(r.mean_b),
                    "p": fmt_num(r.p_randomization, p=True),
                    "A/tie/B": f"{r.wins}/{r.ties}/{r.losses}", "n": r.n})
    shown = frame(out)
    return shown.drop(columns="n") if shared_n(verdict) is not None else shown


def shared_n(verdict: Verdict) -> int | None:
    """The n of every row of the headline table when they are all the same (the column then says nothing a
    caption cannot), else None."""
    ns = {r.n for r in verdict.table_rows()}
    return ns.pop() if len(ns) == 1 else None


def drivers_frame(verdict: Verdict, shown: int = 3) -> pd.DataFrame:
    """``verdict.drivers`` as a table: per metric that scored pairs, whether its verdict survives leaving the
    most pushing 5 % out (first: what a reader looks for), the comparison without them, and the ``shown`` pairs
    that push its difference most."""
    names = {"A": verdict.system_a, "B": verdict.system_b}
    rows = [{"metric": d.metric,
             "pushes toward": names[d.direction] if d.top else "neither (every pair ties)",
             "verdict survives": d.survival,
             "A-B without them [95% CI]": fmt_interval(d.diff_without, d.low_without, d.high_without, signed=True),
             "p without": "-" if d.p_without is None else fmt_num(d.p_without, p=True),
             "left out": f"{d.n_left_out} of {d.n_pairs}",
             "top pairs (A-B)": ", ".join(f"{t['id']} ({t['diff']:+.3g})" for t in d.top[:shown])}
            for d in verdict.drivers if d.n_pairs]
    return frame(rows, columns=["metric", "pushes toward", "verdict survives", "A-B without them [95% CI]",
                                 "p without", "left out", "top pairs (A-B)"])


def slice_frame(rows, system_a: str, system_b: str) -> pd.DataFrame:
    """``core.slices.slice_comparison`` rows as a table: slice, pairs, means, A - B with interval, p, better."""
    return frame([{"slice": r.metric, "pairs": r.n, "mean A": r.mean_a, "mean B": r.mean_b,
                    "A-B [95% CI]": fmt_interval(r.diff, r.low, r.high, signed=True), "p": fmt_num(r.p_randomization, p=True),
                    "better": r.better(system_a, system_b)} for r in rows])


def ubleu_reference_rows(details: dict[str, Any] | None) -> list[dict[str, Any]]:
    """υBLEU's extended references of one example as table rows (kind, text, source utterance,
    similarity, the rater's weight, sign) — sorted as the metric stored them."""
    if not details:
        return []
    rows = []
    for r in details.get("references", []):
        w = r.get("weight")
        rows.append({"kind": r.get("kind", ""), "weight": w, "sign": "+" if w is not None and w > 0 else
                     "-" if w is not None and w < 0 else "0", "reference": r.get("text", ""),
                     "source utterance": r.get("source_utterance") or "", "similarity": r.get("similarity")})
    return rows


def example_metric_values(cs: ComparisonScores, i: int) -> pd.DataFrame:
    """Each metric's value for pair ``i``: A, B, A - B."""
    rows = []
    for m in cs.metrics:
        a, b = float(cs.a(m)[i]), float(cs.b(m)[i])
        rows.append({"metric": m, "A": a, "B": b, "A-B": a - b})
    return frame(rows, columns=["metric", "A", "B", "A-B"])


def judge_frame(comp: Comparison, p_a: Sequence[float], verdict: Sequence[str]) -> pd.DataFrame:
    rows = []
    for i, ((a, b), p, v) in enumerate(zip(comp.pairs, p_a, verdict)):
        rows.append({"pair": i, "id": a.id, "context": _short(a.context), "response A": a.response,
                     "response B": b.response, "P(A preferred)": float(p), "judge": v})
    return frame(rows)


def rest_frame(comp: Comparison, rest: Sequence[int], p_shipped: Sequence[float], p_tuned: Sequence[float],
               verdict: Sequence[str]) -> pd.DataFrame:
    """The loaded pairs ``rest`` (those without a vote) with the shipped and the vote-tuned judge's P(A)."""
    sub = Comparison(comp.system_a, comp.system_b, [comp.pairs[i] for i in rest])
    df = judge_frame(sub, p_tuned, verdict)
    df["pair"] = list(rest)
    df.insert(df.columns.get_loc("P(A preferred)"), "P(A) shipped", [float(p) for p in p_shipped])
    return df


def mme_drilldown_rows(details: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Rows for a drill-down of one ``mme`` (or ``mme_avg``) score: each sub-metric, its group, its normalized
    score, its CRS weight for the chosen dimension and its share of the final score."""
    from core.metrics.mme import GROUPS
    if not details:
        return []
    subs = details.get("sub_scores", {})
    w = details.get("weights") or {k: 1.0 / max(len(subs), 1) for k in subs}
    group = {s: g for g, ss in GROUPS.items() if "+" not in g for s in ss}
    tot = sum(w.get(k, 0.0) for k, v in subs.items() if v is not None) or 1.0
    return [{"sub_metric": f"mme_{k}", "group": group.get(k, ""), "score": v, "weight": round(w.get(k, 0.0), 4),
             "contribution": None if v is None else round(w.get(k, 0.0) * v / tot, 4)} for k, v in subs.items()]


def unscored_reason(metric: str, comp) -> str:
    """Why ``metric`` has no value on any row of ``comp``, in words (for a chart left out in its place)."""
    from core.scoring import metric_class
    try:
        needs = metric_class(metric).needs_references
    except Exception:
        needs = False
    if needs and not any(e.references for e in comp.examples()):
        return "it compares replies with references, and this file has none"
    if all(not e.response.strip() for e in comp.examples()):
        return "every reply is blank"
    return "it gave no value on any row"


ROW_PX = 35  # the height of one row of st.dataframe (and of its header), in pixels


def full_height(rows: int) -> int:
    """The height of an ``st.dataframe`` that shows ``rows`` rows and its header without scrolling inside it."""
    return ROW_PX * (rows + 1) + 3
