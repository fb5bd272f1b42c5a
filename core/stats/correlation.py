"""Correlations of a metric with human ratings: per row (:func:`correlate`, scipy's p-value or the cluster bootstrap's)
and per system (:func:`system_correlation`, with the leave-one-system-out range), with percentile bootstrap intervals
whose replicates are computed at once from resample counts (:func:`weighted_pearson`, :func:`weighted_midranks`)."""
from __future__ import annotations

import math
import warnings
from dataclasses import asdict, dataclass
from typing import Any, Hashable, Sequence

import numpy as np

from core.stats.bootstrap import (MIN_RESAMPLED, RESAMPLE_CHUNK, cluster_counts, finite_pairs, group_codes, has_repeats,
                                  percentile_interval)

METHODS = ("spearman", "pearson", "kendall")
FEW_SYSTEMS = 10  # below this many systems a system-level correlation gets a fragility warning


@dataclass
class Correlation:
    """A correlation with its p-value and bootstrap interval.

    ``p_method`` is "scipy" (rows independent) or, with clusters resampled, which bound gave p: "bootstrap" (the
    percentile bootstrap's), "bootstrap t" (:func:`clustered_t`) or "fisher z" (:func:`fisher_z`); the interval is
    then the widest of the three. ``resampled`` is "rows" or "contexts"; ``n_groups`` counts clusters."""

    r: float
    p: float
    low: float
    high: float
    n: int
    method: str = "spearman"
    level: float = 0.95
    n_groups: int = 0
    p_method: str = "scipy"
    resampled: str = "rows"
    p_floor: bool = False  # True: no resample crossed zero, p is the resampling's floor 1/(B+1): at most this

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def weighted_pearson(x: np.ndarray, y: np.ndarray, W: np.ndarray) -> np.ndarray:
    """Pearson r of each replicate (row of ``W`` = how often each row was drawn); x, y may be (n,) or
    (k, n) (per-replicate values such as ranks)."""
    sw = W.sum(1)
    xw = x if x.ndim == 2 else np.broadcast_to(x, W.shape)
    yw = y if y.ndim == 2 else np.broadcast_to(y, W.shape)
    mx = (W * xw).sum(1) / sw
    my = (W * yw).sum(1) / sw
    dx = xw - mx[:, None]
    dy = yw - my[:, None]
    cov = (W * dx * dy).sum(1)
    vx = (W * dx * dx).sum(1)
    vy = (W * dy * dy).sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = cov / np.sqrt(vx * vy)
    r[(vx <= 1e-12 * np.maximum(1, (W * xw * xw).sum(1))) | (vy <= 1e-12 * np.maximum(1, (W * yw * yw).sum(1)))] = np.nan
    return np.clip(r, -1, 1)


def weighted_midranks(x: np.ndarray, W: np.ndarray) -> np.ndarray:
    """Average ranks of ``x`` inside each replicate sample, where row i appears W[k, i] times: exactly
    the ranks scipy.stats.rankdata would give the expanded sample (ties get the mean rank)."""
    order = np.argsort(x, kind="stable")
    xs = x[order]
    new = np.r_[True, xs[1:] != xs[:-1]]
    starts = np.flatnonzero(new)
    gid = np.cumsum(new) - 1
    Wg = np.add.reduceat(W[:, order], starts, axis=1)
    mid = np.cumsum(Wg, axis=1) - Wg + (Wg + 1) / 2
    ranks = np.empty_like(W)
    ranks[:, order] = mid[:, gid]
    return ranks


def point_correlation(x: np.ndarray, y: np.ndarray, method: str) -> tuple[float, float]:
    from scipy import stats as sps
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan, math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if method == "pearson":
            res = sps.pearsonr(x, y)
        elif method == "spearman":
            res = sps.spearmanr(x, y)
        elif method == "kendall":
            res = sps.kendalltau(x, y)  # tau-b: handles ties
        else:
            raise ValueError(f"unknown correlation {method!r}; choose one of {METHODS}")
    return float(res.statistic), float(res.pvalue)


