"""What several benchmarks share: the repository's folders, rows to measure on, child processes that run the
command line or one measurement, peak memory, the machine's load, and writing the result tables.

A benchmark runs as ``python benchmarks/NAME.py``, so this folder is on ``sys.path`` and ``from common import
...`` finds this module; no benchmark imports another benchmark or anything from ``tests/``.
"""
from __future__ import annotations

import importlib
import json
import os
import pkgutil
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEST_DATA = ROOT / "tests" / "data"  # data files the benchmarks read (the common-sense check set), never imported
SHARED_EVAL = Path(os.environ.get("DIALEVAL_SHARED_DATA", ROOT.parent / "shared" / "data")) / "eval"  # rated sets

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


# ------------------------------------------------------------------------------------------------
# rows to measure on


def sample_examples(n: int, seed: int = 13):
    """``n`` chitchat examples: an utterance of the shipped pool as the context, its own response as the
    reference and another utterance's response as the reply (fixed seed)."""
    import numpy as np
    from core.data import Example
    from core.models.retrieval import chitchat_pool
    pool = chitchat_pool()
    rng = np.random.default_rng(seed)
    idx = rng.choice(len(pool), size=n, replace=False)
    other = rng.choice(len(pool), size=n, replace=False)
    return [Example(id=f"cc{i}", system="sample", context=[pool.utterance(i)], response=pool.response(j),
                    references=[pool.response(i)], dataset="chitchat-sample")
            for i, j in zip(idx, other)]


def build_rows(n: int, path: Path, all_new: bool = False) -> None:
    """Row i is demo row i mod 120 (demo/demo.jsonl) with id ``bench-i``; from the second pass over the demo
    on, its response and its last context turn end with `` (take k)`` (k = the pass), so those texts do not
    repeat (the encoders remember the vectors of texts they have seen in a process). ``all_new=True`` suffixes
    the references too and starts at take 1, so no row is one of the demo's (whose scores ship precomputed) and
    no reply, last turn or reference is read twice except across the two systems of one context, as in any
    comparison."""
    demo = [json.loads(line) for line in (ROOT / "demo" / "demo.jsonl").read_text(encoding="utf-8").splitlines()]
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


# ------------------------------------------------------------------------------------------------
# child processes


def run_dialeval(args: list[str], workdir: Path) -> dict:
    """``dialeval ARGS`` in a fresh Python process: wall seconds, exit code, the driver's peak RSS."""
    stats = workdir / "stats.json"
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", CHILD, str(stats), *args], cwd=workdir, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"dialeval {' '.join(args)} failed ({r.returncode}):\n{r.stderr[-2000:]}")
    return {"wall": wall, **json.loads(stats.read_text())}


def run_child(script: Path | str, spec: dict, threads: int, timeout: float) -> dict:
    """``python SCRIPT --child SPEC --threads N`` with every thread pool set to ``threads``: the dict its last
    ``RESULT {...}`` line holds, with ``wall_s``; ``spec`` with an ``error`` when it timed out or printed none."""
    env = dict(os.environ, DIALEVAL_THREADS=str(threads), OMP_NUM_THREADS=str(threads),
               MKL_NUM_THREADS=str(threads), TOKENIZERS_PARALLELISM="false")
    t = time.time()
    try:
        p = subprocess.run([sys.executable, str(script), "--child", json.dumps(spec), "--threads", str(threads)],
                           capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {**spec, "error": f"timed out after {timeout:.0f}s"}
    for line in p.stdout.splitlines()[::-1]:
        if line.startswith("RESULT "):
            res = json.loads(line[7:])
            res["wall_s"] = time.time() - t
            return res
    err = (p.stderr.strip().splitlines() or ["no output"])[-1]
    return {**spec, "error": err[:300]}


def peak_mb() -> float:
    """This process's peak resident memory in MiB (``ru_maxrss``)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def uptime() -> str:
    """The machine's load as ``uptime`` prints it (a table records it before and after measuring)."""
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return f"load average {os.getloadavg()}"


def load_registry_tolerantly() -> dict[str, str]:
    """Import every metric module on its own, so one broken module is reported instead of stopping the
    benchmark; returns {module: error} for the modules that failed."""
    import core.metrics as cm
    failed = {}
    for mod in pkgutil.iter_modules(cm.__path__):
        try:
            importlib.import_module(f"core.metrics.{mod.name}")
        except Exception as e:  # noqa: BLE001
            failed[mod.name] = f"{type(e).__name__}: {e}"
    return failed


def git_commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                             timeout=10)
        return out.stdout.strip() or "uncommitted"
    except Exception:  # noqa: BLE001
        return "unknown"


# ------------------------------------------------------------------------------------------------
# result tables


def markdown_table(df, floatfmt: str = "{:.3f}") -> str:
    """A DataFrame as a markdown table; floats through ``floatfmt``, NaN as an em dash."""
    import numpy as np
    cols = list(df.columns)
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in df.itertuples(index=False):
        cells = []
        for v in r:
            if isinstance(v, float):
                cells.append("—" if np.isnan(v) else floatfmt.format(v))
            else:
                cells.append(str(v))
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def emit(table: str, out: str | None) -> None:
    """Print the table, and write it to ``out`` when given."""
    print(table)
    if out:
        Path(out).write_text(table + "\n", encoding="utf-8")


def emit_with_load(lines: list[str], before: str, after: str, out: str | None) -> None:
    """:func:`emit` the lines of a measured table followed by the machine's load (``uptime``) before and after
    measuring: the numbers depend on it."""
    emit("\n".join([*lines, "", f"Load before: `{before}`; after: `{after}`."]), out)


def replace_section(path: Path, name: str, body: str) -> None:
    """Write ``body`` between the section's markers in ``path`` (other sections are kept)."""
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    text = path.read_text(encoding="utf-8") if path.exists() else "# Benchmark results\n\n"
    block = f"{start}\n{body.rstrip()}\n{end}"
    if start in text and end in text:
        text = text[: text.index(start)] + block + text[text.index(end) + len(end):]
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    path.write_text(text, encoding="utf-8")
