"""What is loaded: an upload (or the built-in demo) read into a ``Comparison`` of two systems, kept on disk so the
page's address reopens it after a refresh.

Conventions: the comparison is scored as one list, A's rows then B's (``core.engine``); pair ``i`` is row ``i`` of the
per-example table (``dashboard.tables``); the two responses to one context form one resampling cluster.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from core.data import (Comparison, CsvMapping, DataError, Example, Problem, compare_systems, dimensions, load_file,
                       pair_files, systems_in)
from core.engine import DEFAULT_METRICS
from core.html_report import InputFile, input_file
from core.settings import cache_dir


DEMO_NAME = "built-in demo (chitchat: C-BM25 vs SmolLM2-135M)"
RATED_DEMO_NAME = "built-in human-rated sample (engagement-dd: generated vs human replies)"
MAX_UPLOAD_MB = 50  # must match server.maxUploadSize in .streamlit/config.toml (a test checks)


@dataclass
class Loaded:
    """What the user loaded: all examples of the file(s), the chosen comparison, and a key that
    identifies the content (file bytes + chosen systems) for caching scores."""

    name: str
    examples: list[Example]
    comparison: Comparison
    key: str
    files: list[str] = field(default_factory=list)
    inputs: list[InputFile] = field(default_factory=list)  # name, size, SHA-256 of every input file
    recipe: dict[str, Any] = field(default_factory=dict)  # how to load it again (:func:`reopen`)

    @property
    def n(self) -> int:
        return len(self.comparison.pairs)

    @property
    def dimensions(self) -> list[str]:
        return dimensions(self.comparison.examples())

    @property
    def has_human_scores(self) -> bool:
        return bool(self.dimensions)


def content_key(*parts: bytes | str) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else p.encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()[:16]


def parse_upload(name: str, data: bytes, fmt: str | None = None, csv_mapping: CsvMapping | None = None) -> list[Example]:
    """Examples from uploaded bytes (``fmt`` None = detect from name and content). Raises ``DataError``
    naming file, row and field of every problem; an upload above the size limit is refused too."""
    if len(data) > MAX_UPLOAD_MB * 1024 * 1024:
        raise DataError([Problem(name, None, None, f"is {len(data) / 2**20:.1f} MB; the limit is {MAX_UPLOAD_MB} MB")])
    return load_file(name, fmt=fmt or None, data=data, csv_mapping=csv_mapping)


def make_loaded(name: str, examples_a: list[Example], examples_b: list[Example] | None, system_a: str | None,
                system_b: str | None, key_parts: Sequence[bytes | str]) -> Loaded:
    """One multi-system file (``examples_b`` None; pick two of its systems) or two files."""
    if examples_b is None:
        systems = systems_in(examples_a)
        if system_a is None or system_b is None:
            if len(systems) < 2:
                raise DataError([Problem(name, None, "system", f"the file holds only {systems}; a comparison "
                                         "needs two systems (a 'system' field, or upload a second file)")])
            system_a, system_b = systems[0], systems[1]
        comp = compare_systems(examples_a, system_a, system_b)
        everything = list(examples_a)
    else:
        source_a = examples_a[0].source if examples_a else name
        source_b = examples_b[0].source if examples_b else name
        comp = pair_files(source_a, examples_a, source_b, examples_b, system_a or None, system_b or None)
        everything = ([e for e in examples_a if system_a in (None, "", e.system)]
                      + [e for e in examples_b if system_b in (None, "", e.system)])
    try:
        comp.require_pairs()  # the command line's message, as a problem of the upload
    except ValueError as e:
        raise DataError([Problem(name, None, None, str(e))]) from None
    return Loaded(name, everything, comp, content_key(*key_parts, comp.system_a, comp.system_b),
                  files=sorted({e.source for e in everything}))


def load_demo(path: str | Path, name: str = DEMO_NAME, kind: str = "demo") -> Loaded:
    """A built-in file beside the app: the demo (``demo/demo.jsonl``, made by ``scripts/make_demo.py``) or the
    human-rated sample (``demo/rated_sample.jsonl``, ``scripts/make_rated_sample.py``)."""
    data = Path(path).read_bytes()
    exs = parse_upload(str(path), data)
    out = make_loaded(name, exs, None, None, None, [data])
    out.inputs = [input_file(str(path), data)]
    out.recipe = {"kind": kind, "path": Path(path).name}
    return out


def load_uploads(name: str, uploads: Sequence[tuple[str, bytes]], fmt: str | None,
                 mappings: Sequence[CsvMapping | None], system_a: str | None, system_b: str | None,
                 parsed: Sequence[list[Example]] | None = None) -> Loaded:
    """A comparison from uploaded files: one multi-system file (pick ``system_a`` and ``system_b``) or two
    files, one system each. ``parsed`` skips parsing again. The result remembers how it was made
    (``recipe``) and the files' hashes (``inputs``), so it can be kept (:func:`keep_upload`) and reopened."""
    if parsed is None:
        parsed = [parse_upload(n, d, fmt, m) for (n, d), m in zip(uploads, mappings)]
    key_parts = [d for _, d in uploads] + [repr(m) for m in mappings]
    out = make_loaded(name, parsed[0], parsed[1] if len(parsed) > 1 else None, system_a, system_b, key_parts)
    out.inputs = [input_file(n, d) for n, d in uploads]
    out.recipe = {"kind": "upload", "name": name, "fmt": fmt, "system_a": system_a, "system_b": system_b,
                  "files": [{"name": n, "sha256": f.sha256} for (n, _), f in zip(uploads, out.inputs)],
                  "mappings": [None if m is None else asdict(m) for m in mappings]}
    return out


