"""Throughput of ``dialeval score`` on the local backend and on Ray (1 and 2 workers), and the driver's peak memory.

    python benchmarks/ray_backend.py [--rows 1000,10000] [--metrics bleu,bert_ruber] [--out FILE]

Each run is the installed command in a fresh process (models load inside the timed run, Ray starts inside it),
scoring to a file with ``--quiet``. Rows per second = rows / wall-clock seconds of the whole command. Peak RSS
is the driver process's own (its VmHWM from /proc: Ray's workers and daemons are not counted).
"same bytes" compares each output with the local run's. Prints a markdown table (and writes it with --out);
the numbers depend on the machine and its load, so the table records ``uptime`` before and after.
"""
import argparse
import datetime
import filecmp
import os
import sys
import tempfile
from pathlib import Path

from common import build_rows, emit_with_load, run_dialeval, uptime

HEADER = ["| metric | rows | backend | rows/s | seconds | driver peak RSS (MiB) | same bytes |",
          "|---|---:|---|---:|---:|---:|---|"]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="1000,10000", help="input sizes, comma-separated")
    ap.add_argument("--metrics", default="bleu,bert_ruber", help="metrics, each timed on its own")
    ap.add_argument("--workers", default="1,2", help="Ray worker counts")
    ap.add_argument("--out", default=None, help="also write the table to this file")
    a = ap.parse_args()
    sizes = [int(x) for x in a.rows.split(",")]
    metrics = a.metrics.split(",")
    workers = [int(x) for x in a.workers.split(",")]
    before = uptime()
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for n in sizes:
            src = work / f"rows-{n}.jsonl"
            build_rows(n, src)
            for metric in metrics:
                local_out = work / f"local-{metric}-{n}.jsonl"
                base = ["score", str(src), "--metrics", metric, "--quiet"]
                configs = [("local", [], local_out)] + [
                    (f"ray, {w} worker{'s' if w > 1 else ''}", ["--backend", "ray", "--workers", str(w)],
                     work / f"ray{w}-{metric}-{n}.jsonl") for w in workers]
                for name, extra, out in configs:
                    res = run_dialeval(base + extra + ["--out", str(out)], work)
                    same = "yes" if filecmp.cmp(out, local_out, shallow=False) else "no"
                    lines.append(f"| {metric} | {n:,} | {name} | {n / res['wall']:,.1f} | {res['wall']:.1f} | "
                                 f"{res['maxrss_mib']:,.0f} | {same} |")
                    print(lines[-1], file=sys.stderr, flush=True)
    after = uptime()
    threads = os.environ.get("DIALEVAL_THREADS") or f"unset (local: all {os.cpu_count()} cores; Ray: cores // workers)"
    emit_with_load([
        f"`dialeval score` throughput, {datetime.date.today()}, {os.cpu_count()} CPU cores, DIALEVAL_THREADS "
        f"{threads}. Rows: demo/demo.jsonl's 120 rows repeated with ids bench-i, the response and the last "
        "context turn of every repeat suffixed ` (take k)` (no text repeats). Wall clock of the whole command "
        "(model loading and Ray start included); peak RSS of the driver process only; \"same bytes\": output "
        "identical to the local run's.",
        "", *HEADER, *lines], before, after, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
