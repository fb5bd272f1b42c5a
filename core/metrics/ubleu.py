"""υBLEU (Tsuta et al. 2020): ΔBLEU against references that are retrieved and rated automatically.

For a test example with input utterance U1 (last context turn) and reference R1:
1. retrieve the ``k`` pool pairs most similar to the test pair (``core.models.retrieval``, default ``emb-u``),
   after the leakage guard;
2. extend the references with every retrieved response R2 (and, with ``parrot=True``, with U1 itself, the
   paper's "parrot return") beside R1;
3. weight R1 (and any other reference the example carries) with 1 and every other reference R2 with the
   rater's judgment w(R2) (METHODS.md §1, step 3);
4. leave out every retrieved reference that is the response itself (:func:`is_own_copy`: the same text once
   normalized, or nearly): a reply that sits in the pool would otherwise be its own perfect reference;
5. score the response with sentence-level ΔBLEU-2 (``core.metrics.bleu``: matched n-grams count with the
   largest weight among the references that contain them), on sacrebleu's 0-100 scale.

Two configurations are registered:

- ``ubleu`` (default): k = 50, no parrot return, and the **similarity rater** w(R2) = max(0, cos(E(R1), E(R2)))
  with E the normalized MiniLM sentence vector (``core.models.encoders.encode``): a retrieved reply counts as
  much as it says what the reference says, and never negatively. With the embedding retrievers a retrieved
  reply's vector is the one the pool already stores (``Retriever.stored_vector``; for the shipped chitchat pool
  its 128-byte product-quantized code, cosine 0.98 with the exact vector), so only R1 is encoded (since 0.6.0;
  weights moved by 0.007 on average, LODO re-measured in docs/ubleu.md). This departs from the paper, whose weights
  come from a trained NN-rater in [-1, 1]; it was chosen by leave-one-dataset-out over 7 rated sets with
  references (``benchmarks/ubleu_lodo.py``, docs/ubleu.md): mean Spearman 0.154 vs BLEU-2's 0.106 (0.6.0),
  higher on 6 of 7 held-out sets, where the paper's configuration gets 0.105.
- ``ubleu_paper``: the paper's configuration as built here: k = 15, the parrot return, and the NN-rater's
  signed weights in [-1, 1] (``core.models.rater``; the parrot is rated as the pair (U2 = U1, R2 = U1)).

``rated=False`` gives every extended reference weight 1: plain multi-reference BLEU with retrieved references
(the paper's Table 2 rows). Examples without a reference score NaN: every rater needs R1. Retrieval and rating
are done once per distinct (U1, references), so several systems answering one context share them.
"""
from __future__ import annotations

from difflib import SequenceMatcher
from typing import Callable, Sequence

import numpy as np

from core.data import Example
from core.progress import Progress, tick
from core.metrics.bleu import SPLITS_WORDS, BleuScorer
from core.models.checkpoints import short_hash
from core.models.retrieval import DEFAULT_RETRIEVER, RETRIEVERS, get_retriever, normalize, pool_key
from core.scoring import Metric, MetricResult, Options, Signature, register_metric

RATERS = ("similarity", "nn-rater")


def similarity_weights(r1: Sequence[str], r2: Sequence[str], progress: Progress | None = None,
                       stored: Callable[[str], np.ndarray | None] | None = None) -> np.ndarray:
    """w = max(0, cos(E(r1[i]), E(r2[i]))) with E the normalized MiniLM sentence vector. ``stored(text)`` may give
    a vector already at hand for an r2 text (the pool's stored vector of a retrieved reply,
    ``Retriever.stored_vector``), used instead of encoding it; every other distinct text is encoded once
    (fixed-shape batches, so a weight does not depend on what else is rated)."""
    from core.models.encoders import encode
    known = {t: v for t in dict.fromkeys(r2) if stored is not None and (v := stored(t)) is not None}
    r1_texts = set(r1)
    texts = [t for t in dict.fromkeys([*r1, *r2]) if t not in known or t in r1_texts]
    vecs = encode(texts, progress, "υBLEU: similarity rater")
    pos = {t: i for i, t in enumerate(texts)}
    a = vecs[[pos[t] for t in r1]]
    b = np.stack([known[t] if t in known else vecs[pos[t]] for t in r2]) if len(r2) else np.zeros((0, 384))
    cos = np.einsum("ij,ij->i", a.astype(np.float64), b.astype(np.float64))
    return np.clip(cos, 0.0, 1.0)


