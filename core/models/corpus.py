"""The chitchat-dataset corpus (MIT, a PyPI package): conversations, their fixed train / held-out split,
and (context, response) samples drawn from them.

Every shipped checkpoint that learns from unrated dialogue learns from this corpus, and the default υBLEU
pool is built from it. Conversation ``i`` (in the package's order, those with two turns or more) is held
out when ``i % HELD_OUT_EVERY == 0``.
"""
from __future__ import annotations

import functools
import random
from typing import Sequence

from core.settings import SEED

HELD_OUT_EVERY = 10
CTX_TURNS = 3  # context turns kept by context_pairs (and fed to MME's RM / TCM / EM)


def chitchat_dialogues() -> list[list[str]]:
    """The chitchat-dataset conversations as lists of turns (consecutive messages of one sender joined
    by a space), in the package's order."""
    import chitchat_dataset
    out = []
    for _, conv in chitchat_dataset.Dataset().items():
        turns = [" ".join(m["text"].strip() for m in turn if m.get("text")) for turn in conv["messages"]]
        out.append([" ".join(t.split()) for t in turns if t.strip()])
    return out


@functools.lru_cache(maxsize=1)
def chitchat_split() -> tuple[list[list[str]], list[list[str]]]:
    """(train, held-out) conversations of chitchat-dataset, split by conversation index."""
    dialogs = [d for d in chitchat_dialogues() if len(d) >= 2]
    train = [d for i, d in enumerate(dialogs) if i % HELD_OUT_EVERY != 0]
    held = [d for i, d in enumerate(dialogs) if i % HELD_OUT_EVERY == 0]
    return train, held


def context_pairs(dialogs: Sequence[Sequence[str]], n: int, seed: int = SEED,
                  min_words: int = 3) -> list[tuple[list[str], str]]:
    """n random (context turns, response) pairs; the context is the up to CTX_TURNS preceding turns."""
    rng = random.Random(seed)
    allp = [(d, t) for d in dialogs for t in range(1, len(d)) if len(d[t].split()) >= min_words]
    rng.shuffle(allp)
    return [(list(d[max(0, t - CTX_TURNS):t]), d[t]) for d, t in allp[:n]]
