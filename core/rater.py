"""The NN-rater of υBLEU (Tsuta et al. 2020, §4.2; METHODS.md §1, step 3).

Given a test pair (U1, R1) and a retrieved pair (U2, R2), the rater judges whether R2 can answer U1.
It sees two triplets, (U1, R1, R2) and (U2, R2, R1) — never U1 and U2 together — each sentence encoded
by one shared Bi-GRU ([h_forward; h_backward] of the last state), the three sentence vectors
concatenated into an FFNN with ReLU and a 2-way softmax. The triplet whose predicted class is more
probable gives the judgment; the weight is that probability, negated when the class is "does not fit",
so it lies in [-1, -0.5] ∪ [0.5, 1].

Sizes, shrunk for CPU training (the paper: 512-d trainable embeddings, 512 GRU units, 5 x 1024 FFNN):
- word vectors: all-MiniLM-L6-v2's static word-piece input embeddings (384-d, frozen, not stored in the
  checkpoint), projected to 64-d; sentences truncated to 24 word pieces;
- Bi-GRU with 64 units per direction (sentence vector 128-d);
- FFNN of 5 layers x 256 units.
Why: on 2 CPU cores the paper's sizes train at ~20 examples/s (a Bi-GRU's cost grows with the square of its
width); these sizes train ~6x faster, so `python -m core train rater` reproduces the checkpoint in minutes.

Training data, generated from the pool (the rule):
- split the pool by conversation: 90% train, 5% validation, 5% test (fixed seed);
- positives: two pairs of one split whose utterances are the same after normalization (lowercase,
  punctuation dropped), or near-identical (MiniLM cosine >= 0.9 between two different utterances of 3+
  words), and whose responses differ; at most 20 pairs per utterance group so greetings do not dominate;
- negatives: the first pair of each positive example with a random pair of the same split (``--negatives
  random``, the default and the paper's rule), so U1 has the same distribution in both classes and the rater
  cannot win by spotting frequent utterances. Known shortcut: positive R2s are replies to frequent, often
  short utterances, so "R2 is a short generic reply" is evidence for the positive class.
  ``--negatives matched`` draws the second pair from pairs that occur in positives instead (same R2
  distribution in both classes); at these sizes and data (18k pairs) the rater then did not learn at all
  (held-out accuracy 0.50 after 6 epochs), so it is not the default;
- balanced (one negative per positive); each example gives both triplets with the same label.
Adam (lr 1e-3), cross-entropy, batch 1000 (as the paper), up to ``--epochs`` epochs, keeping the
weights with the best validation loss; accuracy is measured on the held-out test conversations.
"""
from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from dataclasses import dataclass
from typing import Sequence

import numpy as np

CHECKPOINT = "nn-rater"
MAX_TOKENS = 24
SEED = 13


def _torch():
    import torch
    return torch


def build_model(emb_dim: int = 384, proj: int = 64, hidden: int = 64, ffnn: int = 256, layers: int = 5):
    torch = _torch()
    nn = torch.nn

    class NNRater(nn.Module):
        def __init__(self):
            super().__init__()
            from core.encoders import minilm_word_embeddings
            w = torch.from_numpy(np.array(minilm_word_embeddings(), dtype=np.float32))
            self.word = nn.Embedding.from_pretrained(w, freeze=True, padding_idx=0)
            self.proj = nn.Linear(emb_dim, proj)
            self.gru = nn.GRU(proj, hidden, batch_first=True, bidirectional=True)
            mlp, d = [], 3 * 2 * hidden
            for _ in range(layers):
                mlp += [nn.Linear(d, ffnn), nn.ReLU()]
                d = ffnn
            mlp.append(nn.Linear(d, 2))
            self.ffnn = nn.Sequential(*mlp)
            self.config = dict(emb_dim=emb_dim, proj=proj, hidden=hidden, ffnn=ffnn, layers=layers)

        def encode(self, ids, lengths):
            """Sentence vectors [h_fwd; h_bwd] of the last state, (n, 2*hidden)."""
            x = torch.relu(self.proj(self.word(ids)))
            packed = nn.utils.rnn.pack_padded_sequence(x, lengths.clamp(min=1).cpu(), batch_first=True,
                                                       enforce_sorted=False)
            _, h = self.gru(packed)  # (2, n, hidden)
            return torch.cat([h[0], h[1]], dim=-1)

        def forward(self, sent_vecs, a, b, c):
            """Logits for triplets (a, b, c) given indexes into ``sent_vecs``."""
            return self.ffnn(torch.cat([sent_vecs[a], sent_vecs[b], sent_vecs[c]], dim=-1))

        def trainable_state(self):
            return {k: v for k, v in self.state_dict().items() if not k.startswith("word.")}

    return NNRater()


class _SentenceBatch:
    """Tokenizes a list of distinct sentences once into padded id tensors."""

    def __init__(self, sentences: Sequence[str]):
        torch = _torch()
        from core.encoders import minilm_tokenizer
        tok = minilm_tokenizer()
        enc = tok(list(sentences), add_special_tokens=False, truncation=True, max_length=MAX_TOKENS,
                  padding="longest", return_tensors="pt")
        self.ids = enc["input_ids"]
        self.lengths = enc["attention_mask"].sum(1)
        if self.ids.shape[1] == 0:  # every sentence empty
            self.ids = torch.zeros((len(sentences), 1), dtype=torch.long)


