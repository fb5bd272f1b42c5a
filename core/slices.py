"""Slices of a comparison: the same A vs B question asked of parts of the pairs (Zeno and MT-Telescope's
slices), so a stakeholder sees where a difference comes from, e.g. "B wins on long replies, not on short ones".

A pair is put in a slice by one of:

- ``reply length``: the mean length of its two replies in words, cut into ``bins`` groups of about equal size;
- ``turn count``: the number of context turns (grouped into ``bins`` ranges when there are many);
- ``metadata``: a plain field of the input rows beyond the schema (``Example.meta``) or ``dataset``;
- ``score bucket``: the chosen metric's mean over the two replies, cut into ``bins`` groups of about equal size.

Each slice is compared exactly as the whole is (``core.verdict.compare_values``: contexts resampled, the same
resamples, seed and winner rule), so a slice's interval is honest about its smaller size.
"""
from __future__ import annotations

import math
from collections import Counter
from typing import TYPE_CHECKING, Sequence

import numpy as np

from core.data import Comparison
from core.scoring import metric_class
from core.settings import SEED
from core.verdict import LEVEL, N_BOOT, N_PERM, MetricComparison, compare_values, context_groups, reply_length

if TYPE_CHECKING:
    from core.engine import ComparisonScores

SLICE_KINDS = ("reply length", "turn count", "metadata", "score bucket")
MAX_VALUES = 12  # a metadata column with more values keeps the most frequent ones and pools the rest as "other"


def metadata_columns(comp: Comparison) -> list[str]:
    """The metadata fields (``Example.meta``, and ``dataset`` when set) that the pairs of ``comp`` carry."""
    cols: dict[str, None] = {}
    for ex in comp.examples():
        if ex.dataset:
            cols.setdefault("dataset", None)
        for k in ex.meta:
            cols.setdefault(k, None)
    return list(cols)


def numeric_bins(values: Sequence[float], bins: int, unit: str) -> list[str]:
    """Labels that cut ``values`` into ``bins`` groups of about equal size (equal values stay together), each
    labelled by the range of its own values, e.g. '7-11 words'."""
    v = np.asarray(values, dtype=np.float64)
    labels = ["no value"] * len(v)
    fin = np.flatnonzero(np.isfinite(v))
    if not len(fin):
        return labels
    edges = np.unique(np.quantile(v[fin], np.linspace(0, 1, bins + 1)))
    code = np.clip(np.searchsorted(edges, v[fin], side="right") - 1, 0, max(len(edges) - 2, 0))
    integral = np.allclose(v[fin], np.round(v[fin]))
    # 3 significant digits, but never an exponent for large values ("4-1.5e+03 words" was a label)
    fmt = (lambda x: f"{x:.0f}") if integral else (lambda x: f"{x:.3g}" if abs(x) < 1000 else f"{x:.0f}")  # noqa: E731
    for c in np.unique(code):
        members = fin[code == c]
        lo, hi = v[members].min(), v[members].max()
        text = f"{fmt(lo)}-{fmt(hi)}" if lo != hi else fmt(lo)
        for i in members:
            labels[i] = f"{text} {unit}".strip()
    return labels


def slice_labels(cs: "ComparisonScores", by: str, column: str | None = None, metric: str | None = None,
                 bins: int = 3) -> list[str]:
    """The slice of every pair of ``cs`` (pair order) for one way of slicing (``SLICE_KINDS``)."""
    comp = cs.comparison
    if by == "reply length":
        return numeric_bins([(reply_length(a.response) + reply_length(b.response)) / 2 for a, b in comp.pairs],
                             bins, "words")
    if by == "turn count":
        turns = [len(a.context) for a, _ in comp.pairs]
        if len(set(turns)) <= max(bins, 6):
            return [f"{t} turn{'s' if t != 1 else ''}" for t in turns]
        return numeric_bins(turns, bins, "turns")
    if by == "metadata":
        if not column:
            raise ValueError("slicing by metadata needs a column (core.slices.metadata_columns)")
        def value(a, b) -> str:
            if column == "dataset" and (a.dataset or b.dataset):
                return a.dataset or b.dataset
            return a.meta.get(column) or b.meta.get(column) or "(none)"
        values = [value(a, b) for a, b in comp.pairs]
        keep = {v for v, _ in Counter(values).most_common(MAX_VALUES - 1)}
        return [v if v in keep or len(set(values)) <= MAX_VALUES else "other" for v in values]
    if by == "score bucket":
        if not metric:
            raise ValueError("slicing by score bucket needs a metric")
        mean = (np.asarray(cs.a(metric), float) + np.asarray(cs.b(metric), float)) / 2
        return numeric_bins(mean, bins, f"({metric}, mean of A and B)")
    raise ValueError(f"unknown slice {by!r}; choose one of {SLICE_KINDS}")


def _order_key(label: str) -> tuple:
    head = label.split(" ")[0].split("-")[0]
    try:
        return (0, float(head), label)
    except ValueError:
        return (1, math.inf, label)


def slice_comparison(cs: "ComparisonScores", metric: str, by: str, column: str | None = None, bins: int = 3,
                     n_boot: int = N_BOOT, n_perm: int = N_PERM, level: float = LEVEL,
                     seed: int = SEED) -> list[MetricComparison]:
    """``metric``'s comparison of A and B within each slice (``metric`` field = the slice's label), in the
    slices' natural order; every row is ``core.verdict.compare_values`` on that slice's pairs."""
    labels = slice_labels(cs, by, column, metric, bins)
    groups = context_groups(cs.comparison.a)
    a, b = np.asarray(cs.a(metric), float), np.asarray(cs.b(metric), float)
    hib = metric_class(metric).higher_is_better
    rows = []
    for label in sorted(set(labels), key=_order_key):
        idx = [i for i, x in enumerate(labels) if x == label]
        rows.append(compare_values(label, "slice", a[idx], b[idx], [groups[i] for i in idx], higher_is_better=hib,
                                   n_boot=n_boot, n_perm=n_perm, level=level, seed=seed))
    return rows
