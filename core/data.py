"""One schema for a rated dialogue example, loaders for every supported input format, and alignment
of two systems into a comparison.

Every problem in an input file is reported with the file, the row (1-based line number for JSONL and
CSV, 1-based record number for JSON lists / column dictionaries) and the field. Loaders collect all
problems of a file before raising, so a user fixes a broken upload in one round. Nothing is silently
dropped: rows without a partner in a comparison are listed in ``Comparison.unmatched_a/_b``.
:func:`open_examples` gives the same rows for one pass in order (``dialeval score``), reading JSON Lines in
place (:class:`JsonlRows`, :class:`CsvRows`: checked first, then parsed block by block) so memory stays
bounded.

What every loader accepts and refuses (docs/inputs.md has the full table):

- **Encodings**: UTF-8 with or without a byte-order mark; UTF-16 and UTF-32 with a byte-order mark. Anything
  else is refused with the line of the first undecodable byte (BOM-less UTF-16 is named). A gzip file
  (``rows.jsonl.gz``) is read decompressed, whole.
- **Line ends**: ``\\n``, ``\\r\\n`` and a lone ``\\r``, mixed freely. Nothing else ends a line: U+2028, U+2029
  and U+0085 may stand unescaped inside JSON strings, so lines are never split with ``str.splitlines``.
- **Text**: every string must be valid Unicode (a lone surrogate such as ``"\\ud800"`` is refused at load
  time with its row and field, before any scoring); a context needs at least one non-blank turn.
- **JSON**: malformed lines, duplicate keys in one object, nesting too deep for the parser and integers too
  long to read are problems of their row, never a traceback.
"""
from __future__ import annotations

import codecs
import csv
import hashlib
import io
import json
import math
import os
import re
import stat
import sys
from abc import abstractmethod
from array import array
from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

FORMATS = ("jsonl", "dstc10", "columns", "csv")
LINE_BREAK = re.compile(r"\r\n|\r|\n")
"""What ends a line in every input: ``\\n``, ``\\r\\n`` or ``\\r``, never a Unicode line separator."""


@dataclass
class Example:
    """One response to rate: ``context`` is oldest-first, its last item is the input utterance."""

    id: str
    system: str
    context: list[str]
    response: str
    references: list[str] = field(default_factory=list)
    scores: dict[str, float] = field(default_factory=dict)
    dataset: str = ""
    source: str = ""  # file the example came from
    row: int = 0  # 1-based row in that file
    has_id: bool = True  # False when the id was generated because the input had none
    meta: dict[str, str] = field(default_factory=dict)  # the row's other plain fields (slices group by them)

    @property
    def utterance(self) -> str:
        return self.context[-1] if self.context else ""

    @property
    def reference(self) -> str:
        return self.references[0] if self.references else ""

    @property
    def location(self) -> str:
        """Where the row came from, as a user finds it: ``file.jsonl row 3`` (``item 3`` without a file)."""
        return f"{os.path.basename(self.source)} row {self.row}" if self.source else f"item {self.row or self.id}"

    def to_dict(self) -> dict[str, Any]:
        return {**self.meta, "id": self.id, "system": self.system, "dataset": self.dataset, "context": self.context,
                "response": self.response, "references": self.references, "scores": self.scores}


@dataclass
class Problem:
    file: str
    row: int | None
    field: str | None
    message: str

    def __str__(self) -> str:
        where = os.path.basename(self.file) if self.file else "<input>"
        if self.row is not None:
            where += f", row {self.row}"
        if self.field:
            where += f", field '{self.field}'"
        return f"{where}: {self.message}"


class DataError(ValueError):
    """Raised with every problem found in one input; ``problems`` holds them, ``str()`` lists them."""

    def __init__(self, problems: Sequence[Problem]):
        self.problems = list(problems)
        shown = "\n".join(f"  - {p}" for p in self.problems[:50])
        more = f"\n  ... and {len(self.problems) - 50} more" if len(self.problems) > 50 else ""
        super().__init__(f"{len(self.problems)} problem(s) in the input:\n{shown}{more}")

    def __reduce__(self):
        """Pickled with its problems (a Ray worker's error reaches the driver as the same message)."""
        return (type(self), (self.problems,))


# ----------------------------------------------------------------------------------------------
# text: reading, decoding, lines


def split_lines(text: str) -> list[str]:
    """``text`` cut at ``\\n``, ``\\r\\n`` and ``\\r`` only (``str.splitlines`` would also cut at U+2028,
    U+2029, U+0085 and form feeds, which JSON strings may hold, and shift every later row number)."""
    return LINE_BREAK.split(text)


def split_turns(text: str, sep: str = "\n") -> list[str]:
    """A context string cut into turns at ``sep`` (``"\\n"`` matches every line end); blank pieces are not
    turns (a trailing newline must not make the input utterance empty)."""
    parts = split_lines(text) if sep == "\n" else text.split(sep)
    return [t for t in parts if t.strip()]


