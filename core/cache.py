"""Per-row results remembered on disk between runs: re-scoring a file in which a tenth of the rows changed
scores only that tenth.

**What is kept.** One entry per (namespace, row key):

- metrics: namespace = the metric's full signature (``core.scoring.Signature``: variant, checkpoint hashes,
  pool hash, version) plus where it ran (``core.models.device.device_key``: the device, and for the CPU its
  kernel family, since bfloat16 kernels round differently on different CPUs); row key = SHA-1 of the row as
  the metric sees it (context turns, response, non-blank references; :func:`row_key`); value = the row's score
  and details;
- the judge: namespace = :func:`judge_namespace` (judge name, checkpoint file hash, version, where it ran);
  key = SHA-1 of
  (context, reply A, reply B); value = P(A) and the two single-order estimates.

A metric's score of a row depends on nothing else in the run (fixed normalization constants and fixed-shape
batches, ``core.engine``), so an entry is exactly the number a fresh run computes; a changed checkpoint,
option or version changes the namespace, so nothing stale is ever read. On disk the namespace also carries
:func:`code_fingerprint` (a hash of this package's code): two installs of one version with different code (a
checkout between releases, ``pip install`` of a branch) keep apart. What this code did not compute (the llm judge's
answers, :func:`kept_across_code`) is marked for any code instead.

**Where.** ``cache_dir()/scores.sqlite3`` (``core.settings.cache_dir``: ``$DIALEVAL_CACHE``, else
``$XDG_CACHE_HOME/dialeval``, else ``~/.cache/dialeval``). At most ``$DIALEVAL_CACHE_MAX_MB`` megabytes
(default :data:`DEFAULT_MAX_MB`); past the cap the least recently used entries go, and when they include
entries of the current run the CLI says so (:func:`cache_notes`: a re-run would score those rows again).
A file found damaged (a disk filled up, a CI cache restored cut short, an entry's bytes overwritten) is not used while
it stays: the run goes on without it and says so (:meth:`ScoreCache.damage_note` at the CLI's end, a
:class:`DamagedCacheWarning` for the API); ``dialeval cache clear`` removes it, and the new file is used again.
Values of :data:`COMPRESS_FROM` bytes or more are kept zlib-compressed. ``$DIALEVAL_NO_CACHE=1`` or the CLI's
``--no-cache`` turns it off (nothing read, nothing written); ``dialeval cache info|clear``.

**Precomputed.** Read-only layers shipped with the package (``precomputed-*.json.gz`` among the
checkpoints, e.g. the demo's scores: :func:`export_precomputed`) answer before the disk; they use the same
keys, so a file whose rows or signatures differ is simply not found there and is scored as usual.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import math
import os
import re
import sqlite3
import threading
import time
import warnings
import zlib
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

DEFAULT_MAX_MB = 1024
COMPRESS_FROM = 1024
"""Values whose JSON text has at least this many bytes are stored zlib-compressed (υBLEU's 50 retrieved references
per row: 12.8 KB of JSON, 4.3 KB compressed on the demo; a 100,000-row υBLEU run no longer overflows the
default cap, which made every row of its re-run a miss)."""
FILE_NAME = "scores.sqlite3"
PRECOMPUTED_GLOB = "precomputed-*.json.gz"
_SCHEMA = ("CREATE TABLE IF NOT EXISTS entries (ns TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, "
           "bytes INTEGER NOT NULL, used REAL NOT NULL, PRIMARY KEY (ns, key)) WITHOUT ROWID")
_CHUNK = 500  # keys per SQL statement (SQLite's default limit on bound parameters is 999 in old builds)


class CacheError(RuntimeError):
    """The cache cannot be used as asked (an unusable size cap, a cache file that is not a cache)."""


class DamagedCacheWarning(UserWarning):
    """Warned once when a run finds the score cache damaged and goes on without it: the API's word for it (a
    dashboard server writes it to its log; the CLI says :meth:`ScoreCache.damage_note` at the end of the run
    instead)."""


def _file_identity(path: Path) -> tuple[int, int, int] | None:
    """(device, inode, status-change time) of ``path``: a file made after another was removed may get its inode
    number again at once (ext4 reuses them), never its change time; None when there is no file."""
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_ctime_ns)


class DamagedCache(CacheError):
    """The score cache file is not a usable SQLite database (damaged, or another program's file):
    ``ScoreCache.clear`` removes it; a cache that is only busy or unreadable is a plain :class:`CacheError`.
    ``reason``: SQLite's words."""

    def __init__(self, message: str, reason: str):
        super().__init__(message)
        self.reason = reason


def _digest(parts: Any) -> str:
    return hashlib.sha1(json.dumps(parts, ensure_ascii=False, separators=(",", ":")).encode("utf-8")).hexdigest()


def row_key(context: Sequence[str], response: str, references: Sequence[str]) -> str:
    """The key of one row as a metric sees it: SHA-1 of its context turns, response and references."""
    return _digest([list(context), response, list(references)])


def pair_key(context: Sequence[str], reply_a: str, reply_b: str) -> str:
    """The key of one judged pair: SHA-1 of (context turns, reply A, reply B)."""
    return _digest(["pair", list(context), reply_a, reply_b])


def judge_namespace(name: str, checkpoint_hash: str, version: str, device: str) -> str:
    """The namespace of a judge's outputs: its registry name, the hash of its checkpoint file, the package
    version and where it ran (``core.models.device.device_key``: a GPU's half-precision P(A) is not the CPU's,
    and one CPU kind's bfloat16 P(A) is not another's)."""
    return f"judge:{name}|ckpt:{checkpoint_hash}|v:{version}|device:{device}"


def versionless(signature: Any) -> str:
    """A signature (or a namespace holding one) without its package version (``|v:...``): what a metric's or
    judge's numbers depend on. Records that keep numbers (the golden test's, the shipped precomputed layers) are
    matched on these, so a release that moves no number needs no new record; one that moves a number changes
    the golden test's result, which says to re-record both."""
    return re.sub(r"\|v:[^|]*", "", str(signature))


def encode_value(value: Any) -> str:
    """JSON text of a cached value; NaN and infinities are kept (``json`` writes them as tokens)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=_plain)


def stored_value(value: Any) -> str | bytes:
    """What the cache file keeps for ``value``: its JSON text, zlib-compressed (bytes) from
    :data:`COMPRESS_FROM` bytes on."""
    text = encode_value(value)
    data = text.encode("utf-8")
    return zlib.compress(data, 6) if len(data) >= COMPRESS_FROM else text


def read_value(stored: str | bytes) -> Any:
    """The value :func:`stored_value` kept."""
    return json.loads(zlib.decompress(stored) if isinstance(stored, bytes) else stored)


def _plain(x: Any) -> Any:
    import numpy as np
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, (set, frozenset, tuple)):
        return list(x)
    raise TypeError(f"{type(x).__name__} cannot be cached")


def max_bytes_from_env() -> int:
    raw = os.environ.get("DIALEVAL_CACHE_MAX_MB", "").strip()
    if not raw:
        return DEFAULT_MAX_MB * 1024 * 1024
    try:
        mb = float(raw)
    except ValueError:
        raise CacheError(f"DIALEVAL_CACHE_MAX_MB must be a number of megabytes, got {raw!r}") from None
    if not math.isfinite(mb) or mb < 0:
        raise CacheError(f"DIALEVAL_CACHE_MAX_MB must be >= 0, got {raw!r}")
    return int(mb * 1024 * 1024)


def disabled_by_env() -> bool:
    return os.environ.get("DIALEVAL_NO_CACHE", "").strip().lower() in ("1", "true", "yes", "on")


class Precomputed:
    """Read-only entries from ``precomputed-*.json.gz`` files: ``{"entries": {namespace: {key: value}}}``, found by
    their namespace without the package version (:func:`versionless`): a release that moves no number keeps its
    shipped scores."""

    def __init__(self, paths: Iterable[Path]):
        self.paths = sorted(Path(p) for p in paths)
        self._entries: dict[str, dict[str, Any]] | None = None

    def _load(self) -> dict[str, dict[str, Any]]:
        if self._entries is None:
            merged: dict[str, dict[str, Any]] = {}
            for p in self.paths:
                for ns, rows in read_precomputed(p)["entries"].items():
                    merged.setdefault(versionless(ns), {}).update(rows)
            self._entries = merged
        return self._entries

    def namespaces(self) -> list[str]:
        return list(self._load())

    def get_many(self, ns: str, keys: Sequence[str]) -> dict[str, Any]:
        rows = self._load().get(versionless(ns))
        if not rows:
            return {}
        return {k: rows[k] for k in keys if k in rows}


def code_fingerprint() -> str:
    """12 hex digits of SHA-1 over this package's Python files (paths and bytes): what the disk cache's
    namespaces carry beside the version (module docstring). Computed once per process (about 1 MB read)."""
    global _FINGERPRINT
    if _FINGERPRINT is None:
        root = Path(__file__).resolve().parent
        h = hashlib.sha1()
        for path in sorted(root.rglob("*.py")):
            h.update(path.relative_to(root).as_posix().encode("utf-8") + b"\0")
            h.update(path.read_bytes())
        _FINGERPRINT = h.hexdigest()[:12]
    return _FINGERPRINT


_FINGERPRINT: str | None = None
CODE_MARK = "|code:"  # between a namespace and the code fingerprint on disk
ANY_CODE = "any"  # the mark on disk of the namespaces :func:`kept_across_code` names: read by any code
_ACROSS_CODE: set[str] = set()


def kept_across_code(prefix: str) -> None:
    """Keep the namespaces that start with ``prefix`` for any code of dialeval, not only the code that wrote them:
    for what this code did not compute (a remote model's answers, paid for; the llm judge registers its own), whose
    namespace says itself when an entry must be made again."""
    _ACROSS_CODE.add(prefix)


class ScoreCache:
    """Entries on disk in one SQLite file (safe for several processes: WAL journal, busy timeout), with the
    shipped precomputed layers consulted first. ``max_bytes`` caps the file's entries (LRU)."""

    def __init__(self, path: str | os.PathLike, max_bytes: int | None = None,
                 precomputed: Precomputed | None = None):
        self.path = Path(path)
        self.max_bytes = max_bytes_from_env() if max_bytes is None else int(max_bytes)
        self.precomputed = precomputed
        self._lock = threading.Lock()
        self._ready = False
        self.hits = self.misses = 0
        self.opened = time.time()
        self.dropped_own = 0  # entries written or read since this object was opened that the size cap dropped
        self.damage: str | None = None  # why the file was found damaged: this object no longer reads or writes it
        self._damaged_file: tuple[int, int, int] | None = None  # the damaged file's identity (_file_identity)

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        made = not self.path.exists()  # new, or removed by another process's `cache clear` since: its table anew
        con = sqlite3.connect(str(self.path), timeout=60)
        if not self._ready or made:
            try:
                con.execute("PRAGMA journal_mode=WAL")
                con.execute(_SCHEMA)
                con.commit()
            except sqlite3.OperationalError as e:
                con.close()
                raise CacheError(f"the score cache {self.path} cannot be used ({e}); run with --no-cache or set "
                                 "DIALEVAL_CACHE to another folder") from None
            except sqlite3.DatabaseError as e:
                con.close()
                if type(e) is not sqlite3.DatabaseError:  # a misuse of SQLite (binding, ...) is a bug, not damage
                    raise
                raise DamagedCache(f"{self.path} is not a dialeval score cache ({e}): `dialeval cache clear` "
                                   "removes it, or set DIALEVAL_CACHE to another folder", str(e)) from None
            self._ready = True
        return con

    @contextmanager
    def _session(self) -> Iterator[sqlite3.Connection]:
        """A connection under the lock, closed after; a damaged file (``database disk image is malformed``)
        is a :class:`DamagedCache` that says how to recover, any other SQLite failure a :class:`CacheError`,
        never a traceback."""
        with self._lock:
            con = self._connect()
            try:
                yield con
            except sqlite3.OperationalError as e:  # busy past the timeout, a full disk, ...: not damaged
                raise CacheError(f"the score cache {self.path} cannot be used ({e}); run with --no-cache or try "
                                 "again") from None
            except sqlite3.DatabaseError as e:
                if type(e) is not sqlite3.DatabaseError:  # a misuse of SQLite (binding, ...) is a bug, not damage
                    raise
                raise DamagedCache(f"the score cache {self.path} is damaged ({e}): `dialeval cache clear` removes "
                                   "it (it is made again), or run with --no-cache", str(e)) from None
            finally:
                con.close()

    def disk_namespace(self, ns: str) -> str:
        """``ns`` as kept on disk: with this code's fingerprint (:func:`code_fingerprint`), or, for what a remote
        model answered (:func:`kept_across_code`: the llm judge's paid answers), a mark any code reads."""
        return f"{ns}{CODE_MARK}{ANY_CODE if ns.startswith(tuple(_ACROSS_CODE)) else code_fingerprint()}"

    def get_many(self, ns: str, keys: Sequence[str]) -> dict[str, Any]:
        """The cached values of ``keys`` under ``ns`` (absent keys are left out)."""
        keys = list(dict.fromkeys(keys))
        found: dict[str, Any] = self.precomputed.get_many(ns, keys) if self.precomputed is not None else {}
        rest = [k for k in keys if k not in found]
        self._damage_cleared()
        if rest and self.max_bytes > 0 and self.damage is None and self.path.exists():
            with self._unless_damaged():  # all or nothing: entries read before the damage showed are not used
                found.update(self._read_disk(self.disk_namespace(ns), rest))
        self.hits += len(found)
        self.misses += len(keys) - len(found)
        return found

    @contextmanager
    def _unless_damaged(self) -> Iterator[None]:
        """Scoring goes on past a damaged file: the run neither reads nor writes it from then on, and
        :meth:`damage_note` says so (the file is left where it is, for ``cache clear``, since another process
        may hold it open; nothing is moved or deleted behind it)."""
        try:
            yield
        except DamagedCache as e:
            self.damage = e.reason
            self._damaged_file = _file_identity(self.path)
            warnings.warn(self.damage_note() or "", DamagedCacheWarning, stacklevel=4)

    def _damage_cleared(self) -> bool:
        """Whether the file found damaged has since been removed or replaced (``cache clear`` in another process):
        then it is used again."""
        if self.damage is not None and _file_identity(self.path) != self._damaged_file:
            self.damage, self._ready = None, False
            return True
        return False

    def damage_note(self) -> str | None:
        """The note for a run that found the file damaged (``None`` when it did not)."""
        if self.damage is None:
            return None
        return (f"note: the score cache {self.path} is damaged ({self.damage}): this run went on without it "
                "(what the shipped precomputed scores lack was computed anew, and nothing was kept); "
                "`dialeval cache clear` removes the file and the next run makes a new one")

    def _read_disk(self, ns: str, keys: list[str]) -> dict[str, Any]:
        found: dict[str, Any] = {}
        with self._session() as con:
            now = time.time()
            for i in range(0, len(keys), _CHUNK):
                chunk = keys[i:i + _CHUNK]
                marks = ",".join("?" * len(chunk))
                got = con.execute(f"SELECT key, value FROM entries WHERE ns = ? AND key IN ({marks})",
                                  [ns, *chunk]).fetchall()
                for k, v in got:
                    try:
                        found[k] = read_value(v)
                    except (zlib.error, ValueError) as e:  # a value's bytes overwritten: the file is damaged
                        raise DamagedCache(f"the score cache {self.path} is damaged (an entry cannot be read: {e})",
                                           f"an entry cannot be read: {e}") from None
                if got:  # used now: the size cap drops the least recently used first
                    con.execute(f"UPDATE entries SET used = ? WHERE ns = ? AND key IN "
                                f"({','.join('?' * len(got))})", [now, ns, *[k for k, _ in got]])
            con.commit()
        return found

    def put_many(self, ns: str, items: Mapping[str, Any]) -> None:
        """Keep ``items`` (key -> JSON-able value) under ``ns``; then trim to the size cap."""
        self._damage_cleared()
        if not items or self.max_bytes <= 0 or self.damage is not None:
            return
        now = time.time()
        rows = []
        ns = self.disk_namespace(ns)
        for k, v in items.items():
            value = stored_value(v)
            size = len(value) if isinstance(value, bytes) else len(value.encode("utf-8"))
            rows.append((ns, k, value, size + len(k) + len(ns), now))
        with self._unless_damaged(), self._session() as con:
            con.executemany("INSERT OR REPLACE INTO entries (ns, key, value, bytes, used) VALUES (?, ?, ?, ?, ?)",
                            rows)
            con.commit()
            self._trim(con)

    def _trim(self, con: sqlite3.Connection) -> None:
        total = con.execute("SELECT COALESCE(SUM(bytes), 0) FROM entries").fetchone()[0]
        if total <= self.max_bytes:
            return
        goal = int(self.max_bytes * 0.9)  # trim a little further so the next write does not trim again
        cut, freed = None, 0
        for used, size in con.execute("SELECT used, bytes FROM entries ORDER BY used"):
            freed += size
            cut = used
            if total - freed <= goal:
                break
        if cut is not None:
            if cut >= self.opened:
                self.dropped_own += con.execute("SELECT COUNT(*) FROM entries WHERE used <= ? AND used >= ?",
                                                (cut, self.opened)).fetchone()[0]
            con.execute("DELETE FROM entries WHERE used <= ?", (cut,))
            con.commit()

    def overflow_note(self) -> str | None:
        """A note when the size cap dropped entries this run wrote or read (a re-run will score them again)."""
        return overflow_message(self.dropped_own, self.max_bytes)

    def info(self) -> dict[str, Any]:
        """Where the cache is, its cap, and per namespace the number of entries and their bytes (namespaces
        of other code, :func:`code_fingerprint`, marked so)."""
        out: dict[str, Any] = {"path": str(self.path), "max_bytes": self.max_bytes, "entries": 0, "bytes": 0,
                               "namespaces": {}}
        if self.path.exists():
            with self._session() as con:
                marks = (CODE_MARK + code_fingerprint(), CODE_MARK + ANY_CODE)
                for ns, n, b in con.execute("SELECT ns, COUNT(*), SUM(bytes) FROM entries GROUP BY ns ORDER BY ns"):
                    if ns.endswith(marks):
                        ns = ns.rsplit(CODE_MARK, 1)[0]
                    else:  # another code's, or an earlier version's without the mark: kept until the cap drops them
                        ns = ns.rsplit(CODE_MARK, 1)[0] + " [written by other dialeval code: not read]"
                    row = out["namespaces"].setdefault(ns, {"entries": 0, "bytes": 0})
                    row["entries"] += n
                    row["bytes"] += b
                    out["entries"] += n
                    out["bytes"] += b
        out["file_bytes"] = sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*")
                                if p.is_file())
        out["precomputed"] = [str(p) for p in self.precomputed.paths] if self.precomputed is not None else []
        return out

    def clear(self) -> int:
        """Remove every entry; returns how many there were. A file that is not a usable score cache (damaged,
        or another program's) is removed, with its journal, and counted as 0 entries."""
        if not self.path.exists():
            return 0
        try:
            return self._clear()
        except DamagedCache:
            for p in [self.path, *(self.path.with_name(self.path.name + x) for x in ("-wal", "-shm", "-journal"))]:
                p.unlink(missing_ok=True)
            self._ready = False
            return 0

    def _clear(self) -> int:
        with self._session() as con:
            n = con.execute("SELECT COUNT(*) FROM entries").fetchone()[0]
            con.execute("DELETE FROM entries")
            con.commit()
            con.execute("VACUUM")
        return n

    def export(self, namespaces: Sequence[str] | None = None) -> dict[str, dict[str, Any]]:
        """Every entry on disk that this code wrote (of ``namespaces`` if given) as ``{namespace: {key: value}}``,
        the namespaces without the code fingerprint (as the precomputed layers key them)."""
        out: dict[str, dict[str, Any]] = {}
        if not self.path.exists():
            return out
        marks = (CODE_MARK + code_fingerprint(), CODE_MARK + ANY_CODE)
        with self._session() as con:
            for ns, k, v in con.execute("SELECT ns, key, value FROM entries ORDER BY ns, key"):
                if not ns.endswith(marks):
                    continue  # another code's entries
                ns = ns.rsplit(CODE_MARK, 1)[0]
                if namespaces is None or ns in namespaces:
                    out.setdefault(ns, {})[k] = read_value(v)
        return out


def read_precomputed(path: str | os.PathLike) -> dict[str, Any]:
    """The content of a ``precomputed-*.json.gz`` file: ``{"about": {...}, "entries": {namespace: {key: value}}}``."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def export_precomputed(cache: ScoreCache, path: str | os.PathLike, about: Mapping[str, Any],
                       kept: Mapping[str, Mapping[str, Any]] | None = None) -> int:
    """Write the entries of ``cache`` (its disk file only), plus the namespaces ``kept`` (e.g. the same rows as
    computed on another kind of CPU, read from an earlier file), to a ``precomputed-*.json.gz`` file with a
    description ``about`` (what was scored, by which command); returns the number of entries. Written with
    a fixed gzip timestamp, so the same entries give the same bytes."""
    from core.outputs import atomic_path
    entries = {**{ns: dict(rows) for ns, rows in (kept or {}).items()}, **cache.export()}
    payload = {"about": dict(about), "entries": entries}
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:
            f.write(json.dumps(payload, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode("utf-8"))
    return sum(len(v) for v in entries.values())


_DEFAULT: dict[str, ScoreCache] = {}


def shipped_precomputed() -> Precomputed | None:
    """The read-only precomputed layers shipped among the checkpoints (none when there are none)."""
    from core.settings import SettingError, checkpoint_dirs
    try:
        found = {p.name: p for d in reversed(checkpoint_dirs()) for p in sorted(d.glob(PRECOMPUTED_GLOB))}
        paths = [found[name] for name in sorted(found)]  # a file of $DIALEVAL_CHECKPOINTS hides its shipped twin
    except SettingError:
        return None
    return Precomputed(paths) if paths else None


def default_cache() -> ScoreCache | None:
    """The user's score cache (``None`` when ``$DIALEVAL_NO_CACHE`` is set); one object per cache folder."""
    if disabled_by_env():
        return None
    from core.settings import cache_dir
    path = str(cache_dir() / FILE_NAME)
    if path not in _DEFAULT:
        _DEFAULT[path] = ScoreCache(path, precomputed=shipped_precomputed())
    return _DEFAULT[path]


def cache_notes() -> list[str]:
    """:meth:`ScoreCache.damage_note` and :meth:`ScoreCache.overflow_note` of every default cache this process
    opened."""
    return [n for c in _DEFAULT.values() for n in (c.damage_note(), c.overflow_note()) if n]


def damage_notes() -> list[str]:
    """:meth:`ScoreCache.damage_note` of every default cache this process opened that it found damaged (what a
    remote worker reports back with each block)."""
    return [n for n in (c.damage_note() for c in _DEFAULT.values()) if n]


def dropped_entries() -> tuple[int, int]:
    """(entries that the default caches this process opened dropped under their size cap since they were
    opened, the largest of their caps in bytes): what a remote worker reports back with each block."""
    caches = list(_DEFAULT.values())
    return sum(c.dropped_own for c in caches), max((c.max_bytes for c in caches), default=0)


def overflow_message(dropped: int, max_bytes: int, where: str = "") -> str | None:
    """The note for ``dropped`` entries of this run that a cache capped at ``max_bytes`` could not keep
    (``where``: whose cache, e.g. " on the Ray workers"); ``None`` when nothing was dropped."""
    if not dropped:
        return None
    mb = max_bytes / 2 ** 20
    cap = f"{mb:,.0f}" if mb >= 10 else f"{mb:.3g}"
    return (f"note: the score cache{where} is capped at {cap} MB and could not keep everything this run scored: "
            f"{dropped:,} of its entries were dropped again, so a re-run scores those rows anew; raise "
            "DIALEVAL_CACHE_MAX_MB (see `dialeval cache info`)")


def resolve_cache(cache: "ScoreCache | bool | None") -> ScoreCache | None:
    """``True``/``None`` -> the default cache (or none when disabled by the environment), ``False`` -> no
    cache, a ``ScoreCache`` -> itself; anything else is a ``TypeError``."""
    if cache is False:
        return None
    if cache is True or cache is None:
        return default_cache()
    if not isinstance(cache, ScoreCache):
        raise TypeError(f"cache must be True (the score cache), False (none), None or a ScoreCache, got "
                        f"{type(cache).__name__} {cache!r:.40}")
    return cache
