"""Statistics you can trust: correlations with bootstrap intervals, paired significance tests, win rates.

Everything here works on plain float arrays (one value per example), so resampling never re-runs a
metric (sacrebleu's design). All resampling is vectorized with numpy and seeded (``seed=13`` default).

Choices, fixed and tested (tests/test_stats.py):

- **Intervals** are percentile bootstrap intervals (Efron & Tibshirani 1993, ch. 13) at ``level``.
  Every bootstrap replicate draws a sample *of the full size* (n of n rows, or G of G clusters), never
  half the data (compare-mt's paired bootstrap draws half).
- **Clusters** (``groups=``, e.g. one id per dialogue context): when several rows share a context the
  rows are not independent, so the bootstrap resamples whole clusters (the cluster bootstrap, Field &
  Welsh 2007) and randomization flips whole clusters. With clusters the interval is wider, as it should
  be (tested on simulated clustered data).
- **Correlation p-values**: without clusters, scipy's (Pearson: exact t / beta distribution; Spearman:
  t approximation; Kendall: exact for small n without ties, else normal); these assume independent rows.
  With clusters they would be too small, so the p-value is the bootstrap one instead:
  ``p = min(1, 2 * min(P*(r <= 0), P*(r >= 0)))`` over the cluster replicates (consistent with the
  interval: p < 1 - level exactly when the interval excludes 0). ``Correlation.p_method`` says which.
- **Paired comparison** of systems A and B on the same inputs: ``diff = mean_a - mean_b``.
  *Paired bootstrap*: resample pairs (or clusters) n of n, percentile interval of the mean difference,
  two-sided p-value by the shift method ``p = (1 + #{|d* - d| >= |d|}) / (B + 1)`` (the bootstrap
  distribution centred under H0; Berg-Kirkpatrick et al. 2012 use the one-sided ``d* > 2d``).
  *Approximate randomization* (Noreen 1989; Riezler & Maxwell 2005): swap A and B within each pair (each
  cluster) with probability 1/2; ``p = (1 + #{|mean(d_perm)| >= |d|}) / (R + 1)``, or, when the G units
  have no more than R sign flips (``2^G <= R``), all of them enumerated: the exact test.
- **Ties** (``|a_i - b_i| <= tie_tol``) are ties, never wins. ``win_rate = wins / (wins + losses)``
  (ties excluded), its Wilson score interval, and the two-sided exact **sign test** on the same
  ``wins`` out of ``wins + losses`` (the standard way to treat zero differences, Dixon & Mood 1946).
  ``win_rate_ties_split = (wins + ties / 2) / n`` is also reported for readers who want ties counted.
- **Verdict**: "A better" / "B better" only when the randomization p-value is below ``alpha`` *and* the
  bootstrap interval excludes 0 (the two agree almost always; requiring both is the conservative reading);
  else "no significant difference". With ``higher_is_better=False`` (e.g. perplexity) the lower mean wins.
- Rows where either value is NaN (a metric that cannot apply) are dropped and counted in ``n_dropped``.
- **Too few units to resample**: a bootstrap over fewer than ``MIN_RESAMPLED`` = 5 units (contexts when they
  repeat, else rows) has at most a handful of distinct resamples (one context: every resample is the data
  itself, which gave a zero-width interval and p = 1/(B+1), "p < 0.001", from a single context). There is then
  no bootstrap interval and no bootstrap p-value (NaN, shown as "-"), so no verdict names a winner; the
  randomization p-value (exact in its coarseness: 2^G sign flips) and scipy's unclustered correlation p stay.

Pure functions on arrays: the verdict that uses them is ``core/verdict.py``. scipy.stats is imported only where it
is needed (correlations; a sign test over more than 20,000 pairs): importing it took 1.2 s of the demo's first visit
on 2 AVX2 cores, so the verdict's Wilson bound and sign test use the standard library (:func:`wilson_bounds`,
:func:`sign_test`).
"""
from __future__ import annotations

import math
import operator
import warnings
from dataclasses import asdict, dataclass, field
from statistics import NormalDist
from typing import Any, Hashable, Sequence

import numpy as np

METHODS = ("spearman", "pearson", "kendall")
FEW_SYSTEMS = 10  # below this many systems a system-level correlation gets a fragility warning
_CHUNK = 256  # bootstrap replicates drawn at once (bounds memory at ~CHUNK x n floats per array)
MIN_RESAMPLED = 5  # fewer units (contexts or rows) than this: no bootstrap interval or p (module docstring)
MIN_BOOT = 100  # fewest bootstrap resamples a reported interval may rest on (check_settings)
MAX_RESAMPLES = 1_000_000  # most resamples or permutations one setting may ask for (check_settings)


