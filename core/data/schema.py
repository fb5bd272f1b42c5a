"""The schema every input format is read into: a rated response (:class:`Example`), a problem found in an input
(:class:`Problem`, with its file, row and field) and the error that lists them all (:class:`DataError`), what a
list of examples holds (:func:`systems_in`, :func:`dimensions`), and a context turn as contexts are matched
(:func:`context_key`)."""
from __future__ import annotations

import os
import unicodedata
from dataclasses import dataclass, field
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
    misnamed: tuple[tuple[str, str], ...] = ()  # (key, the field it likely means): fields misnamed, not read
    label: Any = None  # a row given in memory: the caller's pandas index label, where it is not the row's position

    @property
    def utterance(self) -> str:
        return self.context[-1] if self.context else ""

    @property
    def reference(self) -> str:
        return self.references[0] if self.references else ""

    @property
    def location(self) -> str:
        """Where the row came from, as a user finds it: ``file.jsonl row 3`` (``item 3`` without a file, ``item 3
        [index label 40]`` where the caller's pandas index labels it otherwise)."""
        if self.source:
            return f"{os.path.basename(self.source)} row {self.row}"
        if self.label is not None:
            return f"item {self.row} [index label {self.label!r}]"
        return f"item {self.row or self.id}"

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

    SHOWN = 50  # lines listed; the same problem on more than GROUPED rows of one file is one line
    GROUPED = 3

    def __init__(self, problems: Sequence[Problem]):
        self.problems = list(problems)
        lines = self.lines()
        shown = "\n".join(f"  - {line}" for line in lines[:self.SHOWN])
        more = f"\n  ... and {len(lines) - self.SHOWN} more" if len(lines) > self.SHOWN else ""
        super().__init__(f"{len(self.problems)} problem(s) in the input:\n{shown}{more}")

    def grouped(self) -> list[tuple[Problem, str]]:
        """Each problem with its rows in words ("3", or "1, 2, 3 and 17 more"), in order, the same problem (file,
        field, message) on more than :attr:`GROUPED` rows given once where it first comes (a file in another shape
        gave 20 identical lines); '' for a problem of no row."""
        same: dict[tuple[str, str | None, str], list[int]] = {}
        for p in self.problems:
            if p.row is not None:
                same.setdefault((p.file, p.field, p.message), []).append(p.row)
        out, said = [], set()
        for p in self.problems:
            key = (p.file, p.field, p.message)
            rows = same.get(key, []) if p.row is not None else []
            if len(rows) <= self.GROUPED:
                out.append((p, "" if p.row is None else str(p.row)))
            elif key not in said:
                said.add(key)
                out.append((p, ", ".join(map(str, rows[:self.GROUPED])) + f" and {len(rows) - self.GROUPED} more"))
        return out

    def lines(self) -> list[str]:
        """:meth:`grouped` as the lines the message lists: "f.jsonl, rows 1, 2, 3 and 17 more, field 'context': ..."."""
        out = []
        for p, rows in self.grouped():
            if rows in ("", str(p.row)):  # one row, or none: as the problem says itself
                out.append(str(p))
                continue
            where = os.path.basename(p.file) if p.file else "<input>"
            out.append(f"{where}, rows {rows}" + (f", field '{p.field}'" if p.field else "") + f": {p.message}")
        return out

    def __reduce__(self):
        """Pickled with its problems (a Ray worker's error reaches the driver as the same message)."""
        return (type(self), (self.problems,))


def turn_key(turn: str) -> str:
    """A context turn as two rows' contexts are matched (:func:`context_key`): its words in Unicode's composed
    form (NFC: 'é' typed as one character or as 'e' and an accent, as macOS writes it, is one), spacing and case
    aside."""
    return unicodedata.normalize("NFC", " ".join(turn.split())).lower()


def context_key(turns: Sequence[str]) -> tuple[str, ...]:
    """A context as every surface matches it (``compare`` and the leaderboard pairing by context, the mismatch
    check, the resampling unit of every interval): each turn's :func:`turn_key`, blank turns left out (a file
    that ends every context with an empty turn answers the same inputs)."""
    return tuple(k for t in turns if (k := turn_key(t)))


def systems_in(examples: Iterable[Example]) -> list[str]:
    """Systems in order of first appearance, with counts available via Counter if needed."""
    return list(dict.fromkeys(ex.system for ex in examples))


def case_blind_name(wanted: str, names: Iterable[str]) -> str | None:
    """``wanted`` as ``names`` spell it: itself when present, else the one name equal to it but for case
    ('overall' finds 'Overall'); None when none is, or when several differ from it only in case (ambiguous). The
    gate's ``human:DIM`` criterion, the leaderboard's ``--rank-by`` and ``core.system_eval``'s dimension look names
    up so."""
    names = list(names)
    if wanted in names:
        return wanted
    alike = [n for n in dict.fromkeys(names) if n.casefold() == wanted.casefold()]
    return alike[0] if len(alike) == 1 else None


def look_alike(name: str) -> str:
    """``name`` as a reader sees it: Unicode's compatibility form (NFKC: an accent typed as one character or as a
    letter and a combining mark), its runs of white space as one space and none around it, case folded. Two system names equal so print alike
    but are two systems."""
    import unicodedata
    return " ".join(unicodedata.normalize("NFKC", name).split()).casefold()


def system_not_found(name: str, systems: Iterable[str]) -> str:
    """"system 'Alpha' not found (did you mean 'alpha'?); systems are ['alpha', 'beta']": the one message of a
    system a file lacks, with the one name it looks like (:func:`look_alike`) when there is one."""
    systems = list(systems)
    return f"system {name!r} not found{meant_system(name, systems)}; systems are {systems}"


def meant_system(name: str, systems: Iterable[str]) -> str:
    """" (did you mean 'alpha'?)" when exactly one of ``systems`` prints like ``name`` (:func:`look_alike`), else
    ''."""
    alike = [s for s in systems if look_alike(s) == look_alike(name)]
    return f" (did you mean {alike[0]!r}?)" if len(alike) == 1 else ""


def dimensions(examples: Iterable[Example]) -> list[str]:
    """Human-score dimensions present, in order of first appearance."""
    out: dict[str, None] = {}
    for ex in examples:
        for k in ex.scores:
            out.setdefault(k, None)
    return list(out)