def bad_unicode_at(text: str) -> int | None:
    """Index of the first character that cannot be written as UTF-8 (a lone surrogate), else None."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        return e.start
    return None


_BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF8, "utf-8-sig"),
         (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))


def read_bytes(path: str | os.PathLike) -> bytes:
    """The bytes of ``path``; a missing, unreadable or non-file path is a :class:`DataError` naming it."""
    name = str(path)
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        why = f"file not found (looked for {Path(path).absolute()})"
    except IsADirectoryError:
        why = "is a folder, not a file"
    except PermissionError:
        why = "cannot be read: permission denied"
    except OSError as e:
        why = f"cannot be read: {e.strerror or e}"
    raise DataError([Problem(name, None, None, why)])


def decode_text(name: str, data: bytes) -> str:
    """Bytes to text: UTF-8 (a byte-order mark is dropped), or UTF-16/32 announced by a byte-order mark.
    Other encodings are refused with the line of the first undecodable byte."""
    if data[:2] == b"\x1f\x8b":  # gzip (rows.jsonl.gz): read decompressed, whole
        import gzip
        import zlib
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as e:
            why = f"is gzip-compressed but cannot be decompressed ({e})"
            raise DataError([Problem(name, None, None, why)]) from None
    encoding = next((enc for bom, enc in _BOMS if data.startswith(bom)), "utf-8")
    if encoding == "utf-8" and b"\x00" in data[:4]:
        raise DataError([Problem(name, 1, None, "holds NUL bytes: it looks like UTF-16 without a byte-order "
                                                "mark; save the file as UTF-8")])
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as e:
        raw = data
        if encoding == "utf-8":
            line = len(split_lines(raw[: e.start].decode("utf-8", errors="replace")))
            message = (f"is not valid UTF-8 (byte 0x{raw[e.start]:02x} at offset {e.start}); save the file as "
                       "UTF-8")
        else:
            line = None
            message = f"is not valid {encoding.upper()} despite its byte-order mark (offset {e.start})"
        raise DataError([Problem(name, line, None, message)]) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    if not text.strip():
        raise DataError([Problem(name, None, None, "is empty")])
    return text


def read_text(path: str | os.PathLike, data: bytes | None = None) -> str:
    """Read a file (or the uploaded ``data`` under that name) as text (:func:`decode_text`), naming the line
    of the first undecodable byte; a missing, unreadable, empty or non-text file is a :class:`DataError`."""
    return decode_text(str(path), read_bytes(path) if data is None else data)


def parse_json(text: str, file: str, row: int | None) -> tuple[Any, Problem | None]:
    """``(value, None)`` or ``(None, problem)``: malformed JSON, nesting too deep for the parser, an integer
    too long to read, or a key given twice in one object (which value was meant?) is a problem of ``row``."""
    duplicates: list[str] = []

    def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(pairs)
        if len(obj) != len(pairs):
            seen: set[str] = set()
            duplicates.extend(k for k, _ in pairs if k in seen or seen.add(k))
        return obj

    try:
        value = json.loads(text, object_pairs_hook=unique_keys)
    except json.JSONDecodeError as e:
        where = f"column {e.colno}" if row is not None else f"line {e.lineno}, column {e.colno}"
        msg = e.msg[:-3] if e.msg.endswith(" at") else e.msg  # "Unterminated string starting at" + where
        return None, Problem(file, row, None, f"malformed JSON ({msg} at {where})")
    except RecursionError:
        return None, Problem(file, row, None, "malformed JSON (nested too deeply to read)")
    except ValueError as e:  # an integer literal longer than Python's int/str conversion limit
        what = "a number with too many digits" if "digits" in str(e) else str(e)
        return None, Problem(file, row, None, f"malformed JSON ({what})")
    if duplicates:
        return None, Problem(file, row, duplicates[0], "appears twice in one JSON object; keep one")
    return value, None


# ----------------------------------------------------------------------------------------------
# field validation shared by every format


class _RowChecker:
    """Collects problems while converting raw records to ``Example``s."""

    def __init__(self, file: str):
        self.file = file
        self.problems: list[Problem] = []
        self.aliases: dict[str, str] = {}  # schema field -> the name the file uses for it (DSTC10, columns)
        self.ids: dict[tuple[str, str], int] = {}  # (system, id) -> first row, over every row, broken ones too

    def claim_id(self, system: str, rid: str, row: int) -> None:
        """Duplicate ids within one system are ambiguous for alignment: the second one is a problem."""
        first = self.ids.setdefault((system, rid), row)
        if first != row:
            self.add(row, "id", f"duplicate id {rid!r} for system {system!r} (first at row {first})")

    def add(self, row: int | None, fld: str | None, message: str) -> None:
        if fld and self.aliases:
            head = re.split(r"[.\[]", fld, maxsplit=1)[0]
            if head in self.aliases:
                fld = self.aliases[head] + fld[len(head):]
        self.problems.append(Problem(self.file, row, fld, message))

    def unicode(self, value: str, row: int, fld: str) -> bool:
        at = bad_unicode_at(value)
        if at is not None:
            self.add(row, fld, f"holds a lone surrogate ({value[at]!a} at character {at}), which is not valid "
                               "Unicode text")
            return False
        return True

    def text(self, value: Any, row: int, fld: str, required: bool = True) -> str | None:
        if value is None:
            if required:
                self.add(row, fld, "is missing")
            return None
        if not isinstance(value, str):
            self.add(row, fld, f"must be a string, got {type(value).__name__} {_short(value)}")
            return None
        return value if self.unicode(value, row, fld) else None

    def text_list(self, value: Any, row: int, fld: str, sep: str | None = None) -> list[str] | None:
        if value is None:
            return []
        if isinstance(value, str):
            if not self.unicode(value, row, fld):
                return None
            if sep is not None:
                return split_turns(value, sep)
            return [value]
        if isinstance(value, list):
            bad = [i for i, v in enumerate(value) if not isinstance(v, str)]
            if bad:
                self.add(row, fld, f"item {bad[0]} must be a string, got {type(value[bad[0]]).__name__}")
                return None
            if not all(self.unicode(v, row, f"{fld}[{i}]") for i, v in enumerate(value)):
                return None
            return list(value)
        self.add(row, fld, f"must be a string or a list of strings, got {type(value).__name__}")
        return None

    def scores(self, value: Any, row: int, fld: str = "scores") -> dict[str, float] | None:
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.add(row, fld, f"must be an object of dimension -> number, got {type(value).__name__}")
            return None
        out: dict[str, float] = {}
        ok = True
        for dim, v in value.items():
            dim = str(dim)
            if not self.unicode(dim, row, fld):
                ok = False
                continue
            if is_no_rating(v):
                continue  # as an empty CSV cell: this row has no rating on this dimension
            num = self.number(v, row, f"{fld}.{dim}")
            if num is None:
                ok = False
            else:
                out[dim] = num
        return out if ok else None

    def number(self, v: Any, row: int, fld: str) -> float | None:
        if isinstance(v, bool) or v is None:
            self.add(row, fld, f"must be a number, got {_short(v)}")
            return None
        try:
            if isinstance(v, (int, float)):
                num = float(v)
            elif isinstance(v, str):
                try:
                    num = float(v.strip())
                except ValueError:
                    self.add(row, fld, f"is not numeric: {_short(v)}")
                    return None
            elif isinstance(v, list):  # raw ratings: mean of the annotators (one who did not rate left out)
                vals = [self.number(x, row, fld) for x in v if not is_no_rating(x)]
                if any(x is None for x in vals):
                    return None
                if not vals:
                    self.add(row, fld, "is an empty list of ratings")
                    return None
                num = sum(vals) / len(vals)  # type: ignore[arg-type]
            else:
                self.add(row, fld, f"must be a number, got {type(v).__name__}")
                return None
        except OverflowError:
            self.add(row, fld, f"is too large for a number: {_short(v)}")
            return None
        if not math.isfinite(num):
            self.add(row, fld, f"must be a finite number, got {_short(v)}")
            return None
        return num


NO_RATING_TEXTS = frozenset({"", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND",
                             "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"})
"""Rating texts that mean "not rated": pandas' ``read_csv`` default NA values (a blank cell among them)."""


