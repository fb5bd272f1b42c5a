"""Reading a file of any supported format: what its format is (:func:`detect_format`, :func:`format_of_text`: by name,
then by content; prose that is no table is refused as such), the whole file's rows (:func:`load_file`: the format's
reader over the decoded text, collected) and the rows of a file scored once (:func:`open_examples`: JSON Lines and
delimited files checked by the same reader in place and parsed again block by block; the rest as :func:`load_file`)."""
from __future__ import annotations

import csv
import io
import os
from collections import Counter
from typing import Callable, Sequence

from core.data.columns import column_examples
from core.data.decoding import parse_json, read_text, split_lines, without_gz
from core.data.delimited import CSV_SUFFIXES, CsvMapping, allow_long_cells, csv_delimiter, csv_examples, scan_csv
from core.data.dstc10 import dstc10_examples
from core.data.jsonl import JSONL_SUFFIXES, jsonl_examples, scan_jsonl
from core.data.schema import FORMATS, DataError, Example, Problem


def detect_format(path: str | os.PathLike, data: bytes | None = None) -> str:
    """Guess the format from the extension, then from the content (:func:`format_of_text`)."""
    return format_of_text(str(path), read_text(path, data))


def format_of_text(path: str, text: str) -> str:
    """``.csv``/``.tsv`` -> csv, ``.jsonl``/``.ndjson`` -> jsonl; otherwise by content: a JSON list is DSTC10,
    a JSON object with column lists is the column format, a first line that is JSON is JSONL, anything else is
    CSV when it reads as a table (:func:`_not_a_table`; else :class:`DataError` says it is not a table, and
    what is read). A byte-order mark never hides the content; a ``.gz`` ending is looked through."""
    name = without_gz(path).lower()
    if name.endswith(CSV_SUFFIXES):
        return "csv"
    if name.endswith(JSONL_SUFFIXES):
        return "jsonl"
    body = text.lstrip()
    head = body[:1]
    if head == "[":
        return "dstc10"
    first_line = split_lines(body)[0]
    if head == "{":
        whole, problem = parse_json(body, path, None)
        if problem is None and isinstance(whole, dict):
            return "columns" if any(k in whole for k in ("responses", "contexts")) else "jsonl"
        if problem is None:
            return "jsonl"
        # a broken file: JSON lines when one of its first lines is an object, else a broken JSON document
        # (whose own error, with line and column, the column loader reports)
        lines = [ln for ln in split_lines(body)[:50] if ln.strip()][:5]
        return "jsonl" if any(isinstance(parse_json(ln, path, 1)[0], dict) for ln in lines) else "columns"
    if parse_json(first_line, path, 1)[1] is None:
        return "jsonl"  # a JSON value a line (the JSON Lines loader says which are not objects)
    if name.endswith(".json") and "," not in first_line and "\t" not in first_line:
        return "jsonl"  # named JSON, and no table either: the JSON Lines loader names the malformed lines
    problem = _not_a_table(path, text)
    if problem is not None:
        raise DataError([problem])
    return "csv"


TABLE_FORMATS = ("JSON Lines (one JSON object a line), a JSON list of records (DSTC10), a JSON object of columns, "
                 "or a table with a header row (CSV or TSV; cells separated by commas, tabs or semicolons)")
"""The formats every loader accepts, as a refusal of some other text names them."""

_TABLE_SAMPLE = 1000
"""How many records of a text whose format is told from its content :func:`_not_a_table` reads."""


