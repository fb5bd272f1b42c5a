"""In-process memories of computed values (a text's MiniLM vectors, an item's SmolLM2 features, MME's
sub-scores): each module that keeps one registers how to forget it, so :func:`forget_all` clears them all
(tests of exactness, benchmarks that time cold runs). Values are exact functions of their inputs
(``core.models.batching``) and of the device they were computed on, so each memory keys its entries by that
device too (``core.models.device.active_device``): remembering a value never changes a number."""
from __future__ import annotations

from typing import Callable

_FORGETTERS: list[Callable[[], None]] = []


def remembers(forget: Callable[[], None]) -> Callable[[], None]:
    """Register ``forget`` (a function that empties one in-process memory); returns it."""
    _FORGETTERS.append(forget)
    return forget


def forget_all() -> None:
    """Empty every registered in-process memory."""
    for forget in _FORGETTERS:
        forget()
