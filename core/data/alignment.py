"""Pairing two systems' rows into a :class:`Comparison`: by shared id or by shared context (:func:`alignment_rule`,
the one rule ``compare`` and ``leaderboard`` pair by), from one multi-system file or two files (:func:`load_comparison`,
:func:`pair_files`), with systems of the same name told apart by file (:func:`file_labels`, :func:`rows_of_files`).
Nothing is silently dropped: rows without a partner are kept in ``Comparison.unmatched_a/_b``."""
from __future__ import annotations

import os
from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Sequence

from core.data.decoding import without_gz
from core.data.delimited import CsvMapping, csv_delimiter
from core.data.reading import load_file
from core.data.schema import DataError, Example, Problem, context_key, system_not_found, systems_in


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
    alignment_note: str = ""  # why paired by context although ids are shared (``alignment_rule``); repeated contexts
    shared_references: dict[str, int] = field(default_factory=dict)  # per side: rows given the other's references

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
        """Each row without a partner, where it is and why: by id, its id is not the other system's; by context,
        the other system never answered its context, or answered it fewer times (answers pair in order)."""
        out = []
        contexts = {"A": {_context_key(ex) for ex in self.a + self.unmatched_a},
                    "B": {_context_key(ex) for ex in self.b + self.unmatched_b}}
        for side, name, rows in (("A", self.system_a, self.unmatched_a), ("B", self.system_b, self.unmatched_b)):
            other = contexts["B" if side == "A" else "A"]
            for ex in rows:
                where = f"system {side} ({name}): {os.path.basename(ex.source)} row {ex.row}"
                if self.aligned_by == "id":
                    out.append(f"{where}, id {ex.id!r} has no partner in the other system")
                elif _context_key(ex) in other:
                    out.append(f"{where}: its context is answered more often here than by the other system (a "
                               "context's answers pair in order of appearance)")
                else:
                    out.append(f"{where}: its context is not answered by the other system")
        return out


def _context_key(ex: Example) -> tuple[str, ...]:
    """A row's context as pairing and the mismatch check read it (:func:`core.data.schema.context_key`)."""
    return context_key(ex.context)


def repeated_contexts_words(n: int, side: str = "a side") -> str:
    """'2 contexts appear more than once on a side, so their rows are paired in file order'."""
    return (f"{n} context{'s' * (n != 1)} appear{'s' * (n == 1)} more than once on {side}, so their rows are paired "
            "in file order")


def mismatched_pairs_words(n: int, n_pairs: int) -> str:
    """'3 of 12 pairs were aligned by id but have different contexts' ('1 of 12 pairs was ... has ...')."""
    one = n == 1
    return (f"{n} of {n_pairs} pairs {'was' if one else 'were'} aligned by id but {'has' if one else 'have'} "
            "different contexts")


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
    all sides (``("context", why)`` when some rows lack an id and the others share theirs), unless pairing by context pairs more rows unambiguously (a context each side answered once) than
    pairing by id pairs rows whose contexts agree (ids that number rows, or one id shared by accident): then
    ``("context", why)``; else ``("context", "")``. A context answered several times pairs by order of
    appearance, which could pair different dialogues, so it never outvotes the ids. ``compare`` and
    ``leaderboard`` pair by this one rule."""
    id_sets = [{ex.id for ex in side} for side in sides]
    without = [ex for side in sides for ex in side if not ex.has_id]
    total = sum(len(side) for side in sides)
    if without and len(without) < total and set.intersection(*[{ex.id for ex in side if ex.has_id} for side in sides]):
        first = f"{os.path.basename(without[0].source)} row {without[0].row}" if without[0].source else "row " + str(
            without[0].row)
        return "context", (f"{len(without)} of {total} rows {'has' if len(without) == 1 else 'have'} no id ({first}"
                           f"{' and more' if len(without) > 1 else ''}); give every row its id to pair by id")
    if not without and len(sides) == 2 and all(id_sets) and not set.intersection(*id_sets):
        shown = [repr(sorted(ids, key=lambda i: (len(i), i))[0]) for ids in id_sets[:2]]
        return "context", (f"every row has an id, but the sides share none (first ids {shown[0]} and {shown[1]}; "
                           "ids pair only as written: 0 and '000' are two ids)")
    if without or not set.intersection(*id_sets):
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
    if not by_id:  # a context given twice on a side is paired in file order: said, never silently
        repeated = {k for side in (a, b) for k, n in Counter(map(keyf, side)).items() if n > 1}
        if repeated:
            said = repeated_contexts_words(len(repeated))
            note = f"{note}; {said}" if note else said
    pairs, shared = share_references(pairs)
    return Comparison(sa, sb, pairs, un_a, un_b, aligned_by=rule, alignment_note=note, shared_references=shared)


def _has_reference(ex: Example) -> bool:
    return any(r.strip() for r in ex.references)


def _same_text(a: str, b: str) -> bool:
    return " ".join(a.split()).casefold() == " ".join(b.split()).casefold()


def references_for(row: Example, rows: Sequence[Example]) -> list[str] | None:
    """The references ``row`` (which has none) takes from ``rows`` answering the same context: the first row's
    that has references, its blank ones and any that repeat ``row``'s own reply left out (a reply is not scored
    against itself: a file of human replies beside a model's whose references are those replies); None when
    there are none to take."""
    for other in rows:
        if other is not row and _has_reference(other) and _context_key(other) == _context_key(row):
            refs = [r for r in other.references if r.strip() and not _same_text(r, row.response)]
            return refs or None
    return None


def share_references(pairs: Sequence[tuple[Example, Example]]
                     ) -> tuple[list[tuple[Example, Example]], dict[str, int]]:
    """References belong to the context, not to a system: where one row of a pair has references and the other
    none, and their contexts agree, the other row is given the same references (:func:`references_for`), so both
    replies are scored against the same ones (a file without references beside one with them left BLEU and υBLEU
    null on one side and scored BERT-RUBER's and ADEM's reference-free half there, their referenced average on the
    other). Returns the pairs and, per side, how many of its rows took the other side's references."""
    out, shared = [], {"A": 0, "B": 0}
    for a, b in pairs:
        if _has_reference(a) != _has_reference(b):
            side, row = ("B", b) if _has_reference(a) else ("A", a)
            refs = references_for(row, [a, b])
            if refs is not None:
                row = replace(row, references=refs)
                a, b = (a, row) if side == "B" else (row, b)
                shared[side] += 1
        out.append((a, b))
    return out, shared


