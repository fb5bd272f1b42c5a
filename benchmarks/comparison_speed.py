"""How long a cold comparison and the judge take once the models are loaded (issue 23's targets: a 1,000-row
comparison with the default metrics under 60 s, the judge at 25 pairs/s or more on 2 cores). Prints a table.

    .venv/bin/python benchmarks/comparison_speed.py [--pairs 1000] [--judge-pairs 240] [--fixed-rows]

Rows are made from the demo (demo/demo.jsonl, both systems): pair i takes the demo pair i mod 60 and appends
" (k)" to the last context turn and to both replies (k = i // 60), so every text is new to the encoders' memory.
The judge is timed twice: on the first pairs of the comparison just scored (as after `dialeval compare` or the
dashboard's scores: MME, which the judge's mix reads, has read those replies) and on pairs nothing has read.
The models are loaded first by scoring and judging the demo itself (not timed); the score cache is off.
Times include the verdict (bootstrap and permutation tests) for the comparison. ``--fixed-rows`` keeps every
batch's dummy rows (``core.models.device.rows_are_independent`` answers no), as every CPU did before 2026-11-28:
run once with it and once without to see what dropping them gains where rows are independent (AVX2).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import replace

from common import ROOT

os.environ["DIALEVAL_NO_CACHE"] = "1"  # every row computed: this measures the work, not the cache


def suffixed(comp, n: int, first: int = 0):
    """A comparison of ``n`` pairs built from ``comp``'s pairs with numbered suffixes (every text new), the
    suffixes counted from ``first``."""
    from core.data import Comparison
    pairs = []
    for i in range(n):
        ea, eb = comp.a[i % len(comp.a)], comp.b[i % len(comp.b)]
        tag = f" ({first + i // len(comp.a)})"
        ctx = list(ea.context[:-1]) + [ea.context[-1] + tag]
        pairs.append((replace(ea, id=f"p{i:06d}", context=ctx, response=ea.response + tag),
                      replace(eb, id=f"p{i:06d}", context=ctx, response=eb.response + tag)))
    return Comparison(comp.system_a, comp.system_b, pairs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=1000)
    ap.add_argument("--judge-pairs", type=int, default=240)
    ap.add_argument("--fixed-rows", action="store_true", help="keep the dummy rows of every batch (the old path)")
    a = ap.parse_args()
    from core.models import device
    if a.fixed_rows:
        device.rows_are_independent = lambda dtype: False
    rows = "dummy rows kept" if a.fixed_rows else (
        "dummy rows dropped" if device.rows_are_independent("float32") else "dummy rows kept (this CPU)")
    from core.data import load_comparison
    from core.engine import DEFAULT_METRICS, judge_comparison, score_comparison
    from core.verdict import build_verdict
    demo = load_comparison(str(ROOT / "demo" / "demo.jsonl"))
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    score_comparison(demo, DEFAULT_METRICS)
    judge_comparison(demo)
    loading = time.perf_counter() - t0
    comp = suffixed(demo, a.pairs)
    t0 = time.perf_counter()
    cs = score_comparison(comp, DEFAULT_METRICS)
    build_verdict(comp, cs, None)
    compare_s = time.perf_counter() - t0
    judged = suffixed(demo, a.judge_pairs)
    t0 = time.perf_counter()
    judge_comparison(judged)
    judge_s = time.perf_counter() - t0
    fresh = suffixed(demo, a.judge_pairs, first=a.pairs // len(demo.a) + 1)
    t0 = time.perf_counter()
    judge_comparison(fresh)
    fresh_s = time.perf_counter() - t0
    print(f"Load average at start {load:.2f} (2 cores); models loaded and the demo scored first in {loading:.1f} s "
          f"(not counted); score cache off; {device.device_key('cpu')}, {rows}.\n")
    print("| measurement | seconds | rate | target |\n|---|---|---|---|")
    print(f"| cold comparison, {a.pairs} pairs ({2 * a.pairs} rows), {', '.join(DEFAULT_METRICS)}, verdict included "
          f"| {compare_s:.1f} | {2 * a.pairs / compare_s:.1f} rows/s | < 60 s |")
    print(f"| the judge, {a.judge_pairs} pairs of that comparison (both orders, SmolLM2 reader; MME-CRS read "
          f"already) | {judge_s:.1f} | {a.judge_pairs / judge_s:.1f} pairs/s | >= 25 pairs/s |")
    print(f"| the judge, {a.judge_pairs} pairs nothing has read (MME-CRS of both replies included) | {fresh_s:.1f} | "
          f"{a.judge_pairs / fresh_s:.1f} pairs/s | >= 25 pairs/s |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
