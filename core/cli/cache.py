"""``dialeval cache info|clear``: where the score cache is, what it holds, and emptying it (``core.cache``)."""
from __future__ import annotations

import argparse
import fnmatch
import shutil
from pathlib import Path

from core.cli import note, register_command


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=("info", "clear"), nargs="?", default="info",
                   help="info: the cache's folder, size, cap and entries per metric signature, and the other "
                        "files kept there (default); clear: remove every score entry")
    p.add_argument("--all", action="store_true",
                   help="with clear: also remove the other files (SmolLM2's float32 copy, pool indexes, reader "
                        "features); they are made again when next needed")


def _mb(n: int) -> str:
    return f"{n / 1024 / 1024:.1f} MB"


@register_command("cache", "the score cache: where it is, what it holds (info), emptying it (clear)", _arguments)
def cache(a: argparse.Namespace) -> int:
    from core.cache import FILE_NAME, ScoreCache, disabled_by_env, max_bytes_from_env, shipped_precomputed
    from core.settings import cache_location
    folder = cache_location()[0]  # looked at, not made: `info` on a machine that never scored creates nothing
    store = ScoreCache(folder / FILE_NAME, max_bytes_from_env(), shipped_precomputed())
    others = {p: _size(p) for p in other_files(folder, store.path)}
    if a.action == "clear":
        n = store.clear()
        print(f"removed {n} entries from {store.path}")
        if a.all:
            for p in others:
                shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()  # a link: only the link
            print(f"removed {len(others)} other file(s) ({_mb(sum(others.values()))})")
        elif others:
            print(f"kept {len(others)} other file(s), {_mb(sum(others.values()))} (model conversions, "
                  f"indexes, features: `dialeval cache clear --all` removes them too)")
        return 0
    if a.all:
        note(["--all goes with clear (it removes the other files too); info lists them all already"])
    info = store.info()
    state = "off (DIALEVAL_NO_CACHE is set)" if disabled_by_env() else "on"
    made = "" if store.path.exists() else "; not made yet: nothing has been scored with this cache"
    print(f"score cache: {info['path']} ({state}{made})")
    print(f"size: {_mb(info['file_bytes'])} on disk, {info['entries']} entries ({_mb(info['bytes'])}); cap "
          f"{_mb(info['max_bytes'])} (DIALEVAL_CACHE_MAX_MB; least recently used entries go first)")
    for p in info["precomputed"]:
        print(f"precomputed (read-only, shipped): {p}")
    for ns, row in info["namespaces"].items():
        print(f"  {row['entries']:>8}  {_mb(row['bytes']):>9}  {ns}")
    if others:
        print(f"other files in {folder} ({_mb(sum(others.values()))}; made again when needed; "
              f"`dialeval cache clear --all` removes them):")
        for p, size in others.items():
            print(f"  {_mb(size):>9}  {p.name}")
    return 0


def _size(path: Path) -> int:
    """Bytes ``path`` takes: a link counts as itself, not as the file it points to (SmolLM2's served folder
    links the copy's files)."""
    if path.is_dir() and not path.is_symlink():
        return sum(f.lstat().st_size for f in path.rglob("*") if f.is_symlink() or f.is_file())
    return path.lstat().st_size


USER_FOLDERS = ("uploads", "votes")  # the dashboard's kept uploads and your votes: not remade, never removed here
MADE_HERE = ("smollm2-135m-f32-*", "pool-keys.json", "pool-*.npy", "judge-heldout-*.jsonl", "judge-lm-features-*",
             "serve-*.log")
"""Names of what dialeval makes in the cache folder and makes again when needed: SmolLM2's float32 copy (and a
half-written one, ``NAME.xxxx``), the pools' key memo and built indexes, the judge trainers' held-out list and
reader features, and the logs of ``core.judges.local_server`` (a local LLM judge served from SmolLM2's copy).
Nothing else there is touched: the folder may be one the user shares with other files."""


def other_files(folder: Path, score_file: Path) -> list[Path]:
    """What the cache folder holds besides the score cache that dialeval made and makes again when needed
    (:data:`MADE_HERE`); the dashboard's ``uploads`` and ``votes`` and every file dialeval did not make are
    left out."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.name not in USER_FOLDERS and p != score_file
                  and any(fnmatch.fnmatch(p.name, pattern) or fnmatch.fnmatch(p.name, pattern + ".*")
                          for pattern in MADE_HERE))
