"""RUBER (Tao et al. 2018), BERT-RUBER (Ghazarian et al. 2019) and RUBER+υBLEU (Tsuta et al. 2020).

Registered metrics
- ``ruber_ref``  s_R: every word piece of the reference and of the reply is looked up in
  all-MiniLM-L6-v2's *static* input embedding matrix (no GloVe/word2vec offline: this is the stand-in
  for the paper's word2vec), the sentence vector is [max over words; min over words] (Tao et al. §3.1),
  s_R = cosine(reference vector, reply vector). Several references: the best one (max). No reference: NaN.
- ``ruber_unref`` s_U: a Bi-GRU (shared by query and reply, 64 units a direction; see
  ``build_bigru_scorer``) encodes the query (the last context turn) and the reply over the same static
  word-piece vectors (frozen, standardized), features [q; q^T M r; r] -> MLP (tanh) -> sigmoid (Tao et
  al. §3.2), trained by negative sampling with the ranking hinge loss
  J = max(0, Δ - s_U(q, r+) + s_U(q, r-)), Δ = 0.5, on 40,000 chitchat-dataset pairs (one epoch) split
  by conversation (``python -m core train ruber --variant bigru``; checkpoint
  ``checkpoints/ruber-unref``; the 30522x384 embedding matrix is *not* stored, it is rebuilt from the
  base model at load time and its hash is checked against the manifest).
- ``ruber``      hybrid of s_R and s_U.
- ``bert_ruber_ref`` / ``bert_ruber_unref`` / ``bert_ruber``: BERT-RUBER with MiniLM contextual
  embeddings in both scorers: referenced = cosine of [max; min] pooled *contextual* token vectors
  (last layer, special tokens and padding excluded); unreferenced = [q; q^T M r; r] -> MLP -> sigmoid
  over frozen mean-pooled, normalized MiniLM sentence vectors (the same vectors ``core.encoders.encode``
  gives), trained like s_U (``python -m core train ruber --variant bert``; ``checkpoints/ruber-bert-unref``).
  One encoder pass per distinct text yields both the token and the sentence vectors.
- ``ruber_ubleu``: the υBLEU paper's best method: the hybrid with υBLEU (``get_metric("ubleu")``,
  0-100) replacing s_R; the unreferenced part is the classic s_U by default (option ``unref``).

Hybrid (Tao et al. §3.3): each score is min-max normalized to [0, 1] over *all examples of one
``compute`` call* - the engine scores system A's and system B's rows in one call, so both systems share
one normalization and a comparison is never distorted by per-system scaling. Then they are combined by
``min``, ``max``, ``gmean`` (geometric mean) or ``amean`` (arithmetic mean; the default, since the
paper found the four strategies close and the arithmetic mean never collapses to 0 when one part
is at its minimum). A constant score (zero range) normalizes to 0.5. Rows without a referenced score
(no reference, NaN) fall back to the normalized unreferenced score alone, and their details say
``"fallback": "unreferenced-only"``.
"""
from __future__ import annotations

import argparse
import functools
import json
import math
import sys
import time
from typing import Any, Sequence

import numpy as np

from core.data import Example
from core.metrics import Metric, MetricResult, Progress, Signature, get_metric, register, tick

COMBINES = ("min", "max", "gmean", "amean")
DEFAULT_COMBINE = "amean"
UNREF_CKPT = "ruber-unref"
BERT_UNREF_CKPT = "ruber-bert-unref"
MAX_WORDPIECES = 32  # per turn, for the Bi-GRU and the static referenced scorer
MARGIN = 0.5
SEED = 13


# ------------------------------------------------------------------------------------------------
# shared pieces


def wordpiece_ids(texts: Sequence[str], max_len: int = MAX_WORDPIECES) -> list[list[int]]:
    """MiniLM word-piece ids of each text, without [CLS]/[SEP], truncated to ``max_len``."""
    from core.encoders import minilm_tokenizer
    if not texts:
        return []
    enc = minilm_tokenizer()(list(texts), add_special_tokens=False, truncation=True, max_length=max_len)
    return [list(x) for x in enc["input_ids"]]


def maxmin_pool(vectors: np.ndarray) -> np.ndarray:
    """[max over rows; min over rows] (Tao et al. 2018, eq. 1); zeros for an empty sentence."""
    if len(vectors) == 0:
        return np.zeros(2 * vectors.shape[1], dtype=np.float32)
    return np.concatenate([vectors.max(0), vectors.min(0)]).astype(np.float32)


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na == 0.0 or nb == 0.0:
        return 0.0
    return float(a @ b / (na * nb))


