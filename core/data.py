"""One schema for a rated dialogue example, loaders for every supported input format, and alignment
of two systems into a comparison.

Every problem in an input file is reported with the file, the row (1-based line number for JSONL and
CSV, 1-based record number for JSON lists / column dictionaries) and the field. Loaders collect all
problems of a file before raising, so a user fixes a broken upload in one round. Nothing is silently
dropped: rows without a partner in a comparison are listed in ``Comparison.unmatched_a/_b``.
"""
from __future__ import annotations

import csv
import io
import json
import math
import os
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

FORMATS = ("jsonl", "dstc10", "columns", "csv")


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


# ----------------------------------------------------------------------------------------------
# field validation shared by every format


class _RowChecker:
    """Collects problems while converting raw records to ``Example``s."""

    def __init__(self, file: str):
        self.file = file
        self.problems: list[Problem] = []

    def add(self, row: int | None, fld: str | None, message: str) -> None:
        self.problems.append(Problem(self.file, row, fld, message))

    def text(self, value: Any, row: int, fld: str, required: bool = True) -> str | None:
        if value is None:
            if required:
                self.add(row, fld, "is missing")
            return None
        if not isinstance(value, str):
            self.add(row, fld, f"must be a string, got {type(value).__name__} {_short(value)}")
            return None
        return value

    def text_list(self, value: Any, row: int, fld: str, sep: str | None = None) -> list[str] | None:
        if value is None:
            return []
        if isinstance(value, str):
            if sep is not None:
                return [t for t in value.split(sep)] if value != "" else []
            return [value]
        if isinstance(value, list):
            bad = [i for i, v in enumerate(value) if not isinstance(v, str)]
            if bad:
                self.add(row, fld, f"item {bad[0]} must be a string, got {type(value[bad[0]]).__name__}")
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
            num = self.number(v, row, f"{fld}.{dim}")
            if num is None:
                ok = False
            else:
                out[str(dim)] = num
        return out if ok else None

    def number(self, v: Any, row: int, fld: str) -> float | None:
        if isinstance(v, bool) or v is None:
            self.add(row, fld, f"must be a number, got {_short(v)}")
            return None
        if isinstance(v, (int, float)):
            num = float(v)
        elif isinstance(v, str):
            try:
                num = float(v.strip())
            except ValueError:
                self.add(row, fld, f"is not numeric: {_short(v)}")
                return None
        elif isinstance(v, list):  # raw ratings: mean of the annotators
            vals = [self.number(x, row, fld) for x in v]
            if any(x is None for x in vals):
                return None
            if not vals:
                self.add(row, fld, "is an empty list of ratings")
                return None
            num = sum(vals) / len(vals)  # type: ignore[arg-type]
        else:
            self.add(row, fld, f"must be a number, got {type(v).__name__}")
            return None
        if not math.isfinite(num):
            self.add(row, fld, f"must be a finite number, got {v!r}")
            return None
        return num


def _short(v: Any, n: int = 40) -> str:
    s = repr(v)
    return s if len(s) <= n else s[: n - 3] + "..."


def read_text(path: str | os.PathLike, data: bytes | None = None) -> str:
    """Read a file strictly as UTF-8, naming the line of the first undecodable byte."""
    name = str(path)
    if data is None:
        try:
            data = Path(path).read_bytes()
        except FileNotFoundError:
            raise DataError([Problem(name, None, None, "file not found")]) from None
        except IsADirectoryError:
            raise DataError([Problem(name, None, None, "is a directory, not a file")]) from None
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise DataError([Problem(name, line, None,
                                 f"is not valid UTF-8 (byte 0x{data[e.start]:02x} at offset {e.start}); "
                                 "save the file as UTF-8")]) from None
    if not text.strip():
        raise DataError([Problem(name, None, None, "is empty")])
    return text


