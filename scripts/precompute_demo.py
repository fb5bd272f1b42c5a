"""Write checkpoints/precomputed-demo.json.gz: the built-in demo's scores (every default metric, their parts,
and the judge over its 60 pairs), so a new user's first look at the demo shows the verdict at once.

    .venv/bin/python scripts/precompute_demo.py

The entries are score-cache entries (``core.cache``): keyed by each row's content and each metric's full
signature (version, checkpoint hashes, pool hash), so they answer only for the demo's rows under today's
metrics; after any change that moves a signature they are simply not found and the demo is scored as usual
(tests/test_cache.py fails until this script is run again). Values are computed by the engine with no cache,
exactly as a fresh run computes them.

Each kind of CPU computes SmolLM2's passes with its own kernels (``core.models.device.device_key``; float32 where
bfloat16 is not native), so entries are kept per kind: a run adds (or replaces) this machine's kind and keeps the
other kinds' entries whose signatures are still today's. A kind with no entries scores the demo on its first
visit.
"""
from __future__ import annotations

import argparse
import hashlib
import tempfile
from pathlib import Path

from core.cache import ScoreCache, export_precomputed, read_precomputed
from core.data import load_comparison
from core.engine import DEFAULT_METRICS, judge_comparison, score_examples
from core.models.device import active_device, device_key
from core.progress import progress_bar
from core.settings import use_float32_encodings
from core.version import __version__

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "demo" / "demo.jsonl"
OUT = ROOT / "checkpoints" / "precomputed-demo.json.gz"


def _without_device(namespace: str) -> str:
    return namespace.rsplit("|device:", 1)[0]


def other_kinds(path: Path, here: str, computed: dict[str, dict]) -> dict:
    """The entries of ``path`` computed elsewhere (another device key than ``here``) under namespaces that are
    today's apart from the device, for the kinds that still hold, under every one of today's namespaces, every
    row computed here (``computed``: namespace -> {row key: value}): a kind whose entries for one metric are
    stale, or that lacks rows of a changed demo file, is dropped whole (its first visit scores the demo, as on a
    kind never recorded), so every kind the file names answers for the whole demo."""
    if not path.exists():
        return {}
    today = {_without_device(ns): set(rows) for ns, rows in computed.items()}
    by_kind: dict[str, dict] = {}
    for ns, rows in read_precomputed(path)["entries"].items():
        base, _, kind = ns.rpartition("|device:")
        if kind != here and base in today:
            by_kind.setdefault(kind, {})[ns] = rows
    return {ns: rows for entries in by_kind.values()
            if {_without_device(ns) for ns in entries} == set(today)
            and all(today[_without_device(ns)] <= set(rows) for ns, rows in entries.items())
            for ns, rows in entries.items()}


def main() -> None:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    use_float32_encodings("scripts/precompute_demo.py")  # the numbers it records are float32's
    comp = load_comparison(str(DEMO))
    here = device_key(active_device())
    with tempfile.TemporaryDirectory() as tmp:
        store = ScoreCache(Path(tmp) / "scores.sqlite3", max_bytes=1 << 40)
        table = score_examples(comp.examples(), list(DEFAULT_METRICS), cache=store, progress=progress_bar())
        judged = judge_comparison(comp, cache=store, progress=progress_bar())
        about = {"what": "the built-in demo's per-row scores and the judge's P(A) over its pairs",
                 "made_by": "python scripts/precompute_demo.py", "version": __version__,
                 "demo": DEMO.name, "demo_sha256": hashlib.sha256(DEMO.read_bytes()).hexdigest(),
                 "rows": len(table.examples), "pairs": len(comp.pairs), "metrics": list(DEFAULT_METRICS),
                 "signatures": table.signatures(), "judge": judged.signature}
        kept = other_kinds(OUT, here, store.export())
        about["computed_on"] = sorted({here} | {ns.rsplit("|device:", 1)[1] for ns in kept})
        n = export_precomputed(store, OUT, about, kept)
    print(f"wrote {n} entries to {OUT} ({OUT.stat().st_size / 1024:.0f} KB): computed here ({here}), "
          f"kept from before: {', '.join(sorted({ns.rsplit('|device:', 1)[1] for ns in kept})) or 'nothing'}")


if __name__ == "__main__":
    main()
