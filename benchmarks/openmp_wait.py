"""Does the OpenMP wait matter? SmolLM2 and MiniLM passes on an idle machine and beside one busy process, with
libgomp's default waits (spin 300,000 rounds, then sleep), shorter spins (``GOMP_SPINCOUNT``; ``import core``
sets 3,000 unless the user chose: ``core.models.openmp``) and ``OMP_WAIT_POLICY=PASSIVE`` (sleep at once).
Prints a table.

    python benchmarks/openmp_wait.py [--replies 300] [--texts 2000]

Each cell is a fresh process (libgomp reads the policy when torch loads): one MME specificity pass (SmolLM2 on
its fixed 2 threads) over ``--replies`` distinct chitchat replies, and MiniLM sentence vectors of ``--texts``
distinct texts on ``DIALEVAL_THREADS`` (default every core), each after the model is loaded. "one busy process
added" runs a Python busy loop (one core) beside it; the load average printed says how idle "as it was" was.
The digest column checks that the policy never changes a number.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

from common import sample_examples

CHILD = r"""
import hashlib, json, sys, time
import core
from core.models import mme_models, encoders
replies, texts = json.loads(sys.stdin.read())
sm = mme_models.SmolScorer()
encoders.encode(["warm up"])
t = time.perf_counter(); raw = sm.raw([""] * len(replies), replies); sm_s = time.perf_counter() - t
t = time.perf_counter(); vec = encoders.encode(texts); enc_s = time.perf_counter() - t
digest = hashlib.sha256(raw.tobytes() + vec.tobytes()).hexdigest()[:12]
print(json.dumps({"sm_s": sm_s, "enc_s": enc_s, "digest": digest}))
"""

POLICIES = {"libgomp's default (spin 300,000 rounds, then sleep)": {"OMP_WAIT_POLICY": ""},
            "PASSIVE (sleep at once)": {"OMP_WAIT_POLICY": "PASSIVE"},
            **{f"spin {n:,} rounds, then sleep{' (core sets it)' if n == 3_000 else ''}":
                   {"OMP_WAIT_POLICY": "", "GOMP_SPINCOUNT": str(n)} for n in (3_000, 30_000)}}
"""Environment per row: ``OMP_WAIT_POLICY=""`` is no policy for libgomp (and ``import core`` leaves a set one)."""


def run_cell(policy: dict[str, str], busy: bool, payload: str) -> dict:
    env = {**{k: v for k, v in os.environ.items() if k != "GOMP_SPINCOUNT"}, **policy}
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if busy else None
    try:
        r = subprocess.run([sys.executable, "-c", CHILD], input=payload, env=env, capture_output=True, text=True,
                           timeout=3600)
    finally:
        if hog is not None:
            hog.kill()
            hog.wait()
    if r.returncode != 0:
        raise SystemExit(r.stderr[-2000:])
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replies", type=int, default=300)
    ap.add_argument("--texts", type=int, default=2000)
    a = ap.parse_args()
    rows = sample_examples(max(a.replies, a.texts))
    replies = [r.response for r in rows[:a.replies]]
    texts = [r.response for r in rows[:a.texts]]
    payload = json.dumps([replies, texts])
    load = os.getloadavg()[0]
    lines = []
    for busy in (False, True):
        for label, policy in POLICIES.items():
            res = run_cell(policy, busy, payload)
            machine = "one busy process added" if busy else "as it was"
            lines.append(f"| {machine} | {label} | {a.replies / res['sm_s']:.1f} | "
                         f"{a.texts / res['enc_s']:.1f} | {res['digest']} |")
            print(lines[-1], file=sys.stderr, flush=True)
    print(f"{os.cpu_count()} CPU cores, load average {load:.2f} at the start, {time.strftime('%Y-%m-%d %H:%M')}\n")
    print("| machine | OMP wait policy | SmolLM2 SM replies/s | MiniLM texts/s | digest |")
    print("|---|---|---:|---:|---|")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