def referenced_from_vectors(examples: Sequence[Example], vec: dict[str, np.ndarray]) -> tuple[np.ndarray, list[dict]]:
    """s_R per example: max over references of cosine(pooled reference, pooled reply); NaN without refs."""
    scores = np.full(len(examples), np.nan)
    details: list[dict] = []
    for i, ex in enumerate(examples):
        refs = [r for r in ex.references if r.strip()]
        if not refs:
            details.append({"s_R": None, "reason": "no reference"})
            continue
        sims = [_cos(vec[ex.response], vec[r]) for r in refs]
        best = int(np.argmax(sims))
        scores[i] = sims[best]
        details.append({"s_R": sims[best], "best_reference": best})
    return scores, details


def minmax(x: np.ndarray) -> np.ndarray:
    """Min-max normalization to [0, 1] over the finite values of ``x`` (NaN stays NaN; zero range -> 0.5)."""
    x = np.asarray(x, dtype=np.float64)
    ok = np.isfinite(x)
    out = np.full_like(x, np.nan)
    if not ok.any():
        return out
    lo, hi = x[ok].min(), x[ok].max()
    out[ok] = 0.5 if hi - lo <= 1e-12 else (x[ok] - lo) / (hi - lo)
    return out


def combine(a: np.ndarray, b: np.ndarray, how: str) -> np.ndarray:
    """Combine two [0, 1] scores elementwise: min, max, gmean or amean (Tao et al. §3.3)."""
    if how == "min":
        return np.minimum(a, b)
    if how == "max":
        return np.maximum(a, b)
    if how == "gmean":
        return np.sqrt(np.clip(a, 0, None) * np.clip(b, 0, None))
    if how == "amean":
        return (a + b) / 2
    raise ValueError(f"unknown combination {how!r}; choose one of {COMBINES}")


def hybrid(s_ref: np.ndarray, s_unref: np.ndarray, how: str = DEFAULT_COMBINE) -> tuple[np.ndarray, list[dict]]:
    """Hybrid RUBER: joint min-max normalization over all rows given, then ``combine``; rows with no
    referenced score use the normalized unreferenced score alone."""
    if how not in COMBINES:
        raise ValueError(f"unknown combination {how!r}; choose one of {COMBINES}")
    nr, nu = minmax(s_ref), minmax(s_unref)
    both = combine(nr, nu, how)
    out = np.where(np.isfinite(nr), both, nu)
    details = []
    for i in range(len(out)):
        d: dict[str, Any] = {"s_R": _f(s_ref[i]), "s_U": _f(s_unref[i]), "s_R_norm": _f(nr[i]),
                             "s_U_norm": _f(nu[i]), "combine": how}
        if not np.isfinite(nr[i]):
            d["fallback"] = "unreferenced-only"
        details.append(d)
    return out, details


def _f(x: float) -> float | None:
    return None if x is None or not np.isfinite(x) else float(x)


# ------------------------------------------------------------------------------------------------
# static word-piece vectors (classic RUBER)


@functools.lru_cache(maxsize=1)
def _static_matrix() -> np.ndarray:
    from core.encoders import minilm_word_embeddings
    return minilm_word_embeddings()


def static_sentence_vectors(texts: Sequence[str]) -> dict[str, np.ndarray]:
    """text -> [max; min] pooled static MiniLM word-piece vectors (768-d)."""
    uniq = list(dict.fromkeys(texts))
    E = _static_matrix()
    return {t: maxmin_pool(E[ids]) for t, ids in zip(uniq, wordpiece_ids(uniq))}


# ------------------------------------------------------------------------------------------------
# contextual MiniLM vectors (BERT-RUBER), memoized per text so the parts and the hybrid share one pass


class _ContextualCache:
    """text -> ([max; min] pooled contextual token vectors, normalized mean-pooled sentence vector)."""

    limit = 60000

    def __init__(self) -> None:
        self.store: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def get(self, texts: Sequence[str], progress: Progress | None = None,
            desc: str = "MiniLM tokens") -> dict[str, tuple[np.ndarray, np.ndarray]]:
        from core.encoders import sentence_encoder
        need = [t for t in dict.fromkeys(texts) if t not in self.store]
        if len(self.store) + len(need) > self.limit:
            self.store.clear()
            need = list(dict.fromkeys(texts))
        if need:
            model = sentence_encoder()
            need.sort(key=len)  # length-sorted batches: minimal padding
            bs = 128
            for s in range(0, len(need), bs):
                chunk = need[s:s + bs]
                outs = model.encode(chunk, batch_size=bs, output_value=None, show_progress_bar=False)
                for t, o in zip(chunk, outs):
                    ids = o["input_ids"]
                    keep = (o["attention_mask"] > 0) & (ids != 101) & (ids != 102)  # no pad/[CLS]/[SEP]
                    tok = o["token_embeddings"][keep].float().numpy()
                    self.store[t] = (maxmin_pool(tok), o["sentence_embedding"].float().numpy())
                tick(progress, min(s + bs, len(need)), len(need), desc)
        return {t: self.store[t] for t in dict.fromkeys(texts)}


