"""The metric interface and registry.

A metric turns a list of ``Example``s into one float per example (``MetricResult.scores``) plus
optional per-example ``details`` (e.g. the references υBLEU retrieved). Each result carries a
``Signature`` (metric, variant, checkpoint hash, pool, version), as sacrebleu's signatures do, so two
people can tell whether they computed the same thing.

Adding a metric is one file in this package that defines a ``Metric`` subclass decorated with
``@register("name")``; modules here are imported on first use of the registry.
"""
from __future__ import annotations

import importlib
import pkgutil
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Sequence

import numpy as np

from core.data import Example
from core.version import __version__

Progress = Callable[[int, int, str], None]
"""progress(done, total, description): called as work advances; ``None`` means silent."""


def tick(progress: Progress | None, done: int, total: int, desc: str) -> None:
    if progress is not None:
        progress(done, total, desc)


@dataclass(frozen=True)
class Signature:
    metric: str
    variant: str = "default"
    checkpoint: str = "-"
    pool: str = "-"
    version: str = __version__

    def __str__(self) -> str:
        return f"metric:{self.metric}|variant:{self.variant}|ckpt:{self.checkpoint}|pool:{self.pool}|v:{self.version}"


@dataclass
class MetricResult:
    name: str
    scores: np.ndarray
    signature: Signature
    details: list[dict[str, Any]] | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # e.g. corpus-level score

    def __post_init__(self) -> None:
        self.scores = np.asarray(self.scores, dtype=np.float64)


class Metric(ABC):
    """Base class: subclasses set ``name`` and implement ``compute``."""

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    needs_references: ClassVar[bool] = False
    higher_is_better: ClassVar[bool] = True

    @abstractmethod
    def compute(self, examples: Sequence[Example], progress: Progress | None = None) -> MetricResult:
        """Score every example; ``len(result.scores) == len(examples)``, in the same order."""

    @abstractmethod
    def signature(self) -> Signature:
        ...

    def __call__(self, examples: Sequence[Example], progress: Progress | None = None) -> MetricResult:
        res = self.compute(list(examples), progress)
        if len(res.scores) != len(examples):
            raise RuntimeError(f"{self.name} returned {len(res.scores)} scores for {len(examples)} examples")
        return res


_REGISTRY: dict[str, type[Metric]] = {}
_loaded = False


def register(name: str) -> Callable[[type[Metric]], type[Metric]]:
    def deco(cls: type[Metric]) -> type[Metric]:
        if name in _REGISTRY and _REGISTRY[name] is not cls:
            raise ValueError(f"metric {name!r} registered twice")
        cls.name = name
        _REGISTRY[name] = cls
        return cls
    return deco


def _load_all() -> None:
    global _loaded
    if _loaded:
        return
    for mod in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{mod.name}")
    _loaded = True


def available_metrics() -> dict[str, str]:
    """name -> one-line description of every registered metric."""
    _load_all()
    return {k: v.description for k, v in sorted(_REGISTRY.items())}


def metric_class(name: str) -> type[Metric]:
    _load_all()
    if name not in _REGISTRY:
        raise KeyError(f"unknown metric {name!r}; available: {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[name]


_INSTANCES: dict[tuple, Metric] = {}


def get_metric(name: str, **options: Any) -> Metric:
    """A metric instance, cached per (name, options) so models load once per process."""
    key = (name, tuple(sorted((k, repr(v)) for k, v in options.items())))
    if key not in _INSTANCES:
        _INSTANCES[key] = metric_class(name)(**options)
    return _INSTANCES[key]
