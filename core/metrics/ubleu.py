"""υBLEU (Tsuta et al. 2020): ΔBLEU against references that are retrieved and rated automatically.

For a test example with input utterance U1 (last context turn) and reference R1:
1. retrieve the ``k`` (15) pool pairs most similar to the test pair (``core.models.retrieval``, default
   ``emb-u``), after the leakage guard;
2. extend the references with every retrieved response R2, with U1 itself ("parrot return") and with R1;
3. weight R1 (and any other reference the example carries) with 1 and every other reference with the NN-rater's signed judgment in [-1, 1]
   (``core.models.rater``); the parrot is rated as the pair (U2 = U1, R2 = U1);
4. score the response with sentence-level ΔBLEU-2 (``core.metrics.bleu``), on sacrebleu's 0-100 scale.

``rated=False`` gives every extended reference weight 1: plain multi-reference BLEU with retrieved
references (the paper's Table 2 rows). Examples without a reference score NaN: the rater needs R1.
Retrieval and rating are done once per distinct (U1, R1), so several systems answering one context
share them.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from core.data import Example
from core.progress import Progress, tick
from core.metrics.bleu import BleuScorer
from core.models.checkpoints import short_hash
from core.models.retrieval import DEFAULT_RETRIEVER, RETRIEVERS, get_pool, get_retriever
from core.scoring import Metric, MetricResult, Options, Signature, register_metric


@register_metric("ubleu")
class UBleu(Metric):
    description = "υBLEU: ΔBLEU-2 with 15 retrieved + parrot + original references rated by the NN-rater (0-100)"
    needs_references = True
    option_names = ("pool", "retriever")

    def __init__(self, options: Options | None = None, k: int = 15, rated: bool = True, parrot: bool = True,
                 max_order: int = 2, smooth: str = "exp", rater: str = "nn-rater"):
        super().__init__(options)
        method = self.options.retriever or DEFAULT_RETRIEVER
        if method not in RETRIEVERS:
            raise ValueError(f"unknown retriever {method!r}; choose one of {', '.join(RETRIEVERS)}")
        self.pool_path, self.method, self.k = self.options.pool, method, k
        self.rated, self.parrot, self.rater_name = rated, parrot, rater
        self.bleu = BleuScorer(max_order=max_order, smooth=smooth)
        self._rater = None

    @property
    def rater(self):
        if self._rater is None and self.rated:
            from core.models.rater import load_rater
            self._rater = load_rater(self.rater_name)
        return self._rater

    def signature(self) -> Signature:
        variant = f"ret:{self.method},k:{self.k},parrot:{int(self.parrot)},rated:{int(self.rated)},{self.bleu.variant}"
        return Signature("ubleu", variant, short_hash(self.rater_name) if self.rated else "-", get_pool(self.pool_path).key)

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
            out = self.rater.rate(u1s, r1s, u2s, r2s)
            for (key, j), w in zip(slots, out.weight):
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
                details.append({"skipped": "no reference: the NN-rater needs the original reference"})
                continue
            texts = [r["text"] for r in refs]
            weights = [r["weight"] for r in refs]
            st = self.bleu.stats(ex.response, texts, weights)
            stats.append(st)
            scores[i] = self.bleu.from_stats(st)
            details.append({"retriever": self.method, "pool": pool_key, "references": refs})
        corpus = self.bleu.from_stats(stats, sentence=False) if stats else float("nan")
        return MetricResult("ubleu", scores, self.signature(), details, extra={"corpus": corpus})


def _key(ex: Example) -> tuple[str, tuple[str, ...]]:
    return ex.utterance, tuple(ex.references)