def upload_dir() -> Path:
    """Where uploads are kept so a link reopens them: ``<cache>/uploads`` (files by SHA-256, recipes by key)."""
    d = cache_dir() / "uploads"
    d.mkdir(parents=True, exist_ok=True)
    return d


def keep_upload(data: Loaded, uploads: Sequence[tuple[str, bytes]] = (), in_use: Iterable[str] = ()) -> None:
    """Keep what is needed to reopen ``data`` later (after a refresh, from a link): its recipe under its key
    and the uploaded files under their SHA-256 (the same file is stored once); then the kept uploads are held to
    their cap and age (:func:`prune_uploads`), never ``data``'s or those of the keys ``in_use``."""
    keep_files(data.key, data.recipe, [(n, raw, f.sha256) for (n, raw), f in zip(uploads, data.inputs)], in_use)


def keep_files(key: str, recipe: dict[str, Any], files: Sequence[tuple[str, bytes, str]],
               in_use: Iterable[str] = ()) -> None:
    """Keep ``files`` (name, bytes, SHA-256) under their hashes and ``recipe`` under ``key``, then
    :func:`prune_uploads` (``key`` and ``in_use`` spared)."""
    from core.outputs import atomic_path, write_text
    d = upload_dir()
    for _, raw, sha in files:
        target = d / f"{sha}.bin"
        if target.exists():
            target.touch()  # used again: the last to go
        else:
            with atomic_path(target) as tmp:  # whole or not at all (core.outputs)
                tmp.write_bytes(raw)
    write_text(d / f"{key}.json", json.dumps(recipe))
    prune_uploads({key, *in_use})


UPLOADS_MAX_MB = 1024
"""The default cap of the kept uploads (``DIALEVAL_UPLOADS_MAX_MB``), as the score cache's DIALEVAL_CACHE_MAX_MB."""
UPLOADS_MAX_DAYS = 30
"""The default age after which a kept upload nobody reopened is removed (``DIALEVAL_UPLOADS_MAX_DAYS``)."""


def upload_limits() -> tuple[int, float]:
    """(bytes, seconds): how much the kept uploads may hold and how long one is kept after its last use, from
    ``DIALEVAL_UPLOADS_MAX_MB`` (default 1024) and ``DIALEVAL_UPLOADS_MAX_DAYS`` (default 30). A value that is
    not a number >= 0 raises ``ValueError`` naming the setting."""
    out = []
    for name, default, unit in (("DIALEVAL_UPLOADS_MAX_MB", UPLOADS_MAX_MB, 1024 * 1024),
                                ("DIALEVAL_UPLOADS_MAX_DAYS", UPLOADS_MAX_DAYS, 86400)):
        raw = os.environ.get(name, "").strip()
        try:
            value = float(raw) if raw else float(default)
        except ValueError:
            raise ValueError(f"{name} must be a number, got {raw!r}") from None
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"{name} must be >= 0, got {raw!r}")
        out.append(value * unit)
    return int(out[0]), out[1]


