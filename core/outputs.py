"""Where results are written: checked before any work starts, and written whole or not at all.

- :func:`check_output` refuses, before anything is loaded or scored, an output path that is a folder, lies in
  a folder that does not exist or cannot be written, is a read-only file, or is one of the command's input
  files (``dialeval score IN --out IN`` would destroy the input).
- :func:`atomic_open` / :func:`atomic_path` write into a temporary file beside the target (same folder, so the
  same file system) and rename it over the target only once everything was written and flushed to disk. An
  error, Ctrl-C (SIGINT) or SIGTERM in between removes the temporary file: the previous output, if any, is
  left exactly as it was, and no shortened file that merely looks complete is ever left behind.
  Targets that are not regular files (``/dev/stdout``, a named pipe) are written directly.
- A write that fails (disk full, read-only file system, quota) raises :class:`OutputError` naming the file.
"""
from __future__ import annotations

import errno
import os
import secrets
import stat
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterable, Iterator

STDOUT = "-"


class OutputError(ValueError):
    """An output location cannot be used or written; the message names it and says why."""


def _is_special(path: Path) -> bool:
    """An existing target that is not a regular file (a device such as /dev/stdout, a pipe): written in place."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def check_output(path: str | os.PathLike | None, inputs: Iterable[str | os.PathLike | None] = (),
                 flag: str = "--out") -> None:
    """Raise :class:`OutputError` unless ``path`` can receive a new file without harming any of ``inputs``.

    ``None`` and ``-`` (standard output) are always fine. A read-only target (no write permission bit for
    anyone) is refused even for root: someone marked it so it would not be overwritten."""
    if path is None or str(path) == STDOUT:
        return
    if str(path).strip() == "":
        raise OutputError(f"{flag}: the output path is empty")
    target = Path(path)
    for inp in inputs:
        if inp is not None and str(inp) != STDOUT and _same_file(target, Path(inp)):
            raise OutputError(f"{flag} {path} is the input file {inp}: writing there would destroy the input; "
                              "choose another output name")
    if target.is_dir():
        raise OutputError(f"{flag} {path} is a folder; give a file name")
    if target.exists() and not _is_special(target):
        mode = target.stat().st_mode
        if not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or not os.access(target, os.W_OK):
            raise OutputError(f"{flag} {path} is read-only; remove it or choose another output name")
    if _is_special(target):
        if not os.access(target, os.W_OK):
            raise OutputError(f"{flag} {path} cannot be written (permission denied)")
        return
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.exists():
        raise OutputError(f"{flag} {path}: the folder {folder} does not exist")
    if not folder.is_dir():
        raise OutputError(f"{flag} {path}: {folder} is not a folder")
    mode = folder.stat().st_mode
    if not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or not os.access(folder, os.W_OK | os.X_OK):
        raise OutputError(f"{flag} {path}: the folder {folder} is read-only")


def _about_another_file(e: OSError, *ours: Path) -> bool:
    """Whether ``e`` names a file other than ``ours`` (an error of the work done while the output was open);
    an error without a file name (a write that found the disk full) is the output's."""
    if e.filename is None:
        return False
    named = Path(os.fsdecode(e.filename)).absolute()
    return all(named != p.absolute() for p in ours)


def _write_failed(path: str | os.PathLike, e: OSError) -> OutputError:
    why = {errno.ENOSPC: "no space left on the device", errno.EROFS: "the file system is read-only",
           errno.EDQUOT: "disk quota exceeded", errno.EACCES: "permission denied",
           errno.EPERM: "permission denied"}.get(e.errno or 0, e.strerror or str(e))
    return OutputError(f"cannot write {path}: {why}; nothing was written (a previous file there is unchanged)")


_interrupted = False


def note_interrupt() -> None:
    """Record that the user interrupted the run (the CLI's SIGINT handler calls this before raising
    KeyboardInterrupt). From then on no output is renamed into place, even if the KeyboardInterrupt itself was
    swallowed on its way up (Python only prints an exception raised inside a finalizer)."""
    global _interrupted
    _interrupted = True


def was_interrupted() -> bool:
    return _interrupted


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """A temporary path beside ``path`` for a writer that takes a file name (safetensors, numpy, faiss); it is
    renamed to ``path`` when the block ends normally and removed when it does not."""
    target = Path(path)
    tmp = target.with_name(f".{target.name}.{os.getpid()}-{secrets.token_hex(4)}.part")
    try:
        yield tmp
        if _interrupted:
            raise KeyboardInterrupt
        _settle(tmp, target)
    except OSError as e:
        _remove(tmp)
        if _about_another_file(e, tmp, target):
            raise  # e.g. the cache folder failed while the rows were scored: not this output's fault
        raise _write_failed(path, e) from None
    except BaseException:
        _remove(tmp)
        raise


@contextmanager
def atomic_open(path: str | os.PathLike, encoding: str = "utf-8") -> Iterator[IO[str]]:
    """A text file to write ``path`` through: a temporary file beside it, flushed, synced and renamed over
    ``path`` only when the block ends normally; removed (and ``path`` untouched) on any error, SIGINT or
    SIGTERM. A target that is not a regular file (``/dev/stdout``, a pipe) is written directly."""
    target = Path(path)
    if _is_special(target):
        try:
            with open(target, "w", encoding=encoding, newline="\n") as f:
                yield f
        except OSError as e:
            if _about_another_file(e, target):
                raise
            raise _write_failed(path, e) from None
        return
    with atomic_path(target) as tmp, open(tmp, "x", encoding=encoding, newline="\n") as f:
        yield f  # "x": a new file, created as open() creates any (0o666 minus the umask)
        f.flush()
        os.fsync(f.fileno())


def write_text(path: str | os.PathLike, text: str) -> None:
    """``text`` into ``path`` atomically (:func:`atomic_open`)."""
    with atomic_open(path) as f:
        f.write(text)


def write_json_gz(path: str | os.PathLike, record: dict) -> None:
    """``record`` as one line of JSON (keys sorted, no spaces), gzip-compressed without a timestamp, atomically:
    the same bytes from run to run (the shipped checkpoints' ``*.json.gz`` made by ``scripts/``)."""
    import gzip
    import json
    text = json.dumps(record, ensure_ascii=False, sort_keys=True, separators=(",", ":")) + "\n"
    with atomic_path(path) as tmp:
        tmp.write_bytes(gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0))


def _settle(tmp: Path, target: Path) -> None:
    """Give ``tmp`` the permissions of the file it replaces (a new file: those ``open()`` gives, 0o666 minus the
    umask, whatever the writer used: safetensors wrote 0o600), then rename it over ``target``."""
    try:
        mode = stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    if tmp.is_file():
        os.chmod(tmp, mode)
    os.replace(tmp, target)


def _umask() -> int:
    """The process's umask: from ``/proc`` where there is one (reading it with ``os.umask`` sets it for a moment,
    which another thread creating a file could see), else set and restored at once."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _remove(tmp: Path) -> None:
    try:
        tmp.unlink()
    except OSError:
        pass
