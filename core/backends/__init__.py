"""Where ``dialeval score`` runs: a registry of backends that score an input block by block.

The input's rows are cut into blocks of consecutive rows (:func:`blocks`); a backend scores each block with
:func:`score_block` (``core.engine.score_examples`` and the JSON lines ``dialeval score`` writes) wherever it
runs them, and hands the finished blocks back in any order. :func:`stream_scores` puts them back in input
order and writes each block as soon as every earlier block is written, so what is held in memory for results
is a bounded number of blocks however large the input; the input's rows are sliced block by block too, so
rows read in place (``core.data.open_examples`` on JSON Lines and CSV) are parsed one block at a time.

No metric's per-row score depends on the other rows scored with it (fixed normalization constants,
fixed-shape batches: ``core.engine``), so the concatenated blocks are the same bytes as one whole-file run,
whatever the block size, whichever backend ran them and however many torch threads each process uses
(``DIALEVAL_THREADS``): float32 products run in MKL's thread-count-independent mode (``core.models.blas``; before
0.6.1, 1 thread against 2 moved bert_ruber by up to 3e-7 and υBLEU by up to 8e-5), and SmolLM2's bfloat16 passes
always run on ``core.models.encoders.SMOLLM_THREADS`` threads.

Adding a backend is one module here with a :class:`Backend` subclass decorated with
``@register_backend("name")``: ``local`` (this process) and ``ray`` (a Ray cluster, local or remote).
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Callable, ClassVar, Iterator, Sequence

from core import report
from core.data import Example
from core.engine import score_examples
from core.progress import Progress, tick
from core.registry import Registry
from core.scoring import Options

DEFAULT_BLOCK_SIZE = 2048
"""The most rows in a block unless ``--block-size`` says otherwise. The neural metrics pad their batches within
each call (fixed-shape batches, ``core.models.batching``), so every block pays some padding: measured on 1,200
rows with bert_ruber, blocks of 1,024 rows cost 10 % more time than one call, 300 rows 40 %, 64 rows 3.3 times."""


def even_block_size(rows: int, most: int, multiple_of: int = 1) -> int:
    """Rows per block to cut ``rows`` into the fewest blocks of at most ``most`` rows, their count rounded up to
    a multiple of ``multiple_of`` (so that many workers finish together), all of nearly the same size."""
    count = max(1, -(-rows // max(1, most)))
    count = -(-count // multiple_of) * multiple_of
    return max(1, -(-rows // count))


class BackendError(ValueError):
    """A backend cannot run here (a package missing, a cluster that cannot be reached, a worker that died);
    the message says why and what to do. The CLI prints it on one line and exits 2."""


@dataclass(frozen=True)
class ScoreJob:
    """What every block is scored with: metric names (registry), the run's options, and whether the output
    lines carry per-example details. Sent to remote workers, so it pickles (as :class:`Options` does)."""

    metrics: tuple[str, ...]
    options: Options
    with_details: bool = True


@dataclass
class BlockResult:
    """One scored block: its output lines (one JSON object per row, in the block's order, no line ends) and
    each metric's signature."""

    lines: list[str]
    signatures: dict[str, str]
    cache_dropped: int = 0  # score-cache entries the worker's size cap dropped while scoring this block
    cache_cap_bytes: int = 0  # the worker's cache cap
    cache_damage: list[str] = field(default_factory=list)  # the worker's notes of a damaged score cache it passed by


class Blocks(Sequence[list[Example]]):
    """``examples`` cut into consecutive blocks of ``size`` rows (the last may be shorter; none when empty).
    A block is sliced from ``examples`` when it is asked for, so rows read in place
    (``core.data.JsonlRows``, ``core.data.CsvRows``) are parsed one block at a time."""

    def __init__(self, examples: Sequence[Example], size: int):
        if size < 1:
            raise ValueError(f"the block size must be 1 or more, got {size}")
        self.examples = examples
        self.size = size

    def __len__(self) -> int:
        return -(-len(self.examples) // self.size)

    def rows(self, index: int) -> int:
        """How many rows block ``index`` holds, without reading it."""
        return min(self.size, len(self.examples) - index * self.size)

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(f"block {index} out of range for {len(self)} blocks")
        return list(self.examples[index * self.size:(index + 1) * self.size])


def blocks(examples: Sequence[Example], size: int) -> Blocks:
    """``examples`` cut into consecutive blocks of ``size`` rows (:class:`Blocks`)."""
    return Blocks(examples, size)


def score_block(examples: Sequence[Example], job: ScoreJob, progress: Progress | None = None) -> BlockResult:
    """The rows of one block scored with ``job``'s metrics and serialized exactly as ``dialeval score``
    writes them (``core.report.jsonl_line`` per row)."""
    table = score_examples(examples, list(job.metrics), job.options, progress=progress)
    records = table.to_records(with_details=job.with_details)
    lines = [report.jsonl_line(rec) for rec in records]
    return BlockResult(lines, table.signatures())


Within = Callable[[int], "Progress | None"]
"""``within(index)``: the progress to report the inside of block ``index`` to (a backend that scores in this
process can show which metric runs), or ``None``."""


class Backend(ABC):
    """Scores blocks somewhere. Used as a context manager: ``__enter__`` starts what it needs (a cluster
    connection, workers that load the models once) and ``__exit__`` stops it, on errors and Ctrl-C too."""

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    takes_workers: ClassVar[bool] = False
    """Whether it reads ``workers`` and ``address`` (``--workers``, ``--address``); one that does not refuses them,
    so a run never seems to spread over workers it does not start."""

    def __init__(self, workers: int | None = None, address: str | None = None, pass_threads: int | None = None):
        """``workers``, ``address``: how many workers to start, or the cluster to join (only where
        :attr:`takes_workers`); ``pass_threads``: the torch threads the job's metrics always run their passes on
        (``core.scoring.fixed_pass_threads``; SmolLM2's 2 for MME), so a backend can give each worker as many
        CPUs; ``None`` when every metric follows ``DIALEVAL_THREADS``."""
        if not self.takes_workers and (workers is not None or address is not None):
            takers = [n for n, cls in BACKENDS.items() if cls.takes_workers]
            raise BackendError(f"--workers and --address are for --backend {' or '.join(takers) or '(none here)'}; "
                               f"--backend {self.name} starts no workers (DIALEVAL_THREADS sets the torch threads "
                               "of what runs in this process)")
        self.workers = workers
        self.address = address
        self.pass_threads = pass_threads

    def check(self) -> None:
        """Raise :class:`BackendError` if this backend cannot run here; called before any input is read."""

    def describe(self) -> str | None:
        """A line for stderr saying where the run goes (``None``: nothing worth saying)."""
        return None

    def notes(self) -> list[str]:
        """Lines for stderr after the run about what happened where the blocks ran (e.g. a remote score cache
        that outgrew its cap); a backend scoring in this process has none (the CLI reports its cache)."""
        return []

    def block_size(self, rows: int, requested: int | None) -> int:
        """Rows per block for an input of ``rows`` rows: ``requested``, else blocks of nearly equal size, at
        most :data:`DEFAULT_BLOCK_SIZE` rows."""
        return requested or even_block_size(rows, DEFAULT_BLOCK_SIZE)

    @abstractmethod
    def run(self, parts: Sequence[Sequence[Example]], job: ScoreJob,
            within: Within | None = None) -> Iterator[tuple[int, BlockResult]]:
        """Score every block of ``parts``; yield ``(index, result)`` as each finishes, in any order. The
        caller consumes results as they come; a backend keeps at most a few blocks ahead of the lowest
        unfinished one, so results waiting to be written stay bounded."""

    def __enter__(self) -> "Backend":
        return self

    def __exit__(self, *exc) -> None:
        return None


BACKENDS: Registry[type[Backend]] = Registry("backend", "core.backends")
register_backend = BACKENDS.register
"""``@register_backend(name)`` on a :class:`Backend` subclass: ``dialeval score --backend NAME``."""
backend_class = BACKENDS.get
available_backends = BACKENDS.descriptions


def stream_scores(examples: Sequence[Example], job: ScoreJob, backend: Backend, write: Callable[[str], None],
                  block_size: int | None = None, progress: Progress | None = None) -> dict[str, str]:
    """Score ``examples`` block by block on ``backend`` and pass the output text to ``write`` in input order,
    one block at a time (each line ends with ``\\n``), as soon as every earlier block is written; blocks that
    finish early wait in a buffer. ``progress`` gets rows written / total with the blocks count after each block,
    and, from a backend that scores here, each stage of a block with its own count in between. Returns each
    metric's signature; every block must report the same ones (on a cluster, nodes with another dialeval
    version or other checkpoints are caught here, before their rows are written)."""
    parts = blocks(examples, backend.block_size(len(examples), block_size))
    total, n = len(examples), len(parts)
    waiting: dict[int, BlockResult] = {}
    state = {"next": 0, "rows": 0}
    signatures: dict[str, str] | None = None
    tick(progress, 0, total, f"blocks 0/{n}")

    def within(index: int) -> Progress | None:
        if progress is None:
            return None

        def inner(done: int, of: int, desc: str) -> None:
            # the stage's own count, so the bar shows its rate and time left (the rows written only move
            # when a block is done: with one block, not before the end)
            progress(done, of, f"block {index + 1}/{n}: {desc}" if n > 1 else desc)
        return inner

    for index, result in backend.run(parts, job, within):
        if len(result.lines) != parts.rows(index):
            raise BackendError(f"block {index + 1} came back with {len(result.lines)} rows for "
                               f"{parts.rows(index)}")
        if signatures is None:
            signatures = result.signatures
        elif result.signatures != signatures:
            other = next(m for m in {**signatures, **result.signatures}
                         if result.signatures.get(m) != signatures.get(m))
            raise BackendError(f"block {index + 1} was scored with another {other} ({result.signatures.get(other)}"
                               f" instead of {signatures.get(other)}): every worker needs the same dialeval "
                               "version and checkpoints")
        waiting[index] = result
        while state["next"] in waiting:
            done = waiting.pop(state["next"])
            write("".join(line + "\n" for line in done.lines))
            state["next"] += 1
            state["rows"] += len(done.lines)
            tick(progress, state["rows"], total, f"blocks {state['next']}/{n}")
    if state["next"] != n:
        raise BackendError(f"the backend returned {state['next']} of {n} blocks")
    return signatures or {}
