"""A name -> thing registry filled by decorators in the modules of one package.

Metrics (``core.metrics``), judges (``core.judges``), trainers (``core.training``) and CLI commands
(``core.cli``) each have one: adding one is adding a module that registers its name; nothing else changes.
The package's modules are imported the first time the registry is asked for a name, so a module that
registers something is never imported by name anywhere else.
"""
from __future__ import annotations

import importlib
import pkgutil
from typing import Callable, Generic, Iterator, TypeVar

T = TypeVar("T")


class Registry(Generic[T]):
    def __init__(self, kind: str, package: str):
        self.kind, self.package = kind, package
        self._items: dict[str, T] = {}
        self._loaded = False

    def register(self, name: str) -> Callable[[T], T]:
        def deco(item: T) -> T:
            if name in self._items and self._items[name] is not item:
                raise ValueError(f"{self.kind} {name!r} registered twice")
            self._items[name] = item
            return item
        return deco

    def load(self) -> None:
        """Import every module of the package once (their decorators fill the registry)."""
        if self._loaded:
            return
        pkg = importlib.import_module(self.package)
        for mod in pkgutil.iter_modules(pkg.__path__):
            importlib.import_module(f"{self.package}.{mod.name}")
        self._loaded = True

    def get(self, name: str) -> T:
        self.load()
        if name not in self._items:
            raise KeyError(f"unknown {self.kind} {name!r}; available: {', '.join(sorted(self._items))}")
        return self._items[name]

    def items(self) -> Iterator[tuple[str, T]]:
        self.load()
        return iter(sorted(self._items.items()))

    def __contains__(self, name: str) -> bool:
        self.load()
        return name in self._items