def is_no_rating(v: Any) -> bool:
    """A rating that says "not rated": null (pandas' ``to_json`` writes NaN so), NaN, a text pandas reads as
    NA (blank, "NaN", "NA", "null", ..., :data:`NO_RATING_TEXTS`) or a list of annotators' ratings none of whom
    rated (empty, or nulls only); in a list with ratings, the nulls are left out of the mean."""
    return (v is None or (isinstance(v, float) and math.isnan(v))
            or (isinstance(v, str) and v.strip() in NO_RATING_TEXTS)
            or (isinstance(v, list) and all(not isinstance(x, list) and is_no_rating(x) for x in v)))


def _short(v: Any, n: int = 40) -> str:
    s = repr(v) if not isinstance(v, int) or isinstance(v, bool) or abs(v) < 10 ** 30 else f"<{len(str(abs(v)))}-digit int>"
    return s if len(s) <= n else s[: n - 3] + "..."


def _finish(checker: _RowChecker, examples: list[Example]) -> list[Example]:
    if checker.problems:
        raise DataError(checker.problems)
    if not examples:
        raise DataError([Problem(checker.file, None, None, "contains no examples")])
    return examples


def without_gz(path: str) -> str:
    """``path`` without a trailing ``.gz`` (``rows.jsonl.gz`` is read as ``rows.jsonl``)."""
    return path[:-3] if path.lower().endswith(".gz") else path


def _default_system(path: str) -> str:
    return Path(without_gz(path)).stem if path else "system"


# ----------------------------------------------------------------------------------------------
# formats


def _example_from_record(chk: _RowChecker, rec: Any, row: int, path: str, default_system: str,
                         context_sep: str | None = None) -> Example | None:
    if not isinstance(rec, dict):
        chk.add(row, None, f"must be a JSON object, got {type(rec).__name__}")
        return None
    n_before = len(chk.problems)
    response = chk.text(rec.get("response"), row, "response")
    ctx_raw = rec.get("context")
    if ctx_raw is None:
        chk.add(row, "context", "is missing")
        context = None
    else:
        context = chk.text_list(ctx_raw, row, "context", sep=context_sep if context_sep is not None else "\n")
        if context is not None and not any(t.strip() for t in context):
            chk.add(row, "context", "is empty: give at least the input utterance (the last turn)")
    refs = chk.text_list(rec.get("references", rec.get("reference")), row, "references")
    scores = chk.scores(rec.get("scores"), row)
    rid = rec.get("id")
    id_ok = rid is not None
    if rid is not None and (isinstance(rid, bool) or not isinstance(rid, (str, int))):
        chk.add(row, "id", f"must be a string or integer, got {type(rid).__name__} {_short(rid)}")
        id_ok = False
    elif isinstance(rid, str):
        id_ok = chk.unicode(rid, row, "id")
    system = rec.get("system", default_system)
    if system is None or not isinstance(system, str):
        chk.add(row, "system", f"must be a string, got {type(system).__name__}")
    elif chk.unicode(system, row, "system") and id_ok:
        chk.claim_id(system, str(rid), row)
    dataset = chk.text(rec.get("dataset"), row, "dataset", required=False)
    if len(chk.problems) > n_before:
        return None
    return Example(id=str(rid) if rid is not None else f"row{row}", system=system, context=context or [],
                   response=response or "", references=refs or [], scores=scores or {},
                   dataset=dataset or "", source=path, row=row, has_id=rid is not None,
                   meta=row_metadata(rec))


RECORD_FIELDS = ("id", "system", "context", "response", "references", "reference", "scores", "dataset", "ratings")


def row_metadata(rec: dict[str, Any]) -> dict[str, str]:
    """The plain (string, number, boolean) fields of an input row beyond the schema's, as text: metadata a
    comparison can be sliced by (a topic, a user group, a bot version). A name or value that is not valid
    text (a lone surrogate) is left out rather than carried into an output it would break."""
    def text(x: Any) -> str | None:
        x = str(x)
        try:
            x.encode("utf-8")
        except UnicodeEncodeError:
            return None
        return x
    out = {}
    for k, v in rec.items():
        if k in RECORD_FIELDS or not isinstance(v, (str, int, float, bool)):
            continue
        key, value = text(k), text(v)
        if key is not None and value is not None:
            out[key] = value
    return out


def load_jsonl(path: str | os.PathLike, data: bytes | None = None, system: str | None = None) -> list[Example]:
    """Our JSONL: one object per line with ``context`` (list or "\\n"-joined string), ``response``,
    optional ``id``, ``system``, ``references``, ``scores`` {dimension: number}, ``dataset``."""
    return _jsonl_examples(str(path), read_text(path, data), system)


def _jsonl_examples(path: str, text: str, system: str | None = None) -> list[Example]:
    chk = _RowChecker(path)
    out: list[Example] = []
    for i, rec in iter_json_lines(path, text, chk.problems):
        ex = _example_from_record(chk, rec, i, path, system or _default_system(path))
        if ex:
            out.append(ex)
    if chk.problems and not out and len(split_lines(text.strip())) > 1:
        whole, problem = parse_json(text, path, None)
        if problem is None and isinstance(whole, (dict, list)):  # one JSON document, not JSON lines
            what = "one JSON object" if isinstance(whole, dict) else "one JSON list"
            raise DataError([Problem(path, None, None, f"holds {what} over several lines, not one object per line "
                                     "(JSON Lines); put each record on a line of its own"
                                     + (", or name the file .json" if isinstance(whole, list) else ""))])
    if chk.problems:
        bad = [p.row for p in chk.problems if p.row is not None and p.message.startswith("malformed JSON")]
        lines = split_lines(text)
        n = _objects_over_lines("\n".join(lines[min(bad) - 1:])) if bad else 0
        if n:  # pretty-printed records (from the first bad line on): one problem that says so, not one per line
            chk.problems = [p for p in chk.problems if p.row is None or p.row < min(bad)]
            chk.problems.append(_pretty_printed(path, n, min(bad) if out else None))
    return _finish(chk, out)


def _pretty_printed(path: str, n: int, row: int | None = None) -> Problem:
    """The problem of ``n`` JSON records written over several lines each (from ``row`` on)."""
    return Problem(path, row, None, f"{'from here on ' if row else ''}holds {n} JSON object{'s' * (n != 1)} written "
                   "over several lines each (as `jq .` prints them), not one object per line (JSON Lines); put each "
                   "record on a line of its own (`jq -c .` writes them so)")


