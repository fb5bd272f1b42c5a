"""How time and peak memory grow with the input: ``dialeval score`` per metric at 1k / 10k / 100k rows (BLEU and
υBLEU also 1M), cold and cached, locally and on Ray with 1 and 2 workers, and each metric's rows/s as a share of
the raw encoder or language-model throughput it depends on (issue 23, item 6). Prints one markdown table.

    python benchmarks/growth.py                                   # the default run (see --help)
    python benchmarks/growth.py --metrics bleu --sizes 1k,10k,100k,1M --budget 900

Every cell is the installed command in a fresh process (``common.run_dialeval``): seconds of the whole command
(model loading included), the driver's peak RSS. Rows are ``common.build_rows(all_new=True)``: the demo's
120 rows (60 contexts x 2 systems) repeated, every pass's replies, last context turns and references suffixed,
so no row is a demo row (whose scores ship precomputed) and a text is read twice only across the two systems
of one context, as in any comparison.

- **cold**: an empty score cache (a fresh ``XDG_CACHE_HOME``); rows/s excludes the metric's model loading,
  measured once per metric as the time of a 20-row run ("load s").
- **cached**: the same command again (every row read from the cache written by the cold run).
- **ray 1 / ray 2**: ``--backend ray --workers N --no-cache`` at ``--ray-sizes`` (Ray's start-up included).
- A cell runs only when the time it would take, extrapolated linearly from the metric's largest measured
  size, is within ``--budget`` seconds; otherwise the table shows that estimate marked "est." and no memory,
  so what was measured and what was extrapolated never mix.
- **floor**: the raw throughput the metric's cost depends on, measured here on the first 1,000 rows
  (``speed.py``'s floors: one all-MiniLM-L6-v2 encoding per row; one SmolLM2-135M forward pass per reply;
  sacrebleu's sentence BLEU-2). ratio = cold rows/s at the largest measured size / floor.
"""
from __future__ import annotations

import argparse
import datetime
import filecmp
import os
import sys
import tempfile
from pathlib import Path

from common import ROOT, build_rows, emit_with_load, run_child, run_dialeval, uptime

FLOORS = {"bleu": "sacrebleu", "ubleu": "minilm", "bert_ruber": "minilm", "ruber": "minilm", "adem": "minilm",
          "mme": "smollm"}
SIZE_WORDS = {"k": 1_000, "M": 1_000_000}


def parse_size(text: str) -> int:
    text = text.strip()
    return int(float(text[:-1]) * SIZE_WORDS[text[-1]]) if text[-1] in SIZE_WORDS else int(text)


def label(n: int) -> str:
    return f"{n // 1_000_000}M" if n >= 1_000_000 and n % 1_000_000 == 0 else f"{n // 1000}k" if n % 1000 == 0 \
        else str(n)


class Cells:
    """Measured and estimated cells of one metric; estimates come from the largest measured cold size."""

    def __init__(self, metric: str):
        self.metric = metric
        self.load_s = 0.0
        self.per_row: float | None = None  # seconds per row beyond loading, from the largest cold run

    @property
    def cold_rate(self) -> float | None:
        return None if self.per_row is None else 1 / self.per_row

    def estimate(self, n: int, extra_s: float = 0.0) -> float | None:
        return None if self.per_row is None else self.load_s + extra_s + n * self.per_row

    def command(self, src: Path, out: Path, *extra: str) -> list[str]:
        return ["score", str(src), "--metrics", self.metric, "--quiet", "--out", str(out), *extra]


