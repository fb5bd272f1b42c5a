"""The judge's rated data: training, validation and test pairs from ../shared/data/eval, machine-made
chitchat pairs, the per-set evaluation table, and the training run's held-out predictions.

Sets: ``TRAIN_SETS`` train (split by context: buckets < 2000 of 10,000 are test, the next 1,000 validation);
the DailyDialog-derived sets (CC BY-NC-SA source text) never train a shipped checkpoint and are held out whole,
which also gives a dataset-level generalization test.
"""
from __future__ import annotations

import functools
import json
import random
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from core.judges.pairs import Pair, is_val_context, normalize_text, preference_pairs, split_pairs
from core.judges.pairwise import TIE_MARGIN, Encoded, PairwiseJudge, combine_orders
from core.models.corpus import chitchat_split, context_pairs
from core.outputs import atomic_open
from core.progress import Progress
from core.scoring import JudgeOutput
from core.settings import SEED, cache_dir, shared_eval_file
from core.verdict import side_accuracy

DAILYDIALOG_SETS = ("dailydialog-zhao", "dailydialog-gupta", "dailydialog-grade", "engagement-dd", "holistic-dd")
TRAIN_SETS = ("usr-topical", "usr-persona", "convai2-grade", "empathetic-grade", "persona-zhao", "dstc7", "humod")


@functools.lru_cache(maxsize=32)
def set_pairs(name: str, seed: int = SEED, eval_dir: Path | None = None) -> tuple[Pair, ...]:
    """All clear-margin pairs of one rated set in ../shared/data/eval (read once per process)."""
    from core.data import load_jsonl
    path = (eval_dir / f"{name}.jsonl") if eval_dir else shared_eval_file(name)
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: the judge trains on ../shared/data/eval (rated sets)")
    return tuple(preference_pairs(load_jsonl(path), seed=seed))


def train_test_pairs(seed: int = SEED, cap_train: int = 8000, cap_test: int = 300, test_share: float = 0.2,
                 eval_dir: Path | None = None, val_share: float = 0.0) -> tuple[list[Pair], list[Pair]]:
    """Training pairs (train-split contexts of TRAIN_SETS, at most ``cap_train`` per set) and test pairs
    (test-split contexts of TRAIN_SETS + all of the DailyDialog-derived sets, ``cap_test`` per set).
    With ``val_share`` > 0 the validation contexts (:func:`is_val_context`) are left out of training;
    :func:`validation_pairs` returns them. The test pairs do not depend on ``val_share``."""
    train, test = [], []
    for name in TRAIN_SETS + DAILYDIALOG_SETS:
        pairs = set_pairs(name, seed, eval_dir)
        tr, te = split_pairs(pairs, test_share) if name in TRAIN_SETS else ([], list(pairs))
        rng = random.Random(f"{seed}-{name}")
        rng.shuffle(tr)
        rng.shuffle(te)
        if val_share > 0:
            tr = [p for p in tr if not is_val_context(p.context, test_share, val_share)]
        train += tr[:cap_train]
        test += te[:cap_test]
    return train, test


def validation_pairs(seed: int = SEED, cap: int = 300, test_share: float = 0.2, val_share: float = 0.1,
                     eval_dir: Path | None = None) -> list[Pair]:
    """Validation pairs: the validation contexts of TRAIN_SETS (at most ``cap`` per set), for choosing a
    configuration without touching the test pairs."""
    out = []
    for name in TRAIN_SETS:
        pairs = [p for p in set_pairs(name, seed, eval_dir) if is_val_context(p.context, test_share, val_share)]
        random.Random(f"{seed}-{name}-val").shuffle(pairs)
        out += pairs[:cap]
    return out


def common_sense_pairs(n: int, seed: int = SEED, skip: int = 0) -> list[Pair]:
    """``n`` rule-made obvious pairs (``core.training.common_sense.obvious_pairs``, part "train": chitchat-dataset
    (MIT) training conversations and the training phrase list, disjoint from the check set's), the better
    reply on side A or B at random (seeded). ``skip``: leave out the first ``skip`` pairs the same call would make
    (``common_sense_pairs(skip)``), so that the pairs returned are new to whatever trained on those."""
    from core.training.common_sense import obvious_pairs
    dialogs, _held = chitchat_split()
    rng = random.Random(f"{seed}-common-sense-sides")
    out = []
    for p in obvious_pairs(dialogs, skip + n, "train", seed):
        if rng.random() < 0.5:
            out.append(Pair(list(p.context), p.better, p.worse, 1.0, "common-sense-" + p.kind, p.id))
        else:
            out.append(Pair(list(p.context), p.worse, p.better, 0.0, "common-sense-" + p.kind, p.id))
    return out[skip:]