def _objects_over_lines(text: str) -> int:
    """How many JSON objects ``text`` holds one after another when that is all it holds (pretty-printed records,
    each over several lines), else 0."""
    decoder, pos, n = json.JSONDecoder(), 0, 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos == len(text):
            return n
        try:
            value, pos = decoder.raw_decode(text, pos)
        except (ValueError, RecursionError):  # not JSON, or nested too deeply to read (parse_json says which)
            return 0
        if not isinstance(value, dict):
            return 0
        n += 1


def iter_json_lines(path: str, text: str, problems: list[Problem]) -> Iterable[tuple[int, Any]]:
    """(1-based line number, parsed value) for each non-blank line (lines end at ``\\n``, ``\\r\\n`` or ``\\r``
    only, :func:`split_lines`); a line that cannot be read (:func:`parse_json`) becomes a Problem."""
    for i, line in enumerate(split_lines(text), start=1):
        line = line.lstrip("\ufeff")  # files concatenated with `cat` keep each one's byte-order mark
        if not line.strip():
            continue
        value, problem = parse_json(line, path, i)
        if problem is not None:
            problems.append(problem)
        else:
            yield i, value


def _json_document(path: str, text: str) -> Any:
    value, problem = parse_json(text, path, None)
    if problem is not None:
        n = _objects_over_lines(text)
        raise DataError([_pretty_printed(path, n) if n > 1 else problem])
    return value


def load_dstc10(path: str | os.PathLike, data: bytes | None = None) -> list[Example]:
    """DSTC10 Track 5 JSON: a list of ``{dialogue_id, model, context: "turns\\n...", response,
    reference: [...], annotations: {dim: [ratings]}}``; scores are the mean rating per dimension.
    Rows are numbered 1-based in list order. ``dialogue_id`` is shared by the systems answering one
    context, so it is the alignment key. A list of our JSONL records (``id``, ``system``, ``references``,
    ``scores``) reads the same way."""
    return _dstc10_examples(str(path), read_text(path, data))


def _dstc10_examples(path: str, text: str) -> list[Example]:
    recs = _json_document(path, text)
    chk = _RowChecker(path)
    if not isinstance(recs, list):
        raise DataError([Problem(path, None, None, "DSTC10 format must be a JSON list of objects")])
    out = []
    for i, rec in enumerate(recs, start=1):
        if not isinstance(rec, dict):
            chk.add(i, None, f"must be a JSON object, got {type(rec).__name__}")
            continue
        chk.aliases = {k: a for k, a in (("id", "dialogue_id"), ("system", "model"), ("references", "reference"),
                                         ("scores", "annotations")) if a in rec}
        mapped = {"id": rec.get("dialogue_id", rec.get("id")),
                  "system": rec.get("model", rec.get("system", _default_system(path))),
                  "context": rec.get("context"), "response": rec.get("response"),
                  "references": rec.get("reference", rec.get("references")),
                  "scores": rec.get("annotations", rec.get("scores")), "dataset": rec.get("dataset")}
        ex = _example_from_record(chk, mapped, i, path, _default_system(path))
        if ex:
            out.append(ex)
    return _finish(chk, out)


COLUMN_KEYS = ("contexts", "responses", "references", "reference", "models", "scores", "ids")


def load_columns(path: str | os.PathLike, data: bytes | None = None) -> list[Example]:
    """Column-dictionary JSON: ``{contexts: [[turns]], responses: [...], references: [[...]],
    models: [...], scores: [{dim: "3.2", ...}]}``, all lists of equal length (row i = item i);
    ``reference`` is read as ``references`` and ``ids`` as the ids."""
    return _column_examples(str(path), read_text(path, data))


def _column_examples(path: str, text: str) -> list[Example]:
    obj = _json_document(path, text)
    if not isinstance(obj, dict):
        raise DataError([Problem(path, None, None, "column format must be a JSON object of lists")])
    chk = _RowChecker(path)
    for required in ("contexts", "responses"):
        if required not in obj:
            chk.add(None, required, "column is missing")
    if "references" in obj and "reference" in obj:
        chk.add(None, "reference", "both 'references' and 'reference' are given; keep one")
    cols = {("references" if k == "reference" else k): v for k, v in obj.items() if k in COLUMN_KEYS}
    for k, v in cols.items():
        if not isinstance(v, list):
            chk.add(None, k, f"column must be a list, got {type(v).__name__}")
    if chk.problems:
        raise DataError(chk.problems)
    lengths = {k: len(v) for k, v in cols.items()}
    if len(set(lengths.values())) > 1:
        desc = ", ".join(f"{k}={n}" for k, n in lengths.items())
        raise DataError([Problem(path, None, None, f"columns have unequal lengths ({desc})")])
    n = lengths["responses"]
    out = []
    chk.aliases = {"id": "ids", "context": "contexts", "response": "responses", "system": "models"}
    for i in range(n):
        row = i + 1
        sc = cols.get("scores", [None] * n)[i]
        if isinstance(sc, dict):
            sc = {k: v for k, v in sc.items() if k != "id"}  # 'id' inside a score dict is an index, not a rating
        rec = {"id": cols["ids"][i] if "ids" in cols else None, "context": cols["contexts"][i],
               "response": cols["responses"][i], "references": cols.get("references", [None] * n)[i],
               "system": cols["models"][i] if "models" in cols else _default_system(path), "scores": sc}
        ex = _example_from_record(chk, rec, row, path, _default_system(path))
        if ex:
            out.append(ex)
    return _finish(chk, out)


STANDARD = "standard"
"""A :class:`CsvMapping` field left at this value uses the JSONL field's name(s) when the header has them."""


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


def _csv_limit() -> None:
    # the csv module refuses cells over 131,072 characters by default; a long dialogue context is valid input
    csv.field_size_limit(min(sys.maxsize, 2 ** 31 - 1))


def load_csv(path: str | os.PathLike, data: bytes | None = None, mapping: CsvMapping | None = None) -> list[Example]:
    """A delimited file with a header row (:class:`CsvMapping` says which column is which)."""
    return _csv_examples(str(path), read_text(path, data), mapping)


def _csv_examples(path: str, text: str, mapping: CsvMapping | None = None) -> list[Example]:
    m = mapping or CsvMapping()
    chk = _RowChecker(path)
    out = list(_csv_rows(chk, io.StringIO(text, newline=""), m.delimiter or csv_delimiter(path, text), m))
    return _finish(chk, out)


_DECIMAL_COMMA = re.compile(r"\s*[-+]?\d+,\d+\s*")


