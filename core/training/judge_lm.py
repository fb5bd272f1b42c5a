"""Training of the judge's SmolLM2 reader (``dialeval train judge-lm``; the reader is
``core/judges/smollm_reader.py``).

The reader's scorer trains on the same clear-margin pairs as the MiniLM judge (all of them: reading is cheap
enough for all 18,450), pairwise logistic loss on ``s(A) - s(B)``. The weights that mix its logit with the
MiniLM judge's (``w_judge``, ``w_lm``) and, unless ``--no-mme``, the weight of the two replies' MME-CRS difference
(``w_mme``) are a logistic regression on the validation pairs and, unless ``--mix-common-sense 0``, rule-made
obvious pairs the reader never read (:func:`fit_mix`; docs/judge.md, "Rule-made pairs in the mix's fit"). All are
written into the judge checkpoint (tensors ``lm.*``, the mix in its manifest), which stays one file.
``--balance`` weighs the pairs of small data sets up (:func:`set_weights`) and ``--synthetic N`` adds
machine-made chitchat pairs; both were measured and are not shipped (docs/judge.md). Features of the ~13,000
training replies are kept in the cache folder (:func:`cached_features`, about 10 minutes to read once).
"""
from __future__ import annotations

import argparse
import copy
import hashlib
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from core.judges.pairwise import (CHECKPOINT, Encoded, PairwiseJudge, encode_pairs, load_judge,
                                  mme_pair_scores)
from core.judges.smollm_reader import HIDDEN, MEMBERS, SmolLMReader, build_scorer, config, distinct_items, lm_features, scores
from core.outputs import atomic_path
from core.progress import Progress, progress_bar
from core.settings import SEED, cache_dir
from core.training import register_trainer, set_threads
from core.training.judge_pairs import (common_sense_pairs, evaluate, heldout_cache_path, save_heldout_predictions,
                                       synthetic_pairs,
                                       train_test_pairs, validation_pairs)
from core.verdict import side_accuracy

BALANCE = 0.0  # per-pair loss weight n_set ** -BALANCE (set_weights); 0 = unweighted (shipped)
SYNTHETIC = 6000  # machine-made chitchat pairs in the reader's training (shipped since 0.6.0: leave-one-set-out)
SYNTHETIC_WEIGHT = 1.0  # their loss weight relative to a rated pair
COMMON_SENSE = 1600  # rule-made obvious pairs added to the reader's training pairs (shipped)
MIX_COMMON_SENSE = 800  # further rule-made pairs, new to the reader, beside the validation pairs in the mix's fit
COMMON_SENSE_WEIGHT = 1.0
SKIP_SETS: tuple[str, ...] = ()  # rated sets the reader does not train on


def feature_store_dir() -> Path:
    """Where the reader's training features are kept: one folder per reader configuration, holding chunk files
    ``chunk-*.npz`` (item keys and float16 rows, one row per distinct (context, reply))."""
    h = hashlib.sha1(repr(sorted(config().items())).encode()).hexdigest()[:12]
    return cache_dir() / f"judge-lm-features-{h}"


def stored_features(keys: Sequence[str]) -> dict[str, np.ndarray]:
    """The stored float16 rows of ``keys`` (absent keys left out)."""
    want, found = set(keys), {}
    folder = feature_store_dir()
    for chunk in sorted(folder.glob("chunk-*.npz")) if folder.is_dir() else []:
        with np.load(chunk) as z:
            for k, row in zip(z["keys"].tolist(), z["rows"]):
                if k in want:
                    found[k] = row
    return found


def store_features(keys: Sequence[str], rows: np.ndarray) -> Path:
    """Add a chunk of rows (written whole or not at all)."""
    folder = feature_store_dir()
    folder.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha1("".join(keys).encode()).hexdigest()[:16]
    path = folder / f"chunk-{digest}.npz"
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        np.savez(f, keys=np.array(list(keys)), rows=np.asarray(rows, dtype=np.float16))
    return path


