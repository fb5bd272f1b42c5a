"""Delimited tables with a header row (CSV, TSV, semicolons): which column is which (:class:`CsvMapping`), the
separator (:func:`csv_delimiter`), and :func:`csv_rows`, the one reading of the format, collected for a whole text
(:func:`load_csv`), run over a file checked in place (:func:`scan_csv`) and again block by block (:class:`CsvRows`)."""
from __future__ import annotations

import ast
import csv
import io
import json
import os
import re
import sys
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Iterator

from core.data.decoding import cannot_read, read_text, split_lines, without_gz
from core.data.in_place import CheckProgress, RowsInPlace, ScanChecker, checked_in_place, open_in_place
from core.data.row_checks import RECORD_FIELDS, RereadChecker, RowChecker, default_system, example_from_record, finish_rows
from core.data.schema import DataError, Example, Problem

CSV_SUFFIXES = (".csv", ".tsv")

STANDARD = "standard"
"""A :class:`CsvMapping` field left at this value uses the JSONL field's name(s) when the header has them."""


FIELD_ALIASES = {"reference": "references"}  # a field's other accepted name in a column mapping (--columns, columns=)


@dataclass
class CsvMapping:
    """Which CSV column holds which field.

    ``response`` and ``context`` must exist. ``id``, ``system``, ``references`` and ``dataset``: a column name
    that must exist, ``None`` for none, or ``STANDARD`` (the default) for the JSONL field names when the
    header has them (``references`` or ``reference``; ``id``; ``system``; ``dataset``). ``scores``: the
    human-score columns (dimension = column name); ``None`` (the default) takes every column named
    ``scores.DIMENSION``, as the JSONL field flattened. ``context_sep`` splits the context cell into turns
    (``"\\n"`` matches every line end); ``reference_sep`` splits several references in one cell;
    ``delimiter`` ``None`` means a tab for ``.tsv`` files, else a comma, unless the header line holds only
    tabs or only semicolons."""

    response: str = "response"
    context: str = "context"
    id: str | None = STANDARD
    system: str | None = STANDARD
    references: str | None = STANDARD
    scores: list[str] | None = None
    context_sep: str = "\n"
    reference_sep: str = "|||"
    dataset: str | None = STANDARD
    delimiter: str | None = None


_STANDARD_NAMES = {"id": ("id",), "system": ("system",), "references": ("references", "reference"),
                   "dataset": ("dataset",)}
SCORE_PREFIX = "scores."


LISTED_CELL_MAX = 1_000_000  # characters: a longer cell is read as text, never parsed as a list


def listed_cell(text: str | None) -> list[str] | None:
    """The strings of a cell that holds a list of them written out whole, as JSON (``["hi", "how are you?"]``) or
    as Python writes a list (``['hi', 'how are you?']``: pandas' ``to_csv`` of a list column); ``None`` for any
    other cell, which is read as text (split by the separator). Only a whole cell that parses as a non-empty list
    of strings counts, so a turn such as ``[laughs]`` stays text."""
    t = (text or "").strip()
    if len(t) < 4 or len(t) > LISTED_CELL_MAX or t[0] != "[" or t[-1] != "]":
        return None
    for parse in (json.loads, ast.literal_eval):
        try:
            value = parse(t)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            return value
        return None
    return None


def csv_delimiter(path: str, text: str) -> str:
    """The separator of a delimited file: a tab for ``.tsv``; else a comma, unless the header line holds no
    comma but tabs (or semicolons, as spreadsheets write in some locales)."""
    if without_gz(path).lower().endswith(".tsv"):
        return "\t"
    header = split_lines(text.lstrip())[0] if text.strip() else ""
    if "," not in header:
        for sep in ("\t", ";"):
            if sep in header:
                return sep
    return ","


def allow_long_cells() -> None:
    """Let the csv module read cells of any length (it refuses cells over 131,072 characters by default; a long
    dialogue context is valid input)."""
    csv.field_size_limit(min(sys.maxsize, 2 ** 31 - 1))


def load_csv(path: str | os.PathLike, data: bytes | None = None, mapping: CsvMapping | None = None) -> list[Example]:
    """A delimited file with a header row (:class:`CsvMapping` says which column is which)."""
    return csv_examples(str(path), read_text(path, data), mapping)


def csv_examples(path: str, text: str, mapping: CsvMapping | None = None) -> list[Example]:
    """:func:`csv_rows` of a whole text, collected."""
    m = mapping or CsvMapping()
    chk = RowChecker(path)
    out = list(csv_rows(chk, io.StringIO(text, newline=""), m.delimiter or csv_delimiter(path, text), m))
    return finish_rows(chk, out)


