"""People's preferences in rated data: which human dimension stands for "which reply is better", each
dimension's rating scale, the tie margin of a clear preference (a quarter of the scale), and the context as the
resampling unit. The verdict (``core.verdict``), the judge's summary and pairs and the system-level evidence read
them."""
from __future__ import annotations

import math
from typing import Iterable, Sequence

import numpy as np

from core.data import Comparison, Example, context_key, dimensions

METRIC_TIE_TOL = 1e-9  # two values closer than this are a tie (:func:`pair_winner`)
# which human dimension stands for "which reply is better" in a rated set (first present wins)
PREFERENCE_DIMENSIONS = ("overall", "Overall", "coherence", "relevance", "engagement", "context_coherence")
# known rating scales (low, high) by dimension; otherwise the observed min/max rounded outward
SCALES = {"Overall": (1, 5), "overall": (1, 5), "coherence": (1, 5), "relevance": (1, 5), "engagement": (1, 5),
          "content": (1, 5), "grammar": (1, 5), "informativeness": (1, 5), "context_coherence": (1, 5),
          "Natural": (1, 3), "Maintains Context": (1, 3), "Engaging": (1, 3), "language_usage": (1, 3),
          "Understandable": (0, 1), "Uses Knowledge": (0, 1)}
MARGIN_SHARE = 0.25  # a "clear" human preference: the mean ratings differ by >= a quarter of the scale



def scale_of(dimension: str, values: Iterable[float] = ()) -> tuple[float, float]:
    """The rating scale (low, high) of a human dimension: the known one (``SCALES``) when every observed
    rating lies on it, else the observed range rounded outward (an 'overall' rated 0-1 or 0-100 is not
    taken for 1-5)."""
    vals = [v for v in values if v is not None and not math.isnan(v)]
    known = SCALES.get(dimension)
    if known is not None and all(known[0] <= v <= known[1] for v in vals):
        return known
    if not vals:
        return (0.0, 1.0)
    lo, hi = math.floor(min(vals)), math.ceil(max(vals))
    return (lo, hi) if hi > lo else (lo, lo + 1)


SCALE_RATIO = 5  # one system's largest rating this many times another's: two scales (0-100 and 1-5, 0-1 and 1-10)
SCALE_TOPS = (1, 5, 10, 100)  # the tops of the rating scales people use


def scale_top(values: Sequence[float]) -> float:
    """The smallest usual scale top (:data:`SCALE_TOPS`) at or above every finite value (inf above them all)."""
    top = max((v for v in values if v is not None and math.isfinite(v)), default=0.0)
    return next((t for t in SCALE_TOPS if top <= t), math.inf)


def scales_differ(dimension: str, ratings: dict[str, Sequence[float]]) -> str | None:
    """A note when people's ratings on ``dimension`` lie on scales of different size for different systems
    (``ratings``: system -> its ratings), whose means cannot be compared; ``None`` otherwise.

    Outside the dimension's known scale (:data:`SCALES`; every rating on it is one scale), two scales only where
    one system's largest rating is at least :data:`SCALE_RATIO` times the other's, the smallest usual scale top
    above each (:data:`SCALE_TOPS`) differs, and the lower side shows a scale of its own: fractions of a 0-1 scale
    all far below every rating of the other (0.6 beside 8), a rating below the known scale's floor (thumbs 0/1
    beside 1-5 on overall), or a 1-5 (or 1-10) scale used up to its top beside 0-100. A weak system rated 1 to 2
    of 10, or 1 everywhere, beside one rated higher, is one scale: people's clear preference."""
    known = SCALES.get(dimension)
    finite = {s: [v for v in values if v is not None and math.isfinite(v)] for s, values in ratings.items()}
    finite = {s: v for s, v in finite.items() if v}
    if len(finite) < 2:
        return None
    if known is not None and all(known[0] <= v <= known[1] for v in (x for vs in finite.values() for x in vs)):
        return None
    top = {s: max(v) for s, v in finite.items()}
    cap = {s: scale_top(v) for s, v in finite.items()}
    hi = max(top, key=top.get)
    lower = [s for s in top if cap[s] < cap[hi]]  # the systems whose ratings stay below the top one's scale
    if not lower:
        return None
    lo = max(lower, key=top.get)
    pooled = [v for s in lower for v in finite[s]]
    if top[lo] <= 0 or top[hi] < SCALE_RATIO * top[lo]:
        return None
    fractions = (top[lo] <= 1 and any(v != int(v) for v in pooled) and min(finite[hi]) >= SCALE_RATIO * top[lo])
    below_floor = (known is not None and min(pooled) < known[0]
                   and all(known[0] <= v <= known[1] for v in finite[hi]))
    full_scale = cap[lo] >= 5 and top[lo] >= 0.8 * cap[lo]
    if not (fractions or below_floor or full_scale):
        return None
    return (f"people's {dimension} ratings look like different scales in different systems ({hi}: up to "
            f"{top[hi]:g}; {lo}: up to {top[lo]:g}), so their means are not comparable")


