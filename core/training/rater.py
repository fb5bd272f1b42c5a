"""Training of υBLEU's NN-rater (``dialeval train rater``; inference in ``core/models/rater.py``).

Training data are generated from the pool by the rule in ``core.models.rater``'s docstring: positives share
an utterance (or a near-identical one), negatives pair a random other pair; split by conversation 90/5/5.
Adam (lr 1e-3), cross-entropy, batch 1000, keeping the weights with the best validation loss; accuracy is
measured on the held-out test conversations.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from core.models.rater import CHECKPOINT, SentenceBatch, build_model, combine_judgments
from core.progress import progress_bar
from core.settings import SEED
from core.training import register_trainer


def make_pairs(pool, split_of_conv: np.ndarray, split: int, rng: np.random.Generator, text_vecs: np.ndarray | None,
               cap: int = 20, near: float = 0.9, max_near_queries: int = 20000, negatives: str = "random",
               min_words: int = 1):
    """(i, j, label) pool-pair index triples for one split, following the rule in the module docstring."""
    from core.models.retrieval import normalize
    idx = np.flatnonzero(split_of_conv[pool.conv_id] == split)
    norm_resp = {}
    groups: dict[str, list[int]] = {}
    for i in idx:
        groups.setdefault(normalize(pool.utterance(i)), []).append(int(i))

    def rn(i):
        if i not in norm_resp:
            norm_resp[i] = normalize(pool.response(i))
        return norm_resp[i]

    pos: set[tuple[int, int]] = set()
    for key, members in groups.items():
        if len(members) < 2 or len(key.split()) < min_words:
            continue
        members = list(members)
        rng.shuffle(members)
        cand = [(a, b) for k, a in enumerate(members[:40]) for b in members[k + 1:40]]
        rng.shuffle(cand)
        taken = 0
        for a, b in cand:
            if rn(a) != rn(b) and rn(a) and rn(b):
                pos.add((a, b))
                taken += 1
                if taken >= cap:
                    break
    if text_vecs is not None:  # near-identical utterances (different strings, cosine >= near)
        import faiss
        utt_text = pool.utt_idx[idx]
        uniq = np.unique(utt_text)
        long_enough = np.array([len(pool.texts[t].split()) >= max(3, min_words) for t in uniq])
        uniq = uniq[long_enough]
        first_pair = {}
        for i in idx:
            first_pair.setdefault(int(pool.utt_idx[i]), int(i))
        index = faiss.IndexFlatIP(text_vecs.shape[1])
        index.add(np.ascontiguousarray(text_vecs[uniq]))
        q = uniq if len(uniq) <= max_near_queries else rng.choice(uniq, max_near_queries, replace=False)
        sims, nn = index.search(np.ascontiguousarray(text_vecs[q]), 2)
        for qi, (s, n) in zip(q, zip(sims, nn)):
            for sim, cand in zip(s, n):
                other = int(uniq[cand])
                if other == qi or sim < near:
                    continue
                a, b = first_pair[int(qi)], first_pair[other]
                if normalize(pool.texts[qi]) != normalize(pool.texts[other]) and rn(a) != rn(b):
                    pos.add((min(a, b), max(a, b)))
    pos_list = sorted(pos)
    rng.shuffle(pos_list)
    # negatives draw their second pair from the pairs that occur in positives, so R2 has one distribution
    # in both classes (short generic replies dominate positives; random pool replies would be a give-away)
    members = np.array(sorted({i for ab in pos_list for i in ab}))
    out = []
    for a, b in pos_list:
        if rng.random() < 0.5:
            a, b = b, a
        out.append((a, b, 1))
        ua = normalize(pool.utterance(a))
        while True:
            c = int(members[rng.integers(len(members))]) if negatives == "matched" else int(idx[rng.integers(len(idx))])
            if rn(c) != rn(a) and normalize(pool.utterance(c)) != ua:
                break
        out.append((a, c, 0))
    return out


def _triplet_batches(pool, examples, batch_size, rng=None):
    """Yields (sentence batch, (a, b, c) index tensors, labels) with both triplets of each example."""
    import torch
    order = np.arange(len(examples)) if rng is None else rng.permutation(len(examples))
    for s in range(0, len(order), batch_size):
        chunk = [examples[k] for k in order[s:s + batch_size]]
        sents: dict[str, int] = {}

        def sid(t):
            return sents.setdefault(t, len(sents))
        a, b, c, y = [], [], [], []
        for i, j, lab in chunk:
            u1, r1, u2, r2 = (sid(pool.utterance(i)), sid(pool.response(i)), sid(pool.utterance(j)),
                              sid(pool.response(j)))
            a += [u1, u2]
            b += [r1, r2]
            c += [r2, r1]
            y += [lab, lab]
        yield (SentenceBatch(list(sents)), torch.tensor(a), torch.tensor(b), torch.tensor(c), torch.tensor(y))


def evaluate(model, pool, examples, batch_size=1000) -> dict:
    """Loss over triplets and accuracy of the combined judgment per example (sign of the weight)."""
    import torch
    model.eval()
    losses, correct, n = [], 0, 0
    with torch.inference_mode():
        for sb, a, b, c, y in _triplet_batches(pool, examples, batch_size):
            vecs = model.encode(sb.ids, sb.lengths)
            logits = model(vecs, a, b, c)
            losses.append(float(torch.nn.functional.cross_entropy(logits, y, reduction="sum")))
            p = torch.softmax(logits, -1)[:, 1].numpy()
            w, _ = combine_judgments(p[0::2], p[1::2])
            correct += int(((w > 0).astype(int) == y.numpy()[0::2]).sum())
            n += len(w)
    return {"loss": sum(losses) / (2 * n), "accuracy": correct / n, "n": n}


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--pool", default=None, help="pool file (default: chitchat-dataset)")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--max-train", type=int, default=40000, help="cap on training examples (each gives 2 triplets)")
    p.add_argument("--batch-size", type=int, default=1000)
    p.add_argument("--min-words", type=int, default=1, help="shortest utterance (words) a positive group may have")
    p.add_argument("--near", type=float, default=0.9, help="cosine above which two utterances count as near-identical")
    p.add_argument("--near-queries", type=int, default=20000, help="utterances searched for near-identical partners")
    p.add_argument("--negatives", choices=["matched", "random"], default="random",
                   help="where a negative's second pair comes from (see the module docstring)")
    p.add_argument("--threads", type=int, default=0, help="torch threads (0 = all cores)")
    p.add_argument("--out", default=CHECKPOINT, help="checkpoint name in checkpoints/")


@register_trainer("rater", "NN-rater of υBLEU (Bi-GRU + FFNN) on the chitchat pool", _arguments)
def train(a: argparse.Namespace) -> int:
    import torch
    from core.models import checkpoints
    from core.models.retrieval import get_pool, pool_embeddings
    torch.manual_seed(SEED)
    if a.threads:
        torch.set_num_threads(a.threads)
    rng = np.random.default_rng(SEED)
    pool = get_pool(a.pool)
    n_conv = int(pool.conv_id.max()) + 1
    split_of_conv = rng.choice(3, size=n_conv, p=[0.9, 0.05, 0.05])
    vecs, src = pool_embeddings(pool, progress=progress_bar(prefix="encoding the pool (no index in the checkpoint "
                                                                 "folder): "))
    t0 = time.time()
    train = make_pairs(pool, split_of_conv, 0, rng, vecs, negatives=a.negatives, min_words=a.min_words,
                       near=a.near, max_near_queries=a.near_queries)
    val = make_pairs(pool, split_of_conv, 1, rng, vecs, negatives=a.negatives, min_words=a.min_words,
                       near=a.near, max_near_queries=a.near_queries)
    test = make_pairs(pool, split_of_conv, 2, rng, vecs, negatives=a.negatives, min_words=a.min_words,
                       near=a.near, max_near_queries=a.near_queries)
    n_train_all = len(train)
    train = train[: a.max_train]
    print(f"pairs: train {len(train)} (of {n_train_all}), val {len(val)}, test {len(test)} "
          f"[{time.time() - t0:.0f}s]", file=sys.stderr)
    model = build_model()
    opt = torch.optim.Adam([q for q in model.parameters() if q.requires_grad], lr=1e-3)
    best, best_state, history = float("inf"), None, []
    for epoch in range(a.epochs):
        model.train()
        bar, done = progress_bar(), 0
        for sb, ta, tb, tc, y in _triplet_batches(pool, train, a.batch_size, rng):
            vecs_b = model.encode(sb.ids, sb.lengths)
            loss = torch.nn.functional.cross_entropy(model(vecs_b, ta, tb, tc), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            done += len(y) // 2
            bar(done, len(train), f"epoch {epoch + 1}/{a.epochs} loss {float(loss):.3f}")
        ev = evaluate(model, pool, val)
        history.append({"epoch": epoch + 1, "val_loss": round(ev["loss"], 4), "val_accuracy": round(ev["accuracy"], 4)})
        print(json.dumps(history[-1]), file=sys.stderr)
        if ev["loss"] < best:
            best = ev["loss"]
            best_state = {k: v.clone() for k, v in model.trainable_state().items()}
    model.load_state_dict(best_state, strict=False)
    test_ev = evaluate(model, pool, test)
    print(f"held-out test accuracy {test_ev['accuracy']:.4f} on {test_ev['n']} balanced pairs", file=sys.stderr)
    manifest = {
        "model": "υBLEU NN-rater (Bi-GRU + FFNN over two triplets)",
        "command": a.command_line,
        "data": {"pool": pool.key, "source": "chitchat-dataset (MIT)" if pool.name == "chitchat" else pool.name,
                 "embeddings_for_near_duplicates": src, "split": "by conversation 90/5/5, seed 13",
                 "train_pairs": len(train), "val_pairs": len(val), "test_pairs": len(test)},
        "config": model.config,
        "seed": SEED,
        "history": history,
        "held_out": {"accuracy": round(test_ev["accuracy"], 4), "n": test_ev["n"], "loss": round(test_ev["loss"], 4),
                     "balanced": True},
        "frozen_base": "all-MiniLM-L6-v2 word-piece embeddings (not stored here)",
    }
    path = checkpoints.save(a.out, model.trainable_state(), manifest)
    print(f"saved {path}", file=sys.stderr)
    return 0