_DECIMAL_COMMA = re.compile(r"\s*[-+]?\d+,\d+\s*")


def _decimal_point(cell: str | None, delimiter: str) -> str | None:
    """A rating written with a decimal comma (``4,5``) in a semicolon-separated file (as spreadsheets write
    them where the comma is the decimal mark) read as ``4.5``; any other cell as it is."""
    if delimiter == ";" and cell is not None and _DECIMAL_COMMA.fullmatch(cell):
        return cell.replace(",", ".")
    return cell


def csv_rows(chk: RowChecker, lines: Iterable[str], delimiter: str, m: CsvMapping) -> Iterator[Example]:
    """The examples of a delimited text (``lines``: a text stream opened with ``newline=""``). A problem with
    the header raises :class:`DataError` at once; a row's problem is added to ``chk`` and the row skipped; a
    row the csv module cannot split ends the rows. The one reading of the format: whole (:func:`csv_examples`),
    in place (:func:`scan_csv`) and read again (:class:`CsvRows`)."""
    path = chk.file
    allow_long_cells()
    reader = csv.reader(lines, delimiter=delimiter, strict=True)
    try:
        header = [h.strip() for h in next(reader)]
    except csv.Error as e:
        raise DataError([Problem(path, 1, None, f"is not valid CSV ({e})")]) from None
    where = "column names are " + ", ".join(repr(h) for h in header)
    dup = [h for h, c in Counter(header).items() if c > 1 and h]  # unnamed columns (a spreadsheet's trailing ones) are read as none
    for h in dup:
        chk.add(1, h, "column name appears more than once in the header")

    def named_as(name: str) -> str | None:
        """The header's column ``name``, or its only column named so in another case ('Response')."""
        if name in header:
            return name
        other = [h for h in header if h.casefold() == name.casefold()]
        return other[0] if len(other) == 1 else None
    defaults = CsvMapping()
    for need in ("response", "context"):
        col = getattr(m, need)
        if col not in header and col == getattr(defaults, need) and named_as(col):
            m = replace(m, **{need: named_as(col)})  # the default name in another case: that column
        elif col not in header:
            chk.add(1, col, f"column for {need} not found; {where} (--columns {need}=NAME names it; the dashboard's "
                            "column mapping too)")
    columns: dict[str, str | None] = {}
    for fld, standard in _STANDARD_NAMES.items():
        chosen = getattr(m, fld)
        if chosen == STANDARD:
            found = [named_as(c) for c in standard if named_as(c)]
            if len(found) > 1:  # 'references' and 'reference': one would be read and the other ignored
                chk.add(1, found[1], f"the header has both {found[0]!r} and {found[1]!r} for the {fld}: rename or "
                                     f"delete one (or --columns {fld}=NAME chooses)")
            columns[fld] = found[0] if found else None
        elif chosen is not None and chosen not in header:
            chk.add(1, chosen, f"column for {fld} not found; {where}")
        else:
            columns[fld] = chosen
    if m.scores is None:
        score_cols = {c: c[len(SCORE_PREFIX):] for c in header if c.startswith(SCORE_PREFIX) and len(c) > len(SCORE_PREFIX)}
    else:
        # a chosen column named scores.DIM is the dimension DIM, as when it is found by default
        score_cols = {c: c[len(SCORE_PREFIX):] if c.startswith(SCORE_PREFIX) and len(c) > len(SCORE_PREFIX) else c
                      for c in m.scores}
        for col in m.scores:
            if col not in header:
                chk.add(1, col, f"score column not found; {where}")
    if chk.problems:
        raise DataError(chk.problems)
    index = {h: i for i, h in enumerate(header)}
    folded_header = [h.lstrip("\ufeff").casefold() for h in header]
    mapped_cols = {m.response, m.context, *columns.values(), *score_cols}  # every other column is metadata
    extra_cols = [c for c in header if c and c not in mapped_cols and c not in RECORD_FIELDS]
    row = 1  # a row is a record, numbered as a spreadsheet numbers it: the header is row 1, a blank line a row,
    # and a record whose quoted cell spans several lines is one row (not the file line where it ends)
    while True:
        row += 1
        try:
            cells = next(reader)
        except StopIteration:
            break
        except csv.Error as e:
            chk.add(row, None, f"is not valid CSV ({e})")
            break
        if not any(c.strip() for c in cells):
            continue  # a blank line, or one of delimiters only, holds no example (it still counts as a spreadsheet row)
        if len(cells) != len(header):
            chk.add(row, None, f"has {len(cells)} cells but the header has {len(header)}")
            continue
        if [c.strip().lstrip("\ufeff").casefold() for c in cells] == folded_header:  # a BOM: a joined Excel export
            chk.add(row, None, "repeats the header row (two files joined into one?): delete it")
            continue

        def cell(col: str | None) -> str | None:
            return cells[index[col]] if col is not None else None

        refs_cell = cell(columns["references"])
        ref_parts = listed_cell(refs_cell) or (refs_cell.split(m.reference_sep) if refs_cell else [])
        context_cell = cell(m.context)
        mapped = {"id": cell(columns["id"]) or None,
                  **({"system": cell(columns["system"])} if columns["system"] else {}),  # else the file's name
                  "context": listed_cell(context_cell) or context_cell, "response": cell(m.response),
                  "references": [r.strip() for r in ref_parts if r.strip()],
                  "scores": {dim: _decimal_point(cell(col), delimiter) for col, dim in score_cols.items()
                             if (cell(col) or "").strip()},
                  "dataset": cell(columns["dataset"]) or None}
        mapped = {**{c: cell(c) for c in extra_cols}, **mapped}  # metadata (``Example.meta``) for slices
        ex = example_from_record(chk, mapped, row, path, default_system(path), context_sep=m.context_sep)
        if ex:
            yield ex