def prune_uploads(in_use: Iterable[str] = (), now: float | None = None) -> list[str]:
    """Hold the kept uploads (:func:`upload_dir`) to :func:`upload_limits`: a comparison (its recipe and the files
    only it names) not used for longer than the age limit goes, then the least recently used ones until the folder
    is under the cap; the keys ``in_use`` (the comparisons live sessions show) and the files they name are never
    removed, so a cap below what live sessions hold leaves the folder above it. Returns the keys removed."""
    max_bytes, max_age = upload_limits()
    now = time.time() if now is None else now
    d = upload_dir()
    recipes: dict[str, tuple[float, set[str]]] = {}
    for p in d.glob("*.json"):
        try:
            r = json.loads(p.read_text(encoding="utf-8"))
            recipes[p.stem] = (p.stat().st_mtime, {f["sha256"] for f in r.get("files") or []})
        except (OSError, ValueError, KeyError, TypeError):  # unreadable: it reopens nothing, so it may go
            recipes[p.stem] = (0.0, set())
    blobs = {}
    for p in d.glob("*.bin"):
        try:
            blobs[p.stem] = p.stat()
        except OSError:
            continue
    keep = set(in_use)
    spared = {sha for k in keep if k in recipes for sha in recipes[k][1]}

    def size() -> int:
        named = {sha for _, shas in recipes.values() for sha in shas}
        return sum(st.st_size for sha, st in blobs.items() if sha in named or sha in spared)

    removed = []

    def drop(key: str) -> None:
        _, shas = recipes.pop(key)
        (d / f"{key}.json").unlink(missing_ok=True)
        still = {sha for _, s in recipes.values() for sha in s} | spared
        for sha in shas - still:
            (d / f"{sha}.bin").unlink(missing_ok=True)
            blobs.pop(sha, None)
        removed.append(key)

    named = {sha for _, shas in recipes.values() for sha in shas}
    for sha, st in list(blobs.items()):  # a file no recipe names (a keep cut short) goes after the age limit
        if sha not in named and sha not in spared and now - st.st_mtime > max_age:
            (d / f"{sha}.bin").unlink(missing_ok=True)
            blobs.pop(sha)
    for key in sorted(recipes, key=lambda k: recipes[k][0]):  # oldest first
        if key in keep:
            continue
        if now - recipes[key][0] > max_age or size() > max_bytes:
            drop(key)
    return removed


def reopen(key: str, demo_dir: str | Path) -> Loaded | None:
    """The comparison kept under ``key`` (:func:`keep_upload`), loaded again from its files; None when the key
    is unknown or its files are gone. Built-in files are read from ``demo_dir``."""
    if not key or not all(c in "0123456789abcdef" for c in key):
        return None
    path = upload_dir() / f"{key}.json"
    if not path.exists():
        return None
    r = json.loads(path.read_text(encoding="utf-8"))
    try:
        path.touch()  # reopened: the last to go (:func:`prune_uploads`)
    except OSError:
        pass
    if r.get("kind") == "board":  # a leaderboard's file (:func:`reopen_board`), not a comparison
        return None
    if r.get("kind") in ("demo", "rated-demo"):
        name = DEMO_NAME if r["kind"] == "demo" else RATED_DEMO_NAME
        return load_demo(Path(demo_dir) / r["path"], name, r["kind"])
    files = []
    for f in r["files"]:
        blob = upload_dir() / f"{f['sha256']}.bin"
        if not blob.exists():
            return None
        files.append((f["name"], blob.read_bytes()))
    mappings = [None if m is None else CsvMapping(**m) for m in r["mappings"]]
    out = load_uploads(r["name"], files, r["fmt"], mappings, r["system_a"], r["system_b"])
    return out if out.key == key else None


def default_metrics(available: Sequence[str]) -> list[str]:
    """``core.engine.DEFAULT_METRICS`` that are registered (the same defaults as the CLI)."""
    return [m for m in DEFAULT_METRICS if m in available] or list(available)[:1]


def keep_board(name: str, raw: bytes, in_use: Iterable[str] = ()) -> str:
    """Keep a file uploaded on the Leaderboard page (a file of several systems, not a comparison) so the address
    reopens it (``?lb=KEY``); returns its key."""
    key = content_key(b"board", raw)
    sha = hashlib.sha256(raw).hexdigest()
    keep_files(key, {"kind": "board", "name": name, "files": [{"name": name, "sha256": sha}]}, [(name, raw, sha)],
               in_use)
    return key


def reopen_board(key: str) -> tuple[str, bytes] | None:
    """The Leaderboard file kept under ``key`` (:func:`keep_board`) as (name, bytes); None when it is not kept."""
    if not key or not all(c in "0123456789abcdef" for c in key):
        return None
    path = upload_dir() / f"{key}.json"
    try:
        r = json.loads(path.read_text(encoding="utf-8"))
        f = r["files"][0]
        raw = (upload_dir() / f"{f['sha256']}.bin").read_bytes()
        path.touch()
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return None
    return (f["name"], raw) if r.get("kind") == "board" and content_key(b"board", raw) == key else None
