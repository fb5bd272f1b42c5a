"""The only code that runs metrics and judges: every surface (CLI, Python API, dashboard, meta-evaluation,
training of CRS weights) scores through :func:`score_examples` and judges through :func:`judge_pairs`.

- Metrics come from the registry (``core.scoring.get_metric``) built with one :class:`~core.scoring.Options`
  object; each metric receives exactly the options it declares, nested parts included.
- A metric built from other metrics (:class:`~core.scoring.CompositeMetric`) has its parts scored once per
  run and shared: asking for ``ubleu`` and ``ruber_ubleu`` together runs υBLEU once.
- A comparison is scored as one list (system A's rows, then system B's); no metric's score depends on what
  else is in the list (fixed normalization constants, fixed-shape batches), so scoring a file alone or
  beside any partner gives the same per-row numbers.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from core.data import Comparison, Example
from core.progress import Progress
from core.scoring import (CompositeMetric, JudgeOutput, Metric, MetricResult, Options, available_metrics, get_judge,
                          get_metric)

DEFAULT_METRICS = ("bleu", "ubleu", "bert_ruber", "mme")
"""The default metrics on every surface: the best-correlated ones of benchmarks/RESULTS.md (plus plain BLEU)."""


def parse_metrics(spec: str | Sequence[str] | None) -> list[str]:
    """'bleu,ubleu' or ['bleu', 'ubleu'] -> names, validated against the registry; ``None`` -> the defaults,
    'all' -> every metric. An empty list is an error, not a run with nothing to score."""
    if spec is None:
        return list(DEFAULT_METRICS)
    names = [s.strip() for s in (spec.split(",") if isinstance(spec, str) else spec) if s and s.strip()]
    if not names:
        raise ValueError("no metric named; give one or more of: " + ", ".join(available_metrics()))
    known = available_metrics()
    if "all" in names:
        return list(known)
    bad = [n for n in names if n not in known]
    if bad:
        raise KeyError(f"unknown metric(s) {', '.join(bad)}; available: {', '.join(known)}")
    return list(dict.fromkeys(names))


@dataclass
class ScoreTable:
    """Per-example scores of several metrics over one list of examples (same order)."""

    examples: list[Example]
    results: dict[str, MetricResult] = field(default_factory=dict)

    @property
    def metrics(self) -> list[str]:
        return list(self.results)

    def column(self, metric: str) -> np.ndarray:
        return self.results[metric].scores

    def details(self, metric: str, i: int) -> dict[str, Any] | None:
        d = self.results[metric].details
        return d[i] if d is not None else None

    def signatures(self) -> dict[str, str]:
        return {k: str(v.signature) for k, v in self.results.items()}

    def to_records(self, with_details: bool = True) -> list[dict[str, Any]]:
        """One dict per example, in input order: ``{id, system, metrics: {name: float|None}, details}``."""
        out = []
        for i, ex in enumerate(self.examples):
            rec: dict[str, Any] = {"id": ex.id, "system": ex.system,
                                   "metrics": {m: _num(r.scores[i]) for m, r in self.results.items()}}
            if with_details:
                rec["details"] = {m: r.details[i] for m, r in self.results.items() if r.details is not None}
            out.append(rec)
        return out

    def subset(self, idx: Sequence[int]) -> "ScoreTable":
        idx = list(idx)
        return ScoreTable([self.examples[i] for i in idx], {m: r.subset(idx) for m, r in self.results.items()})


def _num(x: float) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def run_metric(metric: Metric, examples: Sequence[Example], progress: Progress | None = None,
               memo: dict[str, MetricResult] | None = None) -> MetricResult:
    """One metric over ``examples``. A composite metric's parts are scored first, each once per ``memo``
    (results keyed by signature, shared across the metrics of one run)."""
    memo = {} if memo is None else memo
    key = str(metric.signature())
    if key not in memo:
        if isinstance(metric, CompositeMetric):
            parts = [run_metric(p, examples, progress, memo) for p in metric.parts()]
            memo[key] = metric.combine(examples, parts)
        else:
            memo[key] = metric(examples, progress)
    return memo[key]


def score_examples(examples: Sequence[Example], metrics: Sequence[str | Metric] | str | None = None,
                   options: Options | None = None, progress: Progress | None = None) -> ScoreTable:
    """Score ``examples`` with each metric: registry names (built with ``options``; models load once per
    process) or metric instances."""
    examples = list(examples)
    if isinstance(metrics, str) or metrics is None:
        metrics = parse_metrics(metrics)
    table = ScoreTable(examples)
    memo: dict[str, MetricResult] = {}
    for m in metrics:
        metric = m if isinstance(m, Metric) else get_metric(m, options)
        table.results[metric.name] = run_metric(metric, examples, progress, memo)
    return table


@dataclass
class ComparisonScores:
    comparison: Comparison
    table: ScoreTable  # A's rows then B's rows

    @property
    def n(self) -> int:
        return len(self.comparison.pairs)

    def a(self, metric: str) -> np.ndarray:
        return self.table.column(metric)[: self.n]

    def b(self, metric: str) -> np.ndarray:
        return self.table.column(metric)[self.n:]

    @property
    def metrics(self) -> list[str]:
        return self.table.metrics


def score_comparison(comp: Comparison, metrics: Sequence[str | Metric] | str | None = None,
                     options: Options | None = None, progress: Progress | None = None) -> ComparisonScores:
    return ComparisonScores(comp, score_examples(comp.examples(), metrics, options, progress))


def comparison_scores(comp: Comparison, results: dict[str, MetricResult]) -> ComparisonScores:
    """A ``ComparisonScores`` from per-metric results already computed over ``comp.examples()`` (the dashboard
    keeps each metric's result on its own, so adding a metric never re-scores the others)."""
    return ComparisonScores(comp, ScoreTable(comp.examples(), dict(results)))


def judge_pairs(contexts: Sequence[Sequence[str]], replies_a: Sequence[str], replies_b: Sequence[str],
                judge: str = "pairwise", checkpoint: str | None = None,
                progress: Progress | None = None) -> JudgeOutput:
    """P(A preferred) for each (context, A, B) from a registered judge (default: the shipped A/B judge)."""
    return get_judge(judge, checkpoint).predict(contexts, replies_a, replies_b, progress)


def judge_comparison(comp: Comparison, judge: str = "pairwise", checkpoint: str | None = None,
                     progress: Progress | None = None) -> JudgeOutput:
    """The judge over every aligned pair of ``comp`` (A = ``comp.system_a``)."""
    return judge_pairs([a.context for a in comp.a], [a.response for a in comp.a], [b.response for b in comp.b],
                       judge, checkpoint, progress)
