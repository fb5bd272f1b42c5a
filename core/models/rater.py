"""The NN-rater of υBLEU (Tsuta et al. 2020, §4.2; METHODS.md §1, step 3), for inference; its training
(``dialeval train rater``) is in ``core/training/rater.py``.

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

import functools
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from core.models.batching import encode_sequences, in_fixed_rows

CHECKPOINT = "nn-rater"
MAX_TOKENS = 24


def _torch():
    import torch
    return torch


def build_model(emb_dim: int = 384, proj: int = 64, hidden: int = 64, ffnn: int = 256, layers: int = 5):
    torch = _torch()
    nn = torch.nn

    class NNRater(nn.Module):
        def __init__(self):
            super().__init__()
            from core.models.encoders import minilm_word_embeddings
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


class SentenceBatch:
    """Tokenizes a list of distinct sentences once into padded id tensors."""

    def __init__(self, sentences: Sequence[str]):
        torch = _torch()
        from core.models.encoders import minilm_tokenizer
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
        from core.models import checkpoints
        tensors, self.manifest = checkpoints.load(name)
        self.model = build_model(**self.manifest["config"])
        missing, unexpected = self.model.load_state_dict(tensors, strict=False)
        if unexpected or any(not k.startswith("word.") for k in missing):
            raise checkpoints.CheckpointError(f"checkpoint {name} does not match the NN-rater: "
                                              f"missing {missing}, unexpected {unexpected}")
        self.model.eval()
        self.hash = checkpoints.short_hash(name)
        self._torch = torch

    def rate(self, u1: Sequence[str], r1: Sequence[str], u2: Sequence[str], r2: Sequence[str]) -> RaterOutput:
        """Weight of each retrieved pair (u2[i], r2[i]) as a reference for test pair (u1[i], r1[i]). Every distinct
        sentence is encoded once (fixed-shape batches of one exact length) and the FFNN reads the triplets in
        fixed row chunks, so a weight never depends on what else is rated with it."""
        torch = self._torch
        from core.models.encoders import minilm_tokenizer
        if not len(u1):
            return RaterOutput(np.zeros(0), np.zeros(0))
        sents = list(dict.fromkeys([*u1, *r1, *u2, *r2]))
        ids = minilm_tokenizer()(sents, add_special_tokens=False, truncation=True, max_length=MAX_TOKENS)["input_ids"]
        vecs = encode_sequences(ids, self.model.encode)
        pos = {t: i for i, t in enumerate(sents)}
        col = lambda texts: vecs[[pos[t] for t in texts]]  # noqa: E731

        def p_fit(x: np.ndarray) -> np.ndarray:
            with torch.inference_mode():
                return torch.softmax(self.model.ffnn(torch.from_numpy(x)), -1)[:, 1].double().numpy()
        p1 = in_fixed_rows(p_fit, np.concatenate([col(u1), col(r1), col(r2)], axis=1))
        p2 = in_fixed_rows(p_fit, np.concatenate([col(u2), col(r2), col(r1)], axis=1))
        w, p = combine_judgments(p1, p2)
        return RaterOutput(w, p)


def combine_judgments(p1: np.ndarray, p2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The triplet with the more confident prediction decides; weight = ±max probability."""
    conf1, conf2 = np.maximum(p1, 1 - p1), np.maximum(p2, 1 - p2)
    p = np.where(conf1 >= conf2, p1, p2)
    conf = np.maximum(p, 1 - p)
    return np.where(p >= 0.5, conf, -conf), p


@functools.lru_cache(maxsize=2)
def load_rater(name: str = CHECKPOINT) -> NNRaterScorer:
    return NNRaterScorer(name)
