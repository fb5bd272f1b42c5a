"""The checks every row of every format passes on its way to an :class:`Example`: text that must be valid Unicode,
lists of turns and references, ratings (a number, a list of annotators' numbers; "not rated" and NaN told apart),
ids claimed once per system (:class:`RowChecker`), a record's fields (:func:`example_from_record`) and the plain
fields kept as metadata (:func:`row_metadata`)."""
from __future__ import annotations

import functools
import math
import re
from pathlib import Path
from typing import Any

from core.data.decoding import bad_unicode_at, split_turns, without_gz
from core.data.schema import DataError, Example, Problem


class RowChecker:
    """Collects problems while converting raw records to ``Example``s."""

    SHOWN_UNNAMED = 100  # rows without a system kept by their number; the rest counted (a one-system file: every row)

    def __init__(self, file: str):
        self.file = file
        self.problems: list[Problem] = []
        self.aliases: dict[str, str] = {}  # schema field -> the name the file uses for it (DSTC10, columns)
        self.ids: dict[tuple[str, str], int] = {}  # (system, id) -> first row, over every row, broken ones too
        self.first_named_system: tuple[int, str] | None = None  # the first row that names its system, and the name
        self.rows_naming_no_system: list[int] = []  # the first rows without a system (or a blank one), at most
        self.naming_no_system = 0  # ... SHOWN_UNNAMED of them kept (a file of one system has every row so): all, counted

    def claim_id(self, system: str, rid: str, row: int, system_key: str | None = None) -> None:
        """Duplicate ids within one system are ambiguous for alignment: the second one is a problem.
        ``system_key``: the row's key that likely names its system where it has no ``system`` (``model``)."""
        first = self.ids.setdefault((system, rid), row)
        if first != row:
            hint = (f"; the rows name no system, so every one is {system!r}: is {system_key!r} the system? name "
                    "that key (or column) 'system'" if system_key else "")
            self.add(row, "id", f"duplicate id {rid!r} for system {system!r} (first at row {first}){hint}")

    def add_systems_missing(self) -> None:
        """Once every row is read: rows that name no system in a file whose other rows name theirs are problems
        (the file's name would make a system of them, and a comparison would leave them out unsaid)."""
        if self.first_named_system is not None and self.naming_no_system:
            first, name = self.first_named_system
            for row in self.rows_naming_no_system:
                self.add(row, "system", f"is missing or blank, where other rows name theirs (row {first}: {name!r});"
                                        " give every row its system, or none (then the file's name is every row's)")
            more = self.naming_no_system - len(self.rows_naming_no_system)
            if more:
                self.add(None, "system", f"is missing or blank in {more} more rows")
        self.first_named_system, self.rows_naming_no_system, self.naming_no_system = None, [], 0  # said once

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
            self.add(row, fld, f"must be a string, got {type(value).__name__} {short_repr(value)}")
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
        seen: dict[str, str] = {}  # casefolded -> as first written: 'Overall' and 'overall' are one dimension
        for dim, v in value.items():
            dim = str(dim)
            if not self.unicode(dim, row, fld):
                ok = False
                continue
            twin = seen.setdefault(dim.strip().casefold(), dim)
            if twin != dim:
                self.add(row, fld, f"names one dimension twice, {twin!r} and {dim!r} (case and spaces aside); keep one")
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
        if is_nan_rating(v):
            self.add(row, fld, f"is NaN (not a number): {short_repr(v)}; {NAN_ADVICE}")
            return None
        if isinstance(v, bool) or v is None:
            self.add(row, fld, f"must be a number, got {short_repr(v)}")
            return None
        try:
            if isinstance(v, (int, float)):
                num = float(v)
            elif isinstance(v, str):
                try:
                    num = float(v.strip())
                except ValueError:
                    self.add(row, fld, f"is not numeric: {short_repr(v)}")
                    return None
            elif isinstance(v, list):  # raw ratings: mean of the annotators (one who did not rate left out)
                nan_at = [i for i, x in enumerate(v) if is_nan_rating(x)]
                if nan_at:
                    self.add(row, fld, f"holds NaN (not a number) as item {nan_at[0]} of its ratings {short_repr(v)}; "
                                       + NAN_ADVICE)
                    return None
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
            self.add(row, fld, f"is too large for a number: {short_repr(v)}")
            return None
        if not math.isfinite(num):
            self.add(row, fld, f"must be a finite number, got {short_repr(v)}")
            return None
        return num


NO_RATING_TEXTS = frozenset({"", "#N/A", "#N/A N/A", "#NA", "<NA>", "N/A", "NA", "NULL", "None", "n/a", "null"})
"""Rating texts that mean "not rated": pandas' ``read_csv`` default NA values (a blank cell among them) but its
NaN spellings (:data:`NAN_TEXTS`), which are refused."""