def can_be_significant(units: int, alpha: float) -> bool:
    """Whether a paired comparison over ``units`` contexts (or pairs) can reach p < ``alpha`` at all: a
    bootstrap needs ``MIN_RESAMPLED`` units, and the randomization test's smallest p is ``2 / 2^units`` (every
    sign flip enumerated), so 5 units can never give p < 0.05."""
    return units >= MIN_RESAMPLED and 2.0 / 2.0 ** units < alpha


def check_settings(n_boot: int, n_perm: int | None = None, level: float | None = None,
                   seed: int | None = None) -> None:
    """Refuse settings that give no usable interval or p-value, with a ``ValueError`` naming the setting:
    ``n_boot`` below :data:`MIN_BOOT` (a 95 % percentile interval from 1-99 replicates is a couple of order
    statistics, and can exclude the mean itself), ``n_perm`` below 1, a ``level`` not strictly between 0 and 1
    (0.95, not 95), a negative ``seed``, and more than :data:`MAX_RESAMPLES` resamples or permutations (10^8 held
    gigabytes for minutes; beyond 10^5 the Monte Carlo error is far below what the data allow). The command line
    refuses the same values before anything is scored."""
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < MIN_BOOT:
        raise ValueError(f"n_boot={n_boot!r}: a bootstrap interval needs a whole number of at least {MIN_BOOT} "
                         "resamples (the default is 2,000; sacrebleu and COMET use 1,000)")
    if n_perm is not None and (isinstance(n_perm, bool) or not isinstance(n_perm, (int, np.integer)) or n_perm < 1):
        raise ValueError(f"n_perm={n_perm!r}: a randomization test needs a whole number of at least 1 permutation")
    for name, n in (("n_boot", n_boot), ("n_perm", n_perm)):
        if n is not None and n > MAX_RESAMPLES:
            raise ValueError(f"{name}={n!r}: at most {MAX_RESAMPLES:,} (the default is 2,000; 100,000 already makes "
                             "the Monte Carlo error negligible)")
    if level is not None and not (isinstance(level, (int, float)) and math.isfinite(level) and 0 < level < 1):
        raise ValueError(f"level={level!r}: an interval level lies strictly between 0 and 1 (0.95 for 95 %)")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0):
        raise ValueError(f"seed={seed!r}: a seed is a whole number >= 0")


# ------------------------------------------------------------------------------------------------
# helpers


def group_codes(groups: Sequence[Hashable] | np.ndarray | None, n: int) -> tuple[np.ndarray, int]:
    """Integer cluster codes 0..G-1 for ``groups`` (None: every row its own cluster)."""
    if groups is None:
        return np.arange(n), n
    g = list(groups) if not isinstance(groups, np.ndarray) else groups
    if len(g) != n:
        raise ValueError(f"groups has {len(g)} entries for {n} values")
    codes: dict[Any, int] = {}
    out = np.empty(n, dtype=np.int64)
    for i, k in enumerate(g):
        k = tuple(k) if isinstance(k, list) else k
        out[i] = codes.setdefault(k, len(codes))
    return out, len(codes)


def _n_units(groups, n: int) -> int:
    """How many units a bootstrap resamples: distinct groups, or rows without groups."""
    return n if groups is None else group_codes(groups, n)[1]


def _has_repeats(codes: np.ndarray, n_groups: int) -> bool:
    return n_groups < len(codes)


def _percentile_interval(reps: np.ndarray, level: float) -> tuple[float, float]:
    reps = reps[np.isfinite(reps)]
    if len(reps) == 0:
        return math.nan, math.nan
    alpha = (1 - level) / 2
    lo, hi = np.quantile(reps, [alpha, 1 - alpha])
    return float(lo), float(hi)


def _cluster_counts(rng: np.random.Generator, n_groups: int, n_rep: int) -> np.ndarray:
    """(n_rep, G) how often each cluster is drawn when G clusters are drawn with replacement."""
    idx = rng.integers(0, n_groups, size=(n_rep, n_groups))
    flat = (idx + np.arange(n_rep)[:, None] * n_groups).ravel()
    return np.bincount(flat, minlength=n_rep * n_groups).reshape(n_rep, n_groups).astype(np.float64)


def _clean_pair(x: Sequence[float], y: Sequence[float], groups) -> tuple[np.ndarray, np.ndarray, Any, int]:
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"x and y must be 1-d of equal length, got {x.shape} and {y.shape}")
    keep = np.isfinite(x) & np.isfinite(y)
    g = None
    if groups is not None:
        g = list(groups)
        if len(g) != len(x):
            raise ValueError(f"groups has {len(g)} entries for {len(x)} values")
        g = [k for k, ok in zip(g, keep) if ok]
    return x[keep], y[keep], g, int((~keep).sum())