def _decimal_point(cell: str | None, delimiter: str) -> str | None:
    """A rating written with a decimal comma (``4,5``) in a semicolon-separated file (as spreadsheets write
    them where the comma is the decimal mark) read as ``4.5``; any other cell as it is."""
    if delimiter == ";" and cell is not None and _DECIMAL_COMMA.fullmatch(cell):
        return cell.replace(",", ".")
    return cell


def _csv_rows(chk: _RowChecker, lines: Iterable[str], delimiter: str, m: CsvMapping) -> Iterator[Example]:
    """The examples of a delimited text (``lines``: a text stream opened with ``newline=""``). A problem with
    the header raises :class:`DataError` at once; a row's problem is added to ``chk`` and the row skipped; a
    row the csv module cannot split ends the rows."""
    path = chk.file
    _csv_limit()
    reader = csv.reader(lines, delimiter=delimiter, strict=True)
    try:
        header = [h.strip() for h in next(reader)]
    except csv.Error as e:
        raise DataError([Problem(path, 1, None, f"is not valid CSV ({e})")]) from None
    where = "column names are " + ", ".join(repr(h) for h in header)
    dup = [h for h, c in Counter(header).items() if c > 1]
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
            columns[fld] = next((named_as(c) for c in standard if named_as(c)), None)
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
    extra_cols = [c for c in header if c not in mapped_cols and c not in RECORD_FIELDS]
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
        if not cells or (len(cells) == 1 and not cells[0].strip() and len(header) > 1):
            continue  # a blank line holds no example (it still counts as a spreadsheet row)
        if len(cells) != len(header):
            chk.add(row, None, f"has {len(cells)} cells but the header has {len(header)}")
            continue
        if [c.strip().lstrip("\ufeff").casefold() for c in cells] == folded_header:  # a BOM: a joined Excel export
            chk.add(row, None, "repeats the header row (two files joined into one?): delete it")
            continue

        def cell(col: str | None) -> str | None:
            return cells[index[col]] if col is not None else None

        refs_cell = cell(columns["references"])
        ref_parts = refs_cell.split(m.reference_sep) if refs_cell else []
        mapped = {"id": cell(columns["id"]) or None,
                  "system": cell(columns["system"]) if columns["system"] else _default_system(path),
                  "context": cell(m.context), "response": cell(m.response),
                  "references": [r.strip() for r in ref_parts if r.strip()],
                  "scores": {dim: _decimal_point(cell(col), delimiter) for col, dim in score_cols.items()
                             if (cell(col) or "").strip()},
                  "dataset": cell(columns["dataset"]) or None}
        mapped = {**{c: cell(c) for c in extra_cols}, **mapped}  # metadata (``Example.meta``) for slices
        ex = _example_from_record(chk, mapped, row, path, _default_system(path), context_sep=m.context_sep)
        if ex:
            yield ex


def detect_format(path: str | os.PathLike, data: bytes | None = None) -> str:
    """Guess the format from the extension, then from the content (:func:`format_of_text`)."""
    return format_of_text(str(path), read_text(path, data))


def format_of_text(path: str, text: str) -> str:
    """``.csv``/``.tsv`` -> csv, ``.jsonl``/``.ndjson`` -> jsonl; otherwise by content: a JSON list is DSTC10,
    a JSON object with column lists is the column format, a first line that is a JSON object is JSONL, a
    first line with commas or tabs that is not JSON is CSV. A byte-order mark never hides the content; a
    ``.gz`` ending is looked through."""
    name = without_gz(path).lower()
    if name.endswith((".csv", ".tsv")):
        return "csv"
    if name.endswith((".jsonl", ".ndjson")):
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
    if ("," in first_line or "\t" in first_line) and parse_json(first_line, path, 1)[1] is not None:
        return "csv"
    return "jsonl"


def load_file(path: str | os.PathLike, fmt: str | None = None, data: bytes | None = None,
              csv_mapping: CsvMapping | None = None) -> list[Example]:
    """Load any supported file (``fmt`` in ``FORMATS`` or None to detect). ``data`` lets an upload pass
    bytes with its original file name in ``path``."""
    if fmt is not None and fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; choose one of {FORMATS}")
    name = str(path)
    text = read_text(path, data)
    fmt = fmt or format_of_text(name, text)
    if csv_mapping is not None and fmt != "csv":
        raise DataError([Problem(name, None, None, f"CSV columns were chosen, but this file is read as {fmt}, "
                                                   "not CSV (name it .csv or .tsv, or choose the CSV format)")])
    if fmt == "jsonl":
        return _jsonl_examples(name, text)
    if fmt == "dstc10":
        return _dstc10_examples(name, text)
    if fmt == "columns":
        return _column_examples(name, text)
    return _csv_examples(name, text, csv_mapping)


# ----------------------------------------------------------------------------------------------
# JSON Lines and CSV read in place: checked once, parsed again block by block (``dialeval score`` on any size)

JSONL_SUFFIXES = (".jsonl", ".ndjson")
CSV_SUFFIXES = (".csv", ".tsv")
_BYTE_LINE_END = re.compile(rb"\r\n|\r|\n")
_CHUNK = 1 << 20
_PROGRESS_FROM = 16 << 20
"""A check shows progress (in MB) for files at least this large."""


def byte_lines(chunks: Iterable[bytes], line: int = 1, offset: int = 0) -> Iterator[tuple[int, int, bytes]]:
    """``(line number, byte offset, bytes without the line end)`` for every line of the bytes ``chunks``
    that start at ``offset`` on line ``line``. Lines end at ``\r\n``, ``\r`` or ``\n`` (:func:`split_lines`'
    rule; UTF-8 never uses those bytes inside a character, so bytes can be cut before they are decoded). The
    text after the last line end is a line too, as :func:`split_lines` makes it."""
    rest = b""
    for chunk in chunks:
        buf = rest + chunk
        pos = 0
        for m in _BYTE_LINE_END.finditer(buf):
            if m.group() == b"\r" and m.end() == len(buf):
                break  # a \r at the chunk's end may be the first half of \r\n
            yield line, offset + pos, buf[pos:m.start()]
            line, pos = line + 1, m.end()
        offset += pos
        rest = buf[pos:]
    if rest.endswith(b"\r"):
        yield line, offset, rest[:-1]
        line, offset, rest = line + 1, offset + len(rest), b""
    yield line, offset, rest