def _finish(checker: _RowChecker, examples: list[Example]) -> list[Example]:
    # duplicate ids within one system are ambiguous for alignment
    seen: dict[tuple[str, str], int] = {}
    for ex in examples:
        if not ex.has_id:
            continue
        key = (ex.system, ex.id)
        if key in seen:
            checker.add(ex.row, "id", f"duplicate id {ex.id!r} for system {ex.system!r} (first at row {seen[key]})")
        else:
            seen[key] = ex.row
    if checker.problems:
        raise DataError(checker.problems)
    if not examples:
        raise DataError([Problem(checker.file, None, None, "contains no examples")])
    return examples


def _default_system(path: str) -> str:
    return Path(path).stem if path else "system"


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
    refs = chk.text_list(rec.get("references", rec.get("reference")), row, "references")
    scores = chk.scores(rec.get("scores"), row)
    rid = rec.get("id")
    if rid is not None and not isinstance(rid, (str, int)):
        chk.add(row, "id", f"must be a string or integer, got {type(rid).__name__}")
    system = rec.get("system", default_system)
    if not isinstance(system, str):
        chk.add(row, "system", f"must be a string, got {type(system).__name__}")
    if len(chk.problems) > n_before:
        return None
    return Example(id=str(rid) if rid is not None else f"row{row}", system=system, context=context or [],
                   response=response or "", references=refs or [], scores=scores or {},
                   dataset=str(rec.get("dataset", "")), source=path, row=row, has_id=rid is not None,
                   meta=row_metadata(rec))


RECORD_FIELDS = ("id", "system", "context", "response", "references", "reference", "scores", "dataset", "ratings")


def row_metadata(rec: dict[str, Any]) -> dict[str, str]:
    """The plain (string, number, boolean) fields of an input row beyond the schema's, as text: metadata a
    comparison can be sliced by (a topic, a user group, a bot version)."""
    return {str(k): str(v) for k, v in rec.items()
            if k not in RECORD_FIELDS and isinstance(v, (str, int, float, bool))}


def load_jsonl(path: str | os.PathLike, data: bytes | None = None, system: str | None = None) -> list[Example]:
    """Our JSONL: one object per line with ``context`` (list or "\\n"-joined string), ``response``,
    optional ``id``, ``system``, ``references``, ``scores`` {dimension: number}, ``dataset``."""
    path = str(path)
    text = read_text(path, data)
    chk = _RowChecker(path)
    out: list[Example] = []
    for i, rec in iter_json_lines(path, text, chk.problems):
        ex = _example_from_record(chk, rec, i, path, system or _default_system(path))
        if ex:
            out.append(ex)
    return _finish(chk, out)


def iter_json_lines(path: str, text: str, problems: list[Problem]) -> Iterable[tuple[int, Any]]:
    """(1-based line number, parsed object) for each non-blank line; a malformed line becomes a Problem."""
    for i, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield i, json.loads(line)
        except json.JSONDecodeError as e:
            problems.append(Problem(path, i, None, json_problem(e)))


def _load_json(path: str, data: bytes | None) -> Any:
    text = read_text(path, data)
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise DataError([Problem(path, e.lineno, None, json_problem(e))]) from None


def json_problem(e: json.JSONDecodeError) -> str:
    """A JSON syntax error in words: 'malformed JSON (Expecting ',' delimiter at column 12)'. Some of the
    decoder's messages already end in 'at' ('Unterminated string starting at'), which must not double it."""
    where = f"column {e.colno}" if e.msg.endswith(" at") else f"at column {e.colno}"
    return f"malformed JSON ({e.msg} {where})"


def load_dstc10(path: str | os.PathLike, data: bytes | None = None) -> list[Example]:
    """DSTC10 Track 5 JSON: a list of ``{dialogue_id, model, context: "turns\\n...", response,
    reference: [...], annotations: {dim: [ratings]}}``; scores are the mean rating per dimension.
    Rows are numbered 1-based in list order. ``dialogue_id`` is shared by the systems answering one
    context, so it is the alignment key."""
    path = str(path)
    recs = _load_json(path, data)
    chk = _RowChecker(path)
    if not isinstance(recs, list):
        raise DataError([Problem(path, None, None, "DSTC10 format must be a JSON list of objects")])
    out = []
    for i, rec in enumerate(recs, start=1):
        if not isinstance(rec, dict):
            chk.add(i, None, f"must be a JSON object, got {type(rec).__name__}")
            continue
        mapped = {"id": rec.get("dialogue_id"), "system": rec.get("model", _default_system(path)),
                  "context": rec.get("context"), "response": rec.get("response"),
                  "references": rec.get("reference", rec.get("references")),
                  "scores": rec.get("annotations", rec.get("scores"))}
        ex = _example_from_record(chk, mapped, i, path, _default_system(path))
        if ex:
            out.append(ex)
    return _finish(chk, out)


