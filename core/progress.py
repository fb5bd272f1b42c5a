"""The one progress type and the one command-line progress bar.

Long work reports ``progress(done, total, description)``; ``None`` means silent. The engine, the metrics,
the judge and the trainers all speak this type; the CLI draws it with :class:`ProgressBar` (counts, rate and
time left on stderr) and the dashboard with a Streamlit bar.
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
import math
import os
import sys
import threading
import time
from typing import Callable, Iterator, TextIO

Progress = Callable[[int, int, str], None]
"""progress(done, total, description): called as work advances; ``None`` means silent."""


def tick(progress: Progress | None, done: int, total: int, desc: str) -> None:
    if progress is not None:
        progress(done, total, desc)


def within(progress: Progress | None, index: int, parts: int) -> Progress | None:
    """Phase ``index`` (0-based) of a job made of ``parts`` phases of equal size: a phase's ``(done, total)``
    is reported as ``(index * total + done, parts * total)``, so one bar runs once over the whole job."""
    if progress is None:
        return None

    def inner(done: int, total: int, desc: str) -> None:
        progress(index * total + done, parts * total, desc)
    return inner


def share_of(progress: Progress | None, start: float, end: float, size: int, label: str = "") -> Progress | None:
    """A phase that is the ``[start, end)`` share of a job counted in ``size`` units (the judge's pairs, say),
    whatever unit the phase counts in: its ``(done, total)`` is reported as ``(floor(size * (start + (end -
    start) * done / total)), size)``, so the bar keeps one unit and one total from the first phase to the last
    (where :func:`within` would show each phase's own count). Only the last phase's end reports ``size``: a bar
    that reached its total before the job ended drew it again on a new line (3 pairs: 0.88 x 3 rounds to 3).
    ``label`` is put before each description that lacks it ('judge: '), so a phase that reports in another part's
    words (the judge's MME-CRS scores, 'MME fluency') is not read as that part running again."""
    if progress is None:
        return None

    def inner(done: int, total: int, desc: str) -> None:
        finished = end >= 1.0 and done >= total
        at = math.floor(size * (start + (end - start) * min(done, total) / max(total, 1)))
        progress(size if finished else min(at, max(size - 1, 0)), size,
                 desc if desc.startswith(label) else label + desc)
    return inner


class ProgressBar:
    """A progress bar on stderr: description, ``done/total``, rate and time left (from :attr:`SURE_AFTER` seconds
    into a phase), redrawn at most every 0.2 s. One line per phase: a new total, or a count that goes back, starts
    a new line (the description may change within a phase, e.g. to show a running loss). On a stream that is not a
    terminal (a CI log, a file: ``tty`` False; by default whether the stream says it is one) the bar is not redrawn
    in place: each draw is a line of its own, the phase's first, one at most every :attr:`LOG_EVERY` seconds, and
    its last."""

    LOG_EVERY = 10.0  # seconds between the lines of one phase where the bar cannot be redrawn in place
    SURE_AFTER = 2.0  # seconds into a phase before its time left is said: its first items' pace says little

    def __init__(self, stream: TextIO | None = None, prefix: str = "", tty: bool | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.stream = stream or sys.stderr
        self.prefix = prefix
        self.clock = clock  # seconds, for the rate and the redraws (a test gives its own)
        if tty is None:
            try:
                tty = bool(self.stream.isatty())
            except (AttributeError, ValueError):  # no such method, or a closed stream
                tty = False
        self.tty = tty
        self._total: int | None = None
        self._done = 0
        self._t0 = 0.0
        self._last: float | None = None  # when the phase's bar was last drawn (None: not yet)
        self._ended = True

    def __call__(self, done: int, total: int, desc: str) -> None:
        global _open_bar
        now = self.clock()
        if self._ended or total != self._total or done < self._done:
            self._end_line()
            self._total, self._t0, self._last, self._ended = total, now, None, False
            _open_bar = self
        self._done = done
        every = 0.2 if self.tty else self.LOG_EVERY
        if done < total and self._last is not None and now - self._last < every:
            return
        self._last = now
        width = 24
        filled = int(width * done / total) if total else width
        elapsed = now - self._t0
        rate = done / elapsed if elapsed > 0 and done else 0.0
        left = (total - done) / rate if rate > 0 and elapsed >= self.SURE_AFTER else None
        eta = "" if left is None or done >= total else f", {_duration(left)} left"
        line = (f"{self.prefix}{desc[:48]:<48} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}"
                f" ({_duration(elapsed)}{eta})")
        self.stream.write("\r" + line if self.tty else line + "\n")
        self.stream.flush()
        if done >= total:
            self._end_line()

    def _end_line(self) -> None:
        if not self._ended:
            if self.tty:  # (elsewhere every line was ended as it was written)
                self.stream.write("\n")
                self.stream.flush()
            self._ended = True


_open_bar: ProgressBar | None = None  # the bar whose line is drawn but not yet ended


def end_progress_line() -> None:
    """End the line of a bar cut short (an error, Ctrl-C), so that the message after it starts a line."""
    global _open_bar
    if _open_bar is not None:
        _open_bar._end_line()
        _open_bar = None


def silence_library_progress() -> None:
    """``--quiet`` for the model libraries too: no tqdm bar (transformers' "Loading weights", the GGUF
    de-quantization), no Hugging Face hub bar, no transformers advisory logging. Set before they are imported
    (the CLI does it first thing); libraries already imported are switched off where they allow it."""
    os.environ["TQDM_DISABLE"] = "1"
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    os.environ["TRANSFORMERS_VERBOSITY"] = "error"
    os.environ["TRANSFORMERS_NO_ADVISORY_WARNINGS"] = "1"
    if "transformers" in sys.modules:
        from transformers.utils import logging as transformers_logging
        transformers_logging.disable_progress_bar()
        transformers_logging.set_verbosity_error()
    if "huggingface_hub" in sys.modules:
        from huggingface_hub.utils import disable_progress_bars
        disable_progress_bars()


_library_bars: contextvars.ContextVar[bool] = contextvars.ContextVar("dialeval_library_bars", default=True)


@contextlib.contextmanager
def library_bars(shown: bool) -> Iterator[None]:
    """Whether the model libraries draw their own bars ("Loading weights", the GGUF de-quantization) for the
    models loaded inside (:func:`model_loading`). The Python API turns them off when it is called without
    progress, as ``--quiet`` does for the command line (:func:`silence_library_progress`)."""
    token = _library_bars.set(shown)
    try:
        yield
    finally:
        _library_bars.reset(token)


class _SilentLoads:
    """The model libraries' bars switched off while one or more silent loads run (:func:`model_loading`): the
    first load in saves their state and switches them off, the last one out restores it. A lock keeps loads in
    several threads (the dashboard's sessions) from restoring each other's state out of order."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.depth = 0
        self.saved: tuple | None = None

    def enter(self) -> None:
        with self.lock:
            if self.depth == 0:
                self.saved = self._switch_off()  # may raise: then nothing was switched and nothing is counted
            self.depth += 1

    @staticmethod
    def _switch_off() -> tuple:
        """The libraries' bars off; returns what :meth:`leave` restores."""
        from huggingface_hub.utils import are_progress_bars_disabled
        from transformers.utils import logging as transformers_logging
        try:  # the GGUF reader draws with tqdm itself, which reads TQDM_DISABLE only when it is imported
            import transformers.modeling_gguf_pytorch_utils as gguf_reader
        except ImportError:
            gguf_reader = None
        gguf_bar = getattr(gguf_reader, "tqdm", None)
        saved = (transformers_logging.is_progress_bar_enabled(), not are_progress_bars_disabled(), gguf_reader,
                 gguf_bar)
        transformers_logging.disable_progress_bar()
        if gguf_bar is not None:
            gguf_reader.tqdm = functools.partial(gguf_bar, disable=True)
        return saved

    def leave(self) -> None:
        with self.lock:
            self.depth -= 1
            if self.depth > 0 or self.saved is None:
                return
            from huggingface_hub.utils import disable_progress_bars, enable_progress_bars
            from transformers.utils import logging as transformers_logging
            bars_were_on, hub_bars_were_on, gguf_reader, gguf_bar = self.saved
            self.saved = None
            if gguf_bar is not None:
                gguf_reader.tqdm = gguf_bar
            if bars_were_on:
                transformers_logging.enable_progress_bar()
            (enable_progress_bars if hub_bars_were_on else disable_progress_bars)()


_SILENT_LOADS = _SilentLoads()


@contextlib.contextmanager
def model_loading() -> Iterator[None]:
    """Around a model's load: inside ``library_bars(False)``, transformers' and the Hugging Face hub's bars and
    the GGUF reader's are off for the load and restored after the last such load ends (a load in another thread
    meanwhile draws none either); elsewhere nothing changes."""
    if _library_bars.get():
        yield
        return
    _SILENT_LOADS.enter()
    try:
        yield
    finally:
        _SILENT_LOADS.leave()


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def progress_bar(quiet: bool = False, prefix: str = "") -> Progress | None:
    """The CLI's progress: a :class:`ProgressBar`, or ``None`` with ``quiet``."""
    return None if quiet else ProgressBar(prefix=prefix)
