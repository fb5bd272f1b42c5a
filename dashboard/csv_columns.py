"""The columns of an uploaded CSV / TSV: its header and first records as the loader splits them, a first guess of
which column holds what (response, context, id, system, references, human scores), the context-turn separator, and
a preview of how the first rows were read."""
from __future__ import annotations

import io
import math
from typing import TYPE_CHECKING, Any, Sequence

from core.data import DataError, Example, csv_delimiter, decode_text, detect_format
from dashboard.tables import frame

if TYPE_CHECKING:
    import pandas as pd


def is_delimited(name: str, data: bytes, fmt: str | None = None) -> bool:
    """Whether an upload is read as CSV/TSV (so its columns can be mapped): the format chosen, else the name
    (``.csv``/``.tsv``), else the content as the loader detects it (pasted text is named ``.txt``)."""
    if fmt is not None:
        return fmt == "csv"
    if name.lower().endswith((".csv", ".tsv")):
        return True
    try:
        return detect_format(name, data) == "csv"
    except DataError:
        return False  # the loader will say what is wrong with it


def csv_header(data: bytes, name: str = "") -> list[str]:
    """Column names of an uploaded CSV (for the column-mapping widgets)."""
    return next(iter(csv_rows(data, 0, name)), [])


def csv_rows(data: bytes, n: int = 50, name: str = "") -> list[list[str]]:
    """The header and the first ``n`` records of an uploaded delimited file, split as the loader splits it
    (``core.data.csv_delimiter``: tabs for ``.tsv``, a header's tabs or semicolons when it has no comma)."""
    import csv
    try:
        text = decode_text(name, data)  # as the loader reads it: gzip, byte-order marks
    except DataError:
        text = data.decode("utf-8-sig", errors="replace")  # the loader will say what is wrong with it
    out = []
    for k, row in enumerate(csv.reader(io.StringIO(text, newline=""), delimiter=csv_delimiter(name, text))):
        out.append(row)
        if k >= n:
            break
    return out


# words in a column name that say what it holds (the name is split on _, -, space and case changes)
ROLE_WORDS = {
    "response": ("response", "reply", "hypothesis", "hyp", "output", "generation", "generated", "answer",
                 "prediction", "pred", "completion"),
    "context": ("context", "history", "dialog", "dialogue", "input", "prompt", "query", "utterance", "utt", "post",
                "conversation", "source", "turns"),
    "id": ("id", "idx", "index", "key", "uid"),
    "system": ("system", "model", "bot", "version", "variant", "agent", "engine"),
    "references": ("reference", "references", "ref", "refs", "gold", "target", "truth", "groundtruth", "human"),
}
# names that may say "id" as a column's whole name ("Example" holding q0, q1, ...; "example_reply" is a reply):
# tried only when no column is named for the id, and only on cells that look like ids (:func:`_id_like`)
ID_NAMES = ("example", "item", "no", "row")
NUMBER_WORDS = ("no", "num", "number", "nr", "n")  # with ID_NAMES and the id words: a row number's name ('example_no')


def is_row_number_name(name: str) -> bool:
    """Whether a column's name says it numbers rows: every word of it is an id word, one of ``ID_NAMES`` or a
    word for 'number' ('No', 'row', 'example_no', 'item_number', 'Row #')."""
    words = _name_words(name)
    return bool(words) and all(w in ID_NAMES or w in NUMBER_WORDS or w in ROLE_WORDS["id"] for w in words)


def counts_rows(rows: Sequence[Sequence[str]], column: str, system: str | None) -> bool:
    """Whether ``column``'s cells (``rows[0]`` the header) count rows or items: whole numbers, within each
    system's rows (``system``'s column; the whole file without one) consecutive from 0 or 1 with every number as
    often as the others (once per system; as often as there are systems where the system column is not known
    yet: '1, 1, 2, 2, ...' numbers the items two systems answered), at least 3 numbers each. People's ratings
    rarely do (a 1-5 scale holds 5 values: only rows rated exactly 1, 2, 3, ... equally often would)."""
    header = list(rows[0])
    k, s = header.index(column), header.index(system) if system in header else None
    groups: dict[str, list[float]] = {}
    for r in rows[1:]:
        cell = r[k].strip() if k < len(r) else ""
        if not _is_number(cell) or float(cell) != int(float(cell)):
            return False
        groups.setdefault(r[s] if s is not None and s < len(r) else "", []).append(float(cell))
    def counted(values: list[float]) -> bool:
        start, distinct = min(values), sorted(set(values))
        return (len(distinct) >= 3 and start in (0, 1) and distinct == [start + i for i in range(len(distinct))]
                and len(values) == len(distinct) * values.count(start))
    return bool(groups) and all(counted(v) for v in groups.values())


