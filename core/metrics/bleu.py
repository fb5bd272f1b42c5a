"""BLEU (Papineni et al. 2002) and ΔBLEU (Galley et al. 2015), computed from per-segment statistics.

BLEU follows sacrebleu exactly (same 13a tokenizer, closest-reference length with ties to the shorter,
the same smoothing methods 'none' / 'floor' / 'add-k' / 'exp' and ``effective_order`` for sentences),
so scores agree with ``sacrebleu`` to floating-point precision; the scale is sacrebleu's 0-100.

ΔBLEU weights every reference r_j by w_j in [-1, 1] (METHODS.md §1):

    p_n = Σ_g max_{j: g in r_j} w_j · min(#g(h), #g(r_j))  /  Σ_g max_j w_j · #g(h)

Choices the paper leaves open, fixed here:
- a numerator below zero (n-grams matched only by negatively weighted references) is clamped to 0, so
  that order counts as "no match" and the smoothing method applies;
- the brevity penalty uses the closest length among positively weighted references (all references
  when none is positive): ``brevity="closest"``, the default. With many references (υBLEU adds 50) one of
  them is almost always as short as any reply, so "ok." escapes the penalty; ``brevity="weighted"`` instead
  compares the reply with the weighted mean length of the positively weighted references,
  ``r = round(Σ_j w_j |r_j| / Σ_j w_j)`` over ``w_j > 0`` (what υBLEU uses, docs/ubleu.md).
With all weights 1 and ``brevity="closest"`` both reduce to multi-reference BLEU (tested).
"""
from __future__ import annotations

import functools
import importlib
import math
from collections import Counter
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from core.data import Example
from core.progress import Progress, tick
from core.scoring import Metric, MetricResult, Options, Signature, register_metric

SPLITS_WORDS = "at spaces and punctuation (sacrebleu's 13a)"  # the default tokenizer's words (Metric.splits_words)
SMOOTH_DEFAULTS = {"none": None, "floor": 0.1, "add-k": 1, "exp": None}
_TOKENIZERS = {"13a": ("sacrebleu.tokenizers.tokenizer_13a", "Tokenizer13a"),
               "none": ("sacrebleu.tokenizers.tokenizer_none", "NoneTokenizer")}
"""Tokenizer name -> sacrebleu's (module, class), imported when a scorer first tokenizes: sacrebleu's import
(~0.15 s) is not needed to build the metric or its signature, which a first visit on precomputed scores does."""


def ngrams(tokens: Sequence[str], max_order: int) -> list[Counter]:
    """Counts per order: ``out[n-1]`` maps each n-gram (a token for n=1, a tuple for n>1) to its count."""
    out = [Counter(tokens)]
    for n in range(2, max_order + 1):
        out.append(Counter(zip(*[tokens[i:] for i in range(n)])))
    return out


@dataclass
class SegmentStats:
    """Sufficient statistics of one segment: lengths and per-order matched / total n-gram mass."""

    sys_len: int
    ref_len: int
    correct: list[float]
    total: list[float]


def closest_ref_len(hyp_len: int, ref_lens: Sequence[int]) -> int:
    best_diff, best = -1, -1
    for rl in ref_lens:
        d = abs(hyp_len - rl)
        if best_diff == -1 or d < best_diff or (d == best_diff and rl < best):
            best_diff, best = d, rl
    return best


