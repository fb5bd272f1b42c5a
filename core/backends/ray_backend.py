"""``--backend ray``: blocks scored by a pool of Ray actors, one per worker, each building the metrics once
(models load on its first block and stay loaded); results come back to the driver, which writes them in input
order (``core.backends.stream_scores``).

- Without ``--address`` a Ray instance is started on this machine with ``num_cpus`` = the number of workers
  (default: the CPU count), no dashboard, and shut down at the end. With ``--address`` (``auto``,
  ``HOST:6379``, ``ray://HOST:10001``) the run joins that cluster and leaves it running; every node needs
  dialeval and the model packages installed (``pip install "dialeval[ray]"``).
- Torch threads per worker: ``DIALEVAL_THREADS`` when set in the driver's environment, else
  ``max(1, cores // workers)`` on a local instance (two workers on two cores do not oversubscribe) and 1 on a
  cluster. On a cluster each actor reserves as many CPUs as it runs threads. A job with a metric whose passes
  run on a fixed thread count (``Metric.pass_threads``: SmolLM2's 2 for MME) gets by default one worker per
  that many cores on a local instance, and each actor reserves at least that many CPUs on a cluster; an
  explicit ``--workers`` that oversubscribes the machine is run as asked, with a note. The count does not change a score
  (``core.models.blas``; SmolLM2 always runs on ``SMOLLM_THREADS``), so the output is byte-identical to a
  local run's on the same kind of CPU.
- The driver's ``DIALEVAL_*`` settings and ``XDG_CACHE_HOME`` travel to every worker (``--no-cache``, the cache
  folder and its cap, one's own checkpoints), so an existing cluster scores with the driver's settings, not
  its head's.
- At most ``2 * workers`` blocks are scored ahead of the lowest unfinished one, so finished blocks that wait
  for an earlier one to be written stay bounded.
- Ray is imported only when this backend runs (``import core`` and ``--backend local`` never import it); when
  it is missing the command exits 2 with the line to install it. An exception in a worker is raised in the
  driver as itself (a missing model package still exits 2 with its own message).
"""
from __future__ import annotations

import logging
import os
import signal
import socket
import threading
from contextlib import contextmanager
from typing import Any, Iterator, Sequence

from core.backends import (DEFAULT_BLOCK_SIZE, Backend, BackendError, BlockResult, ScoreJob, Within, even_block_size,
                           register_backend, score_block)
from core.cache import damage_notes, dropped_entries, overflow_message
from core.data import Example
from core.settings import threads

MIN_RAY = (2, 9)
INSTALL = 'pip install "ray>=2.9" (or pip install "dialeval[ray]")'
AHEAD = 2
"""Blocks scored ahead of the lowest unfinished one, per worker."""


def import_ray() -> Any:
    """The ``ray`` module, or :class:`BackendError` with the line that installs it."""
    try:
        import ray
    except ImportError:
        raise BackendError(f"--backend ray needs Ray, which is not installed: {INSTALL}") from None
    try:
        version = tuple(int(p) for p in ray.__version__.split(".")[:2])
    except ValueError:
        version = MIN_RAY
    if version < MIN_RAY:
        raise BackendError(f"--backend ray needs Ray 2.9 or newer, found {ray.__version__}: {INSTALL}")
    return ray


@contextmanager
def signals_raised() -> Iterator[None]:
    """Ctrl-C and SIGTERM inside Ray's compiled calls come out as themselves: a signal handler that raises
    while ``ray.wait`` runs in C leaves a ``SystemError`` ("returned a result with an exception set") whose
    cause is the ``KeyboardInterrupt`` or the CLI's ``Terminated``; that one is raised instead."""
    try:
        yield
    except SystemError as e:
        inner = e.__cause__ or e.__context__
        if isinstance(inner, BaseException) and not isinstance(inner, Exception):
            raise inner from None
        raise


def check_reachable(address: str, timeout: float = 5.0) -> None:
    """Fail at once (:class:`BackendError`) when ``HOST:PORT`` or ``ray://HOST:PORT`` does not accept a
    connection: Ray itself retries an unreachable cluster for many minutes. ``auto`` and ``local`` are left
    to Ray (it says at once when no cluster runs on this machine)."""
    rest = address[len("ray://"):] if address.startswith("ray://") else address
    host, _, port = rest.rpartition(":")
    if not host or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as e:
        why = e.strerror or type(e).__name__ if not isinstance(e, socket.timeout) else f"no answer in {timeout:g} s"
        raise BackendError(f"--address {address}: cannot reach a Ray cluster there ({why}); start one with "
                           "`ray start --head` on that machine, or check the host, port and firewall") from None



