"""Give freed heap memory back to the operating system between SmolLM2 batches (glibc's ``malloc_trim``).

SmolLM2's readings (``core.models.smollm_reading.response_token_logprobs``: MME's specificity and context-PMI passes)
apply the LM head at each reply's positions: a (reply tokens x 49,152) float32 block of up to 12 MB per reply,
a different size for every reply length, freed at once while each reply's small result stays. glibc serves such
blocks from the heap (its adaptive mmap threshold rises after the first large one is freed), where the small
survivors pin the freed blocks in place; batches come in order of increasing length, so the heap only grew.
Trimming after every batch keeps memory flat at the same speed and with the same numbers (measured in
benchmarks/GROWTH.md: MME's 10k-row run from 9.9 GB to 1.6 GB). Other C libraries (macOS, musl) have no
``malloc_trim``; there this does nothing.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools


@functools.lru_cache(maxsize=1)
def _malloc_trim():
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):
        return None


def return_freed_memory() -> bool:
    """Release the free pages of every malloc arena to the operating system; True where the C library can."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
