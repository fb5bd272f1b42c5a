"""Write checkpoints/precomputed-demo.json.gz: the built-in demo's scores (every default metric, their parts,
and the judge over its 60 pairs), so a new user's first look at the demo shows the verdict at once.

    .venv/bin/python scripts/precompute_demo.py

The entries are score-cache entries (``core.cache``): keyed by each row's content and each metric's full
signature (version, checkpoint hashes, pool hash), so they answer only for the demo's rows under today's
metrics; after any change that moves a signature they are simply not found and the demo is scored as usual
(tests/test_cache.py fails until this script is run again). Values are computed by the engine with no cache,
exactly as a fresh run computes them.
"""
from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

from core.cache import ScoreCache, export_precomputed
from core.data import load_comparison
from core.engine import DEFAULT_METRICS, judge_comparison, score_examples
from core.progress import progress_bar
from core.version import __version__

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "demo" / "demo.jsonl"
OUT = ROOT / "checkpoints" / "precomputed-demo.json.gz"


def main() -> None:
    comp = load_comparison(str(DEMO))
    with tempfile.TemporaryDirectory() as tmp:
        store = ScoreCache(Path(tmp) / "scores.sqlite3", max_bytes=1 << 40)
        table = score_examples(comp.examples(), list(DEFAULT_METRICS), cache=store, progress=progress_bar())
        judged = judge_comparison(comp, cache=store, progress=progress_bar())
        about = {"what": "the built-in demo's per-row scores and the judge's P(A) over its pairs",
                 "made_by": "python scripts/precompute_demo.py", "version": __version__,
                 "demo": DEMO.name, "demo_sha256": hashlib.sha256(DEMO.read_bytes()).hexdigest(),
                 "rows": len(table.examples), "pairs": len(comp.pairs), "metrics": list(DEFAULT_METRICS),
                 "signatures": table.signatures(), "judge": judged.signature}
        n = export_precomputed(store, OUT, about)
    print(f"wrote {n} entries to {OUT} ({OUT.stat().st_size / 1024:.0f} KB)")


if __name__ == "__main__":
    main()
