"""Which development set some rows are, by their content rather than their name.

The learned signals (ADEM, MME-CRS's weights, the judge) trained on the human-rated development sets, and
meta-evaluation reads a trained metric held out from the set it is measured on (``Metric.held_out_for``). The
set used to be known by its name alone (the rows' ``dataset`` field, else the file's name): the same rows under
another name, a CSV copy or the DSTC10 JSON of a set, were scored by a model that had trained on them and the
row still said "held out". So each development set is known by its rows too: ``checkpoints/rated-sets.json.gz``
holds, per set, the first 4 bytes of the SHA-256 of every row's normalised context and reply (:func:`row_key`):
enough to recognise the rows, nothing to read them from (a 4-byte hash is not the text; the manifest names the
data; ``scripts/make_rated_set_keys.py`` makes the file from ``../shared/data/eval``). A row of another set
matches by chance with probability about (rows held) / 2^32, 6e-6 for the 25,000 rows held.

:func:`rated_set_of` names the set that at least half of some rows are (:data:`SAME_SET_SHARE`), which
meta-evaluation and the system-level tables then hold the trained signals out from; :func:`overlaps` counts, per
set, the rows that are that set's.
"""
from __future__ import annotations

import base64
import functools
import gzip
import hashlib
import json
import re
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from core.data import Example
from core.settings import checkpoint_file

RATED_SET_KEYS = "rated-sets.json.gz"
SAME_SET_SHARE = 0.5  # rows of which at least this share are one development set's are read as that set
KEY_BYTES = 4
_NOT_WORD = re.compile(r"[\W_]+")


def normalised(text: str) -> str:
    """``text`` case-folded, every run of characters that are not letters or digits one space: a copy that
    spaces punctuation otherwise ('do n't', a CSV's quoting) or joins the turns with another separator keeps
    its key."""
    return _NOT_WORD.sub(" ", text.casefold()).strip()


def row_key(context: Sequence[str], response: str) -> int:
    """A row's key: the first :data:`KEY_BYTES` bytes (big-endian) of the SHA-256 of its normalised context
    (the turns joined by a space) and reply."""
    text = normalised(" ".join(context)) + "\x1e" + normalised(response)
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:KEY_BYTES], "big")


def encode_keys(keys: Iterable[int]) -> str:
    """Sorted distinct keys as base64 of big-endian uint32s (the file's form)."""
    arr = np.array(sorted(set(keys)), dtype=">u4")
    return base64.b64encode(arr.tobytes()).decode("ascii")


@functools.lru_cache(maxsize=1)
def shipped_keys() -> dict[str, frozenset[int]]:
    """{development set: its rows' keys} from the shipped file; {} where it is absent (an installation without
    it recognises sets by name alone, as before)."""
    path = checkpoint_file(RATED_SET_KEYS)
    if not path.exists():
        return {}
    with gzip.open(path, "rt", encoding="utf-8") as f:
        doc = json.load(f)
    return {name: frozenset(np.frombuffer(base64.b64decode(text), dtype=">u4").astype(np.int64).tolist())
            for name, text in doc["sets"].items()}


@dataclass(frozen=True)
class Overlap:
    """``rows`` of the rows given are rows of the development set ``name`` (of ``of`` given)."""

    name: str
    rows: int
    of: int

    @property
    def share(self) -> float:
        return self.rows / self.of if self.of else 0.0


def overlaps(examples: Sequence[Example], keys: dict[str, frozenset[int]] | None = None) -> list[Overlap]:
    """Per development set that any of ``examples`` belongs to, how many do: most first, then by name."""
    held = shipped_keys() if keys is None else keys
    if not held or not examples:
        return []
    mine = [row_key(ex.context, ex.response) for ex in examples]
    found = [Overlap(name, sum(k in ks for k in mine), len(mine)) for name, ks in held.items()]
    return sorted((o for o in found if o.rows), key=lambda o: (-o.rows, o.name))


def rated_set_of(examples: Sequence[Example], keys: dict[str, frozenset[int]] | None = None,
                 found: Sequence[Overlap] | None = None) -> Overlap | None:
    """The development set that at least :data:`SAME_SET_SHARE` of ``examples`` are rows of, or None; ``found``:
    their :func:`overlaps`, where the caller has them already (the rows are not hashed twice)."""
    found = overlaps(examples, keys) if found is None else found
    return found[0] if found and found[0].share >= SAME_SET_SHARE else None


__all__ = ["Overlap", "overlaps", "rated_set_of", "row_key", "shipped_keys"]
