"""Your own votes: the judge's output layers re-fit on A/B votes, and the learning curve that shows how
much they help (Wu & Chien's use case: a few hundred votes on your own systems).

Each vote is read once (both orders) and only the output layers are re-fit: a logistic regression whose
offset is the shipped judge's logit and whose columns are the MiniLM logit ``z``, the reader's ``s(A) - s(B)``,
the MME-CRS difference ``q(A) - q(B)`` (when the judge's mix reads it) and the differences of the reader scorer's
hidden units (:class:`VoteFeatures`), with a ridge penalty on
the change whose strength an inner cross-validation by context picks from the votes themselves (few votes:
strong pull, the judge stays as shipped; many votes: it moves). The result is written back into the output
layers (``PairwiseJudge.with_refit_output_layers``), so a tuned judge is an ordinary checkpoint. Each fit
takes about a second. docs/judge.md has the curves and the re-fits that were measured and not kept.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from core.judges.pairs import Pair, context_key, enough_votes
from core.judges.pairwise import CHECKPOINT, READ_SHARE, PairwiseJudge, combine_orders, load_judge
from core.progress import Progress, share_of
from core.settings import SEED
from core.verdict import side_accuracy

# ridge strengths tried by the inner cross-validation of every re-fit (on standardized columns)
RIDGE_GRID = tuple(float(10 ** e) for e in np.arange(-3.0, 1.01, 0.5))
RIDGE_DEFAULT = 1.0  # when the votes cover too few contexts for an inner cross-validation
INNER_FOLDS = 5


@dataclass
class VoteFeatures:
    """What the votes re-fit reads, for both orders of every vote (row 2i: (c, A, B); row 2i+1: (c, B, A)).

    ``base`` is the judge's single-order logit; ``z`` the MiniLM cross-encoder's logit before the mix weight;
    ``hidden`` the MiniLM head's hidden units. With the SmolLM2 reader: ``d`` its signed ``s(A) - s(B)`` and
    ``reader`` the signed differences of its scorer's hidden units (members x 64); ``m`` the signed MME-CRS
    difference ``q(A) - q(B)`` when the judge's mix reads it."""

    base: np.ndarray
    z: np.ndarray
    hidden: np.ndarray
    d: np.ndarray | None = None
    reader: np.ndarray | None = None
    m: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.base) // 2

    def rows(self, idx) -> "VoteFeatures":
        """The rows of both orders of the votes ``idx``."""
        idx = np.asarray(idx, dtype=np.int64)
        both = np.stack([2 * idx, 2 * idx + 1], axis=1).reshape(-1)
        return VoteFeatures(*(None if a is None else a[both] for a in self._arrays()))

    def design(self) -> np.ndarray:
        """The re-fit's columns: with the reader ``[z, d, (m,) reader hidden units]`` (the reader's hidden units
        re-weighted did best on unseen DailyDialog votes, docs/judge.md; m when the judge reads MME-CRS), without
        it ``[z, MiniLM hidden units]``."""
        if self.reader is not None:
            extra = [] if self.m is None else [self.m[:, None]]
            return np.concatenate([self.z[:, None], self.d[:, None], *extra, self.reader], axis=1)
        return np.concatenate([self.z[:, None], self.hidden], axis=1)

    def _arrays(self):
        return (self.base, self.z, self.hidden, self.d, self.reader, self.m)

    def save(self, path) -> None:
        np.savez(path, **{k: a for k, a in zip(("base", "z", "hidden", "d", "reader", "m"), self._arrays())
                          if a is not None})

    @staticmethod
    def load(path) -> "VoteFeatures":
        with np.load(path) as f:
            return VoteFeatures(**{k: f[k] for k in f.files})


def vote_features(votes: Sequence[Pair], judge: PairwiseJudge, progress: Progress | None = None) -> VoteFeatures:
    """:class:`VoteFeatures` of ``votes`` under ``judge`` (encodes each vote once, both orders)."""
    enc = judge.encode([v.context for v in votes], [v.response_a for v in votes], [v.response_b for v in votes],
                       progress=share_of(progress, 0.0, READ_SHARE, len(votes)))
    x = judge.output_layer_inputs(enc, progress=share_of(progress, READ_SHARE, 1.0, len(votes)))
    if x.d is None:
        return VoteFeatures(x.logits, x.z, x.hidden)
    n = len(votes)
    signed_d, reader = np.empty(2 * n), np.empty((2 * n, x.reader_a.shape[1]), dtype=np.float32)
    signed_d[0::2], signed_d[1::2] = x.d, -x.d
    reader[0::2], reader[1::2] = x.reader_a - x.reader_b, x.reader_b - x.reader_a
    signed_m = None
    if x.m is not None:
        signed_m = np.empty(2 * n)
        signed_m[0::2], signed_m[1::2] = x.m, -x.m
    return VoteFeatures(x.logits, x.z, x.hidden, signed_d, reader, signed_m)


