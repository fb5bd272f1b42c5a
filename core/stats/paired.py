"""Paired comparison of two systems on the same inputs: the paired bootstrap and the approximate randomization test
of the mean difference, the verdict they give together (:func:`paired_comparison`), whether a comparison can be
significant at all and the smallest difference it detects (:func:`detectable_difference`), and Holm's adjustment
of many p-values (:func:`holm`)."""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from statistics import NormalDist
from typing import Any, Hashable, Sequence

import numpy as np

from core.stats.bootstrap import (MIN_RESAMPLED, RESAMPLE_CHUNK, bootstrap_means, finite_pairs, group_codes,
                                  has_repeats, n_units, percentile_interval)
from core.stats.win_rates import clustered_win_stats


def can_be_significant(units: int, alpha: float, differing: int | None = None) -> bool:
    """Whether a paired comparison over ``units`` contexts (or pairs) can reach p < ``alpha`` at all: a
    bootstrap needs ``MIN_RESAMPLED`` units, and the randomization test's smallest p is ``2 / 2^k`` over the k
    units it can flip (every sign flip enumerated), so 5 units can never give p < 0.05. ``differing``: how many
    of the units have a difference that is not 0 (the only ones a flip moves; ``PairedResult.n_differing``);
    k is ``units`` when it is not given."""
    k = units if differing is None else min(units, differing)
    return units >= MIN_RESAMPLED and 2.0 / 2.0 ** k < alpha


def fewest_differing(alpha: float) -> int:
    """The fewest units with a difference that is not 0 over which a randomization test can reach p < ``alpha``
    (6 at 0.05, 4 at 0.2): the smallest k with 2 / 2^k < alpha."""
    return next(k for k in range(1, 64) if 2.0 / 2.0 ** k < alpha)


POWER = 0.8  # the power every "could go unseen" statement is made at


def detectable_difference(low: float, high: float, level: float = 0.95, power: float = POWER) -> float:
    """The smallest difference a comparison whose ``level`` interval is [low, high] detects with ``power``
    (two-sided, normal approximation): (z_{1-a/2} + z_{power}) x SE with SE = (high - low) / (2 z_{1-a/2}), the
    standard error read off the interval itself (a bootstrap over contexts: clustering is in it). NaN without an
    interval, and for one of no width (differences that do not vary: no standard error to read, so no statement;
    "< 0.000 could go unseen" was said beside identical files)."""
    if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)) or high <= low:
        return math.nan
    z = NormalDist().inv_cdf(1 - (1 - level) / 2)
    return (z + NormalDist().inv_cdf(power)) * (high - low) / (2 * z)



def paired_bootstrap(d: np.ndarray, groups=None, n_boot: int = 2000, seed: int = 13,
                     level: float = 0.95) -> tuple[float, float, float]:
    """Paired bootstrap of the mean difference ``d = a - b``: full-size resamples of pairs (clusters).
    Returns (low, high, two-sided p) with the shift-method p-value (module docstring)."""
    d = np.asarray(d, dtype=np.float64)
    obs = float(d.mean())
    if n_units(groups, len(d)) < MIN_RESAMPLED:
        return math.nan, math.nan, math.nan
    reps = bootstrap_means(d, groups, n_boot, seed)
    lo, hi = percentile_interval(reps, level)
    if obs == 0 and np.allclose(reps, 0):
        return lo, hi, 1.0
    p = (1 + int(np.sum(np.abs(reps - obs) >= abs(obs) - 1e-12))) / (n_boot + 1)
    return lo, hi, float(min(1.0, p))


def approximate_randomization(d: np.ndarray, groups=None, n_perm: int = 2000, seed: int = 13) -> float:
    """Two-sided approximate randomization test of mean(a - b) = 0: each pair (each cluster, when
    ``groups`` repeat) swaps A and B with probability 1/2, i.e. flips the sign of its differences. With
    ``2^G <= n_perm`` units every sign flip is enumerated (the exact test, whose smallest p is ``2 / 2^G``;
    sampling gave less), else ``n_perm`` random flips, ``p = (1 + count) / (n_perm + 1)``."""
    d = np.asarray(d, dtype=np.float64)
    n = len(d)
    if n == 0:
        return 1.0
    obs = abs(d.mean())
    if obs == 0:
        return 1.0
    codes, G = group_codes(groups, n)
    csum = np.bincount(codes, weights=d, minlength=G)  # flipping a cluster flips its sum
    if 2 ** G <= n_perm:  # few clusters: every one of the 2^G sign flips, the exact test
        signs = ((np.arange(2 ** G)[:, None] >> np.arange(G)[None, :]) & 1) * 2 - 1
        stat = np.abs(signs @ csum) / n
        return float(np.mean(stat >= obs - 1e-12 * max(1.0, obs)))
    rng = np.random.default_rng(seed)
    count = 0
    for s in range(0, n_perm, RESAMPLE_CHUNK):
        k = min(RESAMPLE_CHUNK, n_perm - s)
        signs = rng.integers(0, 2, size=(k, G)) * 2 - 1
        stat = np.abs(signs @ csum) / n
        count += int(np.sum(stat >= obs - 1e-12 * max(1.0, obs)))
    return (count + 1) / (n_perm + 1)