def worker_environment(threads: str | None) -> dict[str, str]:
    """The environment every worker runs with: the driver's ``DIALEVAL_*`` settings and ``XDG_CACHE_HOME``
    (``--no-cache``, the cache folder and cap, one's own checkpoints: on an existing cluster the workers had the
    head's environment and silently used other checkpoints), its thread count, and the model libraries'
    progress bars off."""
    env = {k: v for k, v in os.environ.items() if k.startswith("DIALEVAL_") or k == "XDG_CACHE_HOME"}
    return {**env, "DIALEVAL_THREADS": threads or "1", "TQDM_DISABLE": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1",
            "TRANSFORMERS_VERBOSITY": "error", "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1"}

class BlockScorer:
    """One Ray worker (an actor): scores the blocks it is sent with one job. The metrics are built on the
    first block and kept by ``core.scoring.get_metric``, so each worker loads the models once."""

    def __init__(self, job: ScoreJob):
        self.job = job

    def score(self, index: int, examples: Sequence[Example]) -> tuple[int, BlockResult]:
        """Block ``index`` scored, with what this worker's score cache dropped under its size cap meanwhile."""
        before, _ = dropped_entries()
        result = score_block(examples, self.job)
        after, cap = dropped_entries()
        result.cache_dropped, result.cache_cap_bytes = after - before, cap
        result.cache_damage = damage_notes()
        return index, result