def bootstrap_correlations(x: np.ndarray, y: np.ndarray, method: str, groups=None, n_boot: int = 1000,
                           seed: int = 13) -> np.ndarray:
    """``n_boot`` replicates of the correlation, resampling rows or clusters, full size each time."""
    codes, G = group_codes(groups, len(x))
    rng = np.random.default_rng(seed)
    out = np.empty(n_boot)
    for s in range(0, n_boot, RESAMPLE_CHUNK):
        k = min(RESAMPLE_CHUNK, n_boot - s)
        W = cluster_counts(rng, G, k)[:, codes]
        if method == "pearson":
            out[s:s + k] = weighted_pearson(x, y, W)
        elif method == "spearman":
            out[s:s + k] = weighted_pearson(weighted_midranks(x, W), weighted_midranks(y, W), W)
        elif method == "kendall":
            for j in range(k):
                reps = W[j].astype(np.int64)
                xr, yr = np.repeat(x, reps), np.repeat(y, reps)
                out[s + j] = point_correlation(xr, yr, "kendall")[0] if len(xr) >= 3 else math.nan
        else:
            raise ValueError(f"unknown correlation {method!r}; choose one of {METHODS}")
    return out


def correlate(x: Sequence[float], y: Sequence[float], method: str = "spearman",
              groups: Sequence[Hashable] | None = None, n_boot: int = 1000, seed: int = 13,
              level: float = 0.95) -> Correlation:
    """Correlation of ``x`` and ``y`` (pairs with a NaN dropped) with p-value and bootstrap interval.

    ``groups`` gives a cluster id per row (e.g. the context): when ids repeat, clusters are resampled,
    not rows, and the p-value comes from the cluster bootstrap (see module docstring)."""
    if method not in METHODS:
        raise ValueError(f"unknown correlation {method!r}; choose one of {METHODS}")
    x, y, g, _ = finite_pairs(x, y, groups)
    n = len(x)
    r, p = point_correlation(x, y, method)
    codes, G = group_codes(g, n)
    clustered = g is not None and has_repeats(codes, G)
    if math.isnan(r) or n_boot <= 0 or G < MIN_RESAMPLED:
        few = G < MIN_RESAMPLED and not math.isnan(r) and n_boot > 0
        return Correlation(r, math.nan if (few and clustered) else p, math.nan, math.nan, n, method, level, G,
                           "too few contexts" if (few and clustered) else "scipy", "contexts" if clustered else "rows")
    reps = bootstrap_correlations(x, y, method, codes if clustered else None, n_boot, seed)
    lo, hi = percentile_interval(reps, level)
    p_method, floor = "scipy", False
    if clustered:
        fin = reps[np.isfinite(reps)]
        if len(fin):
            p = float(min(1.0, 2 * min((fin <= 0).mean(), (fin >= 0).mean())))
            floor = p < 1.0 / (len(fin) + 1)
            p = max(p, 1.0 / (len(fin) + 1))
            p_method = "bootstrap"
            # a percentile bootstrap over few contexts runs liberal: never a narrower interval or a smaller p than
            # its spread read with the small-sample t (clustered_t), or than Fisher's z gives the rows as if
            # independent (rows that share a context carry no more evidence than as many independent rows)
            for bound, (b_lo, b_hi, b_p) in (("bootstrap t", clustered_t(r, fin, G, level)),
                                             ("fisher z", fisher_z(r, n, method, level))):
                if math.isfinite(b_p) and b_p > p:
                    p, floor, p_method = b_p, False, bound
                lo, hi = min(lo, b_lo), max(hi, b_hi)
    return Correlation(r, p, lo, hi, n, method, level, G, p_method, "contexts" if clustered else "rows",
                       floor)


def clustered_t(r: float, reps: np.ndarray, n_groups: int, level: float) -> tuple[float, float, float]:
    """The interval and two-sided p of ``r`` from its cluster bootstrap replicates ``reps`` (finite) read as a
    standard error: on Fisher's z scale, ``se = sd(atanh(r*)) * sqrt(G / (G - 1))`` and ``atanh(r) / se`` against
    Student's t with G - 1 degrees of freedom (the small-sample correction of cluster-robust errors, G the
    contexts): p < 1 - level exactly when the interval excludes 0. NaN where the replicates do not vary."""
    from scipy import stats as sps
    if not math.isfinite(r) or abs(r) >= 1 or n_groups < 2 or len(reps) < 2:
        return math.nan, math.nan, math.nan
    z = np.arctanh(np.clip(reps, -1 + 1e-9, 1 - 1e-9))
    se = float(np.std(z, ddof=1)) * math.sqrt(n_groups / (n_groups - 1))
    if not se > 0:
        return math.nan, math.nan, math.nan
    z0, q = math.atanh(r), float(sps.t.ppf(0.5 + level / 2, n_groups - 1))
    return math.tanh(z0 - q * se), math.tanh(z0 + q * se), float(2 * sps.t.sf(abs(z0) / se, n_groups - 1))