def _file_chunks(f: Any) -> Iterator[bytes]:
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
            raise DataError([Problem(self.path, None, None, f"cannot be read: {e.strerror or e}")]) from None
        chk = _RereadChecker(self.path)
        out: list[Example] = []
        for number, _, raw in byte_lines([data], self.lines[start], self.offsets[start]):
            text = raw.decode("utf-8", errors="replace").lstrip("\ufeff")
            if not text.strip():
                continue
            value, problem = parse_json(text, self.path, number)
            ex = None if problem else _example_from_record(chk, value, number, self.path, self.system)
            if ex is None or len(out) >= stop - start or ex.row != self.lines[start + len(out)]:
                raise changed
            out.append(ex)
        if len(out) != stop - start:
            raise changed
        return out


class _RereadChecker(_RowChecker):
    """The row checks for rows read again after the whole file passed them: ids are not claimed again (the
    check did; a dictionary of every id would grow with the file)."""

    def claim_id(self, system: str, rid: str, row: int) -> None:
        return None


class _ScanChecker(_RowChecker):
    """The row checks of :func:`load_file`, with ids claimed as 64-bit hashes (8 bytes a row) instead of a
    dictionary: a repeated hash sends the file to :func:`load_file`, which names the duplicate exactly."""

    def __init__(self, file: str):
        super().__init__(file)
        self.id_hashes = array("Q")
        self.lone_brace = False  # a malformed line that is only "{": records pretty-printed over several lines

    def claim_id(self, system: str, rid: str, row: int) -> None:
        key = f"{len(system)}:{system}{rid}".encode("utf-8", "surrogatepass")
        self.id_hashes.append(int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "little"))

    def repeated_id(self) -> bool:
        import numpy as np
        hashes = np.frombuffer(self.id_hashes, dtype=np.uint64)
        return len(np.unique(hashes)) != len(hashes)


