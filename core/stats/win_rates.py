"""Win rates: wins / (wins + losses) with the Wilson interval and the exact sign test (:func:`win_stats`), the same
over contexts when pairs share one (:func:`clustered_win_stats`), and the length-controlled win rate
(:func:`length_controlled_win_rate`, AlpacaEval's GLM for one pair of systems)."""
from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from statistics import NormalDist
from typing import Hashable, Sequence

import numpy as np

from core.stats.bootstrap import MIN_RESAMPLED, RESAMPLE_CHUNK, cluster_counts, group_codes, has_repeats, percentile_interval


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
    with its interval [``low``, ``high``] (``interval`` names it: ``"Wilson"`` for independent items, ``"context
    bootstrap"`` where items share contexts, :func:`clustered_win_stats`), ``sign_p`` the two-sided exact sign test
    on the same counts, and ``ties_split`` = (wins + ties / 2) / n for readers who count a tie as half."""

    wins: int
    ties: int
    losses: int
    rate: float
    low: float
    high: float
    sign_p: float
    ties_split: float
    interval: str = "Wilson"
    sign_units: int = -1  # what the sign test counts and can move: decided pairs, or contexts whose net is not 0


def win_stats(wins: int, ties: int, losses: int, level: float = 0.95) -> WinStats:
    decided = wins + losses
    n = decided + ties
    low, high = wilson_interval(wins, decided, level)
    return WinStats(wins, ties, losses, wins / decided if decided else math.nan, low, high, sign_test(wins, losses),
                    (wins + ties / 2) / n if n else math.nan, sign_units=decided)


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
    if not has_repeats(codes, G):
        return win_stats(wins, ties, losses, level)
    net = np.bincount(codes, weights=o, minlength=G)
    sign_p = sign_test(int(np.sum(net > 0)), int(np.sum(net < 0)))
    low = high = math.nan
    if G >= MIN_RESAMPLED and wins + losses:
        won = np.bincount(codes, weights=(o > 0).astype(np.float64), minlength=G)
        decided = np.bincount(codes, weights=(o != 0).astype(np.float64), minlength=G)
        rng = np.random.default_rng(seed)
        reps = np.empty(n_boot)
        for s0 in range(0, n_boot, RESAMPLE_CHUNK):
            k = min(RESAMPLE_CHUNK, n_boot - s0)
            W = cluster_counts(rng, G, k)
            with np.errstate(invalid="ignore", divide="ignore"):
                reps[s0:s0 + k] = (W @ won) / (W @ decided)
        low, high = percentile_interval(reps, level)
        w_low, w_high = wilson_interval(wins, wins + losses, level)
        low, high = min(low, w_low), max(high, w_high)
    n = len(o)
    return WinStats(wins, ties, losses, wins / (wins + losses) if wins + losses else math.nan, low, high, sign_p,
                    (wins + ties / 2) / n if n else math.nan, "context bootstrap", int(np.sum(net != 0)))


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


def logistic_fits(x: np.ndarray, y: np.ndarray, W: np.ndarray, ridge: float) -> np.ndarray:
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
        return LengthControlled(math.nan, math.nan, math.nan, math.nan, math.nan, 0, math.nan, math.nan,
                                "no pair decided (every call a tie, or none read)")
    sd = float(np.std(d))
    codes, G = group_codes(groups, n)
    if G < MIN_RESAMPLED:  # a logistic fit on so few contexts gave rates such as 0.03 beside a plain 0.60
        return LengthControlled(math.nan, math.nan, math.nan, float(y.mean()), math.nan, n, float(d.mean()), sd,
                                f"its decided pairs come from fewer than {MIN_RESAMPLED} contexts")
    low_d, high_d = np.quantile(d, [EQUAL_LENGTH_SHARE, 1 - EQUAL_LENGTH_SHARE])
    if not low_d <= 0 <= high_d:  # reading the fit at 0 would extrapolate ("0 % at equal length" from 9 of 10 wins)
        side, share = ("A", np.mean(d > 0)) if low_d > 0 else ("B", np.mean(d < 0))
        return LengthControlled(math.nan, math.nan, math.nan, float(y.mean()), math.nan, n, float(d.mean()), sd,
                                f"{side}'s reply is the longer in {share:.0%} of the pairs, so equal length lies "
                                "outside what was judged")
    x = np.tanh(d / sd) if sd > 0 else np.zeros(n)
    b0, b1 = (float(v) for v in logistic_fits(x, y, np.ones((1, n)), ridge)[0])
    sig = lambda b: 1.0 / (1.0 + math.exp(-b))  # noqa: E731
    rng = np.random.default_rng(seed)
    reps = np.empty(n_boot)
    fits_at_once = max(1, min(RESAMPLE_CHUNK, FIT_FLOATS // n))  # each array of the fits: at most FIT_FLOATS values
    for s in range(0, n_boot, RESAMPLE_CHUNK):
        k = min(RESAMPLE_CHUNK, n_boot - s)
        W = cluster_counts(rng, G, k)[:, codes]
        for f in range(0, k, fits_at_once):
            part = logistic_fits(x, y, W[f:f + fits_at_once], ridge)
            reps[s + f:s + f + len(part)] = 1.0 / (1.0 + np.exp(-part[:, 0]))
    lo, hi = percentile_interval(reps, level) if n_boot > 0 else (math.nan, math.nan)
    rate = _snap(sig(b0))
    w_lo, w_hi = wilson_bounds(rate, n, level)
    if math.isfinite(lo):
        lo, hi = _snap(min(lo, w_lo)), _snap(max(hi, w_hi))
    return LengthControlled(rate, lo, hi, float(y.mean()), b1, n, float(d.mean()), sd)


def _snap(p: float) -> float:
    """A probability within 1e-9 of 0 or 1 written as 0 or 1: a fit that separates (every call one way) reaches
    them only in the limit (rates such as 9.4e-14 in the JSON)."""
    return 0.0 if p < 1e-9 else 1.0 if p > 1 - 1e-9 else p
