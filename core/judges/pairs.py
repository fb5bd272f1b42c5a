"""Preferences between two replies: pairs derived from human ratings, the context split, and votes files.

A :class:`Pair` is one preference (context, reply A, reply B, label: 1 = A preferred, 0 = B, 0.5 = tie).
:func:`preference_pairs` derives them from rated multi-system data: two responses to the same context whose
mean ratings differ by at least the human tie margin (``core.verdict.human_tie_margin``, a quarter of the
scale). Pairs are split **by context** (:func:`context_bucket`: a hash of the normalized last turn, the same
on every machine), so the same utterance never lands in train and test, even across datasets.

Votes file (JSONL, one object per line)::

    {"context": ["turn 1", "turn 2"] | "text", "response_a": "...", "response_b": "...", "vote": "A"|"B"|"tie",
     "id": "optional"}
"""
from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import random
from dataclasses import dataclass, field
from typing import Sequence

from core.data import (Comparison, DataError, Example, Problem, bad_unicode_at, iter_json_lines, read_text,
                       split_turns)
from core.outputs import atomic_open
from core.settings import SEED
from core.verdict import human_preference, human_tie_margin, preference_dimension


@dataclass
class Pair:
    """One preference: ``label`` = 1.0 if A is preferred, 0.0 if B, 0.5 for a tie."""

    context: list[str]
    response_a: str
    response_b: str
    label: float
    dataset: str = ""
    id: str = ""
    score_a: float | None = None
    score_b: float | None = None
    references: list[str] = field(default_factory=list)
    example_a: Example | None = None
    example_b: Example | None = None

    @property
    def vote(self) -> str:
        return "A" if self.label > 0.5 else "B" if self.label < 0.5 else "tie"

    def swapped(self) -> "Pair":
        return Pair(self.context, self.response_b, self.response_a, 1.0 - self.label, self.dataset, self.id,
                    self.score_b, self.score_a, self.references, self.example_b, self.example_a)


def normalize_text(s: str) -> str:
    """Lowercase with whitespace collapsed: how contexts and replies are compared."""
    return " ".join(s.lower().split())


def context_key(context: Sequence[str]) -> str:
    """The split key: the normalized last context turn (the utterance being answered)."""
    return normalize_text(context[-1]) if context else ""


def context_bucket(context: Sequence[str]) -> int:
    """0..9999 from sha1 of the normalized last turn: the same on every machine."""
    return int(hashlib.sha1(context_key(context).encode("utf-8")).hexdigest()[:8], 16) % 10_000


def is_test_context(context: Sequence[str], test_share: float = 0.2) -> bool:
    """Deterministic context split: buckets below ``test_share`` are test."""
    return context_bucket(context) < test_share * 10_000


def is_val_context(context: Sequence[str], test_share: float = 0.2, val_share: float = 0.1) -> bool:
    """Validation contexts: the ``val_share`` of buckets right above the test ones (never test, never
    trained on when the judge is trained with ``--val-share``)."""
    b = context_bucket(context)
    return test_share * 10_000 <= b < (test_share + val_share) * 10_000


def preference_pairs(examples: Sequence[Example], dimension: str | None = None, margin: float | None = None,
                     include_ties: bool = False, seed: int = SEED) -> list[Pair]:
    """All pairs of responses to the same context (same dataset) with a clear human preference.

    The order of each pair (which response is "A") is drawn with ``seed`` so labels are balanced."""
    dim = dimension or preference_dimension(examples)
    if dim is None:
        return []
    m = margin if margin is not None else human_tie_margin(dim, [ex.scores.get(dim, float("nan")) for ex in examples])
    groups: dict[tuple[str, tuple[str, ...]], list[Example]] = {}
    for ex in examples:
        if dim in ex.scores and ex.scores[dim] is not None and not math.isnan(ex.scores[dim]):
            groups.setdefault((ex.dataset, tuple(normalize_text(t) for t in ex.context)), []).append(ex)
    rng = random.Random(seed)
    out = []
    for (_ds, _ctx), rows in groups.items():
        for x, y in itertools.combinations(rows, 2):
            if normalize_text(x.response) == normalize_text(y.response):
                continue
            v = human_preference(x.scores[dim], y.scores[dim], m)
            if v == "tie" and not include_ties:
                continue
            if rng.random() < 0.5:
                x, y = y, x
            v = human_preference(x.scores[dim], y.scores[dim], m)
            out.append(Pair(list(x.context), x.response, y.response, {"A": 1.0, "B": 0.0, "tie": 0.5}[v],
                            x.dataset, f"{x.id}|{y.id}", x.scores[dim], y.scores[dim],
                            list(x.references), x, y))
    return out