CHUNK_ITEMS = 512  # items read between two writes of the store: an interrupted reading loses at most this many


def cached_features(contexts: Sequence[Sequence[str]], replies: Sequence[str], progress: Progress | None = None,
                    desc: str = "SmolLM2 reading") -> np.ndarray:
    """:meth:`LMFeatures.features` of every item, rounded to float16 and kept item by item in
    :func:`feature_store_dir` (training reads ~13,000 replies, tens of minutes on 2 cores): only items not
    read before are read, in chunks of :data:`CHUNK_ITEMS` saved as they finish."""
    keys, uniq, where = distinct_items(contexts, replies)
    ukeys = [keys[i] for i in uniq]
    found = stored_features(ukeys)
    todo = [j for j, k in enumerate(ukeys) if k not in found]
    t0, done = time.time(), 0
    for start in range(0, len(todo), CHUNK_ITEMS):
        part = todo[start:start + CHUNK_ITEMS]
        rows = lm_features().features([contexts[uniq[j]] for j in part], [replies[uniq[j]] for j in part],
                                      desc=desc).astype(np.float16)
        store_features([ukeys[j] for j in part], rows)
        found.update({ukeys[j]: rows[i] for i, j in enumerate(part)})
        done += len(part)
        if progress is not None:
            progress(done, len(todo), f"{desc} ({time.time() - t0:.0f} s)")
    rows = np.stack([found[k] for k in ukeys]) if ukeys else np.zeros((0, lm_features().dim), np.float16)
    return rows[where].astype(np.float32)