class CsvRows(RowsInPlace):
    """A checked delimited file held as its row count: the csv module reads a record (which may span lines)
    only from the file's start, so rows are parsed again in order, each slice reading on from where the last
    one stopped (a slice before that starts again from the top)."""

    def __init__(self, path: str, delimiter: str, mapping: CsvMapping, count: int, size: int, mtime_ns: int):
        super().__init__(path, count, size, mtime_ns)
        self.delimiter = delimiter
        self.mapping = mapping
        self._file: Any = None
        self._rows: Iterator[Example] | None = None
        self._checker: RowChecker | None = None
        self._next = 0  # the index of the row self._rows gives next

    def read(self, start: int, stop: int) -> list[Example]:
        """Rows ``start`` to ``stop - 1`` (0-based), parsed from the file."""
        if start >= stop:
            return []
        changed = self.changed()
        try:
            if not self.same_file(os.stat(self.path)):
                raise changed
            if self._rows is None or start < self._next:
                self.close()
                self._file = open(self.path, encoding="utf-8-sig", newline="")
                self._checker = RereadChecker(self.path)
                self._rows = csv_rows(self._checker, self._file, self.delimiter, self.mapping)
                self._next = 0
            out = []
            while self._next < stop:
                ex = next(self._rows, None)
                if ex is None or self._checker.problems:  # type: ignore[union-attr]
                    raise changed
                if self._next >= start:
                    out.append(ex)
                self._next += 1
        except OSError as e:
            self.close()
            raise cannot_read(self.path, e) from None
        except (DataError, UnicodeDecodeError):
            self.close()
            raise changed from None
        if self._next == self.count:
            self.close()
        return out

    def close(self) -> None:
        """Close the file the rows are read from (reading again reopens it)."""
        if self._file is not None:
            self._file.close()
        self._file = self._rows = self._checker = None

    def __del__(self) -> None:
        self.close()


def scan_csv(path: str, mapping: CsvMapping, each: Callable[[Example], None] | None,
             progress: Callable[[int, int, str], None] | None) -> tuple[CsvRows | None, bool]:
    """:func:`scan_jsonl` for a delimited file: every row checked as :func:`load_file` checks it, only their
    count kept. A problem with the header or an undecodable byte leaves the file to :func:`load_file`."""
    f = open_in_place(path)
    if f is None:
        return None, False
    with f:
        st = os.fstat(f.fileno())
        text = io.TextIOWrapper(f, encoding="utf-8-sig", newline="")
        chk = ScanChecker(path)
        try:
            header = next((line for line in text if line.strip()), "")
            delimiter = mapping.delimiter or csv_delimiter(path, header)
            text.seek(0)
            count, shown = 0, CheckProgress(path, st.st_size, progress)
            for ex in csv_rows(chk, text, delimiter, mapping):
                count += 1
                if each is not None and not chk.problems:
                    each(ex)
                shown.at(f.tell())
        except (DataError, UnicodeDecodeError):
            return None, False
        finally:
            text.detach()
    in_place, each_done = checked_in_place(chk, count)
    if not in_place:
        return None, each_done
    shown.done(count)
    return CsvRows(path, delimiter, mapping, count, st.st_size, st.st_mtime_ns), True