CONTEXTUAL = _ContextualCache()


# ------------------------------------------------------------------------------------------------
# trainable unreferenced scorers


def _torch():
    import torch
    return torch


def build_bigru_scorer(embeddings: "np.ndarray", hidden: int = 128, mlp_hidden: int = 128, shared: bool = True):
    """Tao et al.'s unreferenced scorer: Bi-GRU(q), Bi-GRU(r), [q; q^T M r; r] -> MLP -> sigmoid.

    ``shared``: one Bi-GRU encodes both query and reply (as the υBLEU NN-rater does) and M starts at
    the identity, so q^T M r starts as a similarity of like-encoded sentences; with the few thousand
    update steps a shared 2-core CPU allows, separate encoders started from no useful signal."""
    torch = _torch()
    nn = torch.nn

    class BiGRUScorer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            E = np.asarray(embeddings, dtype=np.float32)
            # MiniLM's input vectors have per-dimension std ~0.05: standardize them so the GRU's gates see
            # inputs on the scale their default initialization expects (else s_U starts flat and learns slowly)
            self.embed = nn.Embedding.from_pretrained(torch.from_numpy(E / float(E.std())), freeze=True, padding_idx=0)
            d = self.embed.embedding_dim
            self.gru_q = nn.GRU(d, hidden, batch_first=True, bidirectional=True)
            self.gru_r = self.gru_q if shared else nn.GRU(d, hidden, batch_first=True, bidirectional=True)
            self.M = nn.Parameter(torch.eye(2 * hidden))
            self.mlp = nn.Sequential(nn.Linear(4 * hidden + 1, mlp_hidden), nn.Tanh(), nn.Linear(mlp_hidden, 1))

        def encode(self, gru, ids, lengths):
            packed = nn.utils.rnn.pack_padded_sequence(self.embed(ids), lengths.clamp(min=1).cpu(),
                                                       batch_first=True, enforce_sorted=False)
            _, h = gru(packed)  # h: (2, B, hidden): last forward state, last backward state
            return torch.cat([h[0], h[1]], dim=-1)

        def forward(self, q_ids, q_len, r_ids, r_len):
            return self.head(self.encode(self.gru_q, q_ids, q_len), self.encode(self.gru_r, r_ids, r_len))

        def head(self, q, r):
            quad = ((q @ self.M) * r).sum(-1, keepdim=True)
            return torch.sigmoid(self.mlp(torch.cat([q, quad, r], dim=-1))).squeeze(-1)

    return BiGRUScorer()


def build_vector_scorer(dim: int = 384, mlp_hidden: int = 256):
    """BERT-RUBER's unreferenced head over frozen sentence vectors: [q; q^T M r; r] -> MLP -> sigmoid."""
    torch = _torch()
    nn = torch.nn

    class VectorPairScorer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.M = nn.Parameter(torch.eye(dim))
            self.mlp = nn.Sequential(nn.Linear(2 * dim + 1, mlp_hidden), nn.Tanh(), nn.Linear(mlp_hidden, 1))

        def forward(self, q, r):
            quad = ((q @ self.M) * r).sum(-1, keepdim=True)
            return torch.sigmoid(self.mlp(torch.cat([q, quad, r], dim=-1))).squeeze(-1)

    return VectorPairScorer()


def _pad(seqs: Sequence[Sequence[int]]):
    torch = _torch()
    n = len(seqs)
    L = max(1, max((len(s) for s in seqs), default=1))
    ids = torch.zeros((n, L), dtype=torch.long)
    for i, s in enumerate(seqs):
        if s:
            ids[i, :len(s)] = torch.tensor(s, dtype=torch.long)
    return ids, torch.tensor([len(s) for s in seqs], dtype=torch.long)


def _static_hash() -> str:
    import hashlib
    return hashlib.sha256(_static_matrix().tobytes()).hexdigest()[:12]


@functools.lru_cache(maxsize=2)
def load_bigru(name: str = UNREF_CKPT):
    """The shipped Bi-GRU scorer (embedding matrix rebuilt from the base model and checked)."""
    from core.checkpoints import CheckpointError, load
    tensors, manifest = load(name)
    cfg = manifest["config"]
    if cfg.get("embedding_sha256_12") not in (None, _static_hash()):
        raise CheckpointError(f"{name}: MiniLM word-piece embeddings differ from those it was trained with")
    model = build_bigru_scorer(_static_matrix(), cfg["hidden"], cfg["mlp_hidden"], cfg.get("shared", True))
    missing, unexpected = model.load_state_dict(tensors, strict=False)
    if unexpected or [k for k in missing if not k.startswith("embed.")]:
        raise CheckpointError(f"{name}: tensors do not match the model ({missing}, {unexpected})")
    model.eval()
    return model, manifest


