"""About how long scoring and judging take: the paces this process has measured, with the paces of an idle 2-core
laptop CPU of this kind until it has measured one.

The engine records every run it makes (``core.engine.score_examples`` per metric, ``core.engine.judge_pairs`` for
the shipped judge) in one process-wide record (:func:`score_time`, :func:`judge_time`), and
``core.engine.estimate_work`` asks it how long the work a comparison still has to do should take. Every surface
asks that one call (the dashboard's captions and buttons); none reads a model's memory itself.

The idle paces are measured by ``benchmarks/estimates.py`` on the two CPU kinds this project runs on: SmolLM2 in
bfloat16 (AVX-512 BF16 cores) and in float32 (AVX2 cores, most laptops). An estimate is

    loading (once per process) + start + work x slowdown,

where the work is the idle pace times the rows (or pairs) still to compute and the slowdown is how much slower
than the idle pace this process's last long enough run went (a busy or slow machine), 1 before any run.
"""
from __future__ import annotations

import functools
import threading
from dataclasses import dataclass, field
from typing import Any, Sequence

from core.formatting import counted

JUDGE_TIMED = "pairwise"  # the judge whose parts JudgeTime counts (the shipped one); other judges have no estimate


def smollm_first_read_seconds() -> float:
    """``core.models.encoders.SMOLLM_FIRST_READ_SECONDS`` when a run that loads SmolLM2 would first read its GGUF
    file (``core.models.encoders.smollm_first_load``: not loaded in this process, no copy in the cache folder); 0.0
    otherwise, and when SmolLM2 is not installed (the run says so)."""
    from core.models.encoders import SMOLLM_FIRST_READ_SECONDS, smollm_first_load
    try:
        return SMOLLM_FIRST_READ_SECONDS if smollm_first_load() else 0.0
    except Exception:  # noqa: BLE001 (a model that is not installed is the run's to report)
        return 0.0


def smollm_in_float32() -> bool:
    """Whether SmolLM2 runs in float32 on this machine (a CPU without bfloat16 kernels, most laptops:
    ``core.models.device.smollm_dtype``); the estimates then use the paces measured on such a CPU."""
    from core.models.device import smollm_dtype
    return smollm_dtype() == "float32"


