"""CRS, correlation re-scaling (MME-CRS, METHODS.md §4): weights of sub-metrics per quality dimension.

For dataset i, dimension j and sub-metric k, S_ijk is the Spearman correlation of the (normalized)
sub-metric with the human score. w_ijk = max(S_ijk, 0)^d / sum_k max(S_ijk, 0)^d, so negative
correlations weigh nothing; the weights of a dimension are averaged over the datasets that share it (after
mapping dimension names to a canonical name, ``DIMENSION_MAP``). The paper uses d = 2; this product ships
d = 3, the exponent that leave-one-dataset-out on the 11 DSTC10 dev sets chose among 1, 2, 3, 4 and 6
(docs/mme.md); a weights file records its own ``power``. The score for dimension j is
sum_k w_jk * normalized_score_k.

Dimension names differ between datasets; ``canonical_dimension`` maps them (exact aliases first, then
word stems, then the fallback ``overall``). A canonical dimension without fitted weights falls back to the
``overall`` weights, and without those to a uniform average (= MME-Avg).
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np

POWER = 3  # chosen by leave-one-dataset-out (scripts/train_mme.py report); the paper's d is 2
POWERS_TRIED = (1, 2, 3, 4, 6)
FALLBACK = "overall"

# canonical name -> aliases (compared after lower-casing and turning _ - into spaces)
DIMENSION_MAP: dict[str, tuple[str, ...]] = {
    "overall": ("overall", "overall quality", "quality", "score"),
    "relevance": ("relevance", "relevant", "maintains context", "appropriateness", "appropriate",
                  "semantically appropriate", "correct", "correctness", "sensibleness", "sensible"),
    "coherence": ("coherence", "coherent", "context coherence"),
    "content": ("content", "informativeness", "informative", "uses knowledge", "specific", "specificity"),
    "grammar": ("grammar", "grammaticality", "fluent", "fluency", "language usage", "natural", "naturalness",
                "understandable", "understandability"),
    "engagement": ("engagement", "engaging", "engagingness", "interesting", "interestingness"),
}
# word stems tried when no alias matches (in this order)
_STEMS: tuple[tuple[str, str], ...] = (
    ("coher", "coherence"), ("relev", "relevance"), ("approp", "relevance"), ("context", "relevance"),
    ("gramm", "grammar"), ("fluen", "grammar"), ("natural", "grammar"), ("understand", "grammar"),
    ("engag", "engagement"), ("interest", "engagement"), ("inform", "content"), ("content", "content"),
    ("specific", "content"), ("knowledge", "content"), ("overall", "overall"),
)
_ALIAS = {a: canon for canon, aliases in DIMENSION_MAP.items() for a in aliases}


def _norm_name(name: str) -> str:
    return " ".join(re.sub(r"[_\-]+", " ", name.strip().lower()).split())


def is_alias(name: str) -> bool:
    """Whether ``name`` is one of :data:`DIMENSION_MAP`'s names or aliases (not only matched by a word stem)."""
    return _norm_name(name) in _ALIAS


def dimension_note(name: str, said_as: str) -> str | None:
    """What to say of a dimension asked of MME-CRS (``said_as``: how the user gave it, '--mme-dimension' or
    "options dimension"): that it is unknown and the overall weights are used, or that a word stem of it was read
    as one of :data:`DIMENSION_MAP`'s; None when it is one of its names or aliases."""
    canon, matched = canonical_dimension(name)
    if not matched:
        return (f"{said_as} {name!r} is not a dimension MME-CRS has weights for; it uses its overall weights "
                f"(dimensions: {', '.join(DIMENSION_MAP)})")
    if not is_alias(name):  # matched by a word stem inside it: a typo reads as a dimension
        return f"{said_as} {name!r} is read as {canon!r} (a word stem of it); MME-CRS's dimensions: {', '.join(DIMENSION_MAP)}"
    return None


