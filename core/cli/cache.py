"""``dialeval cache info|clear``: where the score cache is, what it holds, and emptying it (``core.cache``)."""
from __future__ import annotations

import argparse

from core.cli import register_command


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=("info", "clear"), nargs="?", default="info",
                   help="info: the cache's folder, size, cap and entries per metric signature (default); "
                        "clear: remove every entry")


def _mb(n: int) -> str:
    return f"{n / 1024 / 1024:.1f} MB"


@register_command("cache", "the score cache: where it is, what it holds (info), emptying it (clear)", _arguments)
def cache(a: argparse.Namespace) -> int:
    from core.cache import FILE_NAME, ScoreCache, disabled_by_env, max_bytes_from_env, shipped_precomputed
    from core.settings import cache_dir
    store = ScoreCache(cache_dir() / FILE_NAME, max_bytes_from_env(), shipped_precomputed())
    if a.action == "clear":
        n = store.clear()
        print(f"removed {n} entries from {store.path}")
        return 0
    info = store.info()
    state = "off (DIALEVAL_NO_CACHE is set)" if disabled_by_env() else "on"
    print(f"score cache: {info['path']} ({state})")
    print(f"size: {_mb(info['file_bytes'])} on disk, {info['entries']} entries ({_mb(info['bytes'])}); cap "
          f"{_mb(info['max_bytes'])} (DIALEVAL_CACHE_MAX_MB; least recently used entries go first)")
    for p in info["precomputed"]:
        print(f"precomputed (read-only, shipped): {p}")
    for ns, row in info["namespaces"].items():
        print(f"  {row['entries']:>8}  {_mb(row['bytes']):>9}  {ns}")
    return 0