@functools.lru_cache(maxsize=2)
def load_vector_scorer(name: str = BERT_UNREF_CKPT):
    from core.checkpoints import load
    tensors, manifest = load(name)
    cfg = manifest["config"]
    model = build_vector_scorer(cfg["dim"], cfg["mlp_hidden"])
    model.load_state_dict(tensors)
    model.eval()
    return model, manifest


def bigru_scores(model, queries: Sequence[str], replies: Sequence[str], batch: int = 256) -> np.ndarray:
    torch = _torch()
    qi, ri = wordpiece_ids(queries), wordpiece_ids(replies)
    out = np.zeros(len(queries))
    with torch.no_grad():
        for s in range(0, len(queries), batch):
            q, ql = _pad(qi[s:s + batch])
            r, rl = _pad(ri[s:s + batch])
            out[s:s + batch] = model(q, ql, r, rl).numpy()
    return out


def vector_scores(model, q: np.ndarray, r: np.ndarray, batch: int = 4096) -> np.ndarray:
    torch = _torch()
    out = np.zeros(len(q))
    with torch.no_grad():
        for s in range(0, len(q), batch):
            out[s:s + batch] = model(torch.from_numpy(q[s:s + batch]), torch.from_numpy(r[s:s + batch])).numpy()
    return out


def _unref_rows(examples: Sequence[Example]) -> list[int]:
    return [i for i, ex in enumerate(examples) if ex.utterance.strip()]


# ------------------------------------------------------------------------------------------------
# metrics


def _response_and_reference_texts(examples: Sequence[Example]) -> list[str]:
    """Every response and every non-blank reference: the texts a referenced scorer embeds."""
    return [ex.response for ex in examples] + [r for ex in examples for r in ex.references if r.strip()]


@register("ruber_ref")
class RuberReferenced(Metric):
    description = "RUBER referenced s_R: cosine of max+min pooled static MiniLM word-piece vectors (reference vs reply)"
    needs_references = True

    def signature(self) -> Signature:
        return Signature("ruber_ref", "static-minilm-wordpiece|maxmin|cos")

    def compute(self, examples: Sequence[Example], progress: Progress | None = None) -> MetricResult:
        texts = _response_and_reference_texts(examples)
        vec = static_sentence_vectors(texts)
        scores, details = referenced_from_vectors(examples, vec)
        tick(progress, len(examples), len(examples), "ruber_ref")
        return MetricResult(self.name, scores, self.signature(), details)


@register("ruber_unref")
class RuberUnreferenced(Metric):
    description = "RUBER unreferenced s_U: Bi-GRU query/reply scorer trained by negative sampling on chitchat"

    def __init__(self, checkpoint: str = UNREF_CKPT):
        self.checkpoint = checkpoint

    def signature(self) -> Signature:
        from core.checkpoints import short_hash
        return Signature("ruber_unref", "bigru|static-minilm-wordpiece", short_hash(self.checkpoint))

    def compute(self, examples: Sequence[Example], progress: Progress | None = None) -> MetricResult:
        model, _ = load_bigru(self.checkpoint)
        rows = _unref_rows(examples)
        scores = np.full(len(examples), np.nan)
        if rows:
            scores[rows] = bigru_scores(model, [examples[i].utterance for i in rows],
                                        [examples[i].response for i in rows])
        tick(progress, len(examples), len(examples), "ruber_unref")
        details = [{"s_U": _f(s)} if np.isfinite(s) else {"s_U": None, "reason": "no context"} for s in scores]
        return MetricResult(self.name, scores, self.signature(), details)


class _Hybrid(Metric):
    ref_metric = "ruber_ref"
    unref_metric = "ruber_unref"
    variant = ""

    def __init__(self, combine: str = DEFAULT_COMBINE):
        if combine not in COMBINES:
            raise ValueError(f"unknown combination {combine!r}; choose one of {COMBINES}")
        self.combine = combine

    def _parts(self) -> tuple[Metric, Metric]:
        return get_metric(self.ref_metric), get_metric(self.unref_metric)

    def signature(self) -> Signature:
        ref, unref = self._parts()
        return Signature(self.name, f"{self.variant}|{self.combine}|joint-minmax",
                         f"{ref.signature().checkpoint}+{unref.signature().checkpoint}", ref.signature().pool)

    def compute(self, examples: Sequence[Example], progress: Progress | None = None) -> MetricResult:
        ref, unref = self._parts()
        r = ref(examples, progress)
        u = unref(examples, progress)
        scores, details = hybrid(r.scores, u.scores, self.combine)
        return MetricResult(self.name, scores, self.signature(), details,
                            {"normalization": "min-max over all rows of this call (all systems jointly)",
                             "parts": [str(r.signature), str(u.signature)]})