# ------------------------------------------------------------------------------------------------
# means


def mean_ci(x: Sequence[float], level: float = 0.95, n_boot: int = 1000, seed: int = 13,
            groups: Sequence[Hashable] | None = None) -> tuple[float, float, float]:
    """Mean of ``x`` (NaNs dropped) and its percentile bootstrap interval; clusters resampled when
    ``groups`` is given. (ChatEval divides the standard deviation by n instead of sqrt(n); a bootstrap
    needs neither.)"""
    x = np.asarray(x, dtype=np.float64)
    keep = np.isfinite(x)
    g = [k for k, ok in zip(groups, keep) if ok] if groups is not None else None
    x = x[keep]
    if len(x) == 0:
        return math.nan, math.nan, math.nan
    m = float(x.mean())
    if _n_units(g, len(x)) < MIN_RESAMPLED:
        return m, math.nan, math.nan
    reps = bootstrap_means(x, g, n_boot, seed)
    lo, hi = _percentile_interval(reps, level)
    return m, lo, hi


def bootstrap_means(x: np.ndarray, groups=None, n_boot: int = 1000, seed: int = 13) -> np.ndarray:
    """``n_boot`` bootstrap replicates of the mean of ``x``: n of n rows, or G of G clusters (then the
    replicate is the mean over all rows of the drawn clusters, each copy counted)."""
    x = np.asarray(x, dtype=np.float64)
    codes, G = group_codes(groups, len(x))
    rng = np.random.default_rng(seed)
    sums = np.bincount(codes, weights=x, minlength=G)
    sizes = np.bincount(codes, minlength=G).astype(np.float64)
    out = np.empty(n_boot)
    for s in range(0, n_boot, _CHUNK):
        k = min(_CHUNK, n_boot - s)
        idx = rng.integers(0, G, size=(k, G))
        out[s:s + k] = sums[idx].sum(1) / sizes[idx].sum(1)
    return out


# ------------------------------------------------------------------------------------------------
# correlations


@dataclass
class Correlation:
    """A correlation with its p-value and bootstrap interval.

    ``p_method`` is "scipy" (rows independent) or "bootstrap" (clusters resampled); ``resampled`` is
    "rows" or "contexts"; ``n_groups`` counts clusters."""

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

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _weighted_pearson(x: np.ndarray, y: np.ndarray, W: np.ndarray) -> np.ndarray:
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


def _weighted_midranks(x: np.ndarray, W: np.ndarray) -> np.ndarray:
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


def _point_corr(x: np.ndarray, y: np.ndarray, method: str) -> tuple[float, float]:
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
    for s in range(0, n_boot, _CHUNK):
        k = min(_CHUNK, n_boot - s)
        W = _cluster_counts(rng, G, k)[:, codes]
        if method == "pearson":
            out[s:s + k] = _weighted_pearson(x, y, W)
        elif method == "spearman":
            out[s:s + k] = _weighted_pearson(_weighted_midranks(x, W), _weighted_midranks(y, W), W)
        elif method == "kendall":
            for j in range(k):
                reps = W[j].astype(np.int64)
                xr, yr = np.repeat(x, reps), np.repeat(y, reps)
                out[s + j] = _point_corr(xr, yr, "kendall")[0] if len(xr) >= 3 else math.nan
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
    x, y, g, _ = _clean_pair(x, y, groups)
    n = len(x)
    r, p = _point_corr(x, y, method)
    codes, G = group_codes(g, n)
    clustered = g is not None and _has_repeats(codes, G)
    if math.isnan(r) or n_boot <= 0 or G < MIN_RESAMPLED:
        few = G < MIN_RESAMPLED and not math.isnan(r) and n_boot > 0
        return Correlation(r, math.nan if (few and clustered) else p, math.nan, math.nan, n, method, level, G,
                           "too few contexts" if (few and clustered) else "scipy", "contexts" if clustered else "rows")
    reps = bootstrap_correlations(x, y, method, codes if clustered else None, n_boot, seed)
    lo, hi = _percentile_interval(reps, level)
    p_method = "scipy"
    if clustered:
        fin = reps[np.isfinite(reps)]
        if len(fin):
            p = float(min(1.0, 2 * min((fin <= 0).mean(), (fin >= 0).mean())))
            p = max(p, 1.0 / (len(fin) + 1))
            p_method = "bootstrap"
    return Correlation(r, p, lo, hi, n, method, level, G, p_method, "contexts" if clustered else "rows")


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
        r = _weighted_pearson(A, C, ones)
    out[ok] = r
    return out


