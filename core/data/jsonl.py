"""JSON Lines (``.jsonl``, ``.ndjson``): one JSON object a line. Every reading of the format is :func:`jsonl_rows`
over numbered lines: a whole text collected (:func:`load_jsonl`, :func:`jsonl_examples`), a file checked in place
line by line from its bytes (:func:`scan_jsonl`, keeping where each row starts), and a block of rows read again
(:class:`JsonlRows`), so a row is checked, and its problems worded, in one place."""
from __future__ import annotations

import codecs
import os
from array import array
from typing import Any, BinaryIO, Callable, Iterable, Iterator

from core.data.decoding import (byte_lines, cannot_read, not_utf8, objects_over_lines, parse_json, pretty_printed,
                                read_text, split_lines)
from core.data.in_place import CheckProgress, RowsInPlace, ScanChecker, checked_in_place, file_chunks, open_in_place
from core.data.row_checks import RereadChecker, RowChecker, default_system, example_from_record, finish_rows
from core.data.schema import DataError, Example, Problem

JSONL_SUFFIXES = (".jsonl", ".ndjson")


def json_lines(path: str, lines: Iterable[tuple[int, str]], problems: list[Problem]) -> Iterator[tuple[int, Any]]:
    """(1-based line number, parsed value) for each non-blank line of ``lines`` (``(number, text)`` pairs); a line
    that cannot be read (:func:`parse_json`) becomes a Problem."""
    for i, line in lines:
        line = line.lstrip("\ufeff")  # files concatenated with `cat` keep each one's byte-order mark
        if not line.strip():
            continue
        value, problem = parse_json(line, path, i)
        if problem is not None:
            problems.append(problem)
        else:
            yield i, value


def iter_json_lines(path: str, text: str, problems: list[Problem]) -> Iterable[tuple[int, Any]]:
    """(1-based line number, parsed value) for each non-blank line (lines end at ``\\n``, ``\\r\\n`` or ``\\r``
    only, :func:`split_lines`); a line that cannot be read (:func:`parse_json`) becomes a Problem."""
    yield from json_lines(path, enumerate(split_lines(text), start=1), problems)


def jsonl_rows(chk: RowChecker, lines: Iterable[tuple[int, str]], system: str) -> Iterator[Example]:
    """The examples of JSON Lines ``lines`` (``(1-based number, text)`` pairs), in order, rows naming no system
    given ``system``. A line that is not JSON, or a record that fails the row checks, is a problem added to
    ``chk`` and gives no example. The one reading of the format: whole, in place and read again."""
    for number, rec in json_lines(chk.file, lines, chk.problems):
        ex = example_from_record(chk, rec, number, chk.file, system)
        if ex:
            yield ex


def load_jsonl(path: str | os.PathLike, data: bytes | None = None, system: str | None = None) -> list[Example]:
    """Our JSONL: one object per line with ``context`` (list or "\\n"-joined string), ``response``,
    optional ``id``, ``system``, ``references``, ``scores`` {dimension: number}, ``dataset``."""
    return jsonl_examples(str(path), read_text(path, data), system)


def jsonl_examples(path: str, text: str, system: str | None = None) -> list[Example]:
    """:func:`jsonl_rows` of a whole text, collected; a text that is one JSON document, or records written over
    several lines each, is refused as such (one problem, not one a line)."""
    chk = RowChecker(path)
    out = list(jsonl_rows(chk, enumerate(split_lines(text), start=1), system or default_system(path)))
    if chk.problems and not out:
        whole, problem = parse_json(text, path, None)
        several = len(split_lines(text.strip())) > 1  # a one-line object is a JSON Lines file of one row; a list is not
        if problem is None and (isinstance(whole, list) or several and isinstance(whole, dict)):
            what = "one JSON object over several lines" if isinstance(whole, dict) else "one JSON list"
            raise DataError([Problem(path, None, None, f"holds {what}, not one object per line "
                                     "(JSON Lines); put each record on a line of its own"
                                     + (", or name the file .json" if isinstance(whole, list) else ""))])
    if chk.problems:
        bad = [p.row for p in chk.problems if p.row is not None and p.message.startswith("malformed JSON")]
        lines = split_lines(text)
        n = objects_over_lines("\n".join(lines[min(bad) - 1:])) if bad else 0
        if n:  # pretty-printed records (from the first bad line on): one problem that says so, not one per line
            chk.problems = [p for p in chk.problems if p.row is None or p.row < min(bad)]
            chk.problems.append(pretty_printed(path, n, min(bad) if out else None))
    return finish_rows(chk, out)


