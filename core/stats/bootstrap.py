"""The resampling every statistic shares: the settings a caller may ask for (:func:`check_settings`), cluster codes,
the full-size cluster bootstrap's draws and its percentile interval, and the mean with its interval (:func:`mean_ci`).
The choices are the package's (``core.stats``' docstring)."""
from __future__ import annotations

import math
from typing import Any, Hashable, Sequence

import numpy as np

RESAMPLE_CHUNK = 256  # bootstrap replicates drawn at once (bounds memory at ~CHUNK x n floats per array)
MIN_RESAMPLED = 5  # fewer units (contexts or rows) than this: no bootstrap interval or p (module docstring)
N_BOOT = 2000  # bootstrap resamples of every reported interval, by default (the verdict's, the judge's)
N_PERM = 2000  # randomizations of every paired test, by default
LEVEL = 0.95  # the level of every interval (and 1 - LEVEL the p threshold), by default
MIN_BOOT = 100  # fewest bootstrap resamples a reported interval may rest on (check_settings)
MAX_RESAMPLES = 1_000_000  # most resamples or permutations one setting may ask for (check_settings)


def min_permutations(level: float) -> int:
    """The fewest randomizations whose smallest p, 1 / (n + 1), is below ``1 - level`` (20 at 0.95, 100 at 0.99):
    fewer make every paired test non-significant, and a gate would pass whatever it compares."""
    return max(1, math.floor(1 / (1 - level) + 1e-6)) if 0 < level < 1 else 1


def check_settings(n_boot: int, n_perm: int | None = None, level: float | None = None,
                   seed: int | None = None) -> None:
    """Refuse settings that give no usable interval or p-value, with a ``ValueError`` naming the setting:
    ``n_boot`` below :data:`MIN_BOOT` (a 95 % percentile interval from 1-99 replicates is a couple of order
    statistics, and can exclude the mean itself), ``n_perm`` below :func:`min_permutations` (no p could fall below
    ``1 - level``), a ``level`` not strictly between 0 and 1
    (0.95, not 95), a negative ``seed``, and more than :data:`MAX_RESAMPLES` resamples or permutations (10^8 held
    gigabytes for minutes; beyond 10^5 the Monte Carlo error is far below what the data allow). The command line
    refuses the same values before anything is scored."""
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < MIN_BOOT:
        raise ValueError(f"n_boot={n_boot!r}: a bootstrap interval needs a whole number of at least {MIN_BOOT} "
                         "resamples (the default is 2,000, 1,000 for the turn level of meta-eval; sacrebleu and COMET use 1,000)")
    if n_perm is not None and (isinstance(n_perm, bool) or not isinstance(n_perm, (int, np.integer)) or n_perm < 1):
        raise ValueError(f"n_perm={n_perm!r}: a randomization test needs a whole number of at least 1 permutation")
    for name, n in (("n_boot", n_boot), ("n_perm", n_perm)):
        if n is not None and n > MAX_RESAMPLES:
            raise ValueError(f"{name}={n!r}: at most {MAX_RESAMPLES:,} (the default is 2,000 or fewer; 100,000 already makes "
                             "the Monte Carlo error negligible)")
    if level is not None and not (isinstance(level, (int, float)) and math.isfinite(level) and 0 < level < 1):
        raise ValueError(f"level={level!r}: an interval level lies strictly between 0 and 1 (0.95 for 95 %)")
    alpha = 1 - (LEVEL if level is None else level)
    if n_perm is not None and n_perm < min_permutations(1 - alpha):
        raise ValueError(f"n_perm={n_perm!r}: with {n_perm} randomizations the smallest p is 1/{n_perm + 1} = "
                         f"{1 / (n_perm + 1):.3g}, so nothing could be significant at p < {alpha:.3g}; ask for at "
                         f"least {min_permutations(1 - alpha)} (the default is 2,000)")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0):
        raise ValueError(f"seed={seed!r}: a seed is a whole number >= 0")


def canonical_rows(groups: Sequence[Hashable], *columns: Sequence[Any]) -> np.ndarray:
    """Indices that sort rows by their group (as text), then by each column in turn (numbers NaN last; other
    values as text): the same rows in any input order come out in one order, so the clusters a bootstrap numbers
    by first appearance (:func:`group_codes`), its draws, and every interval and p drawn from them do not depend on
    the order of the input's rows."""
    def value(x: Any) -> tuple[int, Any]:
        if isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool):
            return (1, 0.0) if math.isnan(x) else (0, float(x))
        return (2, str(x))
    n = len(groups)
    if any(len(c) != n for c in columns):
        raise ValueError(f"{n} groups and columns of {', '.join(str(len(c)) for c in columns)} values: one each per row")
    keys = [(str(g), *(value(c[i]) for c in columns)) for i, g in enumerate(groups)]
    return np.array(sorted(range(n), key=keys.__getitem__), dtype=np.int64)


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


def n_units(groups, n: int) -> int:
    """How many units a bootstrap resamples: distinct groups, or rows without groups."""
    return n if groups is None else group_codes(groups, n)[1]


def has_repeats(codes: np.ndarray, n_groups: int) -> bool:
    return n_groups < len(codes)


def percentile_interval(reps: np.ndarray, level: float) -> tuple[float, float]:
    reps = reps[np.isfinite(reps)]
    if len(reps) == 0:
        return math.nan, math.nan
    alpha = (1 - level) / 2
    lo, hi = np.quantile(reps, [alpha, 1 - alpha])
    return float(lo), float(hi)


def cluster_counts(rng: np.random.Generator, n_groups: int, n_rep: int) -> np.ndarray:
    """(n_rep, G) how often each cluster is drawn when G clusters are drawn with replacement."""
    idx = rng.integers(0, n_groups, size=(n_rep, n_groups))
    flat = (idx + np.arange(n_rep)[:, None] * n_groups).ravel()
    return np.bincount(flat, minlength=n_rep * n_groups).reshape(n_rep, n_groups).astype(np.float64)


def finite_pairs(x: Sequence[float], y: Sequence[float], groups) -> tuple[np.ndarray, np.ndarray, Any, int]:
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
    if n_units(g, len(x)) < MIN_RESAMPLED:
        return m, math.nan, math.nan
    reps = bootstrap_means(x, g, n_boot, seed)
    lo, hi = percentile_interval(reps, level)
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
    for s in range(0, n_boot, RESAMPLE_CHUNK):
        k = min(RESAMPLE_CHUNK, n_boot - s)
        idx = rng.integers(0, G, size=(k, G))
        out[s:s + k] = sums[idx].sum(1) / sizes[idx].sum(1)
    return out
