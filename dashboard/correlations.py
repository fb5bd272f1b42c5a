"""Metrics against human scores: turn-level correlations (contexts resampled), the scatter's points and line, each
system's preference per metric and dimension, and the system-level correlation of a multi-system file."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from core.data import Example, dimensions
from core.engine import ComparisonScores, ScoreTable
from core.formatting import fmt_num
from core.scoring import metric_class
from core.verdict import rating_scales_differ
from dashboard.tables import frame

if TYPE_CHECKING:
    import pandas as pd


def rows_kept(examples: Sequence[Example], keep_reference_copies: bool = False) -> np.ndarray:
    """Which rows the correlations use: all, or (default) those whose reply does not copy its reference
    (``core.engine.is_reference_copy``), as ``dialeval meta-eval`` leaves those out."""
    from core.engine import is_reference_copy
    return np.array([keep_reference_copies or not is_reference_copy(e) for e in examples], dtype=bool)


def dimension_column(table: ScoreTable, metric: str, dimension: str) -> np.ndarray:
    """``metric``'s scores of ``table``'s rows for the human ``dimension`` (``Metric.scores_for_dimension``):
    MME-CRS weighs its stored sub-metrics with that dimension's shipped fitted weights, as ``dialeval meta-eval``
    does on a set they were not fitted on (on one they were, meta-eval refits them without it); every other
    metric's scores are the same for any dimension."""
    from core.scoring import get_metric
    return np.asarray(get_metric(metric).scores_for_dimension(table.results[metric], dimension), dtype=float)


def weighed_per_dimension(metrics: Sequence[str]) -> list[str]:
    """The metrics of ``metrics`` whose scores for a human dimension are not their scores as shown elsewhere (their
    class overrides ``scores_for_dimension``: MME-CRS)."""
    from core.scoring import Metric
    return [m for m in metrics if metric_class(m).scores_for_dimension is not Metric.scores_for_dimension]


def correlation_rows(cs: ComparisonScores, methods: Sequence[str] = ("spearman", "pearson"),
                     n_boot: int = 1000, seed: int = 13, keep_reference_copies: bool = False) -> list[dict[str, Any]]:
    """Turn-level correlation of each metric with each human dimension over both systems' rows, rows whose
    reply copies its reference left out as ``dialeval meta-eval`` leaves them out
    (``core.engine.is_reference_copy``: a referenced metric scores them perfectly whatever people said;
    ``keep_reference_copies`` keeps them). The two responses to one context form a cluster (``groups``), so
    intervals resample contexts."""
    from core.stats import correlate
    from core.verdict import context_groups
    comp = cs.comparison
    exs = comp.examples()
    keep = rows_kept(exs, keep_reference_copies)
    groups = [g for g, k in zip(context_groups(exs), keep) if k]
    rows = []
    for d in dimensions(exs):
        h = np.array([e.scores.get(d, math.nan) for e in exs], dtype=float)[keep]
        for m in cs.metrics:
            x = dimension_column(cs.table, m, d)[keep]
            row: dict[str, Any] = {"metric": m, "dimension": d}
            for meth in methods:
                c = correlate(x, h, method=meth, groups=groups, n_boot=n_boot, seed=seed)
                row.update({f"{meth}": c.r, f"{meth} low": c.low, f"{meth} high": c.high, f"{meth} p": c.p,
                            "n": c.n})
            row["reference copies left out"] = int((~keep).sum())
            rows.append(row)
    return rows


def scatter_frame(cs: ComparisonScores, metric: str, dimension: str,
                  keep_reference_copies: bool = False) -> pd.DataFrame:
    """The rows :func:`correlation_rows` correlates for ``metric`` and ``dimension`` (both values present;
    replies that copy their reference left out as there), one point per row."""
    comp = cs.comparison
    rows = []
    column = dimension_column(cs.table, metric, dimension)
    for side, exs, vals in (("A", comp.a, column[:cs.n]), ("B", comp.b, column[cs.n:])):
        name = comp.system_a if side == "A" else comp.system_b
        for e, v, kept in zip(exs, vals, rows_kept(exs, keep_reference_copies)):
            h = e.scores.get(dimension, math.nan)
            if np.isfinite(v) and np.isfinite(h) and kept:
                rows.append({"id": e.id, "system": name, metric: float(v), dimension: float(h)})
    return frame(rows, columns=["id", "system", metric, dimension])