def _not_a_table(path: str, text: str) -> Problem | None:
    """The problem of a text that is neither JSON nor a table, read as a table only because nothing else fits
    (prose named ``.txt``): a first line with no cell separator, or records (from the first
    :data:`_TABLE_SAMPLE`) of which fewer than half have as many cells as the header, as lines of prose with
    commas here and there have. ``None`` for a table, even one with a few broken rows (the CSV loader names
    them). A file named ``.csv``/``.tsv`` or read with ``fmt="csv"`` is never asked: it is a table by choice."""
    body = text.lstrip("\ufeff \t\r\n")
    delimiter = csv_delimiter(path, body)
    allow_long_cells()
    counts: list[int] = []
    try:
        for cells in csv.reader(io.StringIO(body, newline=""), delimiter=delimiter):
            if cells and not (len(cells) == 1 and not cells[0].strip()):  # a blank line is not a record
                counts.append(len(cells))
                if len(counts) > _TABLE_SAMPLE:
                    break
    except csv.Error:
        pass  # a broken quote ends the sample; the CSV loader names its row when the rest is a table
    if not counts:
        return None
    header = counts[0]
    if header < 2:
        reason = "its first line has no comma, tab or semicolon between column names"
    else:
        same = sum(1 for n in counts[1:] if n == header)
        if len(counts) < 3 or same * 2 >= len(counts) - 1:
            return None
        shown = Counter(counts[1:]).most_common(3)
        reason = (f"its lines do not split into the same number of cells: the first line has {header}, but only "
                  f"{same} of the next {len(counts) - 1} rows do (" + ", ".join(f"{k} with {n} cell{'s' * (n != 1)}"
                                                                               for n, k in shown)
                  + (", ..." if len(set(counts[1:])) > 3 else "") + ")")
    return Problem(path, None, None, f"is not a table and not JSON, so it cannot be read: {reason}. dialeval reads "
                   f"{TABLE_FORMATS}; a table needs at least a context and a response column")


def check_format(fmt: str | None) -> None:
    """A ``ValueError`` for a format that is not one of :data:`FORMATS` (``None``: told from the file)."""
    if fmt is not None and fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; choose one of {FORMATS}")


def load_file(path: str | os.PathLike, fmt: str | None = None, data: bytes | None = None,
              csv_mapping: CsvMapping | None = None) -> list[Example]:
    """Load any supported file (``fmt`` in ``FORMATS`` or None to detect). ``data`` lets an upload pass
    bytes with its original file name in ``path``. Each format's one reader (``jsonl_rows``, ``csv_rows``, a
    document's records) over the whole text, collected."""
    check_format(fmt)
    name = str(path)
    text = read_text(path, data)
    fmt = fmt or format_of_text(name, text)
    if csv_mapping is not None and fmt != "csv":
        raise DataError([Problem(name, None, None, f"CSV columns were chosen, but this file is read as {fmt}, "
                                                   "not CSV (name it .csv or .tsv, or choose the CSV format)")])
    if fmt == "jsonl":
        return jsonl_examples(name, text)
    if fmt == "dstc10":
        return dstc10_examples(name, text)
    if fmt == "columns":
        return column_examples(name, text)
    return csv_examples(name, text, csv_mapping)


def open_examples(path: str | os.PathLike, fmt: str | None = None, csv_mapping: CsvMapping | None = None,
                  each: Callable[[Example], None] | None = None,
                  progress: Callable[[int, int, str], None] | None = None) -> Sequence[Example]:
    """The rows of a file to score once, in order (``dialeval score``): the rows :func:`load_file` gives,
    refused for the same problems with the same message. A JSON Lines file (``fmt="jsonl"``, or named
    ``.jsonl``/``.ndjson``) or a delimited one (``fmt="csv"``, or named ``.csv``/``.tsv``) is checked row by row
    and kept as :class:`JsonlRows` (16 bytes a row) or :class:`CsvRows` (a count); a slice is parsed from the
    file when it is asked for, so memory stays bounded however large the file. DSTC10 and column JSON (one
    document), UTF-16/32 text and a pipe (read once) are loaded whole. A file that fails the check raises
    :func:`load_file`'s :class:`DataError`, worded by the check itself where it can be exact (a bad row, an
    undecodable byte), else by :func:`load_file`. ``each(example)`` is called once for every row, in
    order, before this returns (the CLI counts blank text with it); ``progress`` gets the check's MB read for
    files of 16 MB or more."""
    check_format(fmt)
    name = str(path)
    rows: Sequence[Example] | None = None
    each_done = False
    if csv_mapping is None and (fmt == "jsonl" or (fmt is None and name.lower().endswith(JSONL_SUFFIXES))):
        rows, each_done = scan_jsonl(name, each, progress)
    elif fmt == "csv" or (fmt is None and name.lower().endswith(CSV_SUFFIXES)):
        rows, each_done = scan_csv(name, csv_mapping or CsvMapping(), each, progress)
    if rows is not None:
        return rows
    if each_done:  # a repeated id hash: the whole loader says which (or it was a collision)
        return load_file(path, fmt, csv_mapping=csv_mapping)
    # not read in place, or a problem the whole loader must word (its message, its order)
    examples = load_file(path, fmt, csv_mapping=csv_mapping)
    if each is not None:
        for ex in examples:
            each(ex)
    return examples