@dataclass
class RaterOutput:
    weight: np.ndarray  # signed judgment in [-1, 1]
    p_fit: np.ndarray  # P(R2 fits U1) from the triplet that gave the judgment


class NNRaterScorer:
    """Loads the shipped rater and rates retrieved references."""

    def __init__(self, name: str = CHECKPOINT):
        torch = _torch()
        from core import checkpoints
        tensors, self.manifest = checkpoints.load(name)
        self.model = build_model(**self.manifest["config"])
        missing, unexpected = self.model.load_state_dict(tensors, strict=False)
        if unexpected or any(not k.startswith("word.") for k in missing):
            raise checkpoints.CheckpointError(f"checkpoint {name} does not match the NN-rater: "
                                              f"missing {missing}, unexpected {unexpected}")
        self.model.eval()
        self.hash = checkpoints.short_hash(name)
        self._torch = torch

    def rate(self, u1: Sequence[str], r1: Sequence[str], u2: Sequence[str], r2: Sequence[str],
             batch_size: int = 512) -> RaterOutput:
        """Weight of each retrieved pair (u2[i], r2[i]) as a reference for test pair (u1[i], r1[i])."""
        torch = self._torch
        n = len(u1)
        weights, pfit = np.zeros(n), np.zeros(n)
        with torch.inference_mode():
            for s in range(0, n, batch_size):
                sl = slice(s, min(n, s + batch_size))
                sents = list(dict.fromkeys([*u1[sl], *r1[sl], *u2[sl], *r2[sl]]))
                pos = {t: i for i, t in enumerate(sents)}
                sb = _SentenceBatch(sents)
                vecs = self.model.encode(sb.ids, sb.lengths)
                ix = lambda col: torch.tensor([pos[t] for t in col[sl]])  # noqa: E731
                a_u1, a_r1, a_u2, a_r2 = ix(u1), ix(r1), ix(u2), ix(r2)
                p1 = torch.softmax(self.model(vecs, a_u1, a_r1, a_r2), -1)[:, 1].numpy()
                p2 = torch.softmax(self.model(vecs, a_u2, a_r2, a_r1), -1)[:, 1].numpy()
                w, p = _combine(p1, p2)
                weights[sl], pfit[sl] = w, p
        return RaterOutput(weights, pfit)


def _combine(p1: np.ndarray, p2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The triplet with the more confident prediction decides; weight = ±max probability."""
    conf1, conf2 = np.maximum(p1, 1 - p1), np.maximum(p2, 1 - p2)
    p = np.where(conf1 >= conf2, p1, p2)
    conf = np.maximum(p, 1 - p)
    return np.where(p >= 0.5, conf, -conf), p


@functools.lru_cache(maxsize=2)
def load_rater(name: str = CHECKPOINT) -> NNRaterScorer:
    return NNRaterScorer(name)


# ------------------------------------------------------------------------------------------------
# training data


def make_pairs(pool, split_of_conv: np.ndarray, split: int, rng: np.random.Generator, text_vecs: np.ndarray | None,
               cap: int = 20, near: float = 0.9, max_near_queries: int = 20000, negatives: str = "random",
               min_words: int = 1):
    """(i, j, label) pool-pair index triples for one split, following the rule in the module docstring."""
    from core.retrieval import normalize
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
    torch = _torch()
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
        yield (_SentenceBatch(list(sents)), torch.tensor(a), torch.tensor(b), torch.tensor(c), torch.tensor(y))


def evaluate(model, pool, examples, batch_size=1000) -> dict:
    """Loss over triplets and accuracy of the combined judgment per example (sign of the weight)."""
    torch = _torch()
    model.eval()
    losses, correct, n = [], 0, 0
    with torch.inference_mode():
        for sb, a, b, c, y in _triplet_batches(pool, examples, batch_size):
            vecs = model.encode(sb.ids, sb.lengths)
            logits = model(vecs, a, b, c)
            losses.append(float(torch.nn.functional.cross_entropy(logits, y, reduction="sum")))
            p = torch.softmax(logits, -1)[:, 1].numpy()
            w, _ = _combine(p[0::2], p[1::2])
            correct += int(((w > 0).astype(int) == y.numpy()[0::2]).sum())
            n += len(w)
    return {"loss": sum(losses) / (2 * n), "accuracy": correct / n, "n": n}


def train_main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m core train rater",
                                description="Train the υBLEU NN-rater on automatically generated pairs of the pool.")
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
    a = p.parse_args(argv)
    torch = _torch()
    from tqdm import tqdm

    from core import checkpoints
    from core.retrieval import get_pool, pool_embeddings
    torch.manual_seed(SEED)
    if a.threads:
        torch.set_num_threads(a.threads)
    rng = np.random.default_rng(SEED)
    pool = get_pool(a.pool)
    n_conv = int(pool.conv_id.max()) + 1
    split_of_conv = rng.choice(3, size=n_conv, p=[0.9, 0.05, 0.05])
    vecs, src = pool_embeddings(pool)
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
        bar = tqdm(total=len(train), desc=f"epoch {epoch + 1}/{a.epochs}", file=sys.stderr)
        for sb, ta, tb, tc, y in _triplet_batches(pool, train, a.batch_size, rng):
            vecs_b = model.encode(sb.ids, sb.lengths)
            loss = torch.nn.functional.cross_entropy(model(vecs_b, ta, tb, tc), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            bar.update(len(y) // 2)
            bar.set_postfix(loss=f"{float(loss):.3f}")
        bar.close()
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
        "command": "python -m core train rater " + " ".join(argv),
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
