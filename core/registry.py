"""A name -> thing registry filled by decorators in the modules of one package.

Metrics (``core.metrics``), judges (``core.judges``), trainers (``core.training``), CLI commands (``core.cli``)
and scoring backends (``core.backends``) each have one: adding one is adding a module that registers its name; nothing else changes.
The package's modules are imported the first time the registry is asked for a name, so a module that
registers something is never imported by name anywhere else.
"""
from __future__ import annotations

import argparse
import importlib
import pkgutil
from dataclasses import dataclass
from typing import Callable, Generic, Iterator, TypeVar

T = TypeVar("T")


class UnknownName(KeyError, ValueError):
    """A name no registry holds. A KeyError (what a lookup raises) and a ValueError (a bad value of an argument,
    as a blank or malformed name is), whose message prints as written: a plain KeyError shows its message in
    quotes."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class Registry(Generic[T]):
    def __init__(self, kind: str, package: str):
        self.kind, self.package = kind, package
        self._items: dict[str, T] = {}
        self._loaded = False

    def register(self, name: str) -> Callable[[T], T]:
        """Register ``item`` under ``name``; a registered class also gets ``name`` as its ``name`` attribute."""
        def deco(item: T) -> T:
            if name in self._items and self._items[name] is not item:
                raise ValueError(f"{self.kind} {name!r} registered twice")
            if isinstance(item, type):
                item.name = name
            self._items[name] = item
            return item
        return deco

    def subcommand(self, name: str, help: str, add_arguments: Callable[[argparse.ArgumentParser], None]):
        """Register ``run(args) -> exit code`` as the subcommand ``name`` (a :class:`Subcommand`)."""
        def deco(run: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
            self.register(name)(Subcommand(help, add_arguments, run))
            return run
        return deco

    def descriptions(self) -> dict[str, str]:
        """name -> the registered item's ``description`` (or ``help``)."""
        return {k: getattr(v, "description", None) or getattr(v, "help", "") for k, v in self.items()}

    def load(self) -> None:
        """Import every module of the package once (their decorators fill the registry)."""
        if self._loaded:
            return
        pkg = importlib.import_module(self.package)
        for mod in pkgutil.iter_modules(pkg.__path__):
            importlib.import_module(f"{self.package}.{mod.name}")
        self._loaded = True

    def get(self, name: str) -> T:
        """The item registered as ``name``; an unknown name raises :class:`UnknownName` listing the known ones."""
        self.load()
        if name not in self._items:
            raise UnknownName(f"unknown {self.kind} {name!r}; available: {', '.join(sorted(self._items))}")
        return self._items[name]

    def items(self) -> Iterator[tuple[str, T]]:
        self.load()
        return iter(sorted(self._items.items()))

    def __contains__(self, name: str) -> bool:
        self.load()
        return name in self._items


@dataclass(frozen=True)
class Subcommand:
    """A command-line subcommand: its help line, what fills its parser, and what runs it."""

    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
