"""What reading a file in place needs, whatever its format (``jsonl.py``, ``delimited.py``): the rows of a checked file
as a sequence parsed again block by block (:class:`RowsInPlace`), the checker that claims ids as hashes instead of
a dictionary (:class:`ScanChecker`), which files can be read twice (:func:`open_in_place`), the check's progress,
and what a finished check decides (:func:`checked_in_place`: read in place, raise its problems, or leave the file
to the whole loader)."""
from __future__ import annotations

import codecs
import hashlib
import os
import stat
from abc import abstractmethod
from array import array
from typing import Any, Callable, Iterator, Sequence

from core.data.decoding import BYTE_ORDER_MARKS, binary_format
from core.data.row_checks import RowChecker
from core.data.schema import DataError, Example, Problem

_CHUNK = 1 << 20
"""Bytes read at once while a file is checked."""
_PROGRESS_FROM = 16 << 20
"""A check shows progress (in MB) for files at least this large."""


def file_chunks(f: Any) -> Iterator[bytes]:
    """The bytes of the open binary file ``f``, a megabyte at a time."""
    while chunk := f.read(_CHUNK):
        yield chunk


class RowsInPlace(Sequence[Example]):
    """The rows of a file that :func:`open_examples` has checked, parsed again from the file when a slice is
    asked for (:meth:`read`), so a file of any size is scored in blocks with bounded memory. The rows are the
    ones :func:`load_file` gives, row for row; a file changed after the check is a :class:`DataError` when a
    block is read (size and modification time are compared)."""

    def __init__(self, path: str, count: int, size: int, mtime_ns: int):
        self.path = path
        self.count = count
        self.size = size
        self.mtime_ns = mtime_ns

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            return self.read(start, stop) if step == 1 else self.read(0, len(self))[index]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(f"row index {index} out of range for {len(self)} rows")
        return self.read(index, index + 1)[0]

    def __iter__(self) -> Iterator[Example]:
        for start in range(0, len(self), 1024):
            yield from self.read(start, min(len(self), start + 1024))

    @abstractmethod
    def read(self, start: int, stop: int) -> list[Example]:
        """Rows ``start`` to ``stop - 1`` (0-based), parsed from the file."""

    def changed(self) -> DataError:
        return DataError([Problem(self.path, None, None, "changed while it was being scored (it was checked "
                                                         "before scoring began); score it again")])

    def same_file(self, st: os.stat_result) -> bool:
        return (st.st_size, st.st_mtime_ns) == (self.size, self.mtime_ns)


class ScanChecker(RowChecker):
    """The row checks of :func:`load_file`, with ids claimed as 64-bit hashes (8 bytes a row) instead of a
    dictionary: a repeated hash sends the file to :func:`load_file`, which names the duplicate exactly."""

    def __init__(self, file: str):
        super().__init__(file)
        self.id_hashes = array("Q")
        self.lone_brace = False  # a malformed line that is only "{": records pretty-printed over several lines

    def claim_id(self, system: str, rid: str, row: int, system_key: str | None = None) -> None:
        key = f"{len(system)}:{system}{rid}".encode("utf-8", "surrogatepass")
        self.id_hashes.append(int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "little"))

    def repeated_id(self) -> bool:
        import numpy as np
        hashes = np.frombuffer(self.id_hashes, dtype=np.uint64)
        return len(np.unique(hashes)) != len(hashes)


def open_in_place(path: str) -> Any:
    """``path`` opened for reading in binary, if it can be read in place: a regular file (a pipe cannot be
    read twice) in UTF-8, with or without one byte-order mark. ``None`` for anything else (UTF-16/32, gzip,
    NUL bytes at the start, an unreadable file), which :func:`load_file` reads or refuses as usual."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None  # opening a pipe would start reading it
        f = open(path, "rb")
    except OSError:
        return None
    head = f.read(16)
    f.seek(0)
    if (head[:2] == b"\x1f\x8b" or b"\x00" in head[:4] or binary_format(path, head) is not None
            or head.startswith(codecs.BOM_UTF8 * 2)
            or any(head.startswith(bom) for bom, enc in BYTE_ORDER_MARKS if enc != "utf-8-sig")):
        f.close()
        return None
    return f


class CheckProgress:
    """A check's progress in MB read, shown for files of :data:`_PROGRESS_FROM` bytes or more."""

    def __init__(self, path: str, size: int, progress: Callable[[int, int, str], None] | None):
        self.progress = progress if size >= _PROGRESS_FROM else None
        self.name, self.total, self.shown = os.path.basename(path), size >> 20, -1

    def at(self, offset: int) -> None:
        if self.progress is not None and offset >> 20 != self.shown:
            self.shown = offset >> 20
            self.progress(min(self.shown, self.total), self.total, f"checking {self.name} (MB)")

    def done(self, rows: int) -> None:
        if self.progress is not None:
            self.progress(self.total, self.total, f"checked {rows} rows")


def checked_in_place(chk: ScanChecker, rows: int) -> tuple[bool, bool]:
    """Once every row is checked: (read in place?, was every row given to ``each``?). Raises the problems when
    the check words them as :func:`load_file` does; leaves to it a file with no good row (it may be one JSON
    document), a possibly repeated id (the check keeps hashes), or a line that is a lone "{" (records written
    over several lines, which it words as one problem)."""
    chk.add_systems_missing()
    if not rows or chk.repeated_id() or chk.lone_brace:
        return False, bool(rows) and not chk.problems
    if chk.problems:
        raise DataError(chk.problems)
    return True, True