def _open_in_place(path: str) -> Any:
    """``path`` opened for reading in binary, if it can be read in place: a regular file (a pipe cannot be
    read twice) in UTF-8, with or without one byte-order mark. ``None`` for anything else (UTF-16/32, gzip,
    NUL bytes at the start, an unreadable file), which :func:`load_file` reads or refuses as usual."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None  # opening a pipe would start reading it
        f = open(path, "rb")
    except OSError:
        return None
    head = f.read(8)
    f.seek(0)
    if (head[:2] == b"\x1f\x8b" or b"\x00" in head[:4]
            or head.startswith(codecs.BOM_UTF8 * 2)
            or any(head.startswith(bom) for bom, enc in _BOMS if enc != "utf-8-sig")):
        f.close()
        return None
    return f


class _CheckProgress:
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


def _checked(chk: _ScanChecker, rows: int) -> tuple[bool, bool]:
    """Once every row is checked: (read in place?, was every row given to ``each``?). Raises the problems when
    the check words them as :func:`load_file` does; leaves to it a file with no good row (it may be one JSON
    document), a possibly repeated id (the check keeps hashes), or a line that is a lone "{" (records written
    over several lines, which it words as one problem)."""
    if not rows or chk.repeated_id() or chk.lone_brace:
        return False, bool(rows) and not chk.problems
    if chk.problems:
        raise DataError(chk.problems)
    return True, True


def _scan_jsonl(path: str, each: Callable[[Example], None] | None,
                progress: Callable[[int, int, str], None] | None) -> tuple[JsonlRows | None, bool]:
    """Check every row of a JSON Lines file in one pass, as :func:`load_file` does, keeping only where each
    row starts. Returns ``(rows, True)``, or raises :func:`load_file`'s :class:`DataError` (its problems, in
    its order: an undecodable byte, else every row's problem). ``(None, True)``: every row was given to
    ``each`` but two may share an id; ``(None, False)``: :func:`load_file` must say (UTF-16/32, a pipe, no
    row at all, a byte-order mark before an undecodable byte, a problem beside a possibly repeated id)."""
    f = _open_in_place(path)
    if f is None:
        return None, False
    with f:
        st = os.fstat(f.fileno())
        chk = _ScanChecker(path)
        system = _default_system(path)
        offsets, lines = array("q"), array("q")
        shown = _CheckProgress(path, st.st_size, progress)
        bom = False
        for number, offset, raw in byte_lines(_file_chunks(f)):
            bom = bom or (number == 1 and raw.startswith(codecs.BOM_UTF8))
            try:
                text = raw.decode("utf-8").lstrip("\ufeff")
            except UnicodeDecodeError as e:
                if bom:  # load_file decodes it as utf-8-sig, which counts offsets its own way
                    return None, False
                raise DataError([Problem(path, number, None, f"is not valid UTF-8 (byte 0x{raw[e.start]:02x} at "
                                                             f"offset {offset + e.start}); save the file as UTF-8")]) from None
            if not text.strip():
                continue
            value, problem = parse_json(text, path, number)
            if problem is not None:
                chk.problems.append(problem)
                chk.lone_brace = chk.lone_brace or text.strip() == "{"  # a pretty-printed record starts so
                continue
            ex = _example_from_record(chk, value, number, path, system)
            if ex is None:
                continue
            offsets.append(offset)
            lines.append(number)
            if each is not None and not chk.problems:
                each(ex)
            shown.at(offset)
    in_place, each_done = _checked(chk, len(offsets))
    if not in_place:
        return None, each_done
    shown.done(len(offsets))
    return JsonlRows(path, system, offsets, lines, st.st_size, st.st_mtime_ns), True


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
        self._checker: _RowChecker | None = None
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
                self._checker = _RereadChecker(self.path)
                self._rows = _csv_rows(self._checker, self._file, self.delimiter, self.mapping)
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
            raise DataError([Problem(self.path, None, None, f"cannot be read: {e.strerror or e}")]) from None
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


def _scan_csv(path: str, mapping: CsvMapping, each: Callable[[Example], None] | None,
              progress: Callable[[int, int, str], None] | None) -> tuple[CsvRows | None, bool]:
    """:func:`_scan_jsonl` for a delimited file: every row checked as :func:`load_file` checks it, only their
    count kept. A problem with the header or an undecodable byte leaves the file to :func:`load_file`."""
    f = _open_in_place(path)
    if f is None:
        return None, False
    with f:
        st = os.fstat(f.fileno())
        text = io.TextIOWrapper(f, encoding="utf-8-sig", newline="")
        chk = _ScanChecker(path)
        try:
            header = next((line for line in text if line.strip()), "")
            delimiter = mapping.delimiter or csv_delimiter(path, header)
            text.seek(0)
            count, shown = 0, _CheckProgress(path, st.st_size, progress)
            for ex in _csv_rows(chk, text, delimiter, mapping):
                count += 1
                if each is not None and not chk.problems:
                    each(ex)
                shown.at(f.tell())
        except (DataError, UnicodeDecodeError):
            return None, False
        finally:
            text.detach()
    in_place, each_done = _checked(chk, count)
    if not in_place:
        return None, each_done
    shown.done(count)
    return CsvRows(path, delimiter, mapping, count, st.st_size, st.st_mtime_ns), True


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
    if fmt is not None and fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; choose one of {FORMATS}")
    name = str(path)
    rows: Sequence[Example] | None = None
    each_done = False
    if csv_mapping is None and (fmt == "jsonl" or (fmt is None and name.lower().endswith(JSONL_SUFFIXES))):
        rows, each_done = _scan_jsonl(name, each, progress)
    elif fmt == "csv" or (fmt is None and name.lower().endswith(CSV_SUFFIXES)):
        rows, each_done = _scan_csv(name, csv_mapping or CsvMapping(), each, progress)
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


# ----------------------------------------------------------------------------------------------
# comparisons


@dataclass
class Comparison:
    """Two systems' responses to the same inputs: ``pairs[i] = (a, b)``; rows without a partner are
    kept in ``unmatched_a`` / ``unmatched_b`` and shown to the user."""

    system_a: str
    system_b: str
    pairs: list[tuple[Example, Example]]
    unmatched_a: list[Example] = field(default_factory=list)
    unmatched_b: list[Example] = field(default_factory=list)
    aligned_by: str = "id"
    alignment_note: str = ""  # why the rows were paired by context although ids are shared (``alignment_rule``)

    @property
    def a(self) -> list[Example]:
        return [p[0] for p in self.pairs]

    @property
    def b(self) -> list[Example]:
        return [p[1] for p in self.pairs]

    def examples(self) -> list[Example]:
        """All paired examples, A's first then B's (the order metrics score them in)."""
        return self.a + self.b

    def require_pairs(self) -> None:
        """Raise a ValueError that says why when no row could be paired (``compare`` and ``judge`` alike)."""
        if not self.pairs:
            raise ValueError(f"no row of {self.system_a!r} could be paired with a row of {self.system_b!r} (rows pair "
                             "by id when both sides have ids in common, else by context; these share neither)")

    def context_mismatches(self) -> list[str]:
        """Pairs aligned by id whose contexts differ (compared as alignment by context compares them: case and
        spacing ignored), each named by its files, rows and id: ids that number rows (0, 1, 2, ...) pair
        unrelated rows when one file is in another order, and nothing else would show it."""
        if self.aligned_by != "id":
            return []
        return [f"id {a.id!r}: {os.path.basename(a.source)} row {a.row} and {os.path.basename(b.source)} row {b.row} "
                "have different contexts" for a, b in self.pairs if _context_key(a) != _context_key(b)]

    def describe_unmatched(self) -> list[str]:
        out = []
        for side, name, rows in (("A", self.system_a, self.unmatched_a), ("B", self.system_b, self.unmatched_b)):
            for ex in rows:
                out.append(f"system {side} ({name}): {os.path.basename(ex.source)} row {ex.row}, id {ex.id!r} "
                           f"has no partner in the other system")
        return out


def systems_in(examples: Iterable[Example]) -> list[str]:
    """Systems in order of first appearance, with counts available via Counter if needed."""
    return list(dict.fromkeys(ex.system for ex in examples))


def _context_key(ex: Example) -> tuple[str, ...]:
    return tuple(" ".join(t.split()).lower() for t in ex.context)


def _matched_rows(sides: Sequence[Sequence[Example]], keyf) -> dict[tuple[Any, int], list[Example]]:
    """{(key, k): the k-th row of that key in each side} for the keys every side has (a key a side has more
    often than another meets the other's rows in order of appearance)."""
    keyed: list[dict[tuple[Any, int], Example]] = []
    for side in sides:
        seen: Counter = Counter()
        rows = {}
        for ex in side:
            seen[keyf(ex)] += 1
            rows[keyf(ex), seen[keyf(ex)]] = ex
        keyed.append(rows)
    return {k: [rows[k] for rows in keyed] for k in keyed[0] if all(k in rows for rows in keyed[1:])}


def alignment_rule(sides: Sequence[Sequence[Example]]) -> tuple[str, str]:
    """How to pair the rows of several systems: ``("id", "")`` when every row has an id and some id is shared by
    all sides, unless pairing by context pairs more rows unambiguously (a context each side answered once) than
    pairing by id pairs rows whose contexts agree (ids that number rows, or one id shared by accident): then
    ``("context", why)``; else ``("context", "")``. A context answered several times pairs by order of
    appearance, which could pair different dialogues, so it never outvotes the ids. ``compare`` and
    ``leaderboard`` pair by this one rule."""
    id_sets = [{ex.id for ex in side} for side in sides]
    if not all(ex.has_id for side in sides for ex in side) or not set.intersection(*id_sets):
        return "context", ""
    by_id = _matched_rows(sides, lambda ex: ex.id)
    agreeing = sum(len({_context_key(ex) for ex in rows}) == 1 for rows in by_id.values())
    once = [Counter(map(_context_key, side)) for side in sides]
    unambiguous = sum(all(c.get(k) == 1 for c in once[1:]) for k, n in once[0].items() if n == 1)
    if unambiguous > agreeing:
        return "context", (f"ids are shared, but pairing by id gives {len(by_id)} pair(s) of which {agreeing} have "
                           f"the same context, and pairing by context gives {unambiguous} whose context each side "
                           "answered once")
    return "id", ""


ID_MISMATCH_ADVICE = ("if the ids only number the rows, the files pair unrelated rows (give ids that name the inputs, "
                      "or drop them to align by context)")  # after a warning that rows paired by id differ


def alignment_words(aligned_by: str, note: str = "") -> str:
    """'id', 'context', or 'context: why, when ids were shared' for 'N pairs aligned by ...'."""
    return f"{aligned_by}: {note}" if note else aligned_by


def align(a: Sequence[Example], b: Sequence[Example], system_a: str | None = None,
          system_b: str | None = None) -> Comparison:
    """Pair two systems' rows by id or by context (:func:`alignment_rule`: by id when both sides carry ids
    that overlap, unless their contexts pair more rows unambiguously than the ids pair rows that agree).

    Two rows of one system with the same context cannot be paired by context; they are paired in
    order of appearance with the other side's rows of that context (and the surplus is listed)."""
    sa = system_a or (a[0].system if a else "A")
    sb = system_b or (b[0].system if b else "B")
    rule, note = alignment_rule([a, b])
    by_id = rule == "id"
    keyf = (lambda ex: ex.id) if by_id else _context_key
    buckets: dict[Any, list[Example]] = defaultdict(list)
    for ex in b:
        buckets[keyf(ex)].append(ex)
    pairs, un_a = [], []
    for ex in a:
        lst = buckets.get(keyf(ex))
        if lst:
            pairs.append((ex, lst.pop(0)))
        else:
            un_a.append(ex)
    un_b = [ex for lst in buckets.values() for ex in lst]
    un_b.sort(key=lambda e: e.row)
    return Comparison(sa, sb, pairs, un_a, un_b, aligned_by=rule, alignment_note=note)


def compare_systems(examples: Sequence[Example], system_a: str, system_b: str) -> Comparison:
    """One multi-system file: choose two systems and align them (by shared id, else by context)."""
    names = Counter(ex.system for ex in examples)
    missing = [s for s in (system_a, system_b) if s not in names]
    if missing:
        raise DataError([Problem(examples[0].source if examples else "", None, "system",
                                 f"system {s!r} not found; systems are {sorted(names)}") for s in missing])
    if system_a == system_b:
        raise DataError([Problem(examples[0].source, None, "system", "choose two different systems")])
    a = [ex for ex in examples if ex.system == system_a]
    b = [ex for ex in examples if ex.system == system_b]
    return align(a, b, system_a, system_b)


def load_comparison(path_a: str, path_b: str | None = None, system_a: str | None = None,
                    system_b: str | None = None, fmt: str | None = None,
                    csv_mapping: CsvMapping | None = None) -> Comparison:
    """Two files (one system each, or the named system in each), or one multi-system file (its two systems,
    or the ones named; naming one of two picks the other for the other side)."""
    ex_a = load_file(path_a, fmt, csv_mapping=csv_mapping)
    if path_b is None:
        system_a, system_b = chosen_systems(path_a, systems_in(ex_a), system_a, system_b)
        return compare_systems(ex_a, system_a, system_b)
    return pair_files(path_a, ex_a, path_b, load_file(path_b, fmt, csv_mapping=csv_mapping), system_a, system_b)


def chosen_systems(path: str, systems: Sequence[str], system_a: str | None,
                   system_b: str | None) -> tuple[str, str]:
    """The two systems of a multi-system file to compare: both named, or one named and the file's other one,
    or the file's two. A name the file lacks, or a file of more than two systems with fewer than two named,
    is a :class:`DataError`."""
    named = [s for s in (system_a, system_b) if s is not None]
    missing = [s for s in named if s not in systems]
    if missing:
        raise DataError([Problem(path, None, "system", f"system {s!r} not found; systems are {list(systems)}")
                         for s in missing])
    if len(named) == 2:
        return system_a, system_b  # type: ignore[return-value]
    if len(systems) == 1:
        raise DataError([Problem(path, None, "system", f"the file holds one system ({systems[0]!r}); compare it "
                                 "with another system's file (give it as the second input), or give a file "
                                 "holding two or more systems")])
    if len(systems) != 2:
        raise DataError([Problem(path, None, "system", f"the file holds {len(systems)} systems {list(systems)}; "
                                 "name two with --system-a and --system-b")])
    if system_a is not None:
        return system_a, next(s for s in systems if s != system_a)
    if system_b is not None:
        return next(s for s in systems if s != system_b), system_b
    return systems[0], systems[1]


def pair_files(path_a: str, ex_a: list[Example], path_b: str, ex_b: list[Example], system_a: str | None = None,
               system_b: str | None = None) -> Comparison:
    """Two files, one system from each: the named one, else the file's only system (a file of several systems
    must name one: its rows are never merged under one name). When both sides have the same system name (two
    versions of one bot), the comparison tells them apart by file: ``bot (v1.jsonl)`` vs ``bot (v2.jsonl)``."""
    problems: list[Problem] = []
    sides = []
    for path, exs, name, side in ((path_a, ex_a, system_a, "a"), (path_b, ex_b, system_b, "b")):
        try:
            sides.append(one_system(path, exs, name, side))
        except DataError as e:  # both sides' problems in one message
            problems += e.problems
    if problems:
        raise DataError(problems)
    ex_a, ex_b = sides
    comp = align(ex_a, ex_b, system_a, system_b)
    if comp.system_a == comp.system_b:
        label_a, label_b = file_labels([path_a, path_b])
        comp.system_a, comp.system_b = f"{comp.system_a} ({label_a})", f"{comp.system_b} ({label_b})"
    return comp


def one_system(path: str, exs: list[Example], name: str | None, side: str) -> list[Example]:
    """The rows of system ``name`` in a file, or all its rows when it holds one system (``side``: "a" or "b",
    for the message: ``--system-a`` on the command line, ``system_a=`` in Python)."""
    if name is not None:
        return [e for e in exs if e.system == name] or _no_system(path, name, exs)
    systems = systems_in(exs)
    if len(systems) > 1:
        raise DataError([Problem(path, None, "system", f"the file holds {len(systems)} systems {systems}; name the "
                                 f"one to compare with --system-{side} (system_{side}= in Python)")])
    return exs


def file_labels(paths: Sequence[str]) -> list[str]:
    """Short names that tell files apart: the file name, else the path as given, else the position ("file 1",
    "file 2", ...: the same file given twice)."""
    for labels in ([Path(p).name for p in paths], [str(p) for p in paths]):
        if len(set(labels)) == len(labels):
            return labels
    return [f"file {i + 1}" for i in range(len(paths))]


def rows_of_files(files: Sequence[tuple[str, list[Example]]]) -> list[Example]:
    """The rows of several files as one list, for a leaderboard. A system name found in more than one file
    is told apart by file (``bot (v1.jsonl)``, ``bot (v2.jsonl)``), so two runs of one bot are two systems,
    never one system with duplicate rows."""
    seen: dict[str, set[int]] = defaultdict(set)
    for i, (_, exs) in enumerate(files):
        for s in systems_in(exs):
            seen[s].add(i)
    labels = file_labels([p for p, _ in files])
    out: list[Example] = []
    for i, (_, exs) in enumerate(files):
        out += [replace(e, system=f"{e.system} ({labels[i]})") if len(seen[e.system]) > 1 else e for e in exs]
    return out


def _no_system(path: str, name: str, exs: list[Example]) -> list[Example]:
    raise DataError([Problem(path, None, "system", f"system {name!r} not found; systems are {systems_in(exs)}")])


def dimensions(examples: Iterable[Example]) -> list[str]:
    """Human-score dimensions present, in order of first appearance."""
    out: dict[str, None] = {}
    for ex in examples:
        for k in ex.scores:
            out.setdefault(k, None)
    return list(out)