@register_backend("ray")
class RayBackend(Backend):
    """A pool of Ray actors on a local Ray instance (``--workers``) or an existing cluster (``--address``)."""

    description = ('a Ray cluster: started here with --workers N, or joined with --address (pip install '
                   '"dialeval[ray]")')
    takes_workers = True

    def __init__(self, workers: int | None = None, address: str | None = None, pass_threads: int | None = None):
        super().__init__(workers, address, pass_threads)
        self.ray: Any = None
        self.started_here = False  # this run started the Ray instance (and shuts it down)
        self.connected = False  # this run called ray.init (and disconnects)
        self.actors: list[Any] = []
        self.threads: str | None = None
        self.cpus_per_worker = 1
        self.cache_dropped, self.cache_cap_bytes = 0, 0  # summed over the blocks' reports
        self.cache_damage: set[str] = set()  # the workers' damaged-cache notes, each once

    def check(self) -> None:
        import_ray()

    # ------------------------------------------------------------------------------------------------
    # start and stop

    def __enter__(self) -> "RayBackend":
        ray = self.ray = import_ray()
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        main = threading.current_thread() is threading.main_thread()
        sigterm = signal.getsignal(signal.SIGTERM) if main else None
        if self.address and not ray.is_initialized():
            check_reachable(self.address)
        try:
            if not ray.is_initialized():
                kwargs: dict[str, Any] = {"logging_level": logging.ERROR, "log_to_driver": False}
                if self.address:
                    with signals_raised():
                        ray.init(address=self.address, **kwargs)
                else:
                    with signals_raised():
                        # "local": a private instance even where a cluster already runs on this machine (ray.init
                        # would join that one, and refuses num_cpus for it)
                        ray.init(address="local", num_cpus=self.worker_count(), include_dashboard=False, **kwargs)
                    self.started_here = True
                self.connected = True
        except (ConnectionError, RuntimeError, ValueError) as e:
            where = f"the Ray cluster at {self.address}" if self.address else "a local Ray instance"
            raise BackendError(f"cannot start or reach {where}: {str(e).splitlines()[0] if str(e) else e}") from None
        finally:
            if sigterm is not None:  # ray.init installs its own SIGTERM handler; keep the CLI's (exit 143)
                signal.signal(signal.SIGTERM, sigterm)
        try:
            self.threads, self.cpus_per_worker = self.worker_threads()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc) -> None:
        ray = self.ray
        if ray is None:
            return
        for actor in self.actors:
            try:
                ray.kill(actor)
            except Exception:  # noqa: BLE001 - a dead actor or a lost connection: nothing left to stop
                pass
        self.actors = []
        if self.connected:
            main = threading.current_thread() is threading.main_thread()
            sigterm = signal.getsignal(signal.SIGTERM) if main else None
            ray.shutdown()
            if sigterm is not None:
                signal.signal(signal.SIGTERM, sigterm)
            self.connected = False

    # ------------------------------------------------------------------------------------------------
    # sizes

    def worker_count(self) -> int:
        """``--workers``; by default the CPUs of this machine (local instance) or of the cluster, divided by
        the CPUs each worker needs: one, or the job's fixed pass threads (2 with MME: two workers each running
        SmolLM2 on 2 threads on a 2-core machine made MME 3.4x slower than one worker, benchmarks/GROWTH.md)."""
        if self.workers:
            return self.workers
        if self.ray is not None and self.ray.is_initialized() and not self.started_here:
            cpus = int(self.ray.cluster_resources().get("CPU", 1))
            return max(1, cpus // self.cpus_per_worker)
        return max(1, (os.cpu_count() or 1) // (self.pass_threads or 1))

    def worker_threads(self) -> tuple[str, int]:
        """(``DIALEVAL_THREADS`` for each worker, CPUs each worker reserves on a cluster: at least the job's
        fixed pass threads)."""
        fixed = self.pass_threads or 1
        raw = os.environ.get("DIALEVAL_THREADS", "").strip()
        if raw:
            threads()  # validated here (SettingError, exit 2); "0" stays "every core of the worker's node"
            return raw, 1 if self.started_here else max(fixed, int(raw))
        if self.started_here:
            return str(max(1, (os.cpu_count() or 1) // self.worker_count())), 1
        return str(fixed), fixed

    def oversubscribed(self) -> bool:
        """True when a local instance runs more fixed-thread passes at once than this machine has cores."""
        return bool(self.started_here and self.pass_threads
                    and self.worker_count() * self.pass_threads > (os.cpu_count() or 1))

    def block_size(self, rows: int, requested: int | None) -> int:
        """``--block-size``, else the fewest blocks of at most 2,048 rows, their count a multiple of the
        workers (every worker gets a block, and they finish together), of nearly equal size."""
        return requested or even_block_size(rows, DEFAULT_BLOCK_SIZE, self.worker_count())

    def describe(self) -> str:
        """One line for stderr: where the run goes, how many workers and how many torch threads each."""
        where = f"the Ray cluster at {self.address}" if self.address else "a local Ray instance"
        line = f"scoring on {where}: {self.worker_count()} worker(s), DIALEVAL_THREADS={self.threads} each"
        if self.oversubscribed():
            cores = os.cpu_count() or 1
            line += (f"\nnote: SmolLM2's passes (MME) always run on {self.pass_threads} threads, so "
                     f"{self.worker_count()} workers on {cores} cores compete for them and run slower than "
                     f"{max(1, cores // self.pass_threads)} (the default without --workers)")
        return line

    # ------------------------------------------------------------------------------------------------

    def run(self, parts: Sequence[Sequence[Example]], job: ScoreJob,
            within: Within | None = None) -> Iterator[tuple[int, BlockResult]]:
        ray = self.ray
        if ray is None:
            raise BackendError("the Ray backend was not started (use it as a context manager)")
        n = len(parts)
        workers = min(self.worker_count(), max(1, n))
        env = worker_environment(self.threads)
        actor_class = ray.remote(BlockScorer)
        self.actors = [actor_class.options(num_cpus=self.cpus_per_worker, runtime_env={"env_vars": env}).remote(job)
                       for _ in range(workers)]
        free = list(self.actors)
        running: dict[Any, tuple[int, Any]] = {}  # object ref -> (block index, actor)
        next_block = 0
        window = AHEAD * workers
        while next_block < n or running:
            lowest = min([i for i, _ in running.values()] + [next_block])
            while free and next_block < n and next_block < lowest + window:
                actor = free.pop()
                running[actor.score.remote(next_block, list(parts[next_block]))] = (next_block, actor)
                next_block += 1
            with signals_raised():
                ready, _ = ray.wait(list(running), num_returns=1)
            for ref in ready:
                index, actor = running.pop(ref)
                free.append(actor)
                index, result = self.fetch(ref, index)
                self.cache_dropped += result.cache_dropped
                self.cache_cap_bytes = max(self.cache_cap_bytes, result.cache_cap_bytes)
                self.cache_damage.update(result.cache_damage)
                yield index, result

    def notes(self) -> list[str]:
        """The workers' score-cache notes (a damaged cache they passed by, :func:`core.cache.overflow_message`), as a
        local run prints its own."""
        message = overflow_message(self.cache_dropped, self.cache_cap_bytes, " on the Ray workers")
        damaged = [n.replace("note: ", "note: on the Ray workers, ", 1) for n in sorted(self.cache_damage)]
        return [*damaged, *([message] if message else [])]

    def fetch(self, ref: Any, index: int) -> tuple[int, BlockResult]:
        """The result behind ``ref``; a worker's own exception is raised as itself, a lost worker as
        :class:`BackendError`."""
        ray = self.ray
        try:
            with signals_raised():
                return ray.get(ref)
        except ray.exceptions.RayTaskError as e:
            cause = getattr(e, "cause", None)
            if isinstance(cause, Exception):
                raise cause from None
            raise
        except ray.exceptions.RayError as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise BackendError(f"a Ray worker was lost while scoring block {index + 1} ({first}); "
                               "was it out of memory? Try fewer --workers or a smaller --block-size") from None