class JudgeTime:
    """About how long the shipped judge takes for a number of pairs: both orders through the MiniLM cross-encoder,
    the SmolLM2 reading of both replies where this process has not read them (``core.models.smollm_reading``: the
    judge's reader and MME's context PMI share it), and the rest of MME-CRS for the replies MME has not scored (the
    judge's mix weighs MME-CRS); the idle pace of this kind of CPU, scaled by how much slower than that pace this
    process's last run over :attr:`MIN_PAIRS` or more pairs was (:meth:`record`). A run with nothing to read
    (SmolLM2 and MME hold every reply, as after scoring them) loads only the judge's own models and has almost no
    start."""

    # idle paces, benchmarks/estimates.py: seconds a pair for the MiniLM cross-encoder (both orders and the mix),
    # SmolLM2's reading of both replies, and the rest of MME-CRS for both replies
    SECONDS_PER_PAIR, READ_SECONDS_PER_PAIR, MME_SECONDS_PER_PAIR = 0.035, 0.13, 0.09  # SmolLM2 in bfloat16
    FLOAT32_PACE = (0.074, 0.65, 0.58)  # SmolLM2 in float32
    LOAD_SECONDS, START_SECONDS = 8.0, 5.0  # loading the judge's models with SmolLM2; a run's start (batch shapes)
    FLOAT32_LOAD_SECONDS, FLOAT32_START_SECONDS = 16.6, 3.3
    OWN_LOAD_SECONDS, QUICK_START_SECONDS = 0.5, 0.3  # a run with nothing to read: the judge's own models, its start
    MIN_PAIRS = 20  # fewer pairs say more about the start than about the pace
    MIN_SLOWDOWN = 0.02  # a recorded run at most 50 times the idle pace (a GPU): a run within its start says 0

    def __init__(self, float32: bool | None = None) -> None:
        float32 = smollm_in_float32() if float32 is None else float32
        self.seconds_per_pair, self.read_seconds_per_pair, self.mme_seconds_per_pair = (
            self.FLOAT32_PACE if float32 else
            (self.SECONDS_PER_PAIR, self.READ_SECONDS_PER_PAIR, self.MME_SECONDS_PER_PAIR))
        self.load_seconds, self.start_seconds = ((self.FLOAT32_LOAD_SECONDS, self.FLOAT32_START_SECONDS) if float32
                                                 else (self.LOAD_SECONDS, self.START_SECONDS))
        self.slowdown: float | None = None  # the last run's seconds / the idle pace's seconds for its work

    def idle_work(self, n_pairs: int, mme_pairs: int = 0, read_pairs: int | None = None) -> float:
        """Seconds of work (start and loading aside) for ``n_pairs``, ``mme_pairs`` of them new to MME and
        ``read_pairs`` (default: all) new to the SmolLM2 reading, at the idle pace."""
        read = n_pairs if read_pairs is None else read_pairs
        return (self.seconds_per_pair * n_pairs + self.read_seconds_per_pair * read
                + self.mme_seconds_per_pair * mme_pairs)

    @staticmethod
    def reads(n_pairs: int, mme_pairs: int = 0, read_pairs: int | None = None) -> bool:
        """Whether a run reads replies with SmolLM2 or scores them with MME."""
        return (n_pairs if read_pairs is None else read_pairs) > 0 or mme_pairs > 0

    def start(self, n_pairs: int, mme_pairs: int = 0, read_pairs: int | None = None) -> float:
        """The start of a run: :attr:`start_seconds` where it reads (:meth:`reads`), else
        :attr:`QUICK_START_SECONDS`."""
        return self.start_seconds if self.reads(n_pairs, mme_pairs, read_pairs) else self.QUICK_START_SECONDS

    def estimate(self, n_pairs: int, loaded: bool, mme_pairs: int = 0, read_pairs: int | None = None,
                 reading_loaded: bool = False) -> float:
        """Seconds for ``n_pairs``, plus loading unless ``loaded`` (the judge's models): all of them where the run
        reads and SmolLM2's reading is not loaded yet (``reading_loaded``: MME's scoring loaded it, and MME's models
        with it), else the judge's own; the start and the work of :meth:`idle_work` times the recorded slowdown."""
        if n_pairs <= 0:
            return 0.0
        full_load = self.reads(n_pairs, mme_pairs, read_pairs) and not reading_loaded
        work = self.idle_work(n_pairs, mme_pairs, read_pairs) * (1.0 if self.slowdown is None else self.slowdown)
        load = 0.0 if loaded else self.load_seconds if full_load else self.OWN_LOAD_SECONDS
        return load + self.start(n_pairs, mme_pairs, read_pairs) + work

    def record(self, n_pairs: int, seconds: float, mme_pairs: int = 0, read_pairs: int | None = None) -> None:
        """A run over ``n_pairs`` (``mme_pairs`` of them new to MME, ``read_pairs`` new to the reading) that took
        ``seconds`` with the models already loaded: from now on estimates are scaled by its slowdown against the
        idle pace."""
        if n_pairs >= self.MIN_PAIRS:
            work = self.idle_work(n_pairs, mme_pairs, read_pairs)
            self.slowdown = max(self.MIN_SLOWDOWN, (seconds - self.start(n_pairs, mme_pairs, read_pairs)) / work)


class ScoreTime:
    """About how long scoring rows with a metric takes: the idle pace of this kind of CPU, plus loading its models
    the first time this process runs it; after a run of :attr:`MIN_ROWS` or more rows with the models loaded, that
    run's pace. Rows the score cache holds are the caller's to leave out."""

    # idle seconds a row, benchmarks/estimates.py: SmolLM2 in bfloat16, and in float32
    SECONDS_PER_ROW = {"bleu": 0.001, "ubleu": 0.008, "ubleu_paper": 0.01, "bert_ruber": 0.008, "ruber": 0.004,
                       "ruber_ubleu": 0.01, "adem": 0.008, "mme": 0.085, "mme_avg": 0.085}
    FLOAT32_SECONDS_PER_ROW = {"bleu": 0.001, "ubleu": 0.012, "ubleu_paper": 0.011, "bert_ruber": 0.017,
                               "ruber": 0.002, "ruber_ubleu": 0.013, "adem": 0.019, "mme": 0.62, "mme_avg": 0.62}
    OTHER_PER_ROW = 0.05  # a metric not timed here (an MME sub-metric, one added by a plug-in)
    LOAD_SECONDS = {"bleu": 0.0, "ubleu": 8.0, "ubleu_paper": 8.0, "ruber_ubleu": 10.0, "mme": 15.0, "mme_avg": 15.0}
    OTHER_LOAD = 5.0
    MIN_ROWS = 50

    def __init__(self, float32: bool | None = None) -> None:
        float32 = smollm_in_float32() if float32 is None else float32
        self.per_row = self.FLOAT32_SECONDS_PER_ROW if float32 else self.SECONDS_PER_ROW
        self.pace: dict[str, float] = {}
        self.loaded: set[str] = set()

    def estimate(self, metric: str, n_rows: int) -> float:
        """Seconds for ``n_rows`` new rows of ``metric``, loading included unless it ran in this process."""
        if n_rows <= 0:
            return 0.0
        pace = self.pace.get(metric, self.per_row.get(metric, self.OTHER_PER_ROW))
        load = 0.0 if metric in self.loaded else self.LOAD_SECONDS.get(metric, self.OTHER_LOAD)
        return load + pace * n_rows

    def record(self, metric: str, n_rows: int, seconds: float) -> None:
        """A run of ``metric`` over ``n_rows`` that took ``seconds`` (its models are loaded from now on)."""
        if metric in self.loaded and n_rows >= self.MIN_ROWS:
            self.pace[metric] = seconds / n_rows
        self.loaded.add(metric)