def pair_features(pairs: Sequence[Any], progress: Progress | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(features of every pair's reply A, of its reply B) through :func:`cached_features` (one read per
    distinct (context, reply))."""
    ctx = [p.context for p in pairs]
    f = cached_features(ctx + ctx, [p.response_a for p in pairs] + [p.response_b for p in pairs], progress=progress)
    return f[:len(pairs)], f[len(pairs):]


def set_weights(datasets: Sequence[str], balance: float = BALANCE) -> np.ndarray:
    """Per-pair loss weights ``n_set ** -balance`` (mean 1): 0 weighs every pair alike, 1 every data set alike.
    Without it dstc7 is 76 % of the reader's training pairs."""
    from collections import Counter
    n = Counter(datasets)
    w = np.array([n[d] ** -float(balance) for d in datasets], dtype=np.float64)
    return (w / w.mean()).astype(np.float32) if len(w) else w.astype(np.float32)


def train_scorer(fa: np.ndarray, fb: np.ndarray, labels: np.ndarray, epochs: int = 6, lr: float = 3e-4,
                 weight_decay: float = 1e-2, batch_size: int = 64, hidden: int = HIDDEN, members: int = MEMBERS,
                 seed: int = SEED, progress: Progress | None = None,
                 epoch_end: Callable[[int, Any], None] | None = None, weights: np.ndarray | None = None):
    """Each member trained on its own batch order (seed + m): logistic loss on s(A) - s(B), each pair's term
    times ``weights`` (default: all 1, the unweighted loss; see :func:`set_weights`)."""
    import torch
    dim = fa.shape[1]
    scorer = build_scorer(dim, hidden, members, seed=seed)
    both = np.concatenate([fa, fb])
    with torch.no_grad():
        scorer.mu.copy_(torch.from_numpy(both.mean(0)))
        scorer.sd.copy_(torch.from_numpy(both.std(0) + 1e-4))
    A, B = torch.from_numpy(np.asarray(fa, dtype=np.float32)), torch.from_numpy(np.asarray(fb, dtype=np.float32))
    y = torch.from_numpy(np.asarray(labels, dtype=np.float32))
    n = len(y)
    # equal weights (balance 0) take the unweighted loss, so the shipped scorer is rebuilt exactly as trained
    equal = weights is None or np.unique(np.asarray(weights)).size <= 1
    wt = None if equal else torch.from_numpy(np.asarray(weights, dtype=np.float32))
    steps = members * epochs * ((n + batch_size - 1) // batch_size)
    done = 0
    for m, net in enumerate(scorer.members):
        opt = torch.optim.AdamW(net.parameters(), lr=lr, weight_decay=weight_decay)
        gen = torch.Generator().manual_seed(seed + m)
        for ep in range(epochs):
            net.train()
            perm = torch.randperm(n, generator=gen)
            for s in range(0, n, batch_size):
                i = perm[s:s + batch_size]
                za = (A[i] - scorer.mu) / scorer.sd
                zb = (B[i] - scorer.mu) / scorer.sd
                loss = torch.nn.functional.binary_cross_entropy_with_logits(
                    net(za).squeeze(-1) - net(zb).squeeze(-1), y[i], weight=None if wt is None else wt[i])
                opt.zero_grad()
                loss.backward()
                opt.step()
                done += 1
                if progress is not None and (done % 50 == 0 or done == steps):
                    progress(done, steps, f"judge-lm: member {m + 1}/{members}, epoch {ep + 1}/{epochs}")
            if epoch_end is not None and m == len(scorer.members) - 1:
                epoch_end(ep + 1, scorer)
    scorer.eval()
    return scorer


def fit_mix(judge_logits: np.ndarray, lm_diff: np.ndarray, labels: np.ndarray,
            mme_diff: np.ndarray | None = None) -> tuple[float, ...]:
    """(w_judge, w_lm) or, with ``mme_diff``, (w_judge, w_lm, w_mme): logistic regression without intercept on
    both orders of the pairs given (:func:`train` passes the validation pairs and the mix's rule-made pairs; rows
    ``(z_ab, d, m)`` with label y and ``(z_ba, -d, -m)`` with 1 - y, z the MiniLM judge's single-order logits,
    d the reader's s(A) - s(B), m the MME-CRS q(A) - q(B))."""
    from sklearn.linear_model import LogisticRegression
    z = np.asarray(judge_logits, dtype=np.float64)
    cols = [np.asarray(lm_diff, dtype=np.float64)]
    if mme_diff is not None:
        cols.append(np.nan_to_num(np.asarray(mme_diff, dtype=np.float64), nan=0.0))
    signed = np.stack(cols, 1)
    y = np.asarray(labels, dtype=np.float64)
    X = np.concatenate([np.c_[z[0::2], signed], np.c_[z[1::2], -signed]])
    Y = np.concatenate([y, 1 - y])
    keep = (Y == 0) | (Y == 1)
    m = LogisticRegression(fit_intercept=False, C=1.0, max_iter=1000).fit(X[keep], Y[keep].astype(int))
    return tuple(float(c) for c in m.coef_[0])


def mix_inputs(pairs: Sequence[Any], base: PairwiseJudge, scorer, mme_weights: dict[str, float] | None,
               prefix: str, reader_features: tuple[np.ndarray, np.ndarray] | None = None
               ) -> tuple[Encoded, np.ndarray, np.ndarray]:
    """What the mix is fitted on, for ``pairs``: the pairs encoded as the judge reads them (MiniLM bottom states,
    the reader's features of A and B, and MME-CRS scores of A and B with ``mme_weights`` when given), the MiniLM
    judge ``base``'s single-order logits z and the trained reader ``scorer``'s d = s(A) - s(B).
    ``reader_features``: (A, B) features already read (else read through :func:`pair_features`)."""
    ctx = [p.context for p in pairs]
    ra, rb = [p.response_a for p in pairs], [p.response_b for p in pairs]
    enc = encode_pairs(ctx, ra, rb, progress_bar(prefix=prefix), n_frozen=base.n_frozen)
    fa, fb = reader_features if reader_features is not None else pair_features(pairs, progress_bar(prefix=prefix))
    q = None if mme_weights is None else mme_pair_scores(ctx, ra, rb, mme_weights,
                                                          progress_bar(prefix=prefix + "MME-CRS "))
    return Encoded(enc.states, enc.spans, (fa, fb), q), base.logits(enc), scores(scorer, fa) - scores(scorer, fb)


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--base", default=CHECKPOINT, help="MiniLM judge to add the reader to (default: judge)")
    p.add_argument("--out", default=None, help="checkpoint name to write (default: --base)")
    p.add_argument("--cap-train", type=int, default=0,
                    help="max training pairs per rated set (default 0: all; the MiniLM judge caps dstc7 at 8,000, "
                         "the reader is cheap enough to read all 18,450 pairs, ~13,400 distinct replies)")
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--members", type=int, default=MEMBERS)
    p.add_argument("--hidden", type=int, default=HIDDEN)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--balance", type=float, default=BALANCE,
                    help=f"weigh each training pair by n_set ** -BALANCE (default {BALANCE}; 0 = every pair alike, "
                         "1 = every data set alike)")
    p.add_argument("--synthetic", type=int, default=SYNTHETIC,
                    help=f"machine-made chitchat-dataset pairs added to the training pairs (default {SYNTHETIC}; "
                         "true next turn vs a random turn of another conversation or a disfluent copy; 0 = none)")
    p.add_argument("--synthetic-weight", type=float, default=SYNTHETIC_WEIGHT,
                    help=f"loss weight of a synthetic pair relative to a rated one (default {SYNTHETIC_WEIGHT:g})")
    p.add_argument("--common-sense", type=int, default=COMMON_SENSE,
                    help=f"rule-made obvious pairs (core.training.common_sense, training conversations and phrases) "
                         f"added to the reader's training pairs (default {COMMON_SENSE})")
    p.add_argument("--mix-common-sense", type=int, default=MIX_COMMON_SENSE,
                    help="rule-made obvious pairs the reader did not train on (the same generator's next ones after "
                         "--common-sense: same conversations and phrase lists, other examples) "
                         f"fitted beside the validation pairs in the mix (default {MIX_COMMON_SENSE}; 0 = the "
                         "validation pairs alone, as until 0.6.3)")
    p.add_argument("--common-sense-weight", type=float, default=COMMON_SENSE_WEIGHT,
                    help=f"loss weight of a rule-made pair relative to a rated one (default {COMMON_SENSE_WEIGHT:g})")
    p.add_argument("--skip-sets", default=",".join(SKIP_SETS),
                    help="rated sets whose training pairs the reader does not train on, comma-separated (default "
                         f"{','.join(SKIP_SETS) or 'none'}; the MiniLM judge and the validation still use them)")
    p.add_argument("--no-mme", action="store_true",
                   help="leave MME-CRS out of the mix (the judge of 0.6.0-0.6.3); by default the mix also weighs the "
                        "MME-CRS difference of the two replies, with MME's shipped CRS weights for 'overall' frozen "
                        "into the judge")
    p.add_argument("--seed", type=int, default=SEED)
    p.add_argument("--no-save", action="store_true")


@register_trainer("judge-lm", "the A/B judge's SmolLM2 reader (scorer + mix, written into the judge)", _arguments)
def train(args: argparse.Namespace) -> int:
    set_threads(args.threads)
    t0 = time.time()
    loaded = load_judge(args.base)
    # the MiniLM part alone (a copy: the loaded judge stays as it is)
    base = PairwiseJudge(copy.deepcopy(loaded.top), {k: v for k, v in loaded.manifest.items() if k != "lm"},
                         loaded.checkpoint)
    cfg = base.manifest.get("config", {})
    val_share = float(cfg.get("val_share", 0.1))
    if val_share <= 0:
        raise ValueError(f"judge {args.base!r} was trained without a validation split; the mix needs one")
    train, test = train_test_pairs(args.seed, args.cap_train or 10 ** 9, int(cfg.get("cap_test", 70)),
                                 val_share=val_share)
    val = validation_pairs(args.seed, val_share=val_share)
    skip = {x.strip() for x in args.skip_sets.split(",") if x.strip()}
    train = [p for p in train if p.dataset not in skip]
    print(f"{len(train)} training pairs (sets left out of the reader's training: {', '.join(sorted(skip)) or 'none'}),"
          f" {len(val)} validation pairs, {len(test)} test pairs", file=sys.stderr)
    fa, fb = pair_features(train, progress_bar(prefix="train "))
    syn = synthetic_pairs(args.synthetic, args.seed) if args.synthetic else []
    if syn:  # on a fresh machine SmolLM2 reads their ~12,000 replies first (about 16 min; cached after)
        sa, sb = pair_features(syn, progress_bar(prefix="synthetic "))
        fa, fb = np.concatenate([fa, sa]), np.concatenate([fb, sb])
        del sa, sb
    sense = common_sense_pairs(args.common_sense, args.seed) if args.common_sense else []
    if sense:
        sa, sb = pair_features(sense, progress_bar(prefix="common sense "))
        fa, fb = np.concatenate([fa, sa]), np.concatenate([fb, sb])
        del sa, sb
    va, vb = pair_features(val, progress_bar(prefix="validation "))
    vgold = [p.vote for p in val]
    curve = []

    def epoch_end(ep, scorer):
        acc = side_accuracy(1 / (1 + np.exp(-(scores(scorer, va) - scores(scorer, vb)))), vgold)
        curve.append({"epoch": ep, "validation_reader_alone": acc})
        print(f"\nepoch {ep}: validation agreement of the reader alone {acc:.3f}", file=sys.stderr)
    labels = np.array([p.label for p in train + syn + sense], dtype=np.float32)
    weights = np.concatenate([set_weights([p.dataset for p in train], args.balance),
                              np.full(len(syn), args.synthetic_weight, dtype=np.float32),
                              np.full(len(sense), args.common_sense_weight, dtype=np.float32)])
    scorer = train_scorer(fa, fb, labels, epochs=args.epochs, hidden=args.hidden, members=args.members,
                          seed=args.seed, progress=progress_bar(), epoch_end=epoch_end, weights=weights)
    del fa, fb
    # the MiniLM judge's single-order logits, the reader's and MME-CRS's differences on the validation pairs (and
    # on rule-made pairs the reader never read) -> mixing weights
    mme_weights = None
    if not args.no_mme:
        from core.metrics.mme import MMECRS, all_checkpoints_hash
        mme_weights = {k: float(v) for k, v in MMECRS().weights_for("overall")[1].items()}
    venc, z, d_val = mix_inputs(val, base, scorer, mme_weights, "validation ", (va, vb))
    mix_sense = common_sense_pairs(args.mix_common_sense, args.seed, skip=len(sense)) if args.mix_common_sense else []
    parts = [(venc, z, d_val)] + ([mix_inputs(mix_sense, base, scorer, mme_weights, "mix, common sense ")]
                                  if mix_sense else [])
    z_fit, d_fit = np.concatenate([p[1] for p in parts]), np.concatenate([p[2] for p in parts])
    m_fit = None if mme_weights is None else np.concatenate([p[0].mme_scores[0] - p[0].mme_scores[1] for p in parts])
    mix = fit_mix(z_fit, d_fit, np.array([p.label for p in val + mix_sense]), m_fit)
    w_judge, w_lm = mix[:2]
    print("mix: " + ", ".join(f"{k} {v:.3f}" for k, v in zip(("w_judge", "w_lm", "w_mme"), mix)), file=sys.stderr)
    manifest = dict(base.manifest)
    manifest["lm"] = {
        "training_command": args.command_line,
        "reader": config(),
        "scorer": {"members": args.members, "hidden": args.hidden, "epochs": args.epochs, "lr": 3e-4,
                   "weight_decay": 1e-2, "dropout": 0.2, "batch_size": 64, "seed": args.seed,
                   "loss": "logistic on s(A) - s(B), the MiniLM judge's training pairs"
                           + (f", each weighted by n_set ** -{args.balance:g} (mean 1)" if args.balance else "")
                           + (f", plus {len(syn)} synthetic pairs" if syn else "")
                           + (f" weighted {args.synthetic_weight:g}" if syn and args.synthetic_weight != 1 else "")
                           + (f", plus {len(sense)} rule-made common-sense pairs" if sense else "")
                           + (f" weighted {args.common_sense_weight:g}" if sense and args.common_sense_weight != 1
                              else ""),
                   "balance": args.balance, "synthetic_weight": args.synthetic_weight if syn else 0},
        "mix": {"w_judge": w_judge, "w_lm": w_lm,
                "fit": "logistic regression without intercept on both orders of the validation pairs"
                       + (f" and of {len(mix_sense)} rule-made pairs the reader never trained on" if mix_sense else ""),
                **({"w_mme": mix[2], "mme_weights": mme_weights, "mme_checkpoints": all_checkpoints_hash(),
                    "mme": "q = MME-CRS 'overall' with these CRS weights (core.metrics.crs.combine of the MME "
                           "sub-metrics; checkpoints/crs_weights.json when the judge was trained)"}
                   if mme_weights is not None else {})},
        "data": {"train_pairs_per_set": dict(Counter(p.dataset for p in train)),
                 "pairs": "the MiniLM judge's clear-margin training pairs"
                          + (f", at most {args.cap_train} per set" if args.cap_train else ", all (no per-set cap)"),
                 "synthetic_pairs": (f"{len(syn)} chitchat-dataset (MIT) training-split pairs "
                                     f"(judge.synthetic_pairs({args.synthetic}, seed {args.seed})): the true next turn "
                                     "vs a random turn of another conversation or a disfluent copy" if syn else 0),
                 "common_sense_pairs": (f"{len(sense)} rule-made obvious pairs from chitchat-dataset (MIT) training "
                                        f"conversations (judge_pairs.common_sense_pairs({args.common_sense}, seed "
                                        f"{args.seed}); kinds: {', '.join(sorted({p.dataset[13:] for p in sense}))})"
                                        if sense else 0),
                 "mix_common_sense_pairs": (f"{len(mix_sense)} rule-made obvious pairs fitted beside the validation "
                                            f"pairs in the mix (judge_pairs.common_sense_pairs({args.mix_common_sense},"
                                            f" seed {args.seed}, skip={len(sense)}): the same conversations' next "
                                            "pairs, which the reader never read)" if mix_sense else 0),
                 "sets_left_out_of_reader_training": sorted(skip),
                 "validation_pairs": len(val), "test_pairs": len(test)},
        "validation_per_epoch": curve,
    }
    judge = PairwiseJudge(copy.deepcopy(base.top), manifest, args.out or args.base, reader=SmolLMReader(scorer))
    vtab = evaluate(judge, val, venc)[0]
    base_v = evaluate(base, val, venc)[0]
    print("validation, MiniLM judge alone:\n" + base_v.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print("validation, with the reader:\n" + vtab.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    table, out = evaluate(judge, test, judge.encode([p.context for p in test], [p.response_a for p in test],
                                                      [p.response_b for p in test], progress_bar(prefix="test ")))
    print("held-out test pairs:\n" + table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    manifest["lm"]["validation"] = vtab.to_dict("records")
    manifest["lm"]["held_out"] = table.to_dict("records")
    manifest["lm"]["train_seconds"] = round(time.time() - t0, 1)
    if not args.no_save:
        path = judge.save(args.out or args.base, manifest)
        print(f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB)")
        save_heldout_predictions(test, out, heldout_cache_path(PairwiseJudge.cache_identity(args.out or args.base)))
    return 0