def fisher_z(r: float, n: int, method: str, level: float) -> tuple[float, float, float]:
    """The interval and two-sided p of a correlation ``r`` of ``n`` independent rows by Fisher's z, ``atanh(r)``,
    normal with standard error ``1 / sqrt(n - 3)`` for Pearson, ``sqrt((1 + r^2 / 2) / (n - 3))`` for Spearman
    (Bonett & Wright 2000) and ``sqrt(0.437 / (n - 4))`` for Kendall (Fieller, Hartley & Pearson 1957): p <
    1 - level exactly when the interval excludes 0. NaN for fewer than 5 rows; |r| = 1 has the interval [r, r]
    and p 0."""
    from statistics import NormalDist
    if not math.isfinite(r) or n < 5:
        return math.nan, math.nan, math.nan
    if abs(r) >= 1:
        return r, r, 0.0
    se = {"pearson": 1 / math.sqrt(n - 3), "spearman": math.sqrt((1 + r * r / 2) / (n - 3)),
          "kendall": math.sqrt(0.437 / (n - 4))}[method]
    z, q = math.atanh(r), NormalDist().inv_cdf(0.5 + level / 2)
    p = 2 * NormalDist().cdf(-abs(z) / se)
    return math.tanh(z - q * se), math.tanh(z + q * se), p


@dataclass
class SystemCorrelation:
    """Correlation of per-system means. ``loo_min``/``loo_max``: the range of r when each system in
    turn is left out (how much one system moves it). The interval resamples items (contexts) and
    recomputes the system means: it shows item-sampling noise, not which systems happened to be chosen."""

    r: float
    p: float
    low: float
    high: float
    n_systems: int
    method: str
    systems: list[str]
    metric_means: list[float]
    human_means: list[float]
    loo_min: float
    loo_max: float
    warning: str | None = None


def _rowwise_corr(A: np.ndarray, C: np.ndarray, method: str) -> np.ndarray:
    """Correlation of each row of A with the same row of C (few columns: the systems); NaN where a row
    has a missing system or no variance."""
    ok = np.isfinite(A).all(1) & np.isfinite(C).all(1)
    out = np.full(len(A), np.nan)
    A, C = A[ok], C[ok]
    if len(A) == 0:
        return out
    if method == "kendall":  # tau-b over all pairs of systems
        i, j = np.triu_indices(A.shape[1], 1)
        sa, sc = np.sign(A[:, i] - A[:, j]), np.sign(C[:, i] - C[:, j])
        with np.errstate(invalid="ignore", divide="ignore"):
            r = (sa * sc).sum(1) / np.sqrt((sa != 0).sum(1) * (sc != 0).sum(1))
    else:
        if method == "spearman":
            from scipy.stats import rankdata
            A, C = rankdata(A, axis=1), rankdata(C, axis=1)
        ones = np.ones_like(A)
        r = weighted_pearson(A, C, ones)
    out[ok] = r
    return out


def exact_permutation_p(x: np.ndarray, y: np.ndarray, method: str) -> float:
    """Two-sided exact permutation p-value of ``method``'s correlation of ``x`` and ``y``: the share of all n!
    orderings of ``y`` whose statistic is at least as far from 0 as the observed one (n <= 8). Spearman on ranks,
    Pearson on the values, Kendall by its concordance sum (its denominator does not change under a reordering)."""
    from itertools import permutations

    from scipy.stats import rankdata
    perms = np.array(list(permutations(range(len(y)))))
    if method == "kendall":
        i, j = np.triu_indices(len(x), 1)
        sx = np.sign(x[i] - x[j])
        reps = np.sign(y[perms][:, i] - y[perms][:, j]) @ sx
        obs = float(np.sign(y[i] - y[j]) @ sx)
    else:
        a, b = (rankdata(x), rankdata(y)) if method == "spearman" else (np.asarray(x, float), np.asarray(y, float))
        reps = _rowwise_corr(np.broadcast_to(a, perms.shape), b[perms], "pearson")
        obs = _rowwise_corr(a[None], b[None], "pearson")[0]
    return float(np.mean(np.abs(reps) >= abs(obs) - 1e-12))