def load_columns(path: str | os.PathLike, data: bytes | None = None) -> list[Example]:
    """Column-dictionary JSON: ``{contexts: [[turns]], responses: [...], references: [[...]],
    models: [...], scores: [{dim: "3.2", ...}]}``, all lists of equal length (row i = item i)."""
    path = str(path)
    obj = _load_json(path, data)
    if not isinstance(obj, dict):
        raise DataError([Problem(path, None, None, "column format must be a JSON object of lists")])
    chk = _RowChecker(path)
    for required in ("contexts", "responses"):
        if required not in obj:
            chk.add(None, required, "column is missing")
    cols = {k: v for k, v in obj.items() if k in ("contexts", "responses", "references", "models", "scores", "ids")}
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


@dataclass
class CsvMapping:
    """Which CSV column holds which field. ``scores`` lists the human-score columns (dimension =
    column name). ``context_sep`` splits the context string into turns; ``reference_sep`` splits
    several references in one cell."""

    response: str = "response"
    context: str = "context"
    id: str | None = "id"
    system: str | None = "system"
    references: str | None = "reference"
    scores: list[str] | None = None
    context_sep: str = "\n"
    reference_sep: str = "|||"


def load_csv(path: str | os.PathLike, data: bytes | None = None, mapping: CsvMapping | None = None) -> list[Example]:
    path = str(path)
    m = mapping or CsvMapping()
    text = read_text(path, data)
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = reader.fieldnames or []
    chk = _RowChecker(path)
    for need, col in (("response", m.response), ("context", m.context)):
        if col not in header:
            chk.add(1, col, f"column for {need} not found; columns are {header}")
    for col in m.scores or []:
        if col not in header:
            chk.add(1, col, f"score column not found; columns are {header}")
    if chk.problems:
        raise DataError(chk.problems)
    optional = {k: (c if c in header else None) for k, c in (("id", m.id), ("system", m.system),
                                                              ("references", m.references))}
    score_cols = m.scores if m.scores is not None else []
    mapped_cols = {m.response, m.context, *optional.values(), *score_cols}  # the rest becomes metadata
    out = []
    for rec in reader:
        row = reader.line_num  # physical line of the record's end: what a spreadsheet user sees
        if None in rec:
            chk.add(row, None, f"has {len(rec[None]) + len(header)} cells but the header has {len(header)}")
            continue
        refs_cell = rec[optional["references"]] if optional["references"] else None
        mapped = {"id": (rec[optional["id"]] or None) if optional["id"] else None,
                  "system": rec[optional["system"]] if optional["system"] else _default_system(path),
                  "context": rec[m.context], "response": rec[m.response],
                  "references": [r.strip() for r in refs_cell.split(m.reference_sep) if r.strip()] if refs_cell else [],
                  "scores": {c: rec[c] for c in score_cols},
                  **{c: rec[c] for c in header if c not in mapped_cols and c not in RECORD_FIELDS}}
        if any(v is None for k, v in mapped.items() if k in ("context", "response")):
            chk.add(row, None, "has fewer cells than the header")
            continue
        ex = _example_from_record(chk, mapped, row, path, _default_system(path), context_sep=m.context_sep)
        if ex:
            out.append(ex)
    return _finish(chk, out)


