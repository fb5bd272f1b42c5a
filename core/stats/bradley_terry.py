"""Bradley-Terry strengths from pairwise preferences (:func:`bradley_terry`) and their cluster bootstrap intervals on
the Elo scale (:func:`bradley_terry_ratings`)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Hashable, Sequence

import numpy as np

from core.stats.bootstrap import MIN_RESAMPLED, RESAMPLE_CHUNK, cluster_counts, group_codes

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
    ridge_bound: int = 0  # replicates whose won-or-tied graph is not strongly connected (:func:`connected_replicates`)


def bradley_terry_ratings(items: Sequence[str], first: Sequence[int], second: Sequence[int],
                          outcome: Sequence[float], groups: Sequence[Hashable] | None = None, n_boot: int = 2000,
                          seed: int = 13, level: float = 0.95) -> BradleyTerry:
    """:func:`bradley_terry` on every comparison, and its percentile bootstrap interval: each replicate draws
    G of G clusters (``groups``, e.g. the context: all comparisons on one context move together) and refits.
    ``ridge_bound`` counts the replicates in which no fit exists without the ridge (:func:`connected_replicates`
    False): where they pass a tail's share, ``(1 - level) / 2``, that end of an interval is the ridge's number."""
    n_items = len(items)
    theta = bradley_terry(first, second, outcome, n_items)
    codes, G = group_codes(groups, len(outcome))
    rng = np.random.default_rng(seed)
    reps = np.empty((n_boot, n_items))
    ridge_bound = 0
    for s in range(0, n_boot, RESAMPLE_CHUNK):
        k = min(RESAMPLE_CHUNK, n_boot - s)
        W = cluster_counts(rng, G, k)[:, codes]
        ridge_bound += int(np.sum(~connected_replicates(first, second, outcome, n_items, W)))
        for r in range(k):
            reps[s + r] = bradley_terry(first, second, outcome, n_items, W[r])
    alpha = (1 - level) / 2
    lo, hi = (np.quantile(reps, [alpha, 1 - alpha], axis=0) if n_boot > 0 and G >= MIN_RESAMPLED
              else (np.full(n_items, np.nan), np.full(n_items, np.nan)))
    elo = lambda t: (ELO_BASE + ELO_SCALE * np.asarray(t)).tolist()  # noqa: E731
    return BradleyTerry(list(items), theta.tolist(), lo.tolist(), hi.tolist(), elo(theta), elo(lo), elo(hi),
                        len(outcome), G, n_boot, level, ridge_bound)


def connected_replicates(first: Sequence[int], second: Sequence[int], outcome: Sequence[float], n_items: int,
                         weights: np.ndarray) -> np.ndarray:
    """For each row of ``weights`` (a replicate: how often each comparison is counted), whether its "won or tied"
    graph leads from every compared item to every other (an edge i -> j where i won or tied a counted comparison
    with j): the condition for a Bradley-Terry fit to exist without the ridge (Ford 1957). Items never compared
    are left out of the test."""
    i = np.asarray(first, dtype=np.int64)
    j = np.asarray(second, dtype=np.int64)
    y = np.asarray(outcome, dtype=np.float64)
    W = np.atleast_2d(np.asarray(weights, dtype=np.float64))
    compared = np.unique(np.concatenate([i, j]))
    if len(compared) < 2:
        return np.ones(len(W), dtype=bool)
    src = np.concatenate([i[y >= 0.5], j[y <= 0.5]])  # a tie is an edge each way
    dst = np.concatenate([j[y >= 0.5], i[y <= 0.5]])
    use = np.concatenate([W[:, y >= 0.5], W[:, y <= 0.5]], axis=1) > 0
    reach = np.zeros((len(W), n_items, n_items), dtype=np.int64)
    rows = np.nonzero(use)
    reach[rows[0], src[rows[1]], dst[rows[1]]] = 1
    reach[:, np.arange(n_items), np.arange(n_items)] = 1
    for _ in range(max(1, math.ceil(math.log2(n_items)))):  # paths of up to 2^k steps
        reach = (reach @ reach > 0).astype(np.int64)
    sub = reach[:, compared][:, :, compared]
    return sub.reshape(len(W), -1).all(axis=1)
