"""The ``llm`` judge through a real OpenAI-compatible server: agreement, position bias, cost and speed.

Starts ``transformers serve`` with the shipped SmolLM2-135M-Instruct (``core.judges.local_server``; or points at
``--url``/``--model`` of a running server) and prints, for the check set (tests/data obvious pairs: rule-made and
hand-written) and for clear-margin pairs of development sets (a fixed sample per set), the share of pairs where
the judge prefers the better reply (a tie counts half), the position-flip rate, how often the reply shown first
is preferred, the share of unparsed orders, requests and tokens per pair; then pairs per second on fresh pairs at
concurrency 1, 4 and 8 (nothing read from the cache).

    .venv/bin/python benchmarks/llm_judge.py                     # SmolLM2 served here, ~10 minutes on 2 cores
    .venv/bin/python benchmarks/llm_judge.py --url http://gpu:8000/v1 --model Qwen/Qwen2.5-7B-Instruct
"""
from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path

import numpy as np

from common import TEST_DATA
from core.cache import ScoreCache
from core.data import load_file
from core.judges.llm import LLMJudge, LLMSettings
from core.judges.local_server import smollm_model_folder, transformers_serve
from core.judges.pairs import preference_pairs
from core.progress import progress_bar
from core.settings import SEED, shared_data_dir
from core.training.common_sense import read_pairs

DATA = TEST_DATA
DEV_SETS = ("usr-topical", "usr-persona", "dailydialog-zhao", "fed-turn")


def evaluate(judge: LLMJudge, contexts, better, worse, cache: ScoreCache) -> dict[str, float]:
    """Agreement with 'better' (better shown as A), flip rate, first-shown rate, unparsed share, cost per pair."""
    started = time.perf_counter()
    out = judge.predict(contexts, better, worse, progress_bar(prefix="llm "), cache=cache)
    seconds = time.perf_counter() - started
    agree = np.where(np.abs(out.p_a - 0.5) < out.tie_margin, 0.5, (out.p_a > 0.5).astype(float))
    u, n = judge.last_usage, len(contexts)
    return {"pairs": n, "prefers better": float(agree.mean()), "flip rate": out.order_disagreement,
            "first shown": out.first_shown, "unparsed orders": out.notes["unparsed_orders"] / (2 * n),
            "requests/pair": u.requests / n, "input tokens/pair": u.prompt_tokens / n,
            "output tokens/pair": u.completion_tokens / n, "seconds": seconds}


def dev_pairs(per_set: int) -> list[tuple[str, list[str], str, str]]:
    """(set, context, better, worse) for ``per_set`` clear-margin pairs of each development set (seeded)."""
    rows = []
    rng = random.Random(SEED)
    for name in DEV_SETS:
        path = shared_data_dir() / "eval" / f"{name}.jsonl"
        if not path.exists():
            continue
        pairs = preference_pairs(load_file(str(path)))
        for p in rng.sample(pairs, min(per_set, len(pairs))):
            better, worse = (p.response_a, p.response_b) if p.label == 1.0 else (p.response_b, p.response_a)
            rows.append((name, list(p.context), better, worse))
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", default=None, help="a running endpoint (default: serve SmolLM2 here)")
    ap.add_argument("--model", default=None, help="its model name (with --url)")
    ap.add_argument("--per-set", type=int, default=60, help="pairs per development set (default 60)")
    ap.add_argument("--speed-pairs", type=int, default=24, help="fresh pairs per concurrency setting (default 24)")
    a = ap.parse_args(argv)
    folder = a.model or str(smollm_model_folder())
    with (nullcontext(a.url) if a.url else transformers_serve(folder)) as url, \
            tempfile.TemporaryDirectory() as tmp:
        cache = ScoreCache(Path(tmp) / "scores.sqlite3")
        judge = LLMJudge(LLMSettings(url=url, model=folder, concurrency=4))
        judge.check_ready()
        results = []
        check = read_pairs(DATA / "obvious_pairs_rule.jsonl") + read_pairs(DATA / "obvious_pairs_handwritten.jsonl")
        results.append(("check set (all)", evaluate(judge, [list(p.context) for p in check],
                                                     [p.better for p in check], [p.worse for p in check], cache)))
        dev = dev_pairs(a.per_set)
        for name in sorted({d[0] for d in dev}):
            rows = [d for d in dev if d[0] == name]
            results.append((f"dev: {name}", evaluate(judge, [r[1] for r in rows], [r[2] for r in rows],
                                                     [r[3] for r in rows], cache)))
        keys = list(results[0][1])
        print(f"\nmodel {folder} at {url}\n")
        print("| pairs from | " + " | ".join(keys) + " |")
        print("|---" * (len(keys) + 1) + "|")
        for name, r in results:
            print(f"| {name} | " + " | ".join(f"{r[k]:.3f}" if isinstance(r[k], float) else str(r[k])
                                             for k in keys) + " |")
        fresh = dev[-a.speed_pairs:] if len(dev) >= a.speed_pairs else dev
        print("\n| concurrency | pairs | requests | seconds | pairs/s |\n|---|---|---|---|---|")
        for conc in (1, 4, 8):
            j = judge.with_settings(concurrency=conc)
            started = time.perf_counter()
            j.predict([r[1] for r in fresh], [r[2] for r in fresh], [r[3] for r in fresh])  # no cache
            s = time.perf_counter() - started
            print(f"| {conc} | {len(fresh)} | {j.last_usage.requests} | {s:.1f} | {len(fresh) / s:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