def _exact_spearman_p(x: np.ndarray, y: np.ndarray) -> float:
    """Two-sided exact permutation p-value of Spearman's rho (all n! orderings; n <= 8)."""
    from itertools import permutations

    from scipy.stats import rankdata
    rx, ry = rankdata(x), rankdata(y)
    perms = np.array(list(permutations(range(len(y)))))
    reps = _rowwise_corr(np.broadcast_to(rx, perms.shape), ry[perms], "pearson")
    obs = _rowwise_corr(rx[None], ry[None], "pearson")[0]
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
    r, p = _point_corr(mm, hm, method) if S >= 3 else (math.nan, math.nan)
    loo = []
    if S >= 4:
        for j in range(S):
            sel = np.arange(S) != j
            loo.append(_point_corr(mm[sel], hm[sel], method)[0])
    loo_arr = np.array([v for v in loo if np.isfinite(v)])
    if S >= 3 and np.isfinite(r) and method == "spearman" and S <= 8:
        p = _exact_spearman_p(mm, hm)  # scipy's t approximation is meaningless with so few points
    lo = hi = math.nan
    if S >= 3 and n_boot > 0 and np.isfinite(r):
        rng = np.random.default_rng(seed)
        onehot = np.zeros((len(m), S))
        onehot[np.arange(len(m)), scode] = 1.0
        reps = np.empty(n_boot)
        if it is not None:
            codes, G = group_codes(it.tolist(), len(m))
        for s0 in range(0, n_boot, _CHUNK):
            k = min(_CHUNK, n_boot - s0)
            if it is not None:
                W = _cluster_counts(rng, G, k)[:, codes]
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
            lo, hi = _percentile_interval(reps, level)
    warn = None
    if S < FEW_SYSTEMS:
        warn = (f"only {S} systems: a system-level correlation from {S} points is fragile "
                f"(leaving one system out moves r between {np.min(loo_arr):.2f} and {np.max(loo_arr):.2f})"
                if len(loo_arr) else f"only {S} systems: a system-level correlation from {S} points is fragile")
    return SystemCorrelation(float(r), float(p), lo, hi, S, method, names, mm.tolist(), hm.tolist(),
                             float(loo_arr.min()) if len(loo_arr) else math.nan,
                             float(loo_arr.max()) if len(loo_arr) else math.nan, warn)


# ------------------------------------------------------------------------------------------------
# paired comparison


POWER = 0.8  # the power every "could go unseen" statement is made at


def detectable_difference(low: float, high: float, level: float = 0.95, power: float = POWER) -> float:
    """The smallest difference a comparison whose ``level`` interval is [low, high] detects with ``power``
    (two-sided, normal approximation): (z_{1-a/2} + z_{power}) x SE with SE = (high - low) / (2 z_{1-a/2}), the
    standard error read off the interval itself (a bootstrap over contexts: clustering is in it). NaN without an
    interval."""
    if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
        return math.nan
    z = NormalDist().inv_cdf(1 - (1 - level) / 2)
    return (z + NormalDist().inv_cdf(power)) * (high - low) / (2 * z)