def split_pairs(pairs: Sequence[Pair], test_share: float = 0.2) -> tuple[list[Pair], list[Pair]]:
    """(train, test) by context (see :func:`is_test_context`)."""
    train, test = [], []
    for p in pairs:
        (test if is_test_context(p.context, test_share) else train).append(p)
    return train, test


def load_votes(path: str | os.PathLike, data: bytes | None = None, blank_replies: bool = False) -> list[Pair]:
    """Read a votes JSONL file (format in the module docstring); every problem names its row and field.
    ``blank_replies``: a blank reply is read (the dashboard keeps votes on pairs where a system said nothing);
    by default it is refused, as a vote to train on needs both replies."""
    text = read_text(path, data)
    first = text.lstrip()[:1]
    if first and first not in "{[":
        raise DataError([Problem(str(path), 1, None, "votes are JSON Lines, one object a line: {\"context\": [...], "
                                 "\"response_a\": ..., \"response_b\": ..., \"vote\": \"A\" | \"B\" | \"tie\"} "
                                 "(this file does not start with one; a CSV of votes is not read)")])
    problems: list[Problem] = []
    out = []
    for row, rec in iter_json_lines(str(path), text, problems):
        if not isinstance(rec, dict):
            problems.append(Problem(str(path), row, None, "expected a JSON object"))
            continue
        ctx = rec.get("context")
        if isinstance(ctx, str):
            ctx = split_turns(ctx)  # turns at line ends, as a data file's context string is read
        if (not isinstance(ctx, list) or not ctx or not all(isinstance(t, str) for t in ctx)
                or any(bad_unicode_at(t) is not None for t in ctx) or not any(t.strip() for t in ctx)):
            problems.append(Problem(str(path), row, "context", "must be a string or list of strings with at least "
                                    "one non-blank turn"))
            continue
        bad = False
        for fld in ("response_a", "response_b"):
            if (not isinstance(rec.get(fld), str) or not (rec[fld].strip() or blank_replies)
                    or bad_unicode_at(rec[fld]) is not None):
                problems.append(Problem(str(path), row, fld, "must be a non-empty string of valid Unicode"))
                bad = True
        vote = str(rec.get("vote", "")).strip()
        vote = {"a": "A", "b": "B", "tie": "tie", "t": "tie"}.get(vote.lower(), None)
        if vote is None:
            problems.append(Problem(str(path), row, "vote", f"must be 'A', 'B' or 'tie', got {rec.get('vote')!r}"))
            bad = True
        if bad:
            continue
        out.append(Pair(ctx, rec["response_a"], rec["response_b"], {"A": 1.0, "B": 0.0, "tie": 0.5}[vote],
                        str(rec.get("dataset", "")), str(rec.get("id", f"row{row}"))))
    if problems:
        raise DataError(problems)
    if not out:
        raise DataError([Problem(str(path), None, None, "no votes in the file")])
    return out


def save_votes(pairs: Sequence[Pair], path: str | os.PathLike) -> None:
    with atomic_open(path) as f:
        for p in pairs:
            f.write(json.dumps({"id": p.id, "context": p.context, "response_a": p.response_a,
                                "response_b": p.response_b, "vote": p.vote}, ensure_ascii=False) + "\n")


def votes_from_examples(examples: Sequence[Example], dimension: str | None = None, margin: float | None = None,
                        include_ties: bool = False, seed: int = SEED) -> list[Pair]:
    """Votes derived from a rated multi-system file (the clear-margin pairs of :func:`preference_pairs`)."""
    return preference_pairs(examples, dimension, margin, include_ties, seed)


def _whole_context(context: Sequence[str]) -> tuple[str, ...]:
    """A vote's or a pair's context as votes are matched on: every turn, whitespace and case ignored."""
    return tuple(normalize_text(t) for t in context)