class JsonlRows(RowsInPlace):
    """A checked JSON Lines file held as each row's byte offset and line number (16 bytes a row): a slice
    seeks to its first row and parses its rows."""

    def __init__(self, path: str, system: str, offsets: array, lines: array, size: int, mtime_ns: int):
        super().__init__(path, len(offsets), size, mtime_ns)
        self.system = system
        self.offsets = offsets
        self.lines = lines

    def read(self, start: int, stop: int) -> list[Example]:
        """Rows ``start`` to ``stop - 1`` (0-based), parsed from the file."""
        if start >= stop:
            return []
        changed = self.changed()
        try:
            with open(self.path, "rb") as f:
                if not self.same_file(os.fstat(f.fileno())):
                    raise changed
                f.seek(self.offsets[start])
                end = self.offsets[stop] if stop < len(self) else self.size
                data = f.read(end - self.offsets[start])
        except OSError as e:
            raise cannot_read(self.path, e) from None
        chk = RereadChecker(self.path)
        lines = ((number, raw.decode("utf-8", errors="replace"))
                 for number, _, raw in byte_lines([data], self.lines[start], self.offsets[start]))
        out = list(jsonl_rows(chk, lines, self.system))
        if chk.problems or [ex.row for ex in out] != self.lines[start:stop].tolist():
            raise changed
        return out


class _FileLines:
    """The lines of a UTF-8 file as :func:`jsonl_rows` reads them (``(number, text)``), remembering where the last
    one given starts (``offset``) and whether a line was a lone "{" (``lone_brace``: records pretty-printed over
    several lines). An undecodable byte is :func:`not_utf8`'s error, or, after a byte-order mark, ends the lines
    (``deferred``): the whole loader decodes such a file as utf-8-sig, which counts offsets its own way."""

    def __init__(self, path: str, f: BinaryIO):
        self.path, self.f = path, f
        self.offset = 0
        self.lone_brace = False
        self.deferred = False

    def __iter__(self) -> Iterator[tuple[int, str]]:
        bom = False
        for number, offset, raw in byte_lines(file_chunks(self.f)):
            bom = bom or (number == 1 and raw.startswith(codecs.BOM_UTF8))
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                if bom:
                    self.deferred = True
                    return
                raise not_utf8(self.path, number, raw[e.start], offset + e.start) from None
            self.offset = offset
            self.lone_brace = self.lone_brace or text.lstrip("\ufeff").strip() == "{"
            yield number, text


def scan_jsonl(path: str, each: Callable[[Example], None] | None,
               progress: Callable[[int, int, str], None] | None) -> tuple[JsonlRows | None, bool]:
    """Check every row of a JSON Lines file in one pass (:func:`jsonl_rows` over its bytes), keeping only where
    each row starts. Returns ``(rows, True)``, or raises :func:`load_file`'s :class:`DataError` (its problems, in
    its order: an undecodable byte, else every row's problem). ``(None, True)``: every row was given to
    ``each`` but two may share an id; ``(None, False)``: :func:`load_file` must say (UTF-16/32, a pipe, no
    row at all, a byte-order mark before an undecodable byte, a problem beside a possibly repeated id)."""
    f = open_in_place(path)
    if f is None:
        return None, False
    with f:
        st = os.fstat(f.fileno())
        chk = ScanChecker(path)
        system = default_system(path)
        offsets, lines = array("q"), array("q")
        shown = CheckProgress(path, st.st_size, progress)
        source = _FileLines(path, f)
        for ex in jsonl_rows(chk, source, system):
            offsets.append(source.offset)
            lines.append(ex.row)
            if each is not None and not chk.problems:
                each(ex)
            shown.at(source.offset)
    if source.deferred:
        return None, False
    chk.lone_brace = source.lone_brace
    in_place, each_done = checked_in_place(chk, len(offsets))
    if not in_place:
        return None, each_done
    shown.done(len(offsets))
    return JsonlRows(path, system, offsets, lines, st.st_size, st.st_mtime_ns), True