NAN_TEXTS = frozenset({"nan", "-nan", "+nan", "1.#ind", "-1.#ind", "1.#qnan", "-1.#qnan"})
"""Rating texts (compared case-blind) that spell NaN: Python's and C's ``nan`` and MSVC's ``1.#IND``/``1.#QNAN``."""

NAN_ADVICE = ("a rating must be a finite number; where this row was not rated, leave the rating out (null, or a "
              "blank CSV cell)")
"""What a NaN rating's problem tells the user to do instead (docs/inputs.md says why NaN is refused)."""


def is_nan_rating(v: Any) -> bool:
    """A rating that is NaN: the float, or a text that spells it (:data:`NAN_TEXTS`). NaN is what a failed
    computation leaves (a mean of nothing, 0/0, a cell that did not parse), so it cannot be told from a lost
    rating: it is refused with its file, row and field, never read as "not rated" (null, a blank cell or a
    missing key say that)."""
    return (isinstance(v, float) and math.isnan(v)) or (isinstance(v, str) and v.strip().casefold() in NAN_TEXTS)


def is_no_rating(v: Any) -> bool:
    """A rating that says "not rated": null (pandas' ``to_json`` writes a missing value so), a text pandas reads
    as NA (blank, "NA", "N/A", "null", ..., :data:`NO_RATING_TEXTS`) or a list of annotators' ratings none of
    whom rated (empty, or nulls only); in a list with ratings, the nulls are left out of the mean. NaN is not
    "not rated" (:func:`is_nan_rating`)."""
    return (v is None
            or (isinstance(v, str) and v.strip() in NO_RATING_TEXTS)
            or (isinstance(v, list) and all(not isinstance(x, list) and is_no_rating(x) for x in v)))


def short_repr(v: Any, n: int = 40) -> str:
    """``v`` as a problem quotes it: its repr cut to ``n`` characters (a huge integer by its number of digits)."""
    s = repr(v) if not isinstance(v, int) or isinstance(v, bool) or abs(v) < 10 ** 30 else f"<{len(str(abs(v)))}-digit int>"
    return s if len(s) <= n else s[: n - 3] + "..."


def finish_rows(checker: RowChecker, examples: list[Example]) -> list[Example]:
    """The examples of a whole file, or a :class:`DataError` with every problem the checks found (or none read),
    :meth:`RowChecker.add_systems_missing` among them."""
    checker.add_systems_missing()
    if checker.problems:
        raise DataError(checker.problems)
    if not examples:
        raise DataError([Problem(checker.file, None, None, "contains no examples")])
    return examples


def default_system(path: str) -> str:
    """The system name of rows that give none: the file's name without its extensions (``.gz`` looked through)."""
    return Path(without_gz(path)).stem if path else "system"


def example_from_record(chk: RowChecker, rec: Any, row: int, path: str, fallback_system: str,
                        context_sep: str | None = None) -> Example | None:
    """The :class:`Example` of one record (a JSON object, or a CSV row or column item mapped to the JSON Lines
    fields), or ``None`` with every problem of its fields added to ``chk``; ``fallback_system`` names a record that
    names no system."""
    if not isinstance(rec, dict):
        chk.add(row, None, f"must be a JSON object, got {type(rec).__name__}")
        return None
    n_before = len(chk.problems)
    if "response" in rec and rec["response"] is None:  # null, as pandas' to_json writes a missing value: blank,
        response = ""                                    # as the empty cell of the same frame's to_csv
    elif rec.get("response") is None:
        chk.add(row, "response", missing_words(rec, "response"))
        response = None
    else:
        response = chk.text(rec.get("response"), row, "response")
    ctx_raw = rec.get("context")
    if ctx_raw is None:
        chk.add(row, "context", missing_words(rec, "context"))
        context = None
    else:
        ctx_raw = chat_turns(ctx_raw)
        context = chk.text_list(ctx_raw, row, "context", sep=context_sep if context_sep is not None else "\n")
        if context is not None and not any(t.strip() for t in context):
            chk.add(row, "context", "is empty: give at least the input utterance (the last turn)")
    if "references" in rec and "reference" in rec:  # one would be read and the other ignored
        chk.add(row, "references", BOTH_REFERENCE_KEYS)
    refs = chk.text_list(rec.get("references", rec.get("reference")), row, "references")
    scores = chk.scores(rec.get("scores"), row)
    rid = rec.get("id")
    id_ok = rid is not None
    if rid is not None and (isinstance(rid, bool) or not isinstance(rid, (str, int))):
        chk.add(row, "id", f"must be a string or integer, got {type(rid).__name__} {short_repr(rid)}")
        id_ok = False
    elif isinstance(rid, str):
        id_ok = chk.unicode(rid, row, "id")
    system = rec.get("system", fallback_system)
    if "system" not in rec or isinstance(system, str) and not system.strip():  # a CSV's blank cell too
        system = fallback_system
        chk.naming_no_system += 1
        if len(chk.rows_naming_no_system) < chk.SHOWN_UNNAMED:
            chk.rows_naming_no_system.append(row)
    elif isinstance(system, str) and chk.first_named_system is None:
        chk.first_named_system = (row, system)
    misnamed = misnamed_fields(rec)
    if system is None or not isinstance(system, str):
        chk.add(row, "system", f"must be a string, got {type(system).__name__}")
    elif chk.unicode(system, row, "system") and id_ok:
        system_key = next((k for k, meant in misnamed if meant == "system"), None) if "system" not in rec else None
        chk.claim_id(system, str(rid), row, system_key)
    dataset = chk.text(rec.get("dataset"), row, "dataset", required=False)
    if len(chk.problems) > n_before:
        return None
    return Example(id=str(rid) if rid is not None else f"row{row}", system=system, context=context or [],
                   response=response or "", references=refs or [], scores=scores or {},
                   dataset=dataset or "", source=path, row=row, has_id=rid is not None,
                   meta=row_metadata(rec), misnamed=misnamed)