def synthetic_pairs(n: int, seed: int = SEED) -> list[Pair]:
    """``n`` machine-made preferences from chitchat-dataset (MIT) training conversations: the true next
    turn against (half of the pairs) a random turn of another conversation or (the other half) a
    disfluent copy of the true turn (words shuffled, dropped or repeated). Side drawn at random."""
    from core.training.mme import perturb_negative
    dialogs, _held = chitchat_split()
    ctx_resp = context_pairs(dialogs, n, seed)
    rng = random.Random(f"{seed}-synthetic")
    responses = [r for _, r in ctx_resp]
    out = []
    for i, (ctx, resp) in enumerate(ctx_resp):
        if i % 2 == 0:
            j = rng.randrange(len(responses) - 1)
            neg = responses[j + (j >= i)]
        else:
            neg = perturb_negative(resp, rng)
        if normalize_text(neg) == normalize_text(resp):
            continue
        if rng.random() < 0.5:
            out.append(Pair(list(ctx), resp, neg, 1.0, "chitchat-synthetic", f"syn{i}"))
        else:
            out.append(Pair(list(ctx), neg, resp, 0.0, "chitchat-synthetic", f"syn{i}"))
    return out


def evaluate(judge: PairwiseJudge, pairs: Sequence[Pair], enc: Encoded | None = None,
             progress: Progress | None = None, out: JudgeOutput | None = None) -> tuple[Any, JudgeOutput]:
    """Per-dataset table: n, judge agreement (forced choice from combined p), single-order agreements,
    order disagreement, length baseline. ``out``: predictions already made for ``pairs``."""
    import pandas as pd
    if out is None:
        enc = enc or judge.encode([p.context for p in pairs], [p.response_a for p in pairs],
                                  [p.response_b for p in pairs], progress)
        out = judge.predict_encoded(enc)
    gold = [p.vote for p in pairs]
    lens = np.array([len(p.response_a.split()) - len(p.response_b.split()) for p in pairs], dtype=float)
    length_p = 0.5 + 0.5 * np.sign(lens)
    df = pd.DataFrame({"dataset": [p.dataset for p in pairs], "gold": gold, "p_a": out.p_a, "p_ab": out.p_ab,
                       "p_ba_flipped": out.p_ba_flipped, "verdict": out.verdict, "length_p": length_p})
    rows = []
    for name, g in list(df.groupby("dataset", sort=False)) + [("overall", df)]:
        rows.append({"dataset": name, "pairs": len(g),
                     "judge": side_accuracy(g.p_a.values, g.gold.values),
                     "A|B only": side_accuracy(g.p_ab.values, g.gold.values),
                     "B|A only": side_accuracy(g.p_ba_flipped.values, g.gold.values),
                     "order disagreement": float(np.mean((g.p_ab > .5) != (g.p_ba_flipped > .5))),
                     "judge ties": float(np.mean(g.verdict == "tie")),
                     "length": side_accuracy(g.length_p.values, g.gold.values)})
    return pd.DataFrame(rows), out


def heldout_cache_path(identity: str) -> Path:
    """Where the training run leaves its held-out predictions for ``benchmarks/judge.py``, keyed by the judge's
    ``PairwiseJudge.cache_identity`` (tensors, mix and MME checkpoints), so a stale file is never used for another
    judge."""
    import hashlib
    return cache_dir() / f"judge-heldout-{hashlib.sha256(identity.encode()).hexdigest()[:12]}.jsonl"


def load_heldout_predictions(pairs: Sequence[Pair], path: Path, tie_margin: float = TIE_MARGIN) -> JudgeOutput | None:
    """The training run's held-out predictions for exactly ``pairs`` (same ids, same order), else None."""
    if not path.exists():
        return None
    recs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if [r["id"] for r in recs] != [p.id for p in pairs]:
        return None
    p_ab = np.array([r["p_ab"] for r in recs])
    flipped = np.array([r["p_ba_flipped"] for r in recs])
    p_a, _, _ = combine_orders(p_ab, 1 - flipped)
    return JudgeOutput.from_probabilities(p_a, p_ab, flipped, tie_margin)


def save_heldout_predictions(pairs: Sequence[Pair], out: JudgeOutput, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_open(path) as f:
        for p, a, b in zip(pairs, out.p_ab, out.p_ba_flipped):
            f.write(json.dumps({"id": p.id, "dataset": p.dataset, "vote": p.vote, "p_ab": float(a),
                                "p_ba_flipped": float(b)}) + "\n")
