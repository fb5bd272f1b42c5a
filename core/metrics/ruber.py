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
  by conversation (``dialeval train ruber --variant bigru``, ``core/training/ruber.py``; checkpoint
  ``ruber-unref``; the 30522x384 embedding matrix is *not* stored, it is rebuilt from the
  base model at load time and its hash is checked against the manifest).
- ``ruber``      hybrid of s_R and s_U.
- ``bert_ruber_ref`` / ``bert_ruber_unref`` / ``bert_ruber``: BERT-RUBER with MiniLM contextual
  embeddings in both scorers: referenced = cosine of [max; min] pooled *contextual* token vectors
  (last layer, special tokens and padding excluded); unreferenced = [q; q^T M r; r] -> MLP -> sigmoid
  over frozen mean-pooled, normalized MiniLM sentence vectors (the same vectors ``core.models.encoders.encode``
  gives), trained like s_U (``dialeval train ruber --variant bert``; checkpoint ``ruber-bert-unref``).
  One encoder pass per distinct text yields both the token and the sentence vectors.
- ``ruber_ubleu``: the υBLEU paper's best method: the hybrid with υBLEU (0-100, built with this metric's
  options, so ``pool`` and ``retriever`` reach it) replacing s_R; the unreferenced part is the classic s_U
  by default (setting ``unref``).