_LOCK = threading.Lock()  # sessions of one dashboard process record side by side


@functools.cache
def score_time() -> ScoreTime:
    """This process's scoring paces (every surface's runs teach it)."""
    return ScoreTime()


@functools.cache
def judge_time() -> JudgeTime:
    """This process's pace of the shipped judge."""
    return JudgeTime()


def record_scoring(metric: str, n_rows: int, seconds: float) -> None:
    """A run of ``metric`` that computed ``n_rows`` rows in ``seconds`` (``core.engine.score_examples`` calls it)."""
    if n_rows > 0:
        with _LOCK:
            score_time().record(metric, n_rows, seconds)


@dataclass(frozen=True)
class JudgeWork:
    """What a run of the shipped judge over some pairs still has to do: ``pairs`` to judge, ``mme_pairs`` of them
    MME-CRS has not scored (pairs' worth of replies), ``read_pairs`` the SmolLM2 reading has not read (None: the
    reading is not loaded, so every pair), ``loaded``: the judge's models are loaded."""

    pairs: int
    mme_pairs: int
    read_pairs: int | None
    loaded: bool

    def seconds(self, pace: JudgeTime) -> float:
        read = self.pairs if self.read_pairs is None else min(self.pairs, self.read_pairs)
        return pace.estimate(self.pairs, self.loaded, mme_pairs=min(self.pairs, self.mme_pairs), read_pairs=read,
                             reading_loaded=self.read_pairs is not None)

    def reads(self) -> bool:
        """Whether the run passes replies through SmolLM2 (its reading or MME-CRS; ``JudgeTime.reads``)."""
        read = self.pairs if self.read_pairs is None else min(self.pairs, self.read_pairs)
        return self.pairs > 0 and JudgeTime.reads(self.pairs, min(self.pairs, self.mme_pairs), read)