def wilson_interval(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a proportion k/n (Wilson 1927); (0, 1) when n == 0."""
    if n <= 0:
        return 0.0, 1.0
    if not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    return wilson_bounds(k / n, n, level)


def wilson_bounds(phat: float, n: int, level: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval around a proportion ``phat`` observed on ``n`` independent trials; exactly 0
    (1) at its lower (upper) end when ``phat`` is 0 (1), not a rounding error such as 2.8e-17."""
    z = NormalDist().inv_cdf(1 - (1 - level) / 2)
    denom = 1 + z * z / n
    centre = (phat + z * z / (2 * n)) / denom
    half = z * math.sqrt(max(0.0, phat * (1 - phat)) / n + z * z / (4 * n * n)) / denom
    return (0.0 if phat <= 0 else max(0.0, centre - half)), (1.0 if phat >= 1 else min(1.0, centre + half))


@dataclass
class WinStats:
    """A's wins, ties and losses over n paired items: ``rate`` = wins / (wins + losses) (a tie is never a win)
    with its Wilson interval [``low``, ``high``], ``sign_p`` the two-sided exact sign test on the same counts,
    and ``ties_split`` = (wins + ties / 2) / n for readers who count a tie as half."""

    wins: int
    ties: int
    losses: int
    rate: float
    low: float
    high: float
    sign_p: float
    ties_split: float


def win_stats(wins: int, ties: int, losses: int, level: float = 0.95) -> WinStats:
    decided = wins + losses
    n = decided + ties
    low, high = wilson_interval(wins, decided, level)
    return WinStats(wins, ties, losses, wins / decided if decided else math.nan, low, high, sign_test(wins, losses),
                    (wins + ties / 2) / n if n else math.nan)


def clustered_win_stats(outcome: Sequence[int], groups: Sequence[Hashable] | None = None, level: float = 0.95,
                        n_boot: int = 2000, seed: int = 13) -> WinStats:
    """:class:`WinStats` of per-pair outcomes (+1: A wins, 0: tie, -1: A loses) whose pairs may share a context
    (``groups``). Without repeated contexts it is :func:`win_stats`. With them the pairs of one context are not
    independent, so the counts, rate and ties-split stay the pairs' but the test and the interval count
    contexts: the sign test is on each context's net outcome (more wins than losses there: a win; as many: a
    tie, left out), the sign test on cluster totals; the rate's interval is the percentile bootstrap of
    wins / (wins + losses) over resampled contexts (none below ``MIN_RESAMPLED`` contexts), widened where needed
    to the Wilson interval of independent pairs: pairs that share a context carry no more information than
    independent ones, and a bootstrap of outcomes that all go one way cannot vary (it gave [1.0, 1.0] for 12
    wins in 6 contexts, where Wilson on the pairs gives [0.76, 1]). So eight contexts cannot give a sign p
    below 2/2^8, however many pairs each holds."""
    o = np.sign(np.asarray(outcome, dtype=np.float64))
    wins, losses = int(np.sum(o > 0)), int(np.sum(o < 0))
    ties = len(o) - wins - losses
    if groups is None:
        return win_stats(wins, ties, losses, level)
    codes, G = group_codes(groups, len(o))
    if not _has_repeats(codes, G):
        return win_stats(wins, ties, losses, level)
    net = np.bincount(codes, weights=o, minlength=G)
    sign_p = sign_test(int(np.sum(net > 0)), int(np.sum(net < 0)))
    low = high = math.nan
    if G >= MIN_RESAMPLED and wins + losses:
        won = np.bincount(codes, weights=(o > 0).astype(np.float64), minlength=G)
        decided = np.bincount(codes, weights=(o != 0).astype(np.float64), minlength=G)
        rng = np.random.default_rng(seed)
        reps = np.empty(n_boot)
        for s0 in range(0, n_boot, _CHUNK):
            k = min(_CHUNK, n_boot - s0)
            W = _cluster_counts(rng, G, k)
            with np.errstate(invalid="ignore", divide="ignore"):
                reps[s0:s0 + k] = (W @ won) / (W @ decided)
        low, high = _percentile_interval(reps, level)
        w_low, w_high = wilson_interval(wins, wins + losses, level)
        low, high = min(low, w_low), max(high, w_high)
    n = len(o)
    return WinStats(wins, ties, losses, wins / (wins + losses) if wins + losses else math.nan, low, high, sign_p,
                    (wins + ties / 2) / n if n else math.nan)


EXACT_SIGN_TEST = 20_000  # up to this many decided pairs the sign test sums exact binomial coefficients


def sign_test(wins: int, losses: int) -> float:
    """Two-sided exact sign test: P under Binomial(n = wins + losses, 1/2) of an outcome at least as far from
    n/2 as ``wins``, ``min(1, 2 * sum_{i <= min(wins, losses)} C(n, i) / 2^n)`` (what scipy's ``binomtest`` computes
    for p = 1/2), summed in exact integers up to ``EXACT_SIGN_TEST`` pairs, then from scipy's binomial
    distribution; ties are not passed in. Counts may be any integers (numpy's too: they are made Python integers,
    whose sums cannot overflow); a negative count is refused."""
    wins, losses = operator.index(wins), operator.index(losses)
    if wins < 0 or losses < 0:
        raise ValueError(f"need wins, losses >= 0, got {wins}, {losses}")
    n = wins + losses
    if n == 0:
        return 1.0
    k = min(wins, losses)
    if 2 * k == n:
        return 1.0
    if n > EXACT_SIGN_TEST:
        from scipy.stats import binom
        return float(min(1.0, 2 * binom.cdf(k, n, 0.5)))
    tail, c = 0, 1
    for i in range(k + 1):  # C(n, i), built up term by term
        tail += c
        c = c * (n - i) // (i + 1)
    return min(1.0, tail / (1 << (n - 1)))


def paired_bootstrap(d: np.ndarray, groups=None, n_boot: int = 2000, seed: int = 13,
                     level: float = 0.95) -> tuple[float, float, float]:
    """Paired bootstrap of the mean difference ``d = a - b``: full-size resamples of pairs (clusters).
    Returns (low, high, two-sided p) with the shift-method p-value (module docstring)."""
    d = np.asarray(d, dtype=np.float64)
    obs = float(d.mean())
    if _n_units(groups, len(d)) < MIN_RESAMPLED:
        return math.nan, math.nan, math.nan
    reps = bootstrap_means(d, groups, n_boot, seed)
    lo, hi = _percentile_interval(reps, level)
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
    for s in range(0, n_perm, _CHUNK):
        k = min(_CHUNK, n_perm - s)
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
    a_arr, b_arr, g, dropped = _clean_pair(a_arr, b_arr, groups)
    alpha = 1 - level if alpha is None else alpha
    n = len(a_arr)
    if n == 0:
        return PairedResult(math.nan, math.nan, math.nan, math.nan, math.nan, math.nan, math.nan, 0, 0, 0,
                            math.nan, 0.0, 1.0, 1.0, NO_DIFF, 0, dropped, math.nan, level, higher_is_better)
    d = a_arr - b_arr
    codes, G = group_codes(g, n)
    clustered = g is not None and _has_repeats(codes, G)
    cg = codes if clustered else None
    low, high, p_boot = paired_bootstrap(d, cg, n_boot, seed, level)
    p_rand = approximate_randomization(d, cg, n_perm, seed + 1)
    if tie_margin is not None:
        tie = np.abs(d) < tie_margin - 1e-9
    else:
        tie = np.abs(d) <= tie_tol * np.maximum(1.0, np.maximum(np.abs(a_arr), np.abs(b_arr)))
    better = (d > 0) if higher_is_better else (d < 0)
    ws = clustered_win_stats(np.where(tie, 0, np.where(better, 1, -1)), cg, level, n_boot, seed + 2)
    diff = float(d.mean())
    a_ahead = diff > 0 if higher_is_better else diff < 0
    significant = p_rand < alpha and (low > 0 or high < 0) and diff != 0
    verdict = NO_DIFF if not significant else ("A better" if a_ahead else "B better")
    return PairedResult(float(a_arr.mean()), float(b_arr.mean()), diff, low, high, p_boot, p_rand, ws.wins, ws.ties,
                        ws.losses, ws.rate, ws.low, ws.high, ws.sign_p, verdict, n, dropped, ws.ties_split, level,
                        higher_is_better, "contexts" if clustered else "pairs", G)


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


# ------------------------------------------------------------------------------------------------
# Bradley-Terry ratings from pairwise preferences

ELO_SCALE = 400 / math.log(10)  # rating = ELO_BASE + ELO_SCALE * theta (Chatbot Arena's scale)
ELO_BASE = 1000.0
BT_RIDGE = 0.01  # keeps a system that wins every comparison finite; tiny next to ~50 comparisons per pair


def bradley_terry(first: Sequence[int], second: Sequence[int], outcome: Sequence[float], n_items: int,
                  weights: Sequence[float] | None = None, ridge: float = BT_RIDGE) -> np.ndarray:
    """Bradley-Terry strengths (Bradley & Terry 1952): ``P(i beats j) = 1 / (1 + exp(-(theta_i - theta_j)))``.

    ``outcome[k]`` is 1 when ``first[k]`` won comparison k, 0 when ``second[k]`` won and 0.5 for a tie (half a
    win to each side, as Chatbot Arena counts ties, so a tie pulls two ratings together). Maximizes the
    weighted log-likelihood ``sum_k w_k [y_k log p_k + (1 - y_k) log(1 - p_k)] - ridge / 2 * |theta|^2`` by
    Newton's method (it is concave); the result is centred (mean 0). ``weights`` are how often each comparison
    is counted (a bootstrap replicate)."""
    i = np.asarray(first, dtype=np.int64)
    j = np.asarray(second, dtype=np.int64)
    y = np.asarray(outcome, dtype=np.float64)
    w = np.ones(len(y)) if weights is None else np.asarray(weights, dtype=np.float64)
    X = np.zeros((len(y), n_items))
    X[np.arange(len(y)), i] += 1.0
    X[np.arange(len(y)), j] -= 1.0
    theta = np.zeros(n_items)
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-(X @ theta)))
        grad = X.T @ (w * (y - p)) - ridge * theta
        hess = (X * (w * p * (1 - p))[:, None]).T @ X + ridge * np.eye(n_items)
        step = np.linalg.solve(hess, grad)
        theta += step
        if np.max(np.abs(step)) < 1e-10:
            break
    return theta - theta.mean()