@register("ruber")
class Ruber(_Hybrid):
    description = "hybrid RUBER: joint min-max normalized s_R and s_U combined (amean default; min/max/gmean)"
    variant = "ruber_ref+ruber_unref"


@register("bert_ruber_ref")
class BertRuberReferenced(Metric):
    description = "BERT-RUBER referenced: cosine of max+min pooled contextual MiniLM token vectors"
    needs_references = True

    def signature(self) -> Signature:
        from core.encoders import encoder_id
        return Signature("bert_ruber_ref", f"contextual-{encoder_id()}|maxmin|cos")

    def compute(self, examples: Sequence[Example], progress: Progress | None = None) -> MetricResult:
        texts = _response_and_reference_texts(examples)
        got = CONTEXTUAL.get(texts, progress, "bert_ruber_ref: MiniLM")
        scores, details = referenced_from_vectors(examples, {t: v[0] for t, v in got.items()})
        return MetricResult(self.name, scores, self.signature(), details)


@register("bert_ruber_unref")
class BertRuberUnreferenced(Metric):
    description = "BERT-RUBER unreferenced: MLP over frozen MiniLM query/reply vectors, negative sampling"

    def __init__(self, checkpoint: str = BERT_UNREF_CKPT):
        self.checkpoint = checkpoint

    def signature(self) -> Signature:
        from core.checkpoints import short_hash
        from core.encoders import encoder_id
        return Signature("bert_ruber_unref", f"mlp|{encoder_id()}-mean", short_hash(self.checkpoint))

    def compute(self, examples: Sequence[Example], progress: Progress | None = None) -> MetricResult:
        model, _ = load_vector_scorer(self.checkpoint)
        rows = _unref_rows(examples)
        scores = np.full(len(examples), np.nan)
        if rows:
            got = CONTEXTUAL.get([examples[i].utterance for i in rows] + [examples[i].response for i in rows],
                                 progress, "bert_ruber_unref: MiniLM")
            q = np.stack([got[examples[i].utterance][1] for i in rows])
            r = np.stack([got[examples[i].response][1] for i in rows])
            scores[rows] = vector_scores(model, q, r)
        details = [{"s_U": _f(s)} if np.isfinite(s) else {"s_U": None, "reason": "no context"} for s in scores]
        return MetricResult(self.name, scores, self.signature(), details)


@register("bert_ruber")
class BertRuber(_Hybrid):
    description = "BERT-RUBER (Ghazarian 2019): hybrid of contextual MiniLM referenced and unreferenced scorers"
    ref_metric = "bert_ruber_ref"
    unref_metric = "bert_ruber_unref"
    variant = "bert_ruber_ref+bert_ruber_unref"

    def compute(self, examples: Sequence[Example], progress: Progress | None = None) -> MetricResult:
        # encode every distinct text once for both parts
        texts = [t for ex in examples for t in [ex.response, ex.utterance, *ex.references] if t.strip()]
        CONTEXTUAL.get(texts, progress, "bert_ruber: MiniLM")
        return super().compute(examples, progress)


@register("ruber_ubleu")
class RuberUbleu(_Hybrid):
    description = "RUBER+υBLEU (Tsuta 2020): hybrid RUBER with υBLEU replacing the referenced scorer"
    ref_metric = "ubleu"
    variant = "ubleu+ruber_unref"

    def __init__(self, combine: str = DEFAULT_COMBINE, unref: str = "ruber_unref"):
        super().__init__(combine)
        if unref not in ("ruber_unref", "bert_ruber_unref"):
            raise ValueError("unref must be 'ruber_unref' or 'bert_ruber_unref'")
        self.unref_metric = unref
        self.variant = f"ubleu+{unref}"


# ------------------------------------------------------------------------------------------------
# training: python -m core train ruber [--variant bigru|bert|both]


def _split_pool(pool, heldout_mod: int = 10):
    """Train / held-out pair indices, split by conversation (conv_id % heldout_mod == 0 is held out)."""
    held = (pool.conv_id % heldout_mod) == 0
    return np.flatnonzero(~held), np.flatnonzero(held)