def judge_work(n_pairs: int, contexts: Sequence[Sequence[str]] | None = None,
               replies: Sequence[str] | None = None) -> JudgeWork:
    """The shipped judge's work for ``n_pairs`` new pairs whose rows are (``contexts``, ``replies``) (both systems'
    replies; None: count every pair as unread): how many pairs' worth of them MME-CRS (for the sub-metrics the
    judge's mix weighs) and the shared SmolLM2 reading have not read in this process, half the unread replies
    rounded up; whether the judge's models are loaded."""
    from core.judges.smollm_reader import lm_features
    loaded = lm_features.cache_info().currsize > 0
    if contexts is None or replies is None:
        return JudgeWork(n_pairs, n_pairs, None, loaded)
    return JudgeWork(n_pairs, (_mme_unread(contexts, replies) + 1) // 2, _reading_unread(contexts, replies), loaded)


def _mme_unread(contexts: Sequence[Sequence[str]], replies: Sequence[str]) -> int:
    from core.judges.pairwise import CHECKPOINT
    from core.metrics.mme import scorer
    from core.models import checkpoints
    try:
        weights = checkpoints.load_manifest(CHECKPOINT).get("lm", {}).get("mix", {}).get("mme_weights") or {}
    except checkpoints.CheckpointError:  # no judge checkpoint: running it fails and says so; nothing to estimate
        return 0
    subs = [k for k, w in weights.items() if w > 0]
    return scorer().unread(contexts, replies, subs=subs) if subs else 0


def _reading_unread(contexts: Sequence[Sequence[str]], replies: Sequence[str]) -> int | None:
    from core.models.smollm_reading import chat_reading
    if chat_reading.cache_info().currsize == 0:  # not loaded: MME's scoring or the judge loads it
        return None
    return (chat_reading().unread(contexts, replies) + 1) // 2


def record_judging(work: JudgeWork, seconds: float) -> None:
    """A run of the shipped judge that did ``work`` (as :func:`judge_work` said before it) in ``seconds``
    (``core.engine.judge_pairs`` calls it). A run that also loaded the models would overstate the pace: only runs
    with the models loaded teach it."""
    if work.loaded and work.pairs > 0:
        with _LOCK:
            read = work.pairs if work.read_pairs is None else min(work.pairs, work.read_pairs)
            judge_time().record(work.pairs, seconds, mme_pairs=min(work.pairs, work.mme_pairs), read_pairs=read)


@dataclass
class WorkEstimate:
    """What a comparison still has to compute and about how long it should take (``core.engine.estimate_work``):
    per metric, the distinct rows the score cache cannot give back (``rows``) and their seconds
    (``metric_seconds``); the judge's pairs still to judge and their seconds (None: no pace is known yet for that
    judge, such as an endpoint's)."""

    rows: dict[str, int] = field(default_factory=dict)
    metric_seconds: dict[str, float] = field(default_factory=dict)
    judge: str | None = None
    judge_pairs: int = 0
    judge_seconds: float | None = 0.0
    pace_unkept: bool = False  # no judge pace can be known: the score cache, where it is kept, is off
    first_read_seconds: float = 0.0  # SmolLM2's GGUF file read once for this cache folder (smollm_first_read_seconds)

    @property
    def seconds(self) -> float:
        """The metrics' seconds, the judge's (0 where its pace is unknown) and SmolLM2's first read."""
        return sum(self.metric_seconds.values()) + (self.judge_seconds or 0.0) + self.first_read_seconds

    @property
    def scoring_seconds(self) -> float:
        return sum(self.metric_seconds.values())

    def sentence(self) -> str:
        """'about 3 min for this run: 120 rows to score with ubleu and mme; 60 pairs to judge' (what a command says
        before it starts; a judge whose pace is not known yet is named and left out of the time); '' when nothing is
        left to compute."""
        todo = {m: n for m, n in self.rows.items() if n}
        work = []
        for n in sorted(set(todo.values()), reverse=True):
            names = [m for m, k in todo.items() if k == n]
            work.append(f"{counted(n, 'row')} to score with {', '.join(names)}")
        if self.judge_pairs:
            judging = f"{counted(self.judge_pairs, 'pair')} to judge"
            if self.judge_seconds is None:
                why = "not kept while the score cache is off" if self.pace_unkept else "not known until it has run once here"
                judging += f" with {self.judge} (its pace is {why}; its bar gives the time left as it goes)"
            elif self.judge not in (None, JUDGE_TIMED):
                judging += f" with {self.judge} (at its last run's pace)"
            work.append(judging)
        if not work:
            return ""
        if self.first_read_seconds:
            work.append(f"SmolLM2's model file to read once for this cache folder (about {about(self.first_read_seconds)})")
        if self.judge_pairs and self.judge_seconds is None:
            head = f"about {about(self.seconds)} for this run and the {self.judge} judge's time" if todo else "this run"
        else:
            head = f"about {about(self.seconds)} for this run"
        return f"{head}: {'; '.join(work)}"

    def to_dict(self) -> dict[str, Any]:
        return {"rows": dict(self.rows), "metric_seconds": dict(self.metric_seconds), "judge": self.judge,
                "judge_pairs": self.judge_pairs, "judge_seconds": self.judge_seconds,
                "first_read_seconds": self.first_read_seconds, "seconds": self.seconds}


def about(seconds: float) -> str:
    """'40 s', '3 min', '1.5 h': a duration as an estimate reads."""
    if seconds < 90:
        return f"{max(seconds, 1):.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def time_so_far(elapsed: float, estimate: float) -> str:
    """A long run's overall clock beside its step's: ``" · 12 s of about 40 s"``; past the estimate
    ``" · 52 s (about 40 s was estimated)"``; "" for runs estimated under 3 s."""
    if estimate < 3:
        return ""
    if elapsed <= estimate:
        return f" · {elapsed:.0f} s of about {estimate:.0f} s"
    return f" · {elapsed:.0f} s (about {estimate:.0f} s was estimated)"