def _name_words(name: str) -> list[str]:
    import re
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", name)
    return [w for w in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if w]


def _is_number(cell: str) -> bool:
    try:
        return math.isfinite(float(cell))
    except ValueError:
        return False


def numeric_columns(rows: Sequence[Sequence[str]]) -> list[str]:
    """Columns of a CSV (``rows[0]`` the header) whose non-empty cells are all numbers: candidates for
    human scores. A text column is never one."""
    if not rows:
        return []
    header, body = rows[0], rows[1:]
    out = []
    for k, h in enumerate(header):
        cells = [r[k].strip() for r in body if k < len(r) and r[k].strip()]
        if h and cells and all(_is_number(c) for c in cells):
            out.append(h)
    return out


def guess_csv_mapping(header: Sequence[str], rows: Sequence[Sequence[str]] | None = None) -> dict[str, Any]:
    """A first guess of which column is which (the user can change every choice): each role takes the first
    column whose name holds one of its words (``ROLE_WORDS``; 'bot_reply' is a response, 'history' a context,
    'example_id' an id, 'bot_version' a system, 'gold' a reference), each column at most one role; where no
    column is named for the id, one named just 'Example', 'Item', 'No' or 'Row' (``ID_NAMES``) whose cells look
    like ids (``rows`` needed). Human-score
    columns are only columns whose cells are all numbers (``rows``: the header and some records; without
    them no score column is guessed). A role nothing matches stays None: the user must choose it."""
    taken: set[str] = set()
    guess: dict[str, Any] = {}
    numeric = numeric_columns(rows) if rows else []
    for role in ("id", "response", "context", "references", "system"):
        pick = None
        for exact in (True, False):  # a column named exactly like the role wins over one that contains a word
            for h in header:
                words = _name_words(h)
                if h in taken or not words or (role in ("response", "context", "references") and h in numeric):
                    continue
                hit = (h.lower() in ROLE_WORDS[role]) if exact else any(w in ROLE_WORDS[role] for w in words)
                if hit and not (role == "id" and not exact and words[-1] not in ROLE_WORDS["id"]):
                    pick = h
                    break
            if pick:
                break
        guess[role] = pick
        if pick:
            taken.add(pick)
    if guess["id"] is None and rows:  # a spreadsheet's 'Example' or 'No' column, where its cells look like ids
        guess["id"] = next((h for h in header if h not in taken and is_row_number_name(h)
                            and _id_like(rows, h, guess["system"])), None)
    # a row number is never a human score: by its name, or by its cells (1, 2, 3, ... within each system)
    guess["scores"] = [h for h in numeric
                       if h not in taken and h != guess["id"] and not is_row_number_name(h)
                       and not counts_rows(rows, h, guess["system"])]
    return guess


def _id_like(rows: Sequence[Sequence[str]], column: str, system: str | None) -> bool:
    """Whether the cells of ``column`` (``rows[0]`` the header) could be ids: every one non-empty, without spaces,
    and none repeated within a system (``system``'s column; the whole file without one)."""
    header = list(rows[0])
    k, s = header.index(column), header.index(system) if system in header else None
    seen = set()
    for r in rows[1:]:
        cell = r[k].strip() if k < len(r) else ""
        key = (r[s] if s is not None and s < len(r) else "", cell)
        if not cell or any(c.isspace() for c in cell) or key in seen:
            return False
        seen.add(key)
    return len(rows) > 1


SEPARATORS = {"newline": "\n", "|||": "|||", "__eou__": "__eou__", "|": "|", "tab": "\t"}


def guess_separator(cells: Sequence[str]) -> str:
    """The context-turn separator the cells use: '|||' or '__eou__' when any non-empty cell contains it (no
    sentence holds them; a file whose contexts are mostly one turn has them in a few cells only), else a newline,
    a tab or '|' when at least half of the cells contain it (tried in that order), else a newline (a cell
    without one is one turn)."""
    cells = [c for c in cells if c and c.strip()]
    for sep in ("|||", "__eou__"):
        if any(sep in c for c in cells):
            return sep
    for sep in ("\n", "\t", "|"):
        if cells and sum(sep in c for c in cells) >= max(1, (len(cells) + 1) // 2):
            return sep
    return "\n"


def csv_preview(examples: Sequence[Example], n: int = 3) -> pd.DataFrame:
    """The first ``n`` parsed rows as the loader read them: how many turns each context split into."""
    rows = [{"row": e.row, "system": e.system, "id": e.id, "turns": len(e.context),
             "context (turns split)": " ⏎ ".join(e.context), "response": e.response,
             "references": " | ".join(e.references)} for e in list(examples)[:n]]
    return frame(rows)