@dataclass
class PairedResult:
    """A vs B on one metric over n paired examples. ``diff = mean_a - mean_b`` with its bootstrap
    interval ``[low, high]``; ``wins``/``ties``/``losses`` are from A's side (a win = A better, per
    ``higher_is_better``); ``win_rate = wins / (wins + losses)`` with Wilson interval; ``sign_p`` the sign
    test on the same counts; ``verdict`` "A better" | "B better" | "no significant difference"."""

    mean_a: float
    mean_b: float
    diff: float
    low: float
    high: float
    p_bootstrap: float
    p_randomization: float
    wins: int
    ties: int
    losses: int
    win_rate: float
    win_low: float
    win_high: float
    sign_p: float
    verdict: str
    n: int = 0
    n_dropped: int = 0
    win_rate_ties_split: float = math.nan
    level: float = 0.95
    higher_is_better: bool = True
    resampled: str = "pairs"
    n_groups: int = 0
    details: dict[str, Any] = field(default_factory=dict)
    n_differing: int = 0  # resampled units (contexts, or pairs) whose difference is not zero: all a randomization moves

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


NO_DIFF = "no significant difference"


def paired_comparison(a: Sequence[float], b: Sequence[float], groups: Sequence[Hashable] | None = None,
                      n_boot: int = 2000, n_perm: int = 2000, seed: int = 13, higher_is_better: bool = True,
                      level: float = 0.95, alpha: float | None = None, tie_tol: float = 1e-9,
                      tie_margin: float | None = None) -> PairedResult:
    """Compare paired scores ``a[i]`` vs ``b[i]`` (same input i): means, mean difference a - b with a
    full-size paired bootstrap interval and p-value, approximate randomization p-value, win/tie/loss
    counts, win rate with Wilson interval, sign test (both over contexts when they repeat:
    :func:`clustered_win_stats`), verdict. See the module docstring for every choice.
    A pair is a tie when ``|a - b| <= tie_tol * max(1, |a|, |b|)`` (equal up to rounding), or, with
    ``tie_margin`` (human ratings: a quarter of the scale), when ``|a - b| < tie_margin``."""
    a_arr = np.asarray(a, dtype=np.float64)
    b_arr = np.asarray(b, dtype=np.float64)
    a_arr, b_arr, g, dropped = finite_pairs(a_arr, b_arr, groups)
    alpha = 1 - level if alpha is None else alpha
    n = len(a_arr)
    if n == 0:
        return PairedResult(math.nan, math.nan, math.nan, math.nan, math.nan, math.nan, math.nan, 0, 0, 0,
                            math.nan, 0.0, 1.0, 1.0, NO_DIFF, 0, dropped, math.nan, level, higher_is_better)
    d = a_arr - b_arr
    codes, G = group_codes(g, n)
    clustered = g is not None and has_repeats(codes, G)
    cg = codes if clustered else None
    low, high, p_boot = paired_bootstrap(d, cg, n_boot, seed, level)
    p_rand = approximate_randomization(d, cg, n_perm, seed + 1)
    if tie_margin is not None:
        tie = np.abs(d) < tie_margin - 1e-9
    else:
        tie = np.abs(d) <= tie_tol * np.maximum(1.0, np.maximum(np.abs(a_arr), np.abs(b_arr)))
    better = (d > 0) if higher_is_better else (d < 0)
    ws = clustered_win_stats(np.where(tie, 0, np.where(better, 1, -1)), cg, level, n_boot, seed + 2)
    # a unit moves the randomization statistic when flipping it does, beyond the test's own rounding (1e-12)
    moved = np.where(np.abs(d) <= 1e-12 * np.maximum(1.0, np.maximum(np.abs(a_arr), np.abs(b_arr))), 0.0, d)
    if clustered:  # a context whose differences cancel moves nothing either
        sums, sizes = np.bincount(codes, weights=moved, minlength=G), np.bincount(codes, weights=np.abs(moved), minlength=G)
        n_differing = int(np.sum(np.abs(sums) > 1e-12 * np.maximum(1.0, sizes)))
    else:
        n_differing = int(np.count_nonzero(moved))
    diff = float(d.mean())
    a_ahead = diff > 0 if higher_is_better else diff < 0
    significant = p_rand < alpha and (low > 0 or high < 0) and diff != 0
    verdict = NO_DIFF if not significant else ("A better" if a_ahead else "B better")
    return PairedResult(float(a_arr.mean()), float(b_arr.mean()), diff, low, high, p_boot, p_rand, ws.wins, ws.ties,
                        ws.losses, ws.rate, ws.low, ws.high, ws.sign_p, verdict, n, dropped, ws.ties_split, level,
                        higher_is_better, "contexts" if clustered else "pairs", G, n_differing=n_differing)


# ------------------------------------------------------------------------------------------------
# many comparisons at once


def holm(pvalues: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjustment of ``m`` p-values (Holm 1979): with the p-values sorted ascending,
    ``p_adj(i) = max_{j <= i} min(1, (m - j + 1) * p_(j))``. Rejecting where ``p_adj < alpha`` controls the
    family-wise error rate at ``alpha`` under any dependence between the tests. NaN stays NaN (not counted)."""
    p = np.asarray(pvalues, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    m = len(ok)
    if m == 0:
        return out
    order = ok[np.argsort(p[ok], kind="stable")]
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    out[order] = np.maximum.accumulate(scaled)
    return out
