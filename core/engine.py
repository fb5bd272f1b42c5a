"""Runs a chosen set of metrics over examples and keeps the per-example score table.

A comparison is scored as one batch (system A's rows then system B's), so metrics that normalize over
the evaluated set (hybrid RUBER) normalize both systems jointly, and models are used once per batch.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from core.data import Comparison, Example
from core.metrics import Metric, MetricResult, Progress, get_metric

DEFAULT_METRICS = ("bleu", "ubleu")


def parse_metrics(spec: str | Sequence[str] | None) -> list[str]:
    """'bleu,ubleu' or ['bleu', 'ubleu'] -> names (validated against the registry)."""
    from core.metrics import available_metrics
    if spec is None:
        return list(DEFAULT_METRICS)
    names = [s.strip() for s in (spec.split(",") if isinstance(spec, str) else spec) if s.strip()]
    known = available_metrics()
    if "all" in names:
        return list(known)
    bad = [n for n in names if n not in known]
    if bad:
        raise KeyError(f"unknown metric(s) {', '.join(bad)}; available: {', '.join(known)}")
    return names


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
        res = {}
        for m, r in self.results.items():
            res[m] = MetricResult(r.name, r.scores[idx], r.signature,
                                  [r.details[i] for i in idx] if r.details is not None else None, dict(r.extra))
        return ScoreTable([self.examples[i] for i in idx], res)


def _num(x: float) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def score_examples(examples: Sequence[Example], metrics: Sequence[str | Metric] | str | None = None,
                   options: dict[str, dict[str, Any]] | None = None,
                   progress: Progress | None = None) -> ScoreTable:
    """Score ``examples`` with each metric (names use the registry; ``options[name]`` are passed to
    the metric's constructor). Metric instances are cached, so models load once per process."""
    examples = list(examples)
    if isinstance(metrics, str) or metrics is None:
        metrics = parse_metrics(metrics)
    table = ScoreTable(examples)
    for m in metrics:
        metric = m if isinstance(m, Metric) else get_metric(m, **(options or {}).get(m, {}))
        table.results[metric.name] = metric(examples, progress)
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
                     options: dict[str, dict[str, Any]] | None = None,
                     progress: Progress | None = None) -> ComparisonScores:
    return ComparisonScores(comp, score_examples(comp.examples(), metrics, options, progress))


def write_jsonl(records: Sequence[dict[str, Any]], path: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for rec in records:
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
