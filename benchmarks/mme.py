"""Speed and peak memory of each MME sub-metric and of the whole MME (batched, CPU).

    python benchmarks/mme.py [--n 64] [--threads 2] [--max-context-tokens 256]

Examples: held-out chitchat-dataset conversations (MIT), each context = the full history before a turn,
cut to at most --max-context-tokens MiniLM word pieces (so contexts run up to 256 tokens). Each
sub-metric family is timed after its model is loaded (load time reported apart) with every in-process
memory emptied (``core.models.memo.forget_all``: the scorer's sub-scores, the MiniLM sentence vectors and the
SmolLM2 readings), so each row is what that family costs on new data. Whole MME = all nine sub-metrics, again
from empty memories (what `mme` costs on new data; inside it the families share vectors and readings, so it
can take less than the rows' sum). Peak memory = max RSS of this process.
"""
from __future__ import annotations

import argparse
import sys
import time

from common import peak_mb


def build_examples(n: int, max_tokens: int):
    from core.data import Example
    from core.models.encoders import minilm_tokenizer
    from core.models.corpus import chitchat_split
    tok = minilm_tokenizer()
    _, held = chitchat_split()
    exs, lens = [], []
    for d in held:
        if len(d) < 4:
            continue
        t = len(d) - 1
        ctx = list(d[:t])
        while len(ctx) > 1 and len(tok.tokenize(" ".join(ctx))) > max_tokens:
            ctx = ctx[1:]
        while len(tok.tokenize(ctx[0])) > max_tokens:  # one turn longer than the cap: drop words from its start
            ctx[0] = " ".join(ctx[0].split()[len(ctx[0].split()) // 10 + 1:])
        lens.append(len(tok.tokenize(" ".join(ctx))))
        exs.append(Example(id=f"b{len(exs)}", system="s", context=ctx, response=d[t], references=[], scores={},
                           dataset="bench", source="chitchat", row=len(exs), has_id=True))
        if len(exs) >= n:
            break
    return exs, lens


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=64)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--max-context-tokens", type=int, default=256)
    a = p.parse_args()
    import os
    os.environ["DIALEVAL_THREADS"] = str(a.threads)  # core.models.encoders resets torch's threads from this
    import numpy as np
    import torch
    torch.set_num_threads(a.threads)
    from core.metrics import mme
    from core.models.memo import forget_all
    exs, lens = build_examples(a.n, a.max_context_tokens)
    print(f"{len(exs)} examples, context length (MiniLM word pieces): mean {np.mean(lens):.0f}, "
          f"max {max(lens)}, threads {a.threads}")
    sc = mme.MMEScorer()
    fams = {"fm": ["fm"], "rm": ["rm"], "tcm": ["tcm"], "em": ["em"], "sm (nll+nce+ppl)": ["sm_nll", "sm_nce", "sm_ppl"],
            "pm (share+evidence)": ["pm_share", "pm_evidence"]}
    rows = []
    total = 0.0
    for name, subs in fams.items():
        t0 = time.time()
        sc.load(name.split()[0])
        sc.score(exs[:2], subs)  # warm-up
        load = time.time() - t0
        forget_all()
        t0 = time.time()
        sc.score(exs, subs)
        dt = time.time() - t0
        total += dt
        rows.append((name, load, dt, len(exs) / dt))
    forget_all()
    t0 = time.time()
    s = sc.score(exs, mme.SUBMETRICS)
    whole = time.time() - t0
    assert all(np.isfinite(v).all() for v in s.values())
    peak = peak_mb()
    print("\n| sub-metric | load + warm-up (s) | time (s) | examples/s |\n|---|---|---|---|")
    for name, load, dt, eps in rows:
        note = ""
        print(f"| {name}{note} | {load:.1f} | {dt:.2f} | {eps:.1f} |")
    print(f"| **whole MME ({len(mme.SUBMETRICS)} sub-metrics)** | | {whole:.1f} | **{len(exs) / whole:.1f}** |")
    print(f"\npeak memory (max RSS): {peak:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