def _negatives(rng: np.random.Generator, resp: np.ndarray, n: int) -> np.ndarray:
    """n random replies (text ids) drawn from ``resp`` (a rare draw of the true reply itself is kept)."""
    return resp[rng.integers(0, len(resp), n)]


def _pair_sample(rng, idx: np.ndarray, n: int) -> np.ndarray:
    return idx if n <= 0 or n >= len(idx) else np.sort(rng.choice(idx, size=n, replace=False))


def train_bigru(args, log) -> dict:
    torch = _torch()
    from core.checkpoints import save
    from core.retrieval import chitchat_pool
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    pool = chitchat_pool()
    tr_all, ho_all = _split_pool(pool)
    tr = _pair_sample(rng, tr_all, args.train_pairs)
    ho = _pair_sample(rng, ho_all, args.heldout_pairs)
    log(f"bigru: {len(tr)} training pairs of {len(tr_all)}, {len(ho)} held-out pairs (other conversations)")
    text_ids = np.unique(np.concatenate([pool.utt_idx[tr], pool.resp_idx[tr], pool.utt_idx[ho], pool.resp_idx[ho]]))
    toks = dict(zip(text_ids.tolist(), wordpiece_ids([pool.texts[i] for i in text_ids])))
    model = build_bigru_scorer(_static_matrix(), args.hidden, args.mlp_hidden, shared=True)
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=args.lr)

    def run(q_ids, r_ids):
        q, ql = _pad([toks[i] for i in q_ids])
        r, rl = _pad([toks[i] for i in r_ids])
        return model(q, ql, r, rl)

    def run_triples(q_ids, pos_ids, neg_ids):
        # the encoder is shared: one packed Bi-GRU pass over queries, true and random replies together
        ids, lens = _pad([toks[i] for i in np.concatenate([q_ids, pos_ids, neg_ids])])
        enc = model.encode(model.gru_q, ids, lens)
        n = len(q_ids)
        return model.head(enc[:n], enc[n:2 * n]), model.head(enc[:n], enc[2 * n:])

    ho_rng = np.random.default_rng(args.seed + 1)
    ho_q, ho_pos = pool.utt_idx[ho], pool.resp_idx[ho]
    ho_neg = _negatives(ho_rng, pool.resp_idx[ho], len(ho))  # replies of other held-out pairs

    def evaluate() -> float:
        model.eval()
        with torch.no_grad():
            pos = np.concatenate([run(ho_q[s:s + 512], ho_pos[s:s + 512]).numpy() for s in range(0, len(ho), 512)])
            neg = np.concatenate([run(ho_q[s:s + 512], ho_neg[s:s + 512]).numpy() for s in range(0, len(ho), 512)])
        model.train()
        return float(np.mean(pos > neg) + 0.5 * np.mean(pos == neg))

    t0, best, best_state, history = time.time(), -1.0, None, []
    for ep in range(args.epochs):
        order = rng.permutation(tr)
        neg_all = _negatives(rng, pool.resp_idx[tr], len(order))
        losses = []
        for s in range(0, len(order), args.batch):
            b = order[s:s + args.batch]
            q, pos, neg = pool.utt_idx[b], pool.resp_idx[b], neg_all[s:s + args.batch]
            sp, sn = run_triples(q, pos, neg)
            loss = torch.clamp(MARGIN - sp + sn, min=0).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(float(loss.detach()))
            if (s // args.batch) % 25 == 0:
                log(f"  epoch {ep + 1} batch {s // args.batch}/{math.ceil(len(order) / args.batch)} "
                    f"hinge {np.mean(losses[-25:]):.4f} ({time.time() - t0:.0f}s)")
            if args.max_minutes and time.time() - t0 > args.max_minutes * 60:
                break
        acc = evaluate()
        history.append({"epoch": ep + 1, "steps": len(losses), "train_hinge": float(np.mean(losses)),
                        "heldout_ranking_accuracy": acc})
        log(f"epoch {ep + 1}: train hinge {np.mean(losses):.4f}, held-out ranking accuracy {acc:.4f}")
        if acc > best:
            best = acc
            best_state = {k: v.detach().clone() for k, v in model.state_dict().items() if not k.startswith("embed.")}
        if args.max_minutes and time.time() - t0 > args.max_minutes * 60:
            log("time budget reached")
            break
    manifest = {
        "what": "RUBER unreferenced scorer s_U (Tao et al. 2018): Bi-GRU(query), Bi-GRU(reply), [q; q^T M r; r] -> MLP -> sigmoid",
        "command": "python -m core train ruber --variant bigru " + " ".join(args.argv_rest),
        "data": f"chitchat-dataset (MIT) consecutive turn pairs; train conversations conv_id % 10 != 0 "
                f"({len(tr)} pairs sampled), held out conv_id % 10 == 0 ({len(ho)} pairs)",
        "objective": f"negative sampling, hinge loss max(0, {MARGIN} - s(q,r+) + s(q,r-)), one random reply per pair",
        "seed": args.seed,
        "heldout_ranking_accuracy": best,
        "heldout_ranking_accuracy_note": "fraction of held-out (query, true reply, random reply) triples where the true reply scores higher; chance = 0.5",
        "history": history,
        "train_seconds": round(time.time() - t0, 1),
        "config": {"hidden": args.hidden, "mlp_hidden": args.mlp_hidden, "max_wordpieces": MAX_WORDPIECES, "shared": True,
                   "embedding": "all-MiniLM-L6-v2 static word-piece input embeddings (frozen, not stored)",
                   "embedding_sha256_12": _static_hash(), "lr": args.lr, "batch": args.batch, "epochs": args.epochs},
    }
    save(args.name or UNREF_CKPT, best_state, manifest, args.out_dir)
    load_bigru.cache_clear()
    return manifest


def _pool_sentence_vectors(pool, text_ids: np.ndarray, log) -> np.ndarray:
    """MiniLM sentence vectors of the given pool texts: from the pool's embedding index when it is on
    this machine (shipped or cached), else encoded now."""
    from core.encoders import encode
    from core.retrieval import SHIPPED_INDEX_DIR, _index_name, cache_dir
    name = _index_name(pool)
    cached = cache_dir() / f"{name}.npy"
    if cached.exists():
        log(f"using cached pool embeddings {cached}")
        return np.load(cached, mmap_mode="r")[text_ids].astype(np.float32)
    log(f"encoding {len(text_ids)} pool texts with MiniLM (no exact pool index cached"
        f"{'; the shipped PQ index is approximate' if (SHIPPED_INDEX_DIR / f'{name}.faiss').exists() else ''})")
    last = [0.0]

    def prog(done, total, desc):
        if time.time() - last[0] > 30:
            last[0] = time.time()
            log(f"  {desc}: {done}/{total}")
    return encode([pool.texts[i] for i in text_ids], progress=prog)


def train_bert_head(args, log) -> dict:
    torch = _torch()
    from core.checkpoints import save
    from core.retrieval import chitchat_pool
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    pool = chitchat_pool()
    tr_all, ho_all = _split_pool(pool)
    # whole conversations, so consecutive pairs share their turns and each turn is embedded once
    all_tr_convs = np.unique(pool.conv_id[tr_all])
    n_convs = len(all_tr_convs) if args.bert_train_convs <= 0 else min(args.bert_train_convs, len(all_tr_convs))
    tr_convs = rng.choice(all_tr_convs, size=n_convs, replace=False)
    tr = tr_all[np.isin(pool.conv_id[tr_all], tr_convs)]
    ho_convs = rng.choice(np.unique(pool.conv_id[ho_all]), size=args.bert_heldout_convs, replace=False)
    ho = ho_all[np.isin(pool.conv_id[ho_all], ho_convs)]
    ho_rng = np.random.default_rng(args.seed + 1)
    ho_neg = pool.resp_idx[ho][ho_rng.permutation(len(ho))]  # replies of other held-out pairs
    tr_resp = pool.resp_idx[tr]  # negatives are drawn from the sampled training replies
    ids = np.unique(np.concatenate([pool.utt_idx[tr], tr_resp, pool.utt_idx[ho], pool.resp_idx[ho], ho_neg]))
    log(f"bert head: {len(tr)} training pairs, {len(ho)} held-out pairs, {len(ids)} texts to embed")
    t0 = time.time()
    vecs = _pool_sentence_vectors(pool, ids, log)
    pos_of = {int(t): i for i, t in enumerate(ids)}
    V = torch.from_numpy(np.ascontiguousarray(vecs))
    m = lambda a: torch.tensor([pos_of[int(x)] for x in a], dtype=torch.long)  # noqa: E731
    log(f"embedded in {time.time() - t0:.0f}s")
    model = build_vector_scorer(V.shape[1], args.bert_mlp_hidden)
    opt = torch.optim.Adam(model.parameters(), lr=args.bert_lr)
    hq, hp, hn = m(pool.utt_idx[ho]), m(pool.resp_idx[ho]), m(ho_neg)

    def evaluate() -> float:
        model.eval()
        with torch.no_grad():
            p, n = model(V[hq], V[hp]), model(V[hq], V[hn])
        model.train()
        return float((p > n).float().mean() + 0.5 * (p == n).float().mean())

    tq, tp = m(pool.utt_idx[tr]), m(tr_resp)
    best, best_state, history = -1.0, None, []
    for ep in range(args.bert_epochs):
        order = torch.from_numpy(rng.permutation(len(tr)))
        neg = tp[torch.from_numpy(rng.integers(0, len(tr), len(tr)))]
        losses = []
        for s in range(0, len(tr), args.batch):
            b = order[s:s + args.batch]
            sp, sn = model(V[tq[b]], V[tp[b]]), model(V[tq[b]], V[neg[b]])
            loss = torch.clamp(MARGIN - sp + sn, min=0).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(float(loss.detach()))
        acc = evaluate()
        history.append({"epoch": ep + 1, "train_hinge": float(np.mean(losses)), "heldout_ranking_accuracy": acc})
        log(f"bert head epoch {ep + 1}: train hinge {np.mean(losses):.4f}, held-out ranking accuracy {acc:.4f}")
        if acc > best:
            best, best_state = acc, {k: v.detach().clone() for k, v in model.state_dict().items()}
    from core.encoders import encoder_id
    manifest = {
        "what": "BERT-RUBER unreferenced head (Ghazarian et al. 2019 with MiniLM): frozen mean-pooled normalized "
                "all-MiniLM-L6-v2 vectors of query and reply, [q; q^T M r; r] -> MLP -> sigmoid",
        "command": "python -m core train ruber --variant bert " + " ".join(args.argv_rest),
        "data": f"chitchat-dataset (MIT) consecutive turn pairs of {n_convs} training conversations "
                f"(conv_id % 10 != 0; {len(tr)} pairs) and {args.bert_heldout_convs} held-out conversations "
                f"(conv_id % 10 == 0; {len(ho)} pairs)",
        "objective": f"negative sampling, hinge loss max(0, {MARGIN} - s(q,r+) + s(q,r-)), one random reply per pair and epoch",
        "seed": args.seed,
        "heldout_ranking_accuracy": best,
        "heldout_ranking_accuracy_note": "fraction of held-out (query, true reply, random reply) triples where the true reply scores higher; chance = 0.5",
        "history": history,
        "train_seconds": round(time.time() - t0, 1),
        "config": {"dim": int(V.shape[1]), "mlp_hidden": args.bert_mlp_hidden, "encoder": encoder_id(),
                   "lr": args.bert_lr, "batch": args.batch, "epochs": args.bert_epochs},
    }
    save(args.name or BERT_UNREF_CKPT, best_state, manifest, args.out_dir)
    load_vector_scorer.cache_clear()
    return manifest


def train_main(argv: list[str] | None = None) -> int:
    """``python -m core train ruber``: train RUBER's unreferenced scorer(s) on chitchat-dataset pairs."""
    p = argparse.ArgumentParser(prog="python -m core train ruber",
                                description="Train RUBER's unreferenced scorer (Bi-GRU) and/or BERT-RUBER's MLP head "
                                            "by negative sampling with a hinge loss on chitchat-dataset (split by conversation).")
    p.add_argument("--variant", choices=("bigru", "bert", "both"), default="both")
    p.add_argument("--train-pairs", type=int, default=0, help="Bi-GRU: training pairs sampled (0 = all)")
    p.add_argument("--bert-train-convs", type=int, default=0, help="BERT head: training conversations sampled (0 = all)")
    p.add_argument("--bert-heldout-convs", type=int, default=150, help="BERT head: held-out conversations sampled")
    p.add_argument("--heldout-pairs", type=int, default=5000)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--bert-epochs", type=int, default=3)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--mlp-hidden", type=int, default=64)
    p.add_argument("--bert-mlp-hidden", type=int, default=256)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--lr", type=float, default=2e-3, help="Bi-GRU learning rate (Adam)")
    p.add_argument("--bert-lr", type=float, default=1e-3, help="BERT head learning rate (Adam)")
    p.add_argument("--seed", type=int, default=SEED)
    p.add_argument("--max-minutes", type=float, default=0.0,
                   help="Bi-GRU wall-clock budget (0 = none; a budget makes the result depend on machine speed)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--name", default=None, help="checkpoint name (default ruber-unref / ruber-bert-unref)")
    p.add_argument("--out-dir", default=None, help="checkpoint folder (default checkpoints/)")
    args = p.parse_args(argv)
    args.argv_rest = [a for a in (argv or []) if a not in ("--variant", args.variant)]
    torch = _torch()
    torch.set_num_threads(args.threads)

    def log(msg: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)

    out = {}
    if args.variant in ("bigru", "both"):
        out["bigru"] = train_bigru(args, log)["heldout_ranking_accuracy"]
    if args.variant in ("bert", "both"):
        out["bert"] = train_bert_head(args, log)["heldout_ranking_accuracy"]
    print(json.dumps({"heldout_ranking_accuracy": out}))
    return 0