def human_tie_margin(dimension: str, values: Iterable[float] = ()) -> float:
    """A quarter of the dimension's rating scale: ratings closer than this are a human tie."""
    lo, hi = scale_of(dimension, values)
    return MARGIN_SHARE * (hi - lo)


def human_preference(score_a: float | None, score_b: float | None, margin: float) -> str | None:
    """'A' / 'B' when the mean ratings differ by at least ``margin``, 'tie' below it, None without both."""
    if score_a is None or score_b is None or math.isnan(score_a) or math.isnan(score_b):
        return None
    d = score_a - score_b
    if abs(d) < margin - 1e-9:
        return "tie"
    return "A" if d > 0 else "B"


def preference_dimension(examples: Sequence[Example]) -> str | None:
    """The human dimension that stands for overall preference (``PREFERENCE_DIMENSIONS``), else the first."""
    dims = dimensions(examples)
    for d in PREFERENCE_DIMENSIONS:
        if d in dims:
            return d
    return dims[0] if dims else None


def human_preferences(comp: Comparison, dimension: str) -> tuple[list[str | None], float]:
    """Per pair, which reply people preferred on ``dimension`` (:func:`human_preference`), and the margin."""
    values = [e.scores.get(dimension, math.nan) for e in comp.examples()]
    margin = human_tie_margin(dimension, values)
    return [human_preference(a.scores.get(dimension), b.scores.get(dimension), margin) for a, b in comp.pairs], margin


def side_accuracy(p_a: Sequence[float], gold: Sequence[str | None]) -> float:
    """Share of human A/B preferences whose side ``p_a`` picks (p_a == 0.5 counts half); NaN without any."""
    xs = [(p, g) for p, g in zip(p_a, gold) if g in ("A", "B")]
    if not xs:
        return float("nan")
    return float(np.mean([0.5 if p == 0.5 else float((p > 0.5) == (g == "A")) for p, g in xs]))


def pair_winner(a: float, b: float, higher_is_better: bool = True) -> str | None:
    """Which reply of one pair a metric prefers: 'A', 'B', 'tie' (|a - b| <= 1e-9 x max(1, |a|, |b|), the one
    metric tie rule) or None when either score is missing."""
    if a is None or b is None or not (math.isfinite(a) and math.isfinite(b)):
        return None
    if abs(a - b) <= METRIC_TIE_TOL * max(1.0, abs(a), abs(b)):
        return "tie"
    return "A" if (a > b) == higher_is_better else "B"


def context_groups(examples: Sequence[Example]) -> list[tuple[str, ...]]:
    """The resampling unit of every interval: the context as every surface matches it (:func:`core.data.context_key`:
    each turn's words, case and spacing aside, blank turns left out)."""
    return [context_key(ex.context) for ex in examples]
