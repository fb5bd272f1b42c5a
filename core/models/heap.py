"""Give freed heap memory back to the operating system between SmolLM2 batches (glibc's ``malloc_trim``).

SmolLM2's readings (``core.models.mme_models.response_token_logprobs``: MME's specificity and context-PMI passes)
apply the LM head at each reply's positions: a (reply tokens x 49,152) float32 block of up to 12 MB per reply,
a different size for every reply length, freed at once, while each reply's small result (a few hundred bytes)
stays. glibc serves blocks under its adaptive mmap threshold (which rises to 32 MB after the first large block
is freed) from the heap, where the small survivors pin the freed large blocks in place; batches come in order
of increasing length, so each new block is larger than the holes before it and the heap only grows. Measured
(1,000 replies, one SM pass, 2 cores): resident memory rose from 0.65 GB to 3.9-4.2 GB and stayed there,
and MME's peak grew with its block size (7.3 GB for one 2,000-row call, 9.9 GB over a 10k-row file). Calling
``malloc_trim(0)`` after every batch hands the freed pages back: the same pass ends at 0.71 GB with its peak
at the model's load (1.17 GB), in the same time (20.5 s vs 22.8 s), and every number it reads is unchanged
(same bytes). Other C libraries (macOS, musl) have no ``malloc_trim``; there this does nothing.
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