def bleu_from_stats(correct: Sequence[float], total: Sequence[float], sys_len: int, ref_len: int,
                    max_order: int = 2, smooth: str = "exp", smooth_value: float | None = None,
                    effective_order: bool = False) -> float:
    """BLEU (0-100) from aggregated statistics; mirrors ``sacrebleu.BLEU.compute_bleu``."""
    if smooth not in SMOOTH_DEFAULTS:
        raise ValueError(f"unknown smoothing {smooth!r}; choose one of {list(SMOOTH_DEFAULTS)}")
    if smooth_value is None:
        smooth_value = SMOOTH_DEFAULTS[smooth]
    correct, total = list(correct), list(total)
    bp = 1.0
    if sys_len < ref_len:
        bp = math.exp(1 - ref_len / sys_len) if sys_len > 0 else 0.0
    if not any(c > 0 for c in correct):
        return 0.0
    precisions = [0.0] * max_order
    smooth_mteval = 1.0
    eff_order = max_order
    for n in range(1, max_order + 1):
        if smooth == "add-k" and n > 1:
            correct[n - 1] += smooth_value
            total[n - 1] += smooth_value
        if total[n - 1] <= 0:
            break
        if effective_order:
            eff_order = n
        if correct[n - 1] <= 0:
            if smooth == "exp":
                smooth_mteval *= 2
                precisions[n - 1] = 100.0 / (smooth_mteval * total[n - 1])
            elif smooth == "floor":
                precisions[n - 1] = 100.0 * smooth_value / total[n - 1]
        else:
            precisions[n - 1] = 100.0 * correct[n - 1] / total[n - 1]
    logs = [math.log(p) if p > 0 else -9999999999 for p in precisions[:eff_order]]
    return bp * math.exp(sum(logs) / eff_order)


BREVITY = ("closest", "weighted")  # the brevity penalty's reference length (module docstring)