def canonical_dimension(name: str) -> tuple[str, bool]:
    """(canonical name, matched): ``matched`` is False when the name was unknown and fell back."""
    n = _norm_name(name)
    if n in _ALIAS:
        return _ALIAS[n], True
    for stem, canon in _STEMS:
        if stem in n:
            return canon, True
    return FALLBACK, False


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rho over the rows where both are finite (NaN when fewer than 3 or constant)."""
    from scipy.stats import spearmanr
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    ok = np.isfinite(x) & np.isfinite(y)
    if ok.sum() < 3 or np.ptp(x[ok]) == 0 or np.ptp(y[ok]) == 0:
        return float("nan")
    return float(spearmanr(x[ok], y[ok]).statistic)


def correlations(sets: Mapping[str, Mapping[str, Mapping[str, Sequence[float]]]],
                 submetrics: Sequence[str]) -> dict:
    """``sets[dataset] = {"subs": {sub: scores}, "human": {dimension: scores}}`` ->
    ``{dataset: {dimension: {"canonical", "n", "spearman": {sub: r}}}}`` (the S_ijk of the paper)."""
    out: dict = {}
    for ds, d in sets.items():
        out[ds] = {}
        for dim, human in d["human"].items():
            h = np.asarray(human, dtype=np.float64)
            canon, _ = canonical_dimension(dim)
            out[ds][dim] = {"canonical": canon, "n": int(np.isfinite(h).sum()),
                            "spearman": {k: _round(spearman(d["subs"][k], h)) for k in submetrics}}
    return out


def _round(x: float) -> float | None:
    return None if not math.isfinite(x) else round(x, 6)


def dimension_weights(spearmans: Mapping[str, float | None], power: int = POWER) -> dict[str, float] | None:
    """w_k = max(S_k, 0)^d / sum; None when no sub-metric correlates positively."""
    s = {k: max(v, 0.0) ** power if v is not None and math.isfinite(v) else 0.0 for k, v in spearmans.items()}
    tot = sum(s.values())
    return None if tot <= 0 else {k: v / tot for k, v in s.items()}


def fit_weights(corr: Mapping, submetrics: Sequence[str], exclude: Iterable[str] = (),
                drop: Iterable[str] = (), power: int = POWER) -> dict[str, dict[str, float]]:
    """Average the per-(dataset, dimension) weights over datasets sharing a canonical dimension.

    ``exclude``: datasets left out (leave-one-dataset-out); ``drop``: sub-metrics left out (ablation)."""
    exclude, drop = set(exclude), set(drop)
    subs = [k for k in submetrics if k not in drop]
    acc: dict[str, list[dict[str, float]]] = {}
    for ds in sorted(corr):
        if ds in exclude:
            continue
        for dim in sorted(corr[ds]):
            c = corr[ds][dim]
            w = dimension_weights({k: c["spearman"].get(k) for k in subs}, power)
            if w is not None:
                acc.setdefault(c["canonical"], []).append(w)
    return {canon: {k: round(float(np.mean([w[k] for w in ws])), 6) for k in subs}
            for canon, ws in sorted(acc.items())}


def resolve(dimension: str, weights: Mapping[str, Mapping[str, float]],
            submetrics: Sequence[str]) -> tuple[str, dict[str, float], str]:
    """(canonical dimension, weights, how): how is 'fitted', 'fallback-overall' or 'fallback-uniform'."""
    canon, matched = canonical_dimension(dimension)
    if canon in weights:
        return canon, dict(weights[canon]), "fitted" if matched else "fallback-overall"
    if FALLBACK in weights:
        return canon, dict(weights[FALLBACK]), "fallback-overall"
    return canon, {k: 1.0 / len(submetrics) for k in submetrics}, "fallback-uniform"


def combine(sub_scores: Mapping[str, np.ndarray], weights: Mapping[str, float]) -> np.ndarray:
    """sum_k w_k * score_k (weights renormalized over the sub-metrics present and finite per row), summed
    column by column in the order of ``weights``: each row's value is then the same whatever rows come with it
    (a matrix-vector product let BLAS choose the summation order by the number of rows, so a row scored alone
    and in a file differed in the last digit)."""
    keys = [k for k in weights if k in sub_scores and weights[k] > 0]
    if not keys:
        keys = list(sub_scores)
        weights = {k: 1.0 for k in keys}
    m = np.stack([np.asarray(sub_scores[k], dtype=np.float64) for k in keys], 1)
    w = np.array([weights[k] for k in keys])
    ok = np.isfinite(m)
    num = np.zeros(len(m))
    den = np.zeros(len(m))
    for j, wj in enumerate(w):
        num += np.where(ok[:, j], m[:, j], 0.0) * wj
        den += ok[:, j] * wj
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def load_weights_file(path: str | Path) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))
