"""The paces behind the dashboard's time estimates (``core.time_estimates.ScoreTime`` and ``JudgeTime``),
measured on this machine and printed beside the table the dashboard uses for its kind of CPU. Prints markdown tables.

    .venv/bin/python benchmarks/estimates.py [--pairs 60]

Rows are the demo's pairs with numbered suffixes (``benchmarks/comparison_speed.py``'s ``suffixed``), so every
text is new to the models' memories; the score cache is off. Per metric: the seconds a row of a comparison takes
once its models are loaded (``--pairs`` pairs, both systems), and the seconds its first call in a new process
takes beyond that (loading; measured in a subprocess per metric, the cache folder's SmolLM2 copy already made).
The judge, on ``--pairs`` pairs nothing has read: the whole run (less the paces below: the start of a run that
reads); again on the same pairs (MiniLM's cross-encoder alone, at two sizes, which separates the start of a run
with nothing to read from its pace); SmolLM2's chat reading of both replies of
other fresh pairs; MME-CRS of both replies of yet others (its reading included: the rest is MME's share). The
judge's load values (``JudgeTime.FLOAT32_LOAD_SECONDS``, ``OWN_LOAD_SECONDS``) are not measured here
(docs/dashboard.md, "A run with nothing to read"). SmolLM2's first load in a new cache folder (its GGUF file
read and a copy kept) against a load from that copy, each in a new process.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path

os.environ["DIALEVAL_NO_CACHE"] = "1"  # every row computed: this measures the work, not the cache

ROOT = Path(__file__).resolve().parent.parent
METRICS = ("bleu", "ubleu", "ubleu_paper", "bert_ruber", "ruber", "ruber_ubleu", "adem", "mme")
LOAD_CHILD = """
import os, sys, time
os.environ["DIALEVAL_NO_CACHE"] = "1"
from core.data import load_jsonl
from core.engine import score_examples
rows = load_jsonl(sys.argv[1])[:2]
t0 = time.perf_counter()
score_examples(rows, [sys.argv[2]])
print(time.perf_counter() - t0)
"""

SMOLLM_LOAD_CHILD = """
import time
from core.models.encoders import smollm
t0 = time.perf_counter()
smollm()
print(time.perf_counter() - t0)
"""


def smollm_first_read() -> tuple[float, float]:
    """(SmolLM2's first load in a new cache folder, its load once the folder keeps its copy), seconds, each in a
    new process: the difference is what ``SMOLLM_FIRST_READ_SECONDS`` stands for."""
    import tempfile
    times = []
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(2):
            out = subprocess.run([sys.executable, "-c", SMOLLM_LOAD_CHILD], capture_output=True, text=True, cwd=ROOT,
                                 env={**os.environ, "DIALEVAL_CACHE": folder})
            times.append(float(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 else float("nan"))
    return times[0], times[1]


def suffixed_from_comparison_speed():
    """``suffixed`` of the sibling benchmark, loaded from its file (benchmarks/ is not a package)."""
    spec = importlib.util.spec_from_file_location("comparison_speed", Path(__file__).with_name("comparison_speed.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.suffixed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=60)
    a = ap.parse_args()
    from core.data import load_comparison
    from core.engine import judge_comparison, score_comparison
    from core.models.device import device_key
    from core.models.encoders import SMOLLM_FIRST_READ_SECONDS
    from core.models.memo import forget_all
    from core.models.smollm_reading import chat_reading
    from core.time_estimates import JudgeTime, ScoreTime
    suffixed = suffixed_from_comparison_speed()
    demo = load_comparison(str(ROOT / "demo" / "demo.jsonl"))
    n, block = a.pairs, a.pairs // len(demo.a) + 1
    load = os.getloadavg()[0]
    score_comparison(suffixed(demo, 4, first=9000), list(METRICS))  # every model loaded once (not timed)
    judge_comparison(suffixed(demo, 4, first=9001))

    paces = {}
    for k, metric in enumerate(METRICS):
        forget_all()
        comp = suffixed(demo, n, first=(k + 1) * block)
        t0 = time.perf_counter()
        score_comparison(comp, [metric])
        paces[metric] = (time.perf_counter() - t0) / (2 * n)
    loads = {}
    demo_file = str(ROOT / "demo" / "demo.jsonl")
    for metric in METRICS:
        out = subprocess.run([sys.executable, "-c", LOAD_CHILD, demo_file, metric], capture_output=True, text=True,
                             cwd=ROOT)
        first = float(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 else float("nan")
        loads[metric] = max(0.0, first - 2 * paces[metric])

    base = (len(METRICS) + 2) * block
    fresh = suffixed(demo, n, first=base)
    forget_all()
    t0 = time.perf_counter()
    judge_comparison(fresh)
    fresh_s = time.perf_counter() - t0
    small = suffixed(demo, max(1, n // 3), first=base)  # the first third of the same pairs, read already
    t0 = time.perf_counter()
    judge_comparison(small)
    small_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    judge_comparison(fresh)
    again_s = time.perf_counter() - t0
    per_pair = (again_s - small_s) / (n - len(small.a))
    start = again_s - n * per_pair
    reading = suffixed(demo, n, first=base + block)
    contexts = [e.context for e in reading.a] + [e.context for e in reading.b]
    t0 = time.perf_counter()
    chat_reading().read(contexts, [e.response for e in reading.a] + [e.response for e in reading.b])
    read_pair = (time.perf_counter() - t0) / n
    mme = suffixed(demo, n, first=base + 2 * block)
    t0 = time.perf_counter()
    score_comparison(mme, ["mme"])
    mme_pair = (time.perf_counter() - t0) / n - read_pair

    first_read, copied = smollm_first_read()
    st, jt = ScoreTime(), JudgeTime()
    print(f"Load average at start {load:.2f} (2 cores); {device_key('cpu')}; {n} pairs per measurement; score "
          "cache off.\n")
    print("| metric | seconds a row, measured | the dashboard's | loading, measured | the dashboard's |")
    print("|---|---|---|---|---|")
    for metric in METRICS:
        print(f"| {metric} | {paces[metric]:.4f} | {st.per_row.get(metric, st.OTHER_PER_ROW):.4f} | "
              f"{loads[metric]:.1f} | {st.LOAD_SECONDS.get(metric, st.OTHER_LOAD):.1f} |")
    print("\n| the judge | measured | the dashboard's |\n|---|---|---|")
    print(f"| start of a run with nothing to read, s | {start:.1f} | {jt.QUICK_START_SECONDS:.1f} |")
    reading_start = fresh_s - n * (per_pair + read_pair + mme_pair)
    print(f"| start of a run that reads (the fresh run less the paces below), s | {reading_start:.1f} | "
          f"{jt.start_seconds:.1f} |")
    print(f"| MiniLM cross-encoder, both orders, s a pair | {per_pair:.3f} | {jt.seconds_per_pair:.3f} |")
    print(f"| SmolLM2 reading of both replies, s a pair | {read_pair:.3f} | {jt.read_seconds_per_pair:.3f} |")
    print(f"| the rest of MME-CRS for both replies, s a pair | {mme_pair:.3f} | {jt.mme_seconds_per_pair:.3f} |")
    predicted = jt.estimate(n, loaded=True, mme_pairs=n)
    print(f"| {n} fresh pairs, s | {fresh_s:.1f} | {predicted:.1f} (estimate) |")
    print("\n| SmolLM2 (any run that loads it) | measured | the estimates' |\n|---|---|---|")
    print(f"| first load in a new cache folder (reads the GGUF file, keeps a copy), s | {first_read:.1f} | |")
    print(f"| load from the kept copy, s | {copied:.1f} | |")
    print(f"| the first read beyond a load, s | {first_read - copied:.1f} | {SMOLLM_FIRST_READ_SECONDS:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