def detect_format(path: str | os.PathLike, data: bytes | None = None) -> str:
    """Guess the format from the extension, then from the first non-blank character."""
    name = str(path).lower()
    if name.endswith(".csv") or name.endswith(".tsv"):
        return "csv"
    if name.endswith(".jsonl"):
        return "jsonl"
    head = (data if data is not None else Path(path).read_bytes()[:4096]).lstrip()[:1]
    if head == b"[":
        return "dstc10"
    if head == b"{":
        # a whole-file object with column lists, or JSONL whose first line is an object
        blob = data if data is not None else Path(path).read_bytes()
        try:
            obj = json.loads(blob.decode("utf-8", errors="replace"))
            return "columns" if isinstance(obj, dict) and "responses" in obj else "jsonl"
        except json.JSONDecodeError:
            return "jsonl"
    return "jsonl"


def load_file(path: str | os.PathLike, fmt: str | None = None, data: bytes | None = None,
              csv_mapping: CsvMapping | None = None) -> list[Example]:
    """Load any supported file (``fmt`` in ``FORMATS`` or None to detect). ``data`` lets an upload pass
    bytes with its original file name in ``path``."""
    if data is None and not Path(path).exists():
        raise DataError([Problem(str(path), None, None, "file not found")])
    fmt = fmt or detect_format(path, data)
    if fmt == "jsonl":
        return load_jsonl(path, data)
    if fmt == "dstc10":
        return load_dstc10(path, data)
    if fmt == "columns":
        return load_columns(path, data)
    if fmt == "csv":
        return load_csv(path, data, csv_mapping)
    raise ValueError(f"unknown format {fmt!r}; choose one of {FORMATS}")


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

    @property
    def a(self) -> list[Example]:
        return [p[0] for p in self.pairs]

    @property
    def b(self) -> list[Example]:
        return [p[1] for p in self.pairs]

    def examples(self) -> list[Example]:
        """All paired examples, A's first then B's (the order metrics score them in)."""
        return self.a + self.b

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


def align(a: Sequence[Example], b: Sequence[Example], system_a: str | None = None,
          system_b: str | None = None) -> Comparison:
    """Pair two systems' rows by id when both sides carry ids that overlap, else by context.

    Two rows of one system with the same context cannot be paired by context; they are paired in
    order of appearance with the other side's rows of that context (and the surplus is listed)."""
    sa = system_a or (a[0].system if a else "A")
    sb = system_b or (b[0].system if b else "B")
    ids_a = {ex.id for ex in a if ex.has_id}
    ids_b = {ex.id for ex in b if ex.has_id}
    by_id = bool(ids_a & ids_b) and all(ex.has_id for ex in list(a) + list(b))
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
    return Comparison(sa, sb, pairs, un_a, un_b, aligned_by="id" if by_id else "context")


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
                    system_b: str | None = None, fmt: str | None = None) -> Comparison:
    """Two files (one system each, or the named system in each), or one multi-system file."""
    ex_a = load_file(path_a, fmt)
    if path_b is None:
        systems = systems_in(ex_a)
        if system_a is None or system_b is None:
            if len(systems) != 2:
                raise DataError([Problem(path_a, None, "system",
                                         f"the file holds {len(systems)} systems {systems}; name two with "
                                         "--system-a and --system-b")])
            system_a, system_b = systems
        return compare_systems(ex_a, system_a, system_b)
    ex_b = load_file(path_b, fmt)
    if system_a:
        ex_a = [e for e in ex_a if e.system == system_a] or _no_system(path_a, system_a, ex_a)
    if system_b:
        ex_b = [e for e in ex_b if e.system == system_b] or _no_system(path_b, system_b, ex_b)
    return align(ex_a, ex_b, system_a, system_b)


def _no_system(path: str, name: str, exs: list[Example]) -> list[Example]:
    raise DataError([Problem(path, None, "system", f"system {name!r} not found; systems are {systems_in(exs)}")])


def dimensions(examples: Iterable[Example]) -> list[str]:
    """Human-score dimensions present, in order of first appearance."""
    out: dict[str, None] = {}
    for ex in examples:
        for k in ex.scores:
            out.setdefault(k, None)
    return list(out)