BOTH_REFERENCE_KEYS = "has both 'references' and 'reference' (one would be read, the other ignored): give one"
CHAT_INSTRUCTIONS = ("system", "developer")  # chat roles whose messages instruct the bot: not turns of a context


def chat_turns(context: Any) -> Any:
    """A context given as chat messages (a list of ``{"role": ..., "content": ...}``) as its turns' texts; a
    system (or developer) prompt instructs the bot and is no turn of the conversation, so no metric or judge
    reads it as one. Anything else is returned as it is."""
    if isinstance(context, list) and context and all(isinstance(t, dict) and "content" in t for t in context):
        return [t["content"] for t in context if t.get("role") not in CHAT_INSTRUCTIONS]
    return context


RECORD_FIELDS = ("id", "system", "context", "response", "references", "reference", "scores", "dataset", "ratings")

# names other tools give the fields dialeval reads: an input row's key by one of these is metadata, said so
FIELD_ALIASES = {"refs": "references", "ref": "references", "gold": "references", "rating": "scores",
                 "score": "scores", "human": "scores", "human_scores": "scores", "reply": "response",
                 "hypothesis": "response", "prediction": "response", "output": "response", "model": "system",
                 "history": "context", "dialogue": "context", "prompt": "context", "messages": "context",
                 "conversation": "context", "turns": "context", "system_name": "system", "model_name": "system"}


SAME_FIELD = {"references": ("references", "reference"), "scores": ("scores", "ratings")}  # either name is the field


def misnamed_fields(rec: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """(key, the field it likely means) for each key of an input row that dialeval does not read and whose name
    looks like a field the row lacks ('refs' without 'references'; 'context_id' beside 'context' is metadata)."""
    found = []
    for k in rec:
        if isinstance(k, str) and k not in RECORD_FIELDS:
            meant = field_suggestion(k)
            if meant is not None and not any(f in rec for f in SAME_FIELD.get(meant, (meant,))):
                found.append((k, meant))
    return tuple(found)


@functools.lru_cache(maxsize=4096)  # a file repeats its keys on every row
def field_suggestion(key: str) -> str | None:
    """The field a row's key most likely means when it is not one dialeval reads ('refs' -> 'references', 'sytem'
    -> 'system'), else None: such a key is kept as metadata to slice by, which a misspelt field should not be
    without a word."""
    import difflib
    k = key.strip().lower()
    if k in RECORD_FIELDS:
        return None if k == key else k  # 'Response' is not 'response'
    if k in FIELD_ALIASES:
        return FIELD_ALIASES[k]
    close = difflib.get_close_matches(k, RECORD_FIELDS, n=1, cutoff=0.8)
    return close[0] if close else None


def missing_words(rec: dict, fld: str) -> str:
    """'is missing', and when the record has a key that looks meant for ``fld`` (a misspelling such as 'responce',
    or another tool's name such as 'reply'), which one: 'is missing (the row has 'responce': did you mean
    'response'?)'."""
    meant = [k for k in rec if isinstance(k, str) and field_suggestion(k) == fld]
    return f"is missing (the row has {meant[0]!r}: did you mean {fld!r}?)" if meant else "is missing"


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


class RereadChecker(RowChecker):
    """The row checks for rows read again after the whole file passed them: ids are not claimed again (the
    check did; a dictionary of every id would grow with the file)."""

    def claim_id(self, system: str, rid: str, row: int, system_key: str | None = None) -> None:
        return None
