"""About how long scoring and judging take: the paces of an idle 2-core laptop CPU of this kind, then the paces
this process has measured; and a long run's clock against its estimate."""
from __future__ import annotations


def smollm_in_float32() -> bool:
    """Whether SmolLM2 runs in float32 on this machine (a CPU without bfloat16 kernels, most laptops:
    ``core.models.device.smollm_dtype``); the time estimates then use the paces measured on such a CPU."""
    from core.models.device import smollm_dtype
    return smollm_dtype() == "float32"


class JudgeTime:
    """About how long the judge takes for a number of pairs: both orders through the MiniLM cross-encoder, the
    SmolLM2 reading of both replies where this process has not read them (``core.models.smollm_reading``: the
    judge's reader and MME's context PMI share it), and the rest of MME-CRS for the replies MME has not scored
    (the judge's mix weighs MME-CRS); an idle 2-core laptop CPU's pace for this kind of CPU (docs/dashboard.md,
    "Time estimates"; ``benchmarks/estimates.py`` measures it), scaled by how much slower than that pace this
    process's last run over :attr:`MIN_PAIRS` or more pairs was (:meth:`record`), which tells a busy machine from an
    idle one. A run with nothing to read (SmolLM2 and MME hold every reply, as after scoring them) loads only the
    judge's own models and has almost no start: on 3 such pairs the dashboard used to say 13 s for what took 3."""

    LOAD_SECONDS = 8.0  # loading the judge's MiniLM and SmolLM2 (2026-11-25; MME's models, which the mix reads
    # since 2026-11-26, were not re-measured on that kind: ScoreTime gives MME 15 s there)
    START_SECONDS = 5.0  # a run that reads: new batch shapes, the last batch of each length group part empty
    # (MiniLM cross-encoder both orders and the mix, SmolLM2's reading of both replies, the rest of MME-CRS for both
    # replies), seconds a pair: 2 AVX-512 BF16 cores (SmolLM2 in bfloat16), and 2 AVX2 cores (SmolLM2 in float32)
    SECONDS_PER_PAIR, READ_SECONDS_PER_PAIR, MME_SECONDS_PER_PAIR = 0.035, 0.13, 0.09
    FLOAT32_PACE = (0.074, 0.65, 0.58)  # benchmarks/estimates.py, 2026-11-28: 60 fresh pairs took 82 s, not 20
    # 2 AVX2 cores, 2026-11-28: 3 fresh pairs took 23.8 s in a new process and 7.2 s with the models loaded
    FLOAT32_LOAD_SECONDS, FLOAT32_START_SECONDS = 16.6, 3.3
    # a run with nothing to read, both kinds (measured on 2 AVX2 cores after MME had scored the pairs, 2026-11-28:
    # loading the judge's own models 0.35 s; 3, 10, 20 and 40 pairs 0.25, 0.88, 1.6 and 3.2 s, a start of ~0.1 s)
    OWN_LOAD_SECONDS, QUICK_START_SECONDS = 0.5, 0.3
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
    """About how long scoring rows with a metric takes on an idle 2-core laptop CPU of this kind, plus loading its
    models the first time this process runs it; after a run of :attr:`MIN_ROWS` or more rows with the models
    loaded, that run's pace. Rows the score cache holds are the caller's to leave out. Paces: with SmolLM2 in
    bfloat16 (2 AVX-512 BF16 cores; README's growth table: 1,000 rows of mme took 89 s, of bert_ruber 9.9 s, of
    ubleu 10.8 s), and with SmolLM2 in float32 (2 AVX2 cores, ``benchmarks/estimates.py``)."""

    SECONDS_PER_ROW = {"bleu": 0.001, "ubleu": 0.008, "ubleu_paper": 0.01, "bert_ruber": 0.008, "ruber": 0.004,
                       "ruber_ubleu": 0.01, "adem": 0.008, "mme": 0.085, "mme_avg": 0.085}
    # benchmarks/estimates.py, 2026-11-28 (mme 0.619 s a row: the bfloat16 pace said 7 times too little)
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
        pace = self.pace.get(metric, self.per_row.get(metric, self.OTHER_PER_ROW))
        load = 0.0 if metric in self.loaded else self.LOAD_SECONDS.get(metric, self.OTHER_LOAD)
        return load + pace * n_rows

    def record(self, metric: str, n_rows: int, seconds: float) -> None:
        """A run of ``metric`` over ``n_rows`` that took ``seconds`` (its models are loaded from now on)."""
        if metric in self.loaded and n_rows >= self.MIN_ROWS:
            self.pace[metric] = seconds / n_rows
        self.loaded.add(metric)


def time_so_far(elapsed: float, estimate: float) -> str:
    """A long run's overall clock beside its step's: ``" · 12 s of about 40 s"``; past the estimate
    ``" · 52 s (about 40 s was estimated)"``; "" for runs estimated under 3 s."""
    if estimate < 3:
        return ""
    if elapsed <= estimate:
        return f" · {elapsed:.0f} s of about {estimate:.0f} s"
    return f" · {elapsed:.0f} s (about {estimate:.0f} s was estimated)"