def fmt_cell(res: dict | None, n: int, est: float | None) -> tuple[str, str, str]:
    """(rows/s, seconds, peak RSS MiB) of a measured cell, or the estimate of one not run."""
    if res is None:
        return ("—", f"est. {est:,.0f}" if est is not None else "—", "—")
    return (f"{n / res['wall']:,.1f}", f"{res['wall']:,.1f}", f"{res['maxrss_mib']:,.0f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--metrics", default="bleu,ubleu,bert_ruber,mme", help="metrics, each timed on its own")
    ap.add_argument("--sizes", default="1k,10k,100k", help="input sizes for every metric")
    ap.add_argument("--big", default="bleu:1M,ubleu:1M", help="extra sizes per metric (METRIC:SIZE,...)")
    ap.add_argument("--ray-sizes", default="1k", help="sizes also run on Ray with 1 and 2 workers ('' for none)")
    ap.add_argument("--budget", type=float, default=600.0, help="longest expected seconds a cell may take to run")
    ap.add_argument("--out", default=None, help="also write the table to this file")
    a = ap.parse_args()
    metrics = a.metrics.split(",")
    sizes = [parse_size(s) for s in a.sizes.split(",")]
    big: dict[str, list[int]] = {}
    for item in filter(None, a.big.split(",")):
        m, s = item.split(":")
        big.setdefault(m, []).append(parse_size(s))
    ray_sizes = {parse_size(s) for s in a.ray_sizes.split(",") if s}
    before = uptime()
    started = datetime.datetime.now(datetime.timezone.utc)
    floors = {}
    for kind in sorted({FLOORS.get(m, "minilm") for m in metrics}):
        res = run_child(ROOT / "benchmarks" / "speed.py", {"what": "floor", "kind": kind, "n": 1000},
                        threads=os.cpu_count() or 1, timeout=1800)
        floors[kind] = res.get("ex_per_s")
        print(f"floor {kind}: {floors[kind]}", file=sys.stderr, flush=True)
    lines = []
    ratios = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        os.environ.pop("DIALEVAL_NO_CACHE", None)
        for metric in metrics:
            cells = Cells(metric)
            tiny = work / "rows-20.jsonl"
            build_rows(20, tiny, all_new=True)
            os.environ["XDG_CACHE_HOME"] = str(work / f"cache-{metric}-load")
            cells.load_s = run_dialeval(cells.command(tiny, work / "tiny.jsonl", "--no-cache"), work)["wall"]
            for n in sorted(set(sizes) | set(big.get(metric, []))):
                src = work / f"rows-{n}.jsonl"
                if not src.exists():
                    build_rows(n, src, all_new=True)
                est = cells.estimate(n)
                row: dict[str, tuple[str, str, str]] = {}
                if est is None or est <= a.budget:
                    os.environ["XDG_CACHE_HOME"] = str(work / f"cache-{metric}-{n}")
                    cold = run_dialeval(cells.command(src, work / "cold.jsonl"), work)
                    cached = run_dialeval(cells.command(src, work / "cached.jsonl"), work)
                    same = filecmp.cmp(work / "cold.jsonl", work / "cached.jsonl", shallow=False)
                    beyond_load = cold["wall"] - cells.load_s
                    # Under half a second of work beyond loading is within the noise of the load time itself:
                    # charge the whole wall time to the rows then (a slower, honest rate, never an absurd one).
                    cells.per_row = (beyond_load if beyond_load >= 0.5 else cold["wall"]) / n
                    row["cold"], row["cached"] = fmt_cell(cold, n, None), fmt_cell(cached, n, None)
                    row["cached"] = (*row["cached"][:2], row["cached"][2] + ("" if same else " (bytes differ!)"))
                else:
                    row["cold"] = fmt_cell(None, n, est)
                    row["cached"] = ("—", "—", "—")
                for w in (1, 2):
                    if n not in ray_sizes:
                        continue
                    est_ray = cells.estimate(n, extra_s=5.0)
                    key = f"ray {w}"
                    if est_ray is not None and est_ray / w > a.budget:
                        row[key] = fmt_cell(None, n, est_ray / w)
                        continue
                    res = run_dialeval(cells.command(src, work / f"ray{w}.jsonl", "--no-cache", "--backend", "ray",
                                            "--workers", str(w)), work)
                    row[key] = fmt_cell(res, n, None)
                for kind, (rate, secs, mem) in row.items():
                    lines.append(f"| {metric} | {label(n)} | {kind} | {rate} | {secs} | {mem} |")
                    print(lines[-1], file=sys.stderr, flush=True)
            floor = floors.get(FLOORS.get(metric, "minilm"))
            ratios.append(f"| {metric} | {cells.load_s:.1f} | {FLOORS.get(metric, 'minilm')} | "
                          f"{floor:,.1f} | {cells.cold_rate:,.1f} | {cells.cold_rate / floor:.2f} |"
                          if floor and cells.cold_rate else f"| {metric} | {cells.load_s:.1f} | — | — | — | — |")
    after = uptime()
    minutes = (datetime.datetime.now(datetime.timezone.utc) - started).total_seconds() / 60
    emit_with_load([
        (f"`dialeval score` growth, {started:%Y-%m-%d %H:%M} UTC, {os.cpu_count()} CPU cores, {minutes:.0f} min "
         f"in all; budget {a.budget:.0f} s per cell (cells over it show an estimate, marked est.)."),
        "",
        "| metric | rows | run | rows/s | seconds | driver peak RSS (MiB) |",
        "|---|---:|---|---:|---:|---:|",
        *lines,
        "",
        "| metric | load s | floor | floor rows/s | metric rows/s (largest measured, load excluded) | ratio |",
        "|---|---:|---|---:|---:|---:|",
        *ratios,
    ], before, after, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