def compare_systems(examples: Sequence[Example], system_a: str, system_b: str) -> Comparison:
    """One multi-system file: choose two systems and align them (by shared id, else by context)."""
    names = Counter(ex.system for ex in examples)
    missing = [s for s in (system_a, system_b) if s not in names]
    if missing:
        raise DataError([Problem(examples[0].source if examples else "", None, "system",
                                 system_not_found(s, sorted(names))) for s in missing])
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


def _system_column_hint(path: str) -> str:
    """For a CSV or TSV file read as one system: how to name the column that holds each row's system, with its
    columns ('' for other files, or a header that cannot be read)."""
    import csv
    import gzip
    if not without_gz(str(path)).lower().endswith((".csv", ".tsv")):
        return ""
    try:
        with (gzip.open if str(path).lower().endswith(".gz") else open)(path, "rt", encoding="utf-8-sig",
                                                                       newline="") as f:
            first = f.readline()
    except (OSError, UnicodeDecodeError):
        return ""
    columns = [c for c in next(csv.reader([first], delimiter=csv_delimiter(str(path), first)), []) if c.strip()]
    return (f"; if a column names each row's system, map it with --columns system=COLUMN (in Python "
            f"columns={{'system': COLUMN}}); its columns: {', '.join(columns)}" if columns else "")


def chosen_systems(path: str, systems: Sequence[str], system_a: str | None,
                   system_b: str | None) -> tuple[str, str]:
    """The two systems of a multi-system file to compare: both named, or one named and the file's other one,
    or the file's two. A name the file lacks, or a file of more than two systems with fewer than two named,
    is a :class:`DataError`."""
    named = [s for s in (system_a, system_b) if s is not None]
    missing = [s for s in named if s not in systems]
    if missing:
        raise DataError([Problem(path, None, "system", system_not_found(s, systems)) for s in missing])
    if len(named) == 2:
        return system_a, system_b  # type: ignore[return-value]
    if len(systems) == 1:
        raise DataError([Problem(path, None, "system", f"the file holds one system ({systems[0]!r}); compare it "
                                 "with another system's file (give it as the second input), or give a file "
                                 f"holding two or more systems{_system_column_hint(path)}")])
    if len(systems) != 2:
        raise DataError([Problem(path, None, "system", f"the file holds {len(systems)} systems {list(systems)}; "
                                 "name two with --system-a and --system-b (system_a= and system_b= in Python)")])
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
    raise DataError([Problem(path, None, "system", system_not_found(name, systems_in(exs)))])
