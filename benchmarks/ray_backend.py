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
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

CHILD = """
import json, sys
from core.cli import main
code = main(sys.argv[2:])
peak = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({"rc": code, "maxrss_mib": peak / 1024}), file=open(sys.argv[1], "w"))
"""
# VmHWM (the peak of this process's own memory map, reset by exec) and not getrusage's ru_maxrss, which a child
# inherits from the parent's resident size at fork: after the parent had compared two 1.3 GB outputs, every
# later child reported 2.5 GB.


def build_rows(n: int, path: Path, all_new: bool = False) -> None:
    """Row i is demo row i mod 120 (demo/demo.jsonl) with id ``bench-i``; from the second pass over the demo
    on, its response and its last context turn end with `` (take k)`` (k = the pass), so those texts do not
    repeat (the encoders remember the vectors of texts they have seen in a process). ``all_new=True`` suffixes
    the references too and starts at take 1, so no row is one of the demo's (whose scores ship precomputed) and
    no reply, last turn or reference is read twice except across the two systems of one context, as in any
    comparison."""
    demo = [json.loads(line) for line in (REPO / "demo" / "demo.jsonl").read_text(encoding="utf-8").splitlines()]
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            row = dict(demo[i % len(demo)])
            take = i // len(demo) + (1 if all_new else 0)
            row["id"] = f"bench-{i:06d}"
            if take:
                row["response"] = f"{row['response']} (take {take})"
                row["context"] = row["context"][:-1] + [f"{row['context'][-1]} (take {take})"]
                if all_new:
                    row["references"] = [f"{r} (take {take})" for r in row.get("references", [])]
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def run(args: list[str], workdir: Path) -> dict:
    """``dialeval ARGS`` in a fresh Python process: wall seconds, exit code, the driver's peak RSS."""
    stats = workdir / "stats.json"
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", CHILD, str(stats), *args], cwd=workdir, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"dialeval {' '.join(args)} failed ({r.returncode}):\n{r.stderr[-2000:]}")
    return {"wall": wall, **json.loads(stats.read_text())}


def uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return f"load average {os.getloadavg()}"


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
                    res = run(base + extra + ["--out", str(out)], work)
                    same = "yes" if filecmp.cmp(out, local_out, shallow=False) else "no"
                    lines.append(f"| {metric} | {n:,} | {name} | {n / res['wall']:,.1f} | {res['wall']:.1f} | "
                                 f"{res['maxrss_mib']:,.0f} | {same} |")
                    print(lines[-1], file=sys.stderr, flush=True)
    after = uptime()
    threads = os.environ.get("DIALEVAL_THREADS") or f"unset (local: all {os.cpu_count()} cores; Ray: cores // workers)"
    table = "\n".join([
        f"`dialeval score` throughput, {datetime.date.today()}, {os.cpu_count()} CPU cores, DIALEVAL_THREADS "
        f"{threads}. Rows: demo/demo.jsonl's 120 rows repeated with ids bench-i, the response and the last "
        "context turn of every repeat suffixed ` (take k)` (no text repeats). Wall clock of the whole command "
        "(model loading and Ray start included); peak RSS of the driver process only; \"same bytes\": output "
        "identical to the local run's.",
        "",
        "| metric | rows | backend | rows/s | seconds | driver peak RSS (MiB) | same bytes |",
        "|---|---:|---|---:|---:|---:|---|",
        *lines,
        "",
        f"Load before: `{before}`; after: `{after}`.",
    ])
    emit(table, a.out)
    return 0


def emit(table: str, out: str | None) -> None:
    """Print the table, and write it to ``out`` when given."""
    print(table)
    if out:
        Path(out).write_text(table + "\n", encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