def system_correlation(metric: Sequence[float], human: Sequence[float], systems: Sequence[str],
                       method: str = "spearman", items: Sequence[Hashable] | None = None,
                       n_boot: int = 1000, seed: int = 13, level: float = 0.95) -> SystemCorrelation:
    """System-level correlation: mean metric vs mean human score per system (rows with a NaN dropped).

    ``items`` (e.g. context ids shared by the systems) are resampled for the interval; without them rows
    are resampled within each system. A warning is attached when fewer than ``FEW_SYSTEMS`` systems."""
    m = np.asarray(metric, dtype=np.float64)
    h = np.asarray(human, dtype=np.float64)
    keep = np.isfinite(m) & np.isfinite(h)
    sys_arr = np.asarray(list(systems), dtype=object)[keep]
    m, h = m[keep], h[keep]
    it = np.asarray(list(items), dtype=object)[keep] if items is not None else None
    names = list(dict.fromkeys(sys_arr.tolist()))
    scode = np.array([names.index(s) for s in sys_arr]) if len(names) else np.zeros(0, int)
    S = len(names)

    def means(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        cnt = np.bincount(scode, weights=w, minlength=S)
        with np.errstate(invalid="ignore", divide="ignore"):
            return (np.bincount(scode, weights=w * m, minlength=S) / cnt,
                    np.bincount(scode, weights=w * h, minlength=S) / cnt)

    mm, hm = means(np.ones(len(m)))
    r, p = point_correlation(mm, hm, method) if S >= 3 else (math.nan, math.nan)
    loo = []
    if S >= 4:
        for j in range(S):
            sel = np.arange(S) != j
            loo.append(point_correlation(mm[sel], hm[sel], method)[0])
    loo_arr = np.array([v for v in loo if np.isfinite(v)])
    if S >= 3 and np.isfinite(r) and S <= 8:  # scipy's approximations are meaningless with so few points
        p = exact_permutation_p(mm, hm, method)
    lo = hi = math.nan
    if S >= 3 and n_boot > 0 and np.isfinite(r):
        rng = np.random.default_rng(seed)
        onehot = np.zeros((len(m), S))
        onehot[np.arange(len(m)), scode] = 1.0
        reps = np.empty(n_boot)
        if it is not None:
            codes, G = group_codes(it.tolist(), len(m))
        for s0 in range(0, n_boot, RESAMPLE_CHUNK):
            k = min(RESAMPLE_CHUNK, n_boot - s0)
            if it is not None:
                W = cluster_counts(rng, G, k)[:, codes]
            else:  # no shared items: resample rows within each system
                W = np.zeros((k, len(m)))
                for j in range(S):
                    rows = np.flatnonzero(scode == j)
                    draw = rows[rng.integers(0, len(rows), size=(k, len(rows)))]
                    W += np.stack([np.bincount(dr, minlength=len(m)) for dr in draw])
            cnt = W @ onehot
            with np.errstate(invalid="ignore", divide="ignore"):
                A, C = (W * m) @ onehot / cnt, (W * h) @ onehot / cnt
            reps[s0:s0 + k] = _rowwise_corr(A, C, method)
        if it is None or G >= MIN_RESAMPLED:
            lo, hi = percentile_interval(reps, level)
    warn = None
    if S < FEW_SYSTEMS:
        warn = (f"only {S} systems: a system-level correlation from {S} points is fragile "
                f"(leaving one system out moves r between {np.min(loo_arr):.2f} and {np.max(loo_arr):.2f})"
                if len(loo_arr) else f"only {S} systems: a system-level correlation from {S} points is fragile")
    return SystemCorrelation(float(r), float(p), lo, hi, S, method, names, mm.tolist(), hm.tolist(),
                             float(loo_arr.min()) if len(loo_arr) else math.nan,
                             float(loo_arr.max()) if len(loo_arr) else math.nan, warn)