class BleuScorer:
    """Tokenizes once and computes BLEU / ΔBLEU statistics (a plain object, usable outside the registry)."""

    def __init__(self, max_order: int = 2, smooth: str = "exp", smooth_value: float | None = None,
                 tokenize: str = "13a", lowercase: bool = False, brevity: str = "closest"):
        if max_order < 1:
            raise ValueError("max_order must be >= 1")
        if brevity not in BREVITY:
            raise ValueError(f"unknown brevity rule {brevity!r}; choose one of {list(BREVITY)}")
        self.brevity = brevity
        if tokenize not in _TOKENIZERS:
            raise ValueError(f"unknown tokenizer {tokenize!r}; choose one of {list(_TOKENIZERS)}")
        if smooth not in SMOOTH_DEFAULTS:
            raise ValueError(f"unknown smoothing {smooth!r}; choose one of {list(SMOOTH_DEFAULTS)}")
        self.max_order, self.smooth, self.smooth_value = max_order, smooth, smooth_value
        self.tokenize_name, self.lowercase = tokenize, lowercase

    @functools.cached_property
    def _tok(self):
        module, name = _TOKENIZERS[self.tokenize_name]
        return getattr(importlib.import_module(module), name)()

    def tokens(self, text: str) -> list[str]:
        if self.lowercase:
            text = text.lower()
        return self._tok(text.rstrip()).split()

    def stats(self, hyp: str, refs: Sequence[str], weights: Sequence[float] | None = None) -> SegmentStats:
        """Segment statistics; ``weights=None`` is plain BLEU (every weight 1)."""
        h_tok = self.tokens(hyp)
        h_ng = ngrams(h_tok, self.max_order)
        ref_toks = [self.tokens(r) for r in refs]
        correct = [0.0] * self.max_order
        total = [0.0] * self.max_order
        if weights is not None and len(weights) != len(refs):
            raise ValueError(f"{len(weights)} weights for {len(refs)} references")
        if (weights is None or all(w == 1 for w in weights)) and self.brevity == "closest":
            ref_ngs = [ngrams(rt, self.max_order) for rt in ref_toks]
            for n in range(self.max_order):
                hc = h_ng[n]
                total[n] = float(sum(hc.values()))
                if len(ref_ngs) == 1:
                    rc = ref_ngs[0][n]
                    correct[n] = float(sum(min(c, rc[g]) for g, c in hc.items() if g in rc))
                else:
                    rcs = [r[n] for r in ref_ngs]
                    correct[n] = float(sum(min(c, max(r.get(g, 0) for r in rcs)) for g, c in hc.items()))
            ref_len = closest_ref_len(len(h_tok), [len(t) for t in ref_toks])
        else:
            ws = [1.0] * len(refs) if weights is None else [float(w) for w in weights]
            if any(w < -1 - 1e-9 or w > 1 + 1e-9 for w in ws):
                raise ValueError("ΔBLEU weights must lie in [-1, 1]")
            wmax = max(ws)
            ref_ngs = [ngrams(t, self.max_order) for t in ref_toks]
            for n in range(self.max_order):
                for g, c in h_ng[n].items():
                    total[n] += wmax * c
                    best = None
                    for w, rng in zip(ws, ref_ngs):
                        rc = rng[n].get(g)
                        if rc:
                            v = w * min(c, rc)
                            if best is None or v > best:
                                best = v
                    if best is not None:
                        correct[n] += best
            correct = [max(c, 0.0) for c in correct]
            pos = [(len(t), w) for t, w in zip(ref_toks, ws) if w > 0] or [(len(t), 1.0) for t in ref_toks]
            if self.brevity == "weighted":
                ref_len = int(round(sum(n * w for n, w in pos) / sum(w for _, w in pos)))
            else:
                ref_len = closest_ref_len(len(h_tok), [n for n, _ in pos])
        return SegmentStats(len(h_tok), ref_len, correct, total)

    def from_stats(self, st: SegmentStats | Sequence[SegmentStats], sentence: bool = True) -> float:
        if isinstance(st, SegmentStats):
            return bleu_from_stats(st.correct, st.total, st.sys_len, st.ref_len, self.max_order, self.smooth,
                                   self.smooth_value, effective_order=sentence)
        correct = [sum(s.correct[n] for s in st) for n in range(self.max_order)]
        total = [sum(s.total[n] for s in st) for n in range(self.max_order)]
        return bleu_from_stats(correct, total, sum(s.sys_len for s in st), sum(s.ref_len for s in st),
                               self.max_order, self.smooth, self.smooth_value, effective_order=sentence)

    def sentence(self, hyp: str, refs: Sequence[str], weights: Sequence[float] | None = None) -> float:
        """Sentence-level (Δ)BLEU with effective order, as ``sacrebleu.sentence_bleu``."""
        return self.from_stats(self.stats(hyp, refs, weights), sentence=True)

    def corpus(self, hyps: Sequence[str], refs: Sequence[Sequence[str]],
               weights: Sequence[Sequence[float]] | None = None) -> float:
        """Corpus-level (Δ)BLEU; ``refs[i]`` are the references of ``hyps[i]`` (as sacrebleu, no effective order)."""
        ws = weights if weights is not None else [None] * len(hyps)
        return self.from_stats([self.stats(h, r, w) for h, r, w in zip(hyps, refs, ws)], sentence=False)

    @property
    def variant(self) -> str:
        bp = "" if self.brevity == "closest" else f",bp:{self.brevity}"
        return f"n:{self.max_order},smooth:{self.smooth},tok:{self.tokenize_name},lc:{int(self.lowercase)}{bp}"


@register_metric("bleu")
class BLEU(Metric):
    description = "BLEU-N (default N=2) against the example's own references; sacrebleu-compatible, 0-100"
    needs_references = True
    splits_words = SPLITS_WORDS

    def __init__(self, options: Options | None = None, max_order: int = 2, smooth: str = "exp",
                 smooth_value: float | None = None, tokenize: str = "13a", lowercase: bool = False):
        super().__init__(options)
        self.scorer = BleuScorer(max_order, smooth, smooth_value, tokenize, lowercase)

    def signature(self) -> Signature:
        return Signature("bleu", self.scorer.variant)

    def compute(self, examples: Sequence[Example], progress: Progress | None = None) -> MetricResult:
        scores, stats = np.full(len(examples), np.nan), []
        for i, ex in enumerate(examples):
            if ex.references:
                st = self.scorer.stats(ex.response, ex.references)
                stats.append(st)
                scores[i] = self.scorer.from_stats(st)
            if i % 200 == 0:
                tick(progress, i, len(examples), "bleu")
        tick(progress, len(examples), len(examples), "bleu")
        corpus = self.scorer.from_stats(stats, sentence=False) if stats else float("nan")
        return MetricResult("bleu", scores, self.signature(), extra={"corpus": corpus})