def votes_for_pairs(comp: Comparison, votes: Sequence[Pair]) -> list[str | None]:
    """Per pair of ``comp``, the vote on it in the comparison's orientation ("A", "B", "tie") or None. A vote
    matches a pair by its whole context and both replies (whitespace and case ignored), in either order; a
    vote given in the swapped order is flipped. A pair voted several times takes its last vote, in whichever
    order it was given (:func:`vote_notes` says so)."""
    flip = {"A": "B", "B": "A", "tie": "tie"}
    table: dict[tuple, str] = {}
    for v in votes:
        ctx, a, b = _whole_context(v.context), normalize_text(v.response_a), normalize_text(v.response_b)
        table[(ctx, b, a)] = flip[v.vote]
        table[(ctx, a, b)] = v.vote  # last: two identical replies read their vote as given, not flipped
    return [table.get((_whole_context(a.context), normalize_text(a.response), normalize_text(b.response)))
            for a, b in comp.pairs]


def _either_order(context: Sequence[str], reply_a: str, reply_b: str) -> tuple:
    """A pair of replies to ``context`` as votes name it in either order (:func:`_whole_context`, replies
    normalized and sorted)."""
    return (_whole_context(context), *sorted((normalize_text(reply_a), normalize_text(reply_b))))


def votes_matched(comp: Comparison, votes: Sequence[Pair]) -> list[str]:
    """What a votes file's match with the loaded pairs leaves unsaid: votes on no loaded pair (their context
    and replies are not among the pairs), and :func:`vote_notes`."""
    pairs = {_either_order(a.context, a.response, b.response) for a, b in comp.pairs}
    off = sum(_either_order(v.context, v.response_a, v.response_b) not in pairs for v in votes)
    notes = [f"{off} of {len(votes)} vote(s) are on no loaded pair (matched by whole context and both replies, "
             "either order): they are not used"] if off else []
    return notes + vote_notes(votes)


MIN_VOTES = 10  # A/B votes (ties do not count) before the judge can be re-fit on them ...
MIN_VOTE_CONTEXTS = 5  # ... on at least this many different contexts (one per cross-validation fold)


def enough_votes(votes: Sequence[Pair]) -> tuple[bool, str]:
    """Whether the judge can be re-fit on ``votes``: at least ``MIN_VOTES`` votes for A or B (a tie says
    nothing about which reply is better) on at least ``MIN_VOTE_CONTEXTS`` different contexts (the re-fit's
    cross-validation splits by context); and the sentence that says where the count stands."""
    decided = [v for v in votes if v.vote in ("A", "B")]
    contexts = len({context_key(v.context) for v in decided})
    ok = len(decided) >= MIN_VOTES and contexts >= MIN_VOTE_CONTEXTS
    return ok, (f"{len(decided)} of the {MIN_VOTES} A/B votes needed, on {contexts} different context"
                f"{'s' * (contexts != 1)} (at least {MIN_VOTE_CONTEXTS} needed; ties do not count)")


def vote_notes(votes: Sequence[Pair]) -> list[str]:
    """What a demanding user wants said about a votes file before the judge is re-fit on it: votes that repeat
    a pair (either order), pairs voted both ways, and A/B votes between two identical replies."""
    seen: dict[tuple, set[str]] = {}
    repeats = same = 0
    flip = {"A": "B", "B": "A", "tie": "tie"}
    for v in votes:
        a, b = normalize_text(v.response_a), normalize_text(v.response_b)
        key, vote = _either_order(v.context, a, b), v.vote if a <= b else flip[v.vote]
        repeats += key in seen
        seen.setdefault(key, set()).add(vote)
        same += a == b and v.vote in ("A", "B")
    both = sum(len(s) > 1 for s in seen.values())
    notes = []
    if repeats:
        notes.append(f"{repeats} vote(s) repeat a pair already voted on (in either order); each counts")
    if both:
        notes.append(f"{both} pair(s) were voted different ways (A, B or tie): the re-fit sees every vote, agreement "
                     "with the votes takes each pair's last")
    if same:
        notes.append(f"{same} A/B vote(s) are between two identical replies; they teach the judge nothing true")
    return notes