@register_metric("ubleu")
class UBleu(Metric):
    reads_sentence_vectors = True  # its retrieval queries and its raters
    models = ("minilm",)  # the retrieval embeddings and the similarity rater (and the paper's NN-rater's vectors)
    description = ("υBLEU: ΔBLEU-2 with 50 retrieved + original references, each retrieved one weighted by its "
                   "MiniLM similarity to the reference (0-100)")
    needs_references = True
    splits_words = SPLITS_WORDS
    option_names = ("pool", "retriever")
    retrieves = 50  # references retrieved for each row by default (k)

    def __init__(self, options: Options | None = None, k: int = retrieves, rated: bool = True, parrot: bool = False,
                 max_order: int = 2, smooth: str = "exp", rater: str = "similarity"):
        super().__init__(options)
        method = self.options.retriever or DEFAULT_RETRIEVER
        if method not in RETRIEVERS:
            raise ValueError(f"unknown retriever {method!r}; choose one of {', '.join(RETRIEVERS)}")
        if rater not in RATERS:
            raise ValueError(f"unknown rater {rater!r}; choose one of {', '.join(RATERS)}")
        self.pool_path, self.method, self.k = self.options.pool, method, k
        self.rated, self.parrot, self.rater_name = rated, parrot, rater
        self.bleu = BleuScorer(max_order=max_order, smooth=smooth)
        self._rater = None

    @property
    def rater(self):
        if self._rater is None and self.rated and self.rater_name == "nn-rater":
            from core.models.rater import load_rater
            self._rater = load_rater(self.rater_name)
        return self._rater

    def rater_id(self) -> str:
        if not self.rated:
            return "-"
        if self.rater_name == "similarity":
            from core.models.encoders import encoder_id
            return encoder_id()
        return short_hash(self.rater_name)

    def signature(self) -> Signature:
        rater = self.rater_name if self.rated else "none"
        variant = (f"ret:{self.method},k:{self.k},parrot:{int(self.parrot)},rater:{rater},own-copies:out,"
                   f"{self.bleu.variant}")
        return Signature(self.name, variant, self.rater_id(), pool_key(self.pool_path))

    def rate(self, u1s: list[str], r1s: list[str], u2s: list[str], r2s: list[str],
             progress: Progress | None = None) -> np.ndarray:
        """The weight of each extended reference (u2s[i], r2s[i]) for the test pair (u1s[i], r1s[i])."""
        if self.rater_name == "similarity":
            retriever = get_retriever(self.pool_path, self.method)
            return similarity_weights(r1s, r2s, progress, retriever.stored_vector)
        return np.asarray(self.rater.rate(u1s, r1s, u2s, r2s).weight, dtype=float)

    def extended_references(self, examples: Sequence[Example], progress: Progress | None = None) -> dict:
        """{(U1, references): [reference dicts]} for every distinct test pair with a reference. All of an
        example's own references are kept with weight 1; the first one is R1 for retrieval and rating."""
        keys = list(dict.fromkeys(_key(ex) for ex in examples if ex.references))
        if not keys:
            return {}
        retriever = get_retriever(self.pool_path, self.method, progress)
        hits = retriever.retrieve([u for u, _ in keys], [r[0] for _, r in keys], k=self.k, progress=progress)
        refs: dict = {}
        u1s, r1s, u2s, r2s, slots = [], [], [], [], []
        for key, hs in zip(keys, hits):
            u1, originals = key
            r1 = originals[0]
            lst = [{"kind": "original", "text": r, "source_utterance": u1, "similarity": None, "weight": 1.0}
                   for r in originals]
            for h in hs:
                lst.append({"kind": "retrieved", "text": h.response, "source_utterance": h.utterance,
                            "similarity": round(h.similarity, 6), "weight": 1.0})
            if self.parrot and u1.strip():
                lst.append({"kind": "parrot", "text": u1, "source_utterance": u1, "similarity": None, "weight": 1.0})
            refs[key] = lst
            for j, r in enumerate(lst):
                if r["kind"] != "original":
                    u1s.append(u1)
                    r1s.append(r1)
                    u2s.append(r["source_utterance"])
                    r2s.append(r["text"])
                    slots.append((key, j))
        if self.rated and slots:
            tick(progress, 0, len(slots), "rating references")
            weights = self.rate(u1s, r1s, u2s, r2s, progress)
            for (key, j), w in zip(slots, weights):
                refs[key][j]["weight"] = round(float(w), 6)
            tick(progress, len(slots), len(slots), "rating references")
        return refs

    def compute(self, examples: Sequence[Example], progress: Progress | None = None) -> MetricResult:
        ext = self.extended_references(examples, progress)
        scores = np.full(len(examples), np.nan)
        details: list[dict | None] = []
        pool_key = get_retriever(self.pool_path, self.method).pool.key if ext else None
        stats = []
        for i, ex in enumerate(examples):
            refs = ext.get(_key(ex)) if ex.references else None
            if refs is None:
                details.append({"skipped": "no reference: the rater needs the original reference"})
                continue
            kept = [r for r in refs if r["kind"] == "original" or not is_own_copy(ex.response, r["text"])]
            texts = [r["text"] for r in kept]
            weights = [r["weight"] for r in kept]
            st = self.bleu.stats(ex.response, texts, weights)
            stats.append(st)
            scores[i] = self.bleu.from_stats(st)
            details.append({"retriever": self.method, "pool": pool_key, "rater": self.rater_name if self.rated
                            else None, "references": kept,
                            "own_copies_left_out": [r["text"] for r in refs if r not in kept]})
        corpus = self.bleu.from_stats(stats, sentence=False) if stats else float("nan")
        return MetricResult(self.name, scores, self.signature(), details, extra={"corpus": corpus})