@dataclass
class BradleyTerry:
    """Bradley-Terry strengths of ``items`` with percentile bootstrap intervals (clusters resampled):
    ``theta`` on the log-odds scale (centred), ``rating`` = 1000 + 400 / ln 10 * theta (the Elo scale
    Chatbot Arena reports: 400 points = 10:1 odds)."""

    items: list[str]
    theta: list[float]
    low: list[float]
    high: list[float]
    rating: list[float]
    rating_low: list[float]
    rating_high: list[float]
    n_comparisons: int
    n_groups: int
    n_boot: int
    level: float


def bradley_terry_ratings(items: Sequence[str], first: Sequence[int], second: Sequence[int],
                          outcome: Sequence[float], groups: Sequence[Hashable] | None = None, n_boot: int = 2000,
                          seed: int = 13, level: float = 0.95) -> BradleyTerry:
    """:func:`bradley_terry` on every comparison, and its percentile bootstrap interval: each replicate draws
    G of G clusters (``groups``, e.g. the context: all comparisons on one context move together) and refits."""
    n_items = len(items)
    theta = bradley_terry(first, second, outcome, n_items)
    codes, G = group_codes(groups, len(outcome))
    rng = np.random.default_rng(seed)
    reps = np.empty((n_boot, n_items))
    for s in range(0, n_boot, _CHUNK):
        k = min(_CHUNK, n_boot - s)
        W = _cluster_counts(rng, G, k)[:, codes]
        for r in range(k):
            reps[s + r] = bradley_terry(first, second, outcome, n_items, W[r])
    alpha = (1 - level) / 2
    lo, hi = (np.quantile(reps, [alpha, 1 - alpha], axis=0) if n_boot > 0 and G >= MIN_RESAMPLED
              else (np.full(n_items, np.nan), np.full(n_items, np.nan)))
    elo = lambda t: (ELO_BASE + ELO_SCALE * np.asarray(t)).tolist()  # noqa: E731
    return BradleyTerry(list(items), theta.tolist(), lo.tolist(), hi.tolist(), elo(theta), elo(lo), elo(hi),
                        len(outcome), G, n_boot, level)


