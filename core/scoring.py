"""The Metric and Judge interfaces, the options every run carries, signatures, and the two registries.

A **metric** turns a list of ``Example``s into one float per example (``MetricResult.scores``) plus optional
per-example ``details`` (e.g. the references υBLEU retrieved). A **judge** reads a context and two replies
and gives P(a person prefers reply A) (``JudgeOutput``). Each result carries a signature (metric, variant,
checkpoint hash, pool, version), as sacrebleu's do, so two people can tell whether they computed the same thing.

Adding a metric is one file in ``core/metrics/`` with a :class:`Metric` subclass decorated with
``@register_metric("name")``; adding a judge is one file in ``core/judges/`` with ``@register_judge("name")``.
The registries import those packages on first use.

**Options** (:class:`Options`) are the settings of one run that several metrics share: the υBLEU pool and
retriever, the MME-CRS dimension, the device. A metric class lists the ones it reads in ``option_names``;
:func:`get_metric` hands each metric exactly those, and a metric built from other metrics (RUBER+υBLEU)
passes its options on to its parts.

The interface a metric declares, read by the engine, meta-evaluation and the verdict (never probed):
``higher_is_better``, ``needs_references``, ``held_out_for(dataset)`` (the instance that never saw a rated
set, for leave-one-dataset-out) and ``scores_for_dimension(result, dimension)`` (scores re-weighted for one
human dimension, for metrics such as MME-CRS whose weights depend on it).
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, ClassVar, Sequence

import numpy as np

from core.cache import versionless  # noqa: F401 (a signature's part that fixes numbers; re-exported)
from core.data import Example
from core.progress import Progress
from core.registry import Registry
from core.version import __version__
from core.models.device import DEVICES

if TYPE_CHECKING:
    import argparse

    from core.cache import ScoreCache


# ------------------------------------------------------------------------------------------------
# options and signatures


@dataclass(frozen=True)
class Options:
    """Settings of one run, shared by every metric that declares them (``Metric.option_names``).

    ``None`` means the metric's own default (the chitchat pool, the emb-u retriever, the overall dimension)."""

    pool: str | None = None
    retriever: str | None = None
    dimension: str | None = None
    device: str = "cpu"

    def __post_init__(self) -> None:
        import os
        if self.pool is not None and not isinstance(self.pool, (str, os.PathLike)):
            raise TypeError(f"pool is a file's path (or 'chitchat'), got {type(self.pool).__name__}: {self.pool!r}")
        if isinstance(self.pool, os.PathLike):  # a pathlib.Path: as its string, so signatures and caches read alike
            object.__setattr__(self, "pool", os.fspath(self.pool))
        for name in ("retriever", "dimension"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise TypeError(f"{name} is a name (a string) or None, got {type(value).__name__}: {value!r}")
        if self.device is None:  # None is every other field's default: the default device here too
            object.__setattr__(self, "device", "cpu")
        if self.device not in DEVICES:
            raise ValueError(f"device must be one of {', '.join(DEVICES)}, got {self.device!r}")

    def restricted_to(self, names: Sequence[str]) -> "Options":
        """These options with every field outside ``names`` back at its default."""
        defaults = Options()
        return replace(defaults, **{f.name: getattr(self, f.name) for f in fields(self) if f.name in names})

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Signature:
    """How a metric's numbers were made, sacrebleu-style. ``precision`` is ``"bfloat16"`` when the metric reads
    MiniLM sentence vectors (:attr:`Metric.reads_sentence_vectors`) and they were computed in bfloat16
    (``core.settings.minilm_precision``), else empty; filled in on construction, and shown (``|precision:...``)
    only when set, so float32 signatures read as before."""

    metric: str
    variant: str = "default"
    checkpoint: str = "-"
    pool: str = "-"
    version: str = __version__
    precision: str = ""

    def __post_init__(self) -> None:
        if not self.precision:
            from core.settings import minilm_precision
            fmt = minilm_precision()
            if fmt != "float32" and self.metric in METRICS and METRICS.get(self.metric).reads_sentence_vectors:
                object.__setattr__(self, "precision", fmt)

    def __str__(self) -> str:
        text = f"metric:{self.metric}|variant:{self.variant}|ckpt:{self.checkpoint}|pool:{self.pool}|v:{self.version}"
        return text + (f"|precision:{self.precision}" if self.precision else "")


@dataclass
class MetricResult:
    name: str
    scores: np.ndarray
    signature: Signature
    details: list[dict[str, Any]] | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # e.g. corpus-level score

    def __post_init__(self) -> None:
        self.scores = np.asarray(self.scores, dtype=np.float64)

    def subset(self, idx: Sequence[int]) -> "MetricResult":
        idx = list(idx)
        return MetricResult(self.name, self.scores[idx], self.signature,
                            [self.details[i] for i in idx] if self.details is not None else None, dict(self.extra))


# ------------------------------------------------------------------------------------------------
# metrics


class Metric(ABC):
    """Base class: subclasses set ``description`` and implement ``compute`` and ``signature``."""

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    needs_references: ClassVar[bool] = False
    reads_references: ClassVar[bool] = False
    """Whether a row's reference moves its score although the metric also scores rows without one (a hybrid
    with a referenced part, ADEM): such metrics, and those that need references, favour a reply that copies its
    reference (``core.engine.BlankTextCount``'s note)."""
    higher_is_better: ClassVar[bool] = True
    option_names: ClassVar[tuple[str, ...]] = ()
    models: ClassVar[tuple[str, ...]] = ()
    """The pretrained model packages this metric's passes load (``"minilm"``, ``"smollm2"``:
    ``core.models.encoders.MODEL_PACKAGES``), checked before a run scores anything (``core.engine.score_examples``),
    so a missing one is said at once, not after the other metrics ran."""
    reads_sentence_vectors: ClassVar[bool] = False
    """Whether its scores come from MiniLM sentence encodings (``core.models.encoders.minilm_forward``), which
    ``DIALEVAL_PRECISION=bfloat16`` computes in bfloat16: its signature then says so (:class:`Signature`) and
    its passes run on ``SMOLLM_THREADS`` (:func:`fixed_pass_threads`)."""
    splits_words: ClassVar[str | None] = None
    """How its score splits a reply into words where it counts matching words (``"at spaces and punctuation
    (sacrebleu's 13a)"``), or ``None`` when it does not: a reply in a script written without spaces is then one
    word to it, which the input notes say (``core.engine.BlankTextCount``)."""
    reads_response: ClassVar[tuple[int, str] | None] = None
    """About how many words of a response its models read, and the limit in their own units (e.g. ``(24, "32
    MiniLM word pieces")``); ``None``: all of it. A longer response's rest does not move its score, which the
    input notes say (``core.engine.BlankTextCount``)."""
    pass_threads: ClassVar[int | None] = None
    """Torch threads this metric's model passes always run on, whatever ``DIALEVAL_THREADS`` says (SmolLM2's
    ``SMOLLM_THREADS``: its bfloat16 kernels round differently on other counts), or ``None`` when they follow
    ``DIALEVAL_THREADS``. A backend gives each worker at least this many CPUs (:func:`fixed_pass_threads`)."""

    def __init__(self, options: Options | None = None):
        self.options = (options or Options()).restricted_to(self.option_names)

    @abstractmethod
    def compute(self, examples: Sequence[Example], progress: Progress | None = None) -> MetricResult:
        """Score every example; ``len(result.scores) == len(examples)``, in the same order."""

    @abstractmethod
    def signature(self) -> Signature:
        ...

    def held_out_for(self, dataset: str) -> "Metric | None":
        """An instance that never saw the rated set ``dataset`` in training, or ``None`` when this one never
        saw it either (metrics trained without human ratings)."""
        return None

    def trained_on(self) -> list[str]:
        """The rated development sets whose ratings this instance learned from, whether or not it has an
        instance held out from each (meta-evaluation marks their rows: ``core.meta_eval.trains_on``); [] for
        metrics trained without human ratings."""
        return []

    def scores_for_dimension(self, result: MetricResult, dimension: str) -> np.ndarray:
        """The scores of ``result`` for the human ``dimension`` (the same scores unless the metric weighs its
        parts per dimension)."""
        return result.scores

    def rescored(self, result: MetricResult) -> np.ndarray | None:
        """This instance's scores computed from ``result``, another instance's result of the same metric on the
        same rows, where only weights over stored parts differ (a held-out instance re-weighing the shipped
        one's parts); ``None`` when this metric cannot, and must score the rows itself."""
        return None

    def __call__(self, examples: Sequence[Example], progress: Progress | None = None) -> MetricResult:
        res = self.compute(list(examples), progress)
        if len(res.scores) != len(examples):
            raise RuntimeError(f"{self.name} returned {len(res.scores)} scores for {len(examples)} examples")
        return res


class CheckpointMetric(Metric):
    """A metric whose model is one checkpoint: ``checkpoint`` (default ``default_checkpoint``) names it and
    its short weights hash goes into the signature with ``variant`` (a template: ``{checkpoint}`` is the
    checkpoint's name, ``{encoder}`` the sentence encoder's id)."""

    default_checkpoint: ClassVar[str] = ""
    variant: ClassVar[str] = "default"

    def __init__(self, options: Options | None = None, checkpoint: str | None = None):
        super().__init__(options)
        self.checkpoint = checkpoint or self.default_checkpoint

    def signature(self) -> Signature:
        from core.models.checkpoints import short_hash
        from core.models.encoders import encoder_id
        encoder = encoder_id() if "{encoder}" in self.variant else ""
        return Signature(self.name, self.variant.format(checkpoint=self.checkpoint, encoder=encoder),
                         short_hash(self.checkpoint))


class CompositeMetric(Metric):
    """A metric computed from other metrics' results (e.g. hybrid RUBER from s_R and s_U).

    ``parts()`` are the part metrics, built with this metric's options (so a pool reaches a nested υBLEU);
    ``combine`` turns their results into this metric's. The engine scores each part once per run and shares
    it with any other metric (or the user) asking for the same part; ``compute`` does the same on its own."""

    @abstractmethod
    def parts(self) -> tuple[Metric, ...]:
        ...

    @abstractmethod
    def combine(self, examples: Sequence[Example], part_results: Sequence[MetricResult]) -> MetricResult:
        ...

    def compute(self, examples: Sequence[Example], progress: Progress | None = None) -> MetricResult:
        return self.combine(examples, [part(examples, progress) for part in self.parts()])


METRICS: Registry[type[Metric]] = Registry("metric", "core.metrics")
register_metric = METRICS.register
"""``@register_metric(name)`` on a :class:`Metric` subclass: the registry's name for it (and its ``name``)."""
metric_class = METRICS.get
available_metrics = METRICS.descriptions
"""name -> one-line description of every registered metric."""


_INSTANCES: dict[tuple, Metric] = {}


def fixed_pass_threads(names: Sequence[str]) -> int | None:
    """The most torch threads any of the metrics ``names`` always runs its passes on
    (:attr:`Metric.pass_threads`; MiniLM's too when its encodings run in bfloat16,
    ``core.settings.minilm_precision``), or ``None`` when every one follows ``DIALEVAL_THREADS``."""
    from core.models.encoders import SMOLLM_THREADS
    from core.settings import minilm_precision
    bf16 = minilm_precision() == "bfloat16"
    fixed = [max(metric_class(n).pass_threads or 0, SMOLLM_THREADS if bf16 and metric_class(n).reads_sentence_vectors
                 else 0) for n in names]
    fixed = [t for t in fixed if t]
    return max(fixed) if fixed else None


def unused_options(options: Options | None, metrics: Sequence[str]) -> list[tuple[str, Any, str]]:
    """The pool or retriever set in ``options`` that none of ``metrics`` reads (it would do nothing), as (field,
    value, the metrics that read it)."""
    if options is None:
        return []
    return [(name, getattr(options, name), ", ".join(n for n, cls in METRICS.items() if name in cls.option_names))
            for name in ("pool", "retriever") if getattr(options, name) is not None
            and not any(name in metric_class(m).option_names for m in metrics)]


def get_metric(name: str, options: Options | None = None, **settings: Any) -> Metric:
    """A metric instance built with the options it declares (and metric-specific ``settings`` such as
    BLEU's ``max_order``), cached per (name, options, settings) so models load once per process."""
    cls = metric_class(name)
    opts = (options or Options()).restricted_to(cls.option_names)
    key = (name, opts, tuple(sorted((k, repr(v)) for k, v in settings.items())))
    if key not in _INSTANCES:
        _INSTANCES[key] = cls(opts, **settings)
    return _INSTANCES[key]


# ------------------------------------------------------------------------------------------------
# judges


def verdicts(p_a: np.ndarray, tie_margin: float) -> list[str]:
    """'tie' when |p_a - 0.5| < tie_margin, else the side p_a points to."""
    return ["tie" if abs(p - 0.5) < tie_margin else ("A" if p > 0.5 else "B") for p in p_a]


def same_reply(a: str, b: str) -> bool:
    """Whether two replies are the same, runs of white space aside: a pair of them has no winner (the verdict's
    identical pairs, the judges' flip rate, the LLM judge's requests that are never sent)."""
    return a.split() == b.split()


def order_disagreement(p_ab: Sequence[float], p_ba_flipped: Sequence[float],
                       counted: Sequence[bool] | None = None) -> float:
    """The share of pairs whose two single-order estimates pick different winners (one above 0.5, the other
    not), over the pairs ``counted`` (default: all); NaN when none is counted. A pair of identical replies has
    no winner to pick, so :func:`core.judge_summary.summarize_judge` leaves those out: a flip there is position
    bias alone, which ``JudgeOutput.first_shown`` reports."""
    p_ab, flipped = np.asarray(p_ab, dtype=np.float64), np.asarray(p_ba_flipped, dtype=np.float64)
    keep = np.ones(len(p_ab), dtype=bool) if counted is None else np.asarray(counted, dtype=bool)
    if not keep.any():
        return float("nan")
    return float(np.mean((p_ab[keep] > 0.5) != (flipped[keep] > 0.5)))


@dataclass
class JudgeOutput:
    """What a judge says about n pairs (context, A, B)."""

    p_a: np.ndarray  # P(A preferred) after combining both orders
    p_ab: np.ndarray  # single-order estimate from (context, A, B)
    p_ba_flipped: np.ndarray  # 1 - P(first preferred | context, B, A)
    verdict: list[str]  # "A" | "B" | "tie" (|p_a - 0.5| < tie_margin) | "unread" (the llm judge: no answer read)
    order_disagreement: float  # share of pairs where p_ab and p_ba_flipped pick different winners
    tie_margin: float
    signature: str = ""
    notes: dict[str, Any] = field(default_factory=dict)  # what the judge adds (the llm judge: model, unparsed pairs)

    @property
    def unparsed(self) -> list[int]:
        """The pairs (0-based) the judge could not read in both orders (the llm judge's ``notes``): no call."""
        return list(self.notes.get("unparsed") or ())

    @property
    def first_shown(self) -> float:
        """The share of single-order calls (both orders of every pair) preferring the reply shown first (exactly
        0.5 counts half): near 0.5 for a judge without position bias. A judge that knows better says so in
        ``notes["first_shown"]`` (the llm judge leaves out its unparsed answers)."""
        if "first_shown" in self.notes:
            return float(self.notes["first_shown"])
        firsts = np.concatenate([self.p_ab, 1.0 - self.p_ba_flipped])
        if not len(firsts):
            return float("nan")
        return float(np.mean(np.where(firsts > 0.5, 1.0, np.where(firsts == 0.5, 0.5, 0.0))))

    @classmethod
    def from_probabilities(cls, p_a: np.ndarray, p_ab: np.ndarray, p_ba_flipped: np.ndarray, tie_margin: float,
                           signature: str = "") -> "JudgeOutput":
        """The output whose per-pair probabilities are given: verdicts and order disagreement follow."""
        p_a, p_ab, flipped = (np.asarray(x, dtype=np.float64) for x in (p_a, p_ab, p_ba_flipped))
        return cls(p_a, p_ab, flipped, verdicts(p_a, tie_margin), order_disagreement(p_ab, flipped), tie_margin,
                   signature)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data: every field, the per-pair arrays as lists (``json.dumps`` takes it)."""
        return {"p_a": self.p_a.tolist(), "p_ab": self.p_ab.tolist(), "p_ba_flipped": self.p_ba_flipped.tolist(),
                "verdict": list(self.verdict), "order_disagreement": float(self.order_disagreement),
                "tie_margin": float(self.tie_margin), "signature": self.signature, "notes": dict(self.notes)}

    def subset(self, idx: Sequence[int]) -> "JudgeOutput":
        """The judge's output on the pairs ``idx`` only (order disagreement recomputed on them)."""
        idx = list(idx)
        return JudgeOutput.from_probabilities(self.p_a[idx], self.p_ab[idx], self.p_ba_flipped[idx],
                                              self.tie_margin, self.signature)


class Judge(ABC):
    """A pairwise judge: P(a person prefers reply A over reply B) for each (context, A, B)."""

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    models: ClassVar[tuple[str, ...]] = ()  # the pretrained model packages it loads, as ``Metric.models``
    reads_response: ClassVar[tuple[int, str] | None] = None  # how much of a reply it reads, as ``Metric``'s
    caches_own_answers: ClassVar[bool] = False  # True: ``predict`` takes ``cache=`` and keeps its own answers there
    load_once: ClassVar[bool] = True  # False: :func:`get_judge` builds it anew each time (cheap, settings from the env)
    swaps_exactly: ClassVar[bool] = False
    """Whether its output on (context, B, A) is its output on (context, A, B) mirrored (``p_a`` -> ``1 - p_a``, the
    single orders exchanged): a judge that scores both orders and averages them. The score cache then answers a
    pair judged in the other order (``core.engine.judge_pairs``: a gate run with the systems swapped judges
    nothing again), to the last bits of rounding."""

    @classmethod
    def add_arguments(cls, p: "argparse._ActionsContainer") -> None:
        """Command-line flags of this judge's own settings (``--llm-url``...), added wherever ``--judge`` is."""

    @classmethod
    def from_arguments(cls, a: "argparse.Namespace") -> "Judge":
        """The judge the parsed command line describes (default: the one stored under ``--checkpoint``)."""
        return cls.load(getattr(a, "checkpoint", None))

    @classmethod
    def flags_given(cls, a: "argparse.Namespace") -> list[str]:
        """Which of this judge's own flags the command line set (said as an error when another judge runs)."""
        return []

    def check_ready(self) -> None:
        """Raise before any work when the judge cannot run (an endpoint that does not answer); default: nothing."""

    def usage_line(self) -> str | None:
        """One line on what the last :meth:`predict` cost (requests, tokens), or ``None``."""
        return None

    def estimated_seconds(self, n_pairs: int, cache: "ScoreCache | None") -> float | None:
        """About how long judging ``n_pairs`` new pairs takes, for the estimate said before a run
        (``core.engine.estimate_work``); ``None`` (the default): no pace is known. The shipped judge's is
        ``core.time_estimates.JudgeTime``."""
        return None

    @abstractmethod
    def predict(self, contexts: Sequence[Sequence[str]], replies_a: Sequence[str], replies_b: Sequence[str],
                progress: Progress | None = None) -> JudgeOutput:
        ...

    @abstractmethod
    def signature(self) -> str:
        ...

    @classmethod
    @abstractmethod
    def load(cls, checkpoint: str | None = None) -> "Judge":
        """The judge stored under ``checkpoint`` (``None``: the shipped one)."""

    @classmethod
    def cache_identity(cls, checkpoint: str | None = None) -> str | None:
        """What fixes this judge's outputs, found without loading it (e.g. the checkpoint file's hash), for
        the score cache (``core.cache``); ``None``: its outputs are not cached."""
        return None


JUDGES: Registry[type[Judge]] = Registry("judge", "core.judges")
register_judge = JUDGES.register
judge_class = JUDGES.get
available_judges = JUDGES.descriptions


_JUDGE_INSTANCES: dict[tuple[str, str | None], Judge] = {}


def get_judge(name: str = "pairwise", checkpoint: str | None = None) -> Judge:
    """A judge instance (``checkpoint`` None: the shipped one), loaded once per process."""
    key = (name, checkpoint)
    if not judge_class(name).load_once:  # built from settings that may change (the environment): built anew
        return judge_class(name).load(checkpoint)
    if key not in _JUDGE_INSTANCES:
        _JUDGE_INSTANCES[key] = judge_class(name).load(checkpoint)
    return _JUDGE_INSTANCES[key]


def loaded_judge(name: str, checkpoint: str | None = None) -> "Judge | None":
    """The instance :func:`get_judge` keeps for ``name`` in this process, or None when none was loaded (never
    loads one: a run answered from the cache loaded no judge)."""
    return _JUDGE_INSTANCES.get((name, checkpoint))


def judge_instance(judge: "str | Judge", checkpoint: str | None = None) -> Judge:
    """``judge`` itself when it is a :class:`Judge` (an ``llm`` judge built with its settings), else the
    registered judge of that name (:func:`get_judge`)."""
    return judge if isinstance(judge, Judge) else get_judge(judge, checkpoint)


def judge_choice(value: "bool | str | Judge | None") -> "str | Judge | None":
    """What an API's ``judge=`` asks for: ``True`` the learned judge ('pairwise'); ``False`` / ``None`` no judge;
    a registered name (an unknown one raises, listing the known) or a :class:`Judge` as given."""
    if value is True:
        return "pairwise"
    if value is False or value is None:
        return None
    if isinstance(value, Judge):
        return value
    if isinstance(value, str):
        judge_class(value)
        return value
    raise TypeError(f"judge= takes True, False, a judge's name or a Judge, not {type(value).__name__}")