@register_metric("ubleu_paper")
class UBleuPaper(UBleu):
    """υBLEU as Tsuta et al. configure it: k = 15 retrieved references, the parrot return, NN-rater weights."""

    description = "υBLEU as in the paper: 15 retrieved + parrot + original references rated by the NN-rater (0-100)"

    retrieves = 15

    def __init__(self, options: Options | None = None, k: int = retrieves, rated: bool = True, parrot: bool = True,
                 max_order: int = 2, smooth: str = "exp", rater: str = "nn-rater"):
        super().__init__(options, k, rated, parrot, max_order, smooth, rater)


OWN_COPY_SIMILARITY = 0.9  # difflib's ratio of the normalized texts at or above which a reference copies the reply


def is_own_copy(reply: str, reference: str) -> bool:
    """Whether a retrieved reference is the reply itself: the same text once lowercased, unpunctuated and
    spaced alike (``core.models.retrieval.normalize``), or nearly (difflib's similarity ratio >= 0.9, a word or
    two apart). Such a reference would score the reply as a perfect match only because the reply sits in the
    pool (a retrieval bot answering from the same corpus); it depends on this row's reply alone."""
    a, b = normalize(reply), normalize(reference)
    if not a or not b:
        return False
    if a == b:
        return True
    matcher = SequenceMatcher(None, a, b, autojunk=False)
    return matcher.real_quick_ratio() >= OWN_COPY_SIMILARITY and matcher.ratio() >= OWN_COPY_SIMILARITY


def _key(ex: Example) -> tuple[str, tuple[str, ...]]:
    return ex.utterance, tuple(ex.references)