def default_scatter_metric(cs: ComparisonScores, dimension: str | None = None) -> str | None:
    """The metric the scatter opens on: the first of ``cs.metrics`` with a finite score on a row that has a
    human score (on ``dimension`` when given, else on any dimension), so the first plot a user sees is not
    empty (BLEU and υBLEU score nothing on a file without references, such as the shipped rated sample). The
    first metric when no metric has such a row; None without metrics."""
    if not cs.metrics:
        return None
    exs = cs.comparison.examples()
    if dimension is not None:
        rated = np.array([np.isfinite(e.scores.get(dimension, math.nan)) for e in exs], dtype=bool)
    else:
        rated = np.array([any(np.isfinite(v) for v in e.scores.values()) for e in exs], dtype=bool)
    for m in cs.metrics:
        if np.isfinite(np.asarray(cs.table.column(m), dtype=float)[rated]).any():
            return m
    return cs.metrics[0]


def fit_line(x: Sequence[float], y: Sequence[float]) -> tuple[float, float] | None:
    """Least-squares slope and intercept (None when x is constant or fewer than 2 points)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if len(x) < 2 or np.ptp(x) == 0:
        return None
    slope, intercept = np.polyfit(x, y, 1)
    return float(slope), float(intercept)


def system_level_rows(cs: ComparisonScores) -> list[dict[str, Any]]:
    """Per metric and dimension: which system the metric prefers (higher mean, or lower when lower is
    better) and which the humans prefer (higher mean), and whether they agree. A side with no score at all
    (a metric that needs references on rows without any, a dimension one system was not rated on) says
    ``"no scores"`` / ``"no ratings"``, and people's ratings on two scales (``core.verdict.rating_scales_differ``)
    ``"two scales"``; its agreement is then "-", never a tie. Numbers as the command line
    writes them (``core.report.fmt_num``). With two systems this
    is the only honest system-level view; a system-level correlation needs more systems."""
    comp = cs.comparison
    rows = []
    two_scales = rating_scales_differ(comp)  # as the verdict, people's means on two scales prefer nobody
    for d in dimensions(comp.examples()):
        ha, hb = (_finite_mean([ex.scores.get(d, math.nan) for ex in side]) for side in (comp.a, comp.b))
        human = ("two scales" if d in two_scales else
                 _preferred(ha, hb, True, comp.system_a, comp.system_b, "no ratings"))
        for m in cs.metrics:
            column = dimension_column(cs.table, m, d)
            ma, mb = _finite_mean(column[:cs.n]), _finite_mean(column[cs.n:])
            pref = _preferred(ma, mb, metric_class(m).higher_is_better, comp.system_a, comp.system_b, "no scores")
            known = pref != "no scores" and human not in ("no ratings", "two scales")
            rows.append({"dimension": d, "metric": m, "metric mean A": fmt_num(ma), "metric mean B": fmt_num(mb),
                         "human mean A": fmt_num(ha), "human mean B": fmt_num(hb), "metric prefers": pref,
                         "humans prefer": human, "agree": ("yes" if pref == human else "no") if known else "-"})
    return rows


def _finite_mean(values: Any) -> float:
    """The mean of the finite values (NaN when there are none)."""
    arr = np.asarray(values, float)
    arr = arr[np.isfinite(arr)]
    return float(arr.mean()) if arr.size else math.nan


def _preferred(a: float, b: float, higher_is_better: bool, name_a: str, name_b: str, missing: str) -> str:
    """The system whose mean is better, ``"tie"`` for equal means, ``missing`` when a side has none."""
    if not (math.isfinite(a) and math.isfinite(b)):
        return missing
    if a == b:
        return "tie"
    return name_a if (a > b) == higher_is_better else name_b


def system_correlations(table: ScoreTable, metrics: Sequence[str], method: str = "spearman",
                        n_boot: int = 500, seed: int = 13, keep_reference_copies: bool = False
                        ) -> list[dict[str, Any]]:
    """System-level correlation over every system of a multi-system file (``table`` scored all its rows):
    mean metric vs mean human score per system (``core.stats.system_correlation``), as ``dialeval meta-eval``
    computes it: rows that copy their reference left out (a system of reference copies drops out whole),
    contexts resampled for the interval."""
    from core.stats import system_correlation
    from core.verdict import context_groups
    keep = rows_kept(table.examples, keep_reference_copies)
    exs = [e for e, k in zip(table.examples, keep) if k]
    systems = [e.system for e in exs]
    gone = [s for s in dict.fromkeys(e.system for e in table.examples) if s not in set(systems)]
    items = context_groups(exs)
    rows = []
    for d in dimensions(exs):
        h = np.array([e.scores.get(d, math.nan) for e in exs], dtype=float)
        for m in metrics:
            x = dimension_column(table, m, d)[keep]
            sc = system_correlation(x, h, systems, method=method, items=items, n_boot=n_boot, seed=seed)
            rows.append({"metric": m, "dimension": d, "r": sc.r, "low": sc.low, "high": sc.high, "p": sc.p,
                         "systems": sc.n_systems, "reference copies left out": int((~keep).sum()),
                         "systems left out (every reply a reference)": ", ".join(gone),
                         "warning": sc.warning or ""})
    return rows