# ------------------------------------------------------------------------------------------------
# length-controlled win rate


@dataclass
class LengthControlled:
    """A's win rate with the length of the replies held equal (AlpacaEval's length-controlled win rate,
    Dubois et al. 2024, reduced to one pair of systems): ``rate`` [``low``, ``high``] is the fitted
    P(A wins) at a length difference of 0; ``raw`` the plain win rate on the same pairs (ties excluded);
    ``slope`` the change in log-odds per unit of ``tanh(length difference / sd)``; lengths in words.
    ``why_none`` says why ``rate`` is NaN (too few contexts, or equal length outside the pairs' lengths)."""

    rate: float
    low: float
    high: float
    raw: float
    slope: float
    n: int
    mean_length_diff: float
    length_sd: float
    why_none: str = ""


def _logistic_fits(x: np.ndarray, y: np.ndarray, W: np.ndarray, ridge: float) -> np.ndarray:
    """``(k, 2)`` array: (intercept, slope) of a weighted logistic regression of y on x for each row of weights
    ``W`` (k x n; a bootstrap resample's counts), the slope (only) ridge-penalized. Newton's method on all k fits
    at once, each stopping on its own when its step is below 1e-10 (at most 50 steps); the 2 x 2 systems are
    solved in closed form. The 2,000 bootstrap fits of :func:`length_controlled_win_rate` took 1.1 s one at a
    time (a quarter of the demo's first visit on 2 AVX2 cores) and take milliseconds so."""
    W = np.atleast_2d(np.asarray(W, dtype=np.float64))
    k = len(W)
    beta = np.zeros((k, 2))
    active = np.ones(k, dtype=bool)
    for _ in range(50):
        b, w = beta[active], W[active]
        p = 1.0 / (1.0 + np.exp(-(b[:, :1] + b[:, 1:] * x)))
        r, v = w * (y - p), w * p * (1 - p)
        g0, g1 = r.sum(1), r @ x - ridge * b[:, 1]
        h00 = v.sum(1) + 1e-12
        h01 = v @ x
        h11 = v @ (x * x) + ridge + 1e-12
        det = h00 * h11 - h01 * h01
        step = np.stack([(h11 * g0 - h01 * g1) / det, (h00 * g1 - h01 * g0) / det], axis=1)
        beta[active] = np.clip(b + step, -30, 30)  # all wins (or all losses): the intercept runs off; 30 is P = 1
        idx = np.flatnonzero(active)
        active[idx[np.max(np.abs(step), axis=1) < 1e-10]] = False
        if not active.any():
            break
    return beta


