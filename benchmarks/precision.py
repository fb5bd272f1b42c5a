"""MiniLM's sentence encodings in bfloat16 (``DIALEVAL_PRECISION=bfloat16``) against float32, the default: how much
faster each MiniLM-bound metric gets, how far its per-row scores move, and whether its agreement with people moves
(issue 23, item 3: a faster runtime only where scores stay within a stated tolerance and the held-out correlations
do not drop). Prints markdown tables.

    .venv/bin/python benchmarks/precision.py [--speed-n 400] [--max-rows 300] [--datasets a,b] [--n-boot 200]

- **Speed**: each metric on ``--speed-n`` chitchat examples (``common.sample_examples``: an utterance, another
  pair's reply as the response, the true reply as the reference), models loaded and warmed up first, every
  in-process memory emptied before each timed run, score cache off; rows/s in float32 and bfloat16.
- **Scores and agreement**: every rated set in ../shared/data/eval, at most ``--max-rows`` rows (whole contexts,
  reference copies dropped: ``core.meta_eval``), scored in both formats. Per metric: the largest and the mean
  per-row |difference|, also as a share of the metric's spread (standard deviation) over those rows; and the
  Spearman correlation with each human dimension by ``core.meta_eval.meta_evaluate``, the protocol of
  benchmarks/RESULTS.md (learned metrics held out of the set they are measured on), in both formats.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

from common import SHARED_EVAL, sample_examples

os.environ["DIALEVAL_NO_CACHE"] = "1"  # every row computed: this measures the work, not the cache

DATA = SHARED_EVAL
SPEED_METRICS = ("ubleu", "bert_ruber", "adem", "mme_rm", "mme_em", "mme")
QUALITY_METRICS = ("ubleu", "ruber_ubleu", "bert_ruber", "adem", "mme_rm", "mme_em", "mme")
FORMATS = ("float32", "bfloat16")


def speed_rows(n: int) -> list[str]:
    from core.engine import score_examples
    from core.models.memo import forget_all
    exs = sample_examples(n + 8)
    warm, exs = exs[:8], exs[8:]
    rates: dict[tuple[str, str], float] = {}
    for fmt in FORMATS:
        os.environ["DIALEVAL_PRECISION"] = fmt
        for m in SPEED_METRICS:
            score_examples(warm, [m], cache=False)  # load and warm up
            forget_all()
            t = time.perf_counter()
            score_examples(exs, [m], cache=False)
            rates[(m, fmt)] = len(exs) / (time.perf_counter() - t)
            forget_all()
            print(f"speed {m} {fmt}: {rates[(m, fmt)]:.1f} rows/s", file=sys.stderr, flush=True)
    out = ["| metric | float32 rows/s | bfloat16 rows/s | speed-up |", "|---|---:|---:|---:|"]
    for m in SPEED_METRICS:
        a, b = rates[(m, "float32")], rates[(m, "bfloat16")]
        out.append(f"| {m} | {a:.1f} | {b:.1f} | {b / a:.2f} |")
    return out


def quality_rows(files: list[Path], max_rows: int, n_boot: int) -> tuple[list[str], list[str]]:
    from core.data import load_file
    from core.engine import score_examples
    from core.meta_eval import meta_evaluate, scored_rows
    rows_by_fmt: dict[str, list[dict]] = {}
    scores: dict[tuple[str, str], list[np.ndarray]] = {}
    for fmt in FORMATS:
        os.environ["DIALEVAL_PRECISION"] = fmt
        t = time.perf_counter()
        rows_by_fmt[fmt] = meta_evaluate([str(f) for f in files], list(QUALITY_METRICS), methods=("spearman",),
                                         n_boot=n_boot, max_rows=max_rows, system_level=False)
        for f in files:
            exs = scored_rows(load_file(str(f)), max_rows)
            table = score_examples(exs, list(QUALITY_METRICS), cache=False)
            for m in QUALITY_METRICS:
                scores.setdefault((m, fmt), []).append(np.asarray(table.column(m), dtype=np.float64))
        print(f"quality {fmt}: {time.perf_counter() - t:.0f} s", file=sys.stderr, flush=True)
    diff = ["| metric | rows | max abs difference | mean abs difference | spread (sd) | max / spread |",
            "|---|---:|---:|---:|---:|---:|"]
    for m in QUALITY_METRICS:
        a, b = np.concatenate(scores[(m, "float32")]), np.concatenate(scores[(m, "bfloat16")])
        ok = np.isfinite(a) & np.isfinite(b)
        if not ok.any():
            continue
        d = np.abs(a[ok] - b[ok])
        sd = float(np.std(a[ok]))
        diff.append(f"| {m} | {int(ok.sum())} | {d.max():.2e} | {d.mean():.2e} | {sd:.3g} | {d.max() / sd:.3f} |")
    corr = ["| metric | set x dimension cells | mean Spearman float32 | bfloat16 | mean change | cells up / down | "
            "largest drop |", "|---|---:|---:|---:|---:|---:|---:|"]

    def cells(fmt: str, m: str) -> dict[tuple[str, str], float]:
        return {(r["dataset"], r["dimension"]): r["spearman"] for r in rows_by_fmt[fmt]
                if r["metric"] == m and r.get("level") == "turn" and r.get("spearman") is not None
                and np.isfinite(r["spearman"])}
    for m in QUALITY_METRICS:
        a, b = cells("float32", m), cells("bfloat16", m)
        keys = sorted(set(a) & set(b))
        if not keys:
            continue
        d = np.array([b[k] - a[k] for k in keys])
        corr.append(f"| {m} | {len(keys)} | {np.mean([a[k] for k in keys]):.4f} | {np.mean([b[k] for k in keys]):.4f} "
                    f"| {d.mean():+.4f} | {int((d > 0).sum())} / {int((d < 0).sum())} | {d.min():+.4f} |")
    return diff, corr


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--speed-n", type=int, default=400)
    ap.add_argument("--max-rows", type=int, default=300)
    ap.add_argument("--datasets", help="comma-separated rated sets (file stems); default: all")
    ap.add_argument("--n-boot", type=int, default=200)
    ap.add_argument("--skip", default="", help="comma-separated parts to skip: speed, quality")
    a = ap.parse_args()
    import torch
    from core.models.device import cpu_kernels
    files = sorted(DATA.glob("*.jsonl"))
    if a.datasets:
        files = [DATA / f"{d}.jsonl" for d in a.datasets.split(",")]
    t0 = time.perf_counter()
    load = os.getloadavg()[0]
    out = [f"Made by `python benchmarks/precision.py {' '.join(sys.argv[1:])}` on "
           f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, torch {torch.__version__}, CPU kernels "
           f"{cpu_kernels()}, {os.cpu_count()} cores, load average {load:.2f} at the start.", ""]
    skip = set(filter(None, a.skip.split(",")))
    if "speed" not in skip:
        out += [f"### Speed ({a.speed_n} chitchat examples, score cache off)", "", *speed_rows(a.speed_n), ""]
    if "quality" not in skip:
        diff, corr = quality_rows(files, a.max_rows, a.n_boot)
        out += [f"### Per-row scores, bfloat16 against float32 ({len(files)} rated sets, up to {a.max_rows} rows each)",
                "", *diff, "", "### Agreement with people (Spearman, turn level, RESULTS.md's protocol)", "", *corr, ""]
    out.append(f"({time.perf_counter() - t0:.0f} s in all)")
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