Hybrid (Tao et al. §3.3): each part is min-max normalized to [0, 1], then they are combined by ``min``,
``max``, ``gmean`` (geometric mean) or ``amean`` (arithmetic mean; the default, since the paper found the four
strategies close and the arithmetic mean never collapses to 0 when one part is at its minimum). The paper
takes the min and max over the evaluated set; that makes a system's score depend on what it is scored with
(the same file scored 0.509 beside one partner and 0.625 beside itself). Here the min and max are **fixed
constants**: each part's minimum and maximum over a calibration sample of 2,000 held-out chitchat rows (1,000
utterances answered by their true reply, which also serves as the reference, and by a random other reply),
fitted once by ``dialeval train ruber --variant normalization`` and stored in the unreferenced scorer's
manifest (``normalization``). Values outside the range are clipped to [0, 1]. Rows without a referenced score
(no reference, NaN) use the normalized unreferenced score alone, and their details say
``"fallback": "unreferenced-only"``.
"""
from __future__ import annotations

import functools
from typing import Any, Sequence

import numpy as np

from core.data import Example
from core.metrics.bleu import SPLITS_WORDS
from core.metrics.ubleu import UBleu
from core.models.batching import encode_sequences, in_fixed_rows
from core.models.checkpoints import CheckpointError, load_manifest
from core.models.encoders import MAX_SEQ_LEN
from core.models.memo import remembers
from core.progress import Progress, tick
from core.scoring import (CheckpointMetric, CompositeMetric, Metric, MetricResult, Options, Signature, get_metric,
                          register_metric)

COMBINES = ("min", "max", "gmean", "amean")
DEFAULT_COMBINE = "amean"
UNREF_CKPT = "ruber-unref"
BERT_UNREF_CKPT = "ruber-bert-unref"
MAX_WORDPIECES = 32  # per turn, for the Bi-GRU and the static referenced scorer
READS_WORDPIECES = (24, f"{MAX_WORDPIECES} MiniLM word pieces")  # a response's words they read (Metric.reads_response)
READS_CONTEXTUAL = (95, f"{MAX_SEQ_LEN} MiniLM word pieces")  # BERT-RUBER's contextual MiniLM pass
CLS_ID, SEP_ID = 101, 102  # MiniLM's [CLS] and [SEP]


# ------------------------------------------------------------------------------------------------
# shared pieces


def wordpiece_ids(texts: Sequence[str], max_len: int = MAX_WORDPIECES) -> list[list[int]]:
    """MiniLM word-piece ids of each text, without [CLS]/[SEP], truncated to ``max_len``."""
    from core.models.encoders import minilm_tokenizer
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


def minmax(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """(x - lo) / (hi - lo) clipped to [0, 1], with fixed constants ``lo``, ``hi`` (NaN stays NaN; a zero range
    gives 0.5): the min-max normalization of Tao et al. §3.3 without dependence on the evaluated set."""
    x = np.asarray(x, dtype=np.float64)
    if hi - lo <= 1e-12:
        return np.where(np.isfinite(x), 0.5, np.nan)
    return np.clip((x - lo) / (hi - lo), 0.0, 1.0)


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


def hybrid(s_ref: np.ndarray, s_unref: np.ndarray, ref_range: Sequence[float], unref_range: Sequence[float],
           how: str = DEFAULT_COMBINE) -> tuple[np.ndarray, list[dict]]:
    """Hybrid RUBER: each part min-max normalized with its fixed (min, max), then ``combine``; rows with no
    referenced score use the normalized unreferenced score alone."""
    if how not in COMBINES:
        raise ValueError(f"unknown combination {how!r}; choose one of {COMBINES}")
    nr, nu = minmax(s_ref, *ref_range), minmax(s_unref, *unref_range)
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
def static_word_matrix() -> np.ndarray:
    """MiniLM's static word-piece input embeddings (vocab x 384): RUBER's word vectors."""
    from core.models.encoders import minilm_word_embeddings
    return minilm_word_embeddings()


def static_sentence_vectors(texts: Sequence[str]) -> dict[str, np.ndarray]:
    """text -> [max; min] pooled static MiniLM word-piece vectors (768-d)."""
    uniq = list(dict.fromkeys(texts))
    E = static_word_matrix()
    return {t: maxmin_pool(E[ids]) for t, ids in zip(uniq, wordpiece_ids(uniq))}


# ------------------------------------------------------------------------------------------------
# contextual MiniLM vectors (BERT-RUBER), memoized per text so the parts and the hybrid share one pass


class _ContextualCache:
    """text -> ([max; min] pooled contextual token vectors, normalized mean-pooled sentence vector), from one
    MiniLM pass per distinct text (``core.models.encoders.minilm_forward``)."""

    limit = 60000

    def __init__(self) -> None:
        self.store: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = {}  # (device, text) -> vectors

    def get(self, texts: Sequence[str], progress: Progress | None = None,
            desc: str = "MiniLM tokens") -> dict[str, tuple[np.ndarray, np.ndarray]]:
        from core.models.device import computed_on
        from core.models.encoders import mean_pooled, minilm_forward, remember_sentence_vectors
        dev = computed_on()  # vectors are remembered per device and precision (each rounds differently)
        need = [t for t in dict.fromkeys(texts) if (dev, t) not in self.store]
        if len(self.store) + len(need) > self.limit:
            self.store.clear()
            need = list(dict.fromkeys(texts))
        if need:
            def reduce(states: np.ndarray, ids: list[int]) -> tuple[np.ndarray, np.ndarray]:
                keep = [k for k, t in enumerate(ids) if t not in (CLS_ID, SEP_ID)]  # word pieces only
                return maxmin_pool(states[keep]), mean_pooled(states)
            computed = minilm_forward(need, reduce, progress, desc)
            self.store.update(zip(((dev, t) for t in need), computed))
            remember_sentence_vectors(need, [sentence for _, sentence in computed])  # shared with encode()
        return {t: self.store[(dev, t)] for t in dict.fromkeys(texts)}


CONTEXTUAL = _ContextualCache()
remembers(CONTEXTUAL.store.clear)


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


def pad_ids(seqs: Sequence[Sequence[int]]):
    """Padded id tensor (n x longest, 0 = padding) and the lengths of ``seqs``."""
    torch = _torch()
    n = len(seqs)
    L = max(1, max((len(s) for s in seqs), default=1))
    ids = torch.zeros((n, L), dtype=torch.long)
    for i, s in enumerate(seqs):
        if s:
            ids[i, :len(s)] = torch.tensor(s, dtype=torch.long)
    return ids, torch.tensor([len(s) for s in seqs], dtype=torch.long)


def static_matrix_hash() -> str:
    """Identifies the word-piece matrix a Bi-GRU scorer was trained on (checked at load time)."""
    import hashlib
    return hashlib.sha256(static_word_matrix().tobytes()).hexdigest()[:12]


@functools.lru_cache(maxsize=2)
def load_bigru(name: str = UNREF_CKPT):
    """The shipped Bi-GRU scorer (embedding matrix rebuilt from the base model and checked)."""
    from core.models.checkpoints import CheckpointError, load
    tensors, manifest = load(name)
    cfg = manifest["config"]
    if cfg.get("embedding_sha256_12") not in (None, static_matrix_hash()):
        raise CheckpointError(f"{name}: MiniLM word-piece embeddings differ from those it was trained with")
    model = build_bigru_scorer(static_word_matrix(), cfg["hidden"], cfg["mlp_hidden"], cfg.get("shared", True))
    missing, unexpected = model.load_state_dict(tensors, strict=False)
    if unexpected or [k for k in missing if not k.startswith("embed.")]:
        raise CheckpointError(f"{name}: tensors do not match the model ({missing}, {unexpected})")
    model.eval()
    return model, manifest


@functools.lru_cache(maxsize=2)
def load_vector_scorer(name: str = BERT_UNREF_CKPT):
    from core.models.checkpoints import load
    tensors, manifest = load(name)
    cfg = manifest["config"]
    model = build_vector_scorer(cfg["dim"], cfg["mlp_hidden"])
    model.load_state_dict(tensors)
    model.eval()
    return model, manifest


def bigru_scores(model, queries: Sequence[str], replies: Sequence[str]) -> np.ndarray:
    """s_U of each (query, reply): every distinct text encoded once by the shared Bi-GRU (fixed-shape batches
    of one exact length), then the head in fixed row chunks, so a row's score never depends on its batch mates."""
    torch = _torch()
    texts = list(dict.fromkeys([*queries, *replies]))
    vecs = encode_sequences(wordpiece_ids(texts), lambda ids, lengths: model.encode(model.gru_q, ids, lengths))
    pos = {t: i for i, t in enumerate(texts)}
    pairs = np.concatenate([vecs[[pos[q] for q in queries]], vecs[[pos[r] for r in replies]]], axis=1)
    half = vecs.shape[1]

    def head(x: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            t = torch.from_numpy(x)
            return model.head(t[:, :half], t[:, half:]).double().numpy()
    return in_fixed_rows(head, pairs)


def vector_scores(model, q: np.ndarray, r: np.ndarray) -> np.ndarray:
    """The unreferenced head over query and reply vectors, in fixed row chunks."""
    torch = _torch()
    d = q.shape[1]

    def head(x: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            t = torch.from_numpy(x)
            return model(t[:, :d], t[:, d:]).double().numpy()
    return in_fixed_rows(head, np.concatenate([q, r], axis=1).astype(np.float32))


def _unref_rows(examples: Sequence[Example]) -> list[int]:
    return [i for i, ex in enumerate(examples) if ex.utterance.strip()]


# ------------------------------------------------------------------------------------------------
# metrics


def _response_and_reference_texts(examples: Sequence[Example]) -> list[str]:
    """Every response and every non-blank reference: the texts a referenced scorer embeds."""
    return [ex.response for ex in examples] + [r for ex in examples for r in ex.references if r.strip()]


@register_metric("ruber_ref")
class RuberReferenced(Metric):
    models = ("minilm",)  # its static word-piece vectors come from MiniLM's embedding table
    description = "RUBER referenced s_R: cosine of max+min pooled static MiniLM word-piece vectors (reference vs reply)"
    reads_response = READS_WORDPIECES
    needs_references = True

    def signature(self) -> Signature:
        return Signature("ruber_ref", "static-minilm-wordpiece|maxmin|cos")

    def compute(self, examples: Sequence[Example], progress: Progress | None = None) -> MetricResult:
        texts = _response_and_reference_texts(examples)
        vec = static_sentence_vectors(texts)
        scores, details = referenced_from_vectors(examples, vec)
        tick(progress, len(examples), len(examples), "ruber_ref")
        return MetricResult(self.name, scores, self.signature(), details)


@register_metric("bert_ruber_ref")
class BertRuberReferenced(Metric):
    reads_sentence_vectors = True
    models = ("minilm",)
    description = "BERT-RUBER referenced: cosine of max+min pooled contextual MiniLM token vectors"
    reads_response = READS_CONTEXTUAL
    needs_references = True

    def signature(self) -> Signature:
        from core.models.encoders import encoder_id
        return Signature("bert_ruber_ref", f"contextual-{encoder_id()}|maxmin|cos")

    def compute(self, examples: Sequence[Example], progress: Progress | None = None) -> MetricResult:
        texts = _response_and_reference_texts(examples)
        got = CONTEXTUAL.get(texts, progress, "bert_ruber_ref: MiniLM")
        scores, details = referenced_from_vectors(examples, {t: v[0] for t, v in got.items()})
        return MetricResult(self.name, scores, self.signature(), details)


class _Unreferenced(CheckpointMetric):
    models = ("minilm",)
    """s_U(query, reply) for every row with a context (the query is its last turn); NaN without one."""

    def pair_scores(self, queries: list[str], replies: list[str], progress: Progress | None) -> np.ndarray:
        raise NotImplementedError

    def compute(self, examples: Sequence[Example], progress: Progress | None = None) -> MetricResult:
        rows = _unref_rows(examples)
        scores = np.full(len(examples), np.nan)
        if rows:
            scores[rows] = self.pair_scores([examples[i].utterance for i in rows],
                                            [examples[i].response for i in rows], progress)
        tick(progress, len(examples), len(examples), self.name)
        details = [{"s_U": _f(s)} if np.isfinite(s) else {"s_U": None, "reason": "no context"} for s in scores]
        return MetricResult(self.name, scores, self.signature(), details)


@register_metric("ruber_unref")
class RuberUnreferenced(_Unreferenced):
    """s_U(q, r) = sigmoid(MLP([q; q^T M r; r])) where q and r are the last states [h_fwd; h_bwd] of one Bi-GRU
    over the static word pieces of the query and the reply (Tao et al. 2018, §3.2)."""

    description = "RUBER unreferenced s_U: Bi-GRU query/reply scorer trained by negative sampling on chitchat"
    reads_response = READS_WORDPIECES
    default_checkpoint = UNREF_CKPT
    variant = "bigru|static-minilm-wordpiece"

    def pair_scores(self, queries: list[str], replies: list[str], progress: Progress | None) -> np.ndarray:
        return bigru_scores(load_bigru(self.checkpoint)[0], queries, replies)


@register_metric("bert_ruber_unref")
class BertRuberUnreferenced(_Unreferenced):
    """BERT-RUBER's s_U (Ghazarian et al. 2019): the same [q; q^T M r; r] -> MLP -> sigmoid head over the
    frozen, mean-pooled and normalized MiniLM vectors of query and reply."""

    reads_sentence_vectors = True
    description = "BERT-RUBER unreferenced: MLP over frozen MiniLM query/reply vectors, negative sampling"
    reads_response = READS_CONTEXTUAL
    default_checkpoint = BERT_UNREF_CKPT
    variant = "mlp|{encoder}-mean"

    def pair_scores(self, queries: list[str], replies: list[str], progress: Progress | None) -> np.ndarray:
        got = CONTEXTUAL.get(queries + replies, progress, "bert_ruber_unref: MiniLM")
        q = np.stack([got[t][1] for t in queries])
        r = np.stack([got[t][1] for t in replies])
        return vector_scores(load_vector_scorer(self.checkpoint)[0], q, r)


class _Hybrid(CompositeMetric):
    models = ("minilm",)
    reads_references = True  # its referenced part
    ref_metric = "ruber_ref"
    unref_metric = "ruber_unref"
    variant = ""

    def __init__(self, options: Options | None = None, combine: str = DEFAULT_COMBINE):
        super().__init__(options)
        if combine not in COMBINES:
            raise ValueError(f"unknown combination {combine!r}; choose one of {COMBINES}")
        self.combine_how = combine

    def parts(self) -> tuple[Metric, Metric]:
        return get_metric(self.ref_metric, self.options), get_metric(self.unref_metric, self.options)

    def ranges(self) -> tuple[tuple[float, float], tuple[float, float]]:
        """The fixed (min, max) of the referenced and the unreferenced part, from the unreferenced scorer's
        manifest (``dialeval train ruber --variant normalization`` fits them)."""
        ckpt = self.parts()[1].checkpoint
        norm = load_manifest(ckpt).get("normalization", {})
        missing = [m for m in (self.ref_metric, self.unref_metric) if m not in norm]
        if missing:
            raise CheckpointError(f"{ckpt}'s manifest has no normalization constants for {', '.join(missing)}; "
                                  "fit them with `dialeval train ruber --variant normalization`")
        return tuple(norm[self.ref_metric]), tuple(norm[self.unref_metric])

    def signature(self) -> Signature:
        ref, unref = self.parts()
        rs, us = ref.signature(), unref.signature()
        nested = f"ref[{rs.variant.replace('|', '/')}]"  # the part's own variant (υBLEU: retriever, k, ...)
        ranges = ",".join(f"{v:.6g}" for rng in self.ranges() for v in rng)
        return Signature(self.name, f"{self.variant}|{self.combine_how}|fixed-minmax:{ranges}|{nested}",
                         f"{rs.checkpoint}+{us.checkpoint}", rs.pool)

    def combine(self, examples: Sequence[Example], part_results: Sequence[MetricResult]) -> MetricResult:
        r, u = part_results
        ref_range, unref_range = self.ranges()
        scores, details = hybrid(r.scores, u.scores, ref_range, unref_range, self.combine_how)
        return MetricResult(self.name, scores, self.signature(), details,
                            {"normalization": {"kind": "fixed min-max (calibration constants in the manifest)",
                                               self.ref_metric: list(ref_range), self.unref_metric: list(unref_range)},
                             "parts": [str(r.signature), str(u.signature)]})


@register_metric("ruber")
class Ruber(_Hybrid):
    description = "hybrid RUBER: s_R and s_U min-max normalized with fixed calibration constants, combined (amean)"
    reads_response = READS_WORDPIECES
    variant = "ruber_ref+ruber_unref"


@register_metric("bert_ruber")
class BertRuber(_Hybrid):
    reads_sentence_vectors = True
    description = "BERT-RUBER (Ghazarian 2019): hybrid of contextual MiniLM referenced and unreferenced scorers"
    reads_response = READS_CONTEXTUAL
    ref_metric = "bert_ruber_ref"
    unref_metric = "bert_ruber_unref"
    variant = "bert_ruber_ref+bert_ruber_unref"


@register_metric("ruber_ubleu")
class RuberUbleu(_Hybrid):
    reads_sentence_vectors = True  # its υBLEU part
    description = "RUBER+υBLEU (Tsuta 2020): hybrid RUBER with υBLEU replacing the referenced scorer"
    reads_response = (READS_WORDPIECES[0], READS_WORDPIECES[1] + " in its RUBER part")  # υBLEU reads it all
    ref_metric = "ubleu"
    retrieves = UBleu.retrieves  # its υBLEU part's references for each row
    splits_words = SPLITS_WORDS  # its υBLEU part
    variant = "ubleu+ruber_unref"
    option_names = ("pool", "retriever")  # passed on to the υBLEU part

    def __init__(self, options: Options | None = None, combine: str = DEFAULT_COMBINE, unref: str = "ruber_unref"):
        super().__init__(options, combine)
        if unref not in ("ruber_unref", "bert_ruber_unref"):
            raise ValueError("unref must be 'ruber_unref' or 'bert_ruber_unref'")
        self.unref_metric = unref
        self.variant = f"ubleu+{unref}"