FIT_FLOATS = 2_000_000  # values per array of the logistic fits solved together (about 16 MB each; they hold ~7)
EQUAL_LENGTH_SHARE = 0.1  # equal length must lie between the 10th and 90th percentiles of the length differences


def length_controlled_win_rate(a_wins: Sequence[float], length_diff: Sequence[float],
                               groups: Sequence[Hashable] | None = None, n_boot: int = 2000, seed: int = 13,
                               level: float = 0.95, ridge: float = 0.01) -> LengthControlled:
    """Length-controlled win rate: regress the outcome (``a_wins`` 1 = A won, 0 = B won; ties left out) on
    ``x = tanh(length_diff / sd(length_diff))`` with a logistic GLM, ``logit P(A wins) = b0 + b1 x`` (the
    length term of AlpacaEval's GLM, Dubois et al. 2024, eq. 1), and report ``sigmoid(b0)``: the win rate
    at equal length. Without a length effect (b1 = 0) it equals the plain win rate wins / (wins + losses).
    Equal length must lie within the pairs' length differences (between their 10th and 90th percentiles,
    :data:`EQUAL_LENGTH_SHARE`); else no rate is read (``why_none``): one system's replies always the longer
    leave nothing at equal length to read, and the fit's intercept is an extrapolation.
    The interval is a percentile bootstrap resampling ``groups`` (contexts), widened where needed to the Wilson
    interval of n independent calls around the rate (:func:`wilson_bounds`): when every call goes one way the
    fit separates, every resample agrees, and the bootstrap alone said [0.000, 0.000] for 6 of 6 calls to B."""
    y = np.asarray(a_wins, dtype=np.float64)
    d = np.asarray(length_diff, dtype=np.float64)
    n = len(y)
    if n == 0:
        return LengthControlled(math.nan, math.nan, math.nan, math.nan, math.nan, 0, math.nan, math.nan)
    sd = float(np.std(d))
    codes, G = group_codes(groups, n)
    if G < MIN_RESAMPLED:  # a logistic fit on so few contexts gave rates such as 0.03 beside a plain 0.60
        return LengthControlled(math.nan, math.nan, math.nan, float(y.mean()), math.nan, n, float(d.mean()), sd,
                                f"fewer than {MIN_RESAMPLED} contexts")
    low_d, high_d = np.quantile(d, [EQUAL_LENGTH_SHARE, 1 - EQUAL_LENGTH_SHARE])
    if not low_d <= 0 <= high_d:  # reading the fit at 0 would extrapolate ("0 % at equal length" from 9 of 10 wins)
        side, share = ("A", np.mean(d > 0)) if low_d > 0 else ("B", np.mean(d < 0))
        return LengthControlled(math.nan, math.nan, math.nan, float(y.mean()), math.nan, n, float(d.mean()), sd,
                                f"{side}'s reply is the longer in {share:.0%} of the pairs, so equal length lies "
                                "outside what was judged")
    x = np.tanh(d / sd) if sd > 0 else np.zeros(n)
    b0, b1 = (float(v) for v in _logistic_fits(x, y, np.ones((1, n)), ridge)[0])
    sig = lambda b: 1.0 / (1.0 + math.exp(-b))  # noqa: E731
    rng = np.random.default_rng(seed)
    reps = np.empty(n_boot)
    fits_at_once = max(1, min(_CHUNK, FIT_FLOATS // n))  # each array of the fits: at most FIT_FLOATS values
    for s in range(0, n_boot, _CHUNK):
        k = min(_CHUNK, n_boot - s)
        W = _cluster_counts(rng, G, k)[:, codes]
        for f in range(0, k, fits_at_once):
            part = _logistic_fits(x, y, W[f:f + fits_at_once], ridge)
            reps[s + f:s + f + len(part)] = 1.0 / (1.0 + np.exp(-part[:, 0]))
    lo, hi = _percentile_interval(reps, level) if n_boot > 0 else (math.nan, math.nan)
    rate = _snap(sig(b0))
    w_lo, w_hi = wilson_bounds(rate, n, level)
    if math.isfinite(lo):
        lo, hi = _snap(min(lo, w_lo)), _snap(max(hi, w_hi))
    return LengthControlled(rate, lo, hi, float(y.mean()), b1, n, float(d.mean()), sd)


def _snap(p: float) -> float:
    """A probability within 1e-9 of 0 or 1 written as 0 or 1: a fit that separates (every call one way) reaches
    them only in the limit (rates such as 9.4e-14 in the JSON)."""
    return 0.0 if p < 1e-9 else 1.0 if p > 1 - 1e-9 else p
