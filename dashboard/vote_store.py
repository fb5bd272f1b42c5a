"""Votes given in place on the loaded pairs (A / tie / B), kept on disk per comparison as the votes-file format
``dialeval train judge --votes`` reads."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Sequence

from core.data import Comparison
from core.judges.pairs import Pair
from core.settings import cache_dir


FLIPPED = {"A": "B", "B": "A", "tie": "tie"}


def shown_swapped(key: str, i: int) -> bool:
    """Whether the vote panel shows pair ``i`` of the comparison ``key`` the other way round (system B's reply as
    "Reply A"): a fixed coin per comparison and pair (the first byte of SHA-1 of both), so the side never tells a
    voter which system wrote a reply, as Chatbot Arena shuffles its sides; every vote is kept as the systems'
    (:func:`as_kept`), the votes file and the re-fit read it so."""
    return hashlib.sha1(f"{key}:{i}".encode("utf-8")).digest()[0] % 2 == 1


def as_kept(vote: str, swapped: bool) -> str:
    """A vote on the replies as shown ('A': the one shown as A) as the systems' vote, and back (its own inverse)."""
    return FLIPPED.get(vote, vote) if swapped else vote


def votes_path(key: str) -> Path:
    """Where the votes given in place on one loaded comparison are kept: ``<cache>/votes/<key>.jsonl``."""
    d = cache_dir() / "votes"
    d.mkdir(parents=True, exist_ok=True)
    return d / f"{key}.jsonl"


def pair_votes(comp: Comparison, votes: dict[int, str], blank: bool = False) -> list[Pair]:
    """Votes given on pairs of ``comp`` (pair index -> 'A' / 'tie' / 'B') as :class:`Pair` votes, in pair order
    (the votes-file format ``core.judges.pairs.load_votes`` reads: context, both replies, vote). Votes on a pair
    with a blank reply are left out (a vote to train on, or to download, needs both replies) unless ``blank``
    (what the dashboard keeps)."""
    out = []
    for i in sorted(votes):
        v = votes[i]
        if v not in ("A", "B", "tie"):
            continue
        a, b = comp.pairs[i]
        if not blank and not (a.response.strip() and b.response.strip()):
            continue
        out.append(Pair(list(a.context), a.response, b.response, {"A": 1.0, "B": 0.0, "tie": 0.5}[v], a.dataset,
                        a.id))
    return out


def votes_jsonl(votes: Sequence[Pair]) -> bytes:
    """Votes as the JSONL file ``load_votes`` and ``dialeval train judge --votes`` read."""
    return "".join(json.dumps({"id": p.id, "context": p.context, "response_a": p.response_a,
                               "response_b": p.response_b, "vote": p.vote}, ensure_ascii=False) + "\n"
                   for p in votes).encode("utf-8")


def save_pair_votes(key: str, comp: Comparison, votes: dict[int, str]) -> Path:
    """Write the votes given on ``comp``'s pairs to :func:`votes_path` (replaced whole, atomically)."""
    from core.outputs import atomic_path
    path = votes_path(key)
    with atomic_path(path) as tmp:
        tmp.write_bytes(votes_jsonl(pair_votes(comp, votes, blank=True)))
    return path


def set_aside(key: str) -> Path:
    """Move the votes file of ``key`` that could not be read to ``<key>.unreadable-N.jsonl`` beside it (the next
    N free), so that votes given afterwards never overwrite it; returns where it went."""
    path = votes_path(key)
    n = 1
    while (target := path.with_name(f"{key}.unreadable-{n}.jsonl")).exists():
        n += 1
    path.replace(target)
    return target


def load_pair_votes(key: str, comp: Comparison) -> dict[int, str]:
    """The votes kept for ``comp`` (:func:`save_pair_votes`) as pair index -> vote; {} when none."""
    from core.judges.pairs import load_votes, votes_for_pairs
    path = votes_path(key)
    if not path.exists() or not path.read_bytes().strip():
        return {}
    got = votes_for_pairs(comp, load_votes(path, blank_replies=True))
    return {i: v for i, v in enumerate(got) if v is not None}