def both_orders(labels: np.ndarray) -> np.ndarray:
    """Labels of both orders of every pair (row 2i: label, row 2i+1: 1 - label)."""
    y = np.empty(2 * len(labels), dtype=np.float64)
    y[0::2] = labels
    y[1::2] = 1.0 - np.asarray(labels, dtype=np.float64)
    return y


def _ridge_logistic(X: np.ndarray, offset: np.ndarray, y: np.ndarray, lam: float) -> np.ndarray:
    """argmin_w mean BCE(offset + X w, y) + lam * |w * sd(X)|^2 (ridge on standardized columns), by L-BFGS;
    deterministic (zero start, float64). Soft labels (0.5 for a tie) are allowed."""
    import torch
    sd = X.std(0) + 1e-6
    Xt = torch.from_numpy(np.asarray(X / sd, dtype=np.float64))
    off, yt = torch.from_numpy(np.asarray(offset, dtype=np.float64)), torch.from_numpy(y)
    w = torch.zeros(X.shape[1], dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([w], max_iter=200, line_search_fn="strong_wolfe")
    lossf = torch.nn.BCEWithLogitsLoss()

    def closure():
        opt.zero_grad()
        loss = lossf(off + Xt @ w, yt) + lam * (w ** 2).sum()
        loss.backward()
        return loss
    opt.step(closure)
    return w.detach().numpy() / sd


def _nll(logit: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean(np.logaddexp(0.0, logit) - y * logit))


def fit_votes(features: VoteFeatures, labels: np.ndarray, groups: np.ndarray | None = None,
              from_scratch: bool = False, ridge: float | None = None) -> tuple[np.ndarray, float]:
    """(delta, ridge): the re-fit on votes. The logit of each order becomes ``base + design @ delta``
    (``from_scratch``: ``design @ delta`` alone, what the votes teach without the shipped judge's opinion).
    ``ridge`` None picks the strength from :data:`RIDGE_GRID` by an inner cross-validation over ``groups``
    (a fold id per vote, e.g. by context; lowest held-out log loss), so a few votes barely move the judge
    and many votes move it as far as they support."""
    X = features.design().astype(np.float64)
    off = np.zeros(len(X)) if from_scratch else features.base.astype(np.float64)
    y = both_orders(labels)
    if ridge is None:
        ridge = RIDGE_DEFAULT
        folds = np.unique(groups) if groups is not None else np.zeros(0)
        if len(folds) >= 2:
            both = np.repeat(np.asarray(groups), 2)
            loss = [sum(_nll(off[both == g] + X[both == g] @ _ridge_logistic(X[both != g], off[both != g],
                                                                             y[both != g], lam), y[both == g])
                        for g in folds) for lam in RIDGE_GRID]
            ridge = RIDGE_GRID[int(np.argmin(loss))]
    return _ridge_logistic(X, off, y, ridge), float(ridge)


def refit_logits(features: VoteFeatures, delta: np.ndarray, from_scratch: bool = False) -> np.ndarray:
    """Single-order logits after the re-fit: ``base + design @ delta`` (``from_scratch``: without ``base``)."""
    return (0.0 if from_scratch else features.base) + features.design() @ delta


def p_a_from_logits(logits: np.ndarray) -> np.ndarray:
    """P(A preferred) of each pair from its two single-order logits (orders interleaved), both orders combined."""
    probs = 1.0 / (1.0 + np.exp(-logits))
    return combine_orders(probs[0::2], probs[1::2])[0]


def fine_tune_on_votes(votes: Sequence[Pair], base: str | PairwiseJudge = CHECKPOINT,
                       progress: Progress | None = None, features: VoteFeatures | None = None,
                       seed: int = SEED, from_scratch: bool = False, ridge: float | None = None) -> PairwiseJudge:
    """The judge re-fitted on ``votes`` (see module doc): a logistic regression on the judge's last-layer
    units with the shipped judge's logit as offset, ridge strength by inner cross-validation by context.
    ``from_scratch=True`` drops the offset (the votes alone, on the shipped judge's units). Fewer than
    ``MIN_VOTES`` A/B votes, or votes on fewer than ``MIN_VOTE_CONTEXTS`` contexts (``core.judges.pairs``), are
    a ``ValueError``: one vote re-fitted a judge that said "A" to every pair."""
    judge, features = _judge_and_features(votes, base, progress, features)
    if len(features) != len(votes):
        raise ValueError(f"{len(votes)} votes but features of {len(features)}")
    labels = np.array([v.label for v in votes], dtype=np.float64)
    delta, ridge = fit_votes(features, labels, context_folds(votes, INNER_FOLDS, seed), from_scratch, ridge)
    manifest = {k: v for k, v in judge.manifest.items() if k != "fine_tuned_on_votes"}
    manifest["fine_tuned_on_votes"] = {"n_votes": len(votes), "ridge": ridge, "from_scratch": from_scratch,
                                       "seed": seed, "base": judge.checkpoint,
                                       "refit": ("logistic regression on [z, d, "
                                                 + ("m, " if judge.mme_weights is not None else "")
                                                 + "reader hidden units]") if judge.reader
                                       else "logistic regression on [z, MiniLM head hidden units]"}
    return judge.with_refit_output_layers(delta, from_scratch, judge.checkpoint + "+votes", manifest)


def _judge_and_features(votes: Sequence[Pair], base: "str | PairwiseJudge", progress: Progress | None,
                        features: VoteFeatures | None) -> "tuple[PairwiseJudge, VoteFeatures]":
    """The judge to re-fit (``base``: a checkpoint or a loaded judge) and the votes' features (``features``, or
    computed with it); too few votes (``enough_votes``) are a ``ValueError``."""
    enough, where = enough_votes(votes)
    if not enough:
        raise ValueError(f"too few votes to re-fit the judge on: {where}")
    judge = load_judge(base) if isinstance(base, str) else base
    return judge, features if features is not None else vote_features(votes, judge, progress)


def context_folds(votes: Sequence[Pair], folds: int, seed: int = SEED) -> np.ndarray:
    """Fold number of every vote for cross-validation **by context** (all votes on one context share a fold)."""
    keys = sorted({context_key(v.context) for v in votes})
    perm = np.random.default_rng(seed).permutation(len(keys))
    fold_of_key = {keys[i]: j % folds for j, i in enumerate(perm)}
    return np.array([fold_of_key[context_key(v.context)] for v in votes], dtype=np.int64)


def learning_curve(votes: Sequence[Pair], sizes: Sequence[int] = (100, 300, 500, 700, 900), folds: int = 5,
                   base: str | PairwiseJudge = CHECKPOINT, seed: int = SEED, progress: Progress | None = None,
                   features: VoteFeatures | None = None, from_scratch: bool = False):
    """Agreement with held-out votes vs the number of training votes, by ``folds``-fold cross-validation
    split **by context**: for each fold, up to ``n`` votes are drawn from the other folds, the judge is
    re-fitted on them (:func:`fit_votes`, its ridge strength chosen by an inner cross-validation on those
    votes only), and the fold's A/B votes are predicted. Row ``n_train = 0`` is the judge as it is.

    Returns a DataFrame: n_train, agreement (mean over the folds that hold out at least one A/B vote; a fold
    of ties alone has nothing to agree with), low, high (min/max over those folds), sd, n_test (the held-out
    A/B votes of those folds, all counted: each vote is held out once), folds (how many folds counted), ridge
    (median chosen strength)."""
    import pandas as pd

    judge, features = _judge_and_features(votes, base, progress, features)
    fold = context_folds(votes, folds, seed)
    labels = np.array([v.label for v in votes], dtype=np.float64)
    gold = [v.vote for v in votes]
    max_train = min(len(votes) - np.bincount(fold, minlength=folds).max(), max(sizes) if sizes else 0)
    # sizes above what the training folds hold are clipped to it (reported as the actual n_train)
    sizes = [0] + sorted({min(int(s), int(max_train)) for s in sizes if s > 0})
    total = len(sizes) * folds
    rows = []
    done = 0
    for n in sizes:
        accs, ntest, ridges = [], [], []
        for f in range(folds):
            test = np.where(fold == f)[0]
            train = np.where(fold != f)[0]
            g = [gold[i] for i in test]
            if n == 0:
                p = p_a_from_logits(features.rows(test).base)
            else:
                pick = np.random.default_rng(seed + 1000 * f + n).permutation(train)[:n]
                groups = context_folds([votes[i] for i in pick], INNER_FOLDS, seed)
                delta, ridge = fit_votes(features.rows(pick), labels[pick], groups, from_scratch)
                p = p_a_from_logits(refit_logits(features.rows(test), delta, from_scratch))
                ridges.append(ridge)
            accs.append(side_accuracy(p, g))
            ntest.append(sum(x in ("A", "B") for x in g))
            done += 1
            if progress is not None:
                progress(done, total, f"learning curve: {n} votes, fold {f + 1}/{folds}")
        scored = [a for a, k in zip(accs, ntest) if k > 0]
        rows.append({"n_train": n, "agreement": float(np.mean(scored)), "low": float(np.min(scored)),
                     "high": float(np.max(scored)), "sd": float(np.std(scored)), "n_test": int(sum(ntest)),
                     "folds": len(scored), "ridge": float(np.median(ridges)) if ridges else float("nan")})
    return pd.DataFrame(rows)
