"""Common sense: does the judge (and do the metrics) prefer the obviously better reply?

Reads the check set (``tests/data/obvious_pairs_rule.jsonl``: 240 rule-made pairs from held-out chitchat
conversations, ``scripts/make_common_sense.py``; ``tests/data/obvious_pairs_handwritten.jsonl``: 97 pairs
written by hand) and prints, per kind of worse reply, the share of pairs where each scorer ranks the better
reply higher (a judge tie or an equal score counts half), next to "the longer reply wins".

    .venv/bin/python benchmarks/common_sense.py                          # judge + MME-CRS and its parts
    .venv/bin/python benchmarks/common_sense.py --metrics mme,bert_ruber_unref,adem --checkpoint judge-x
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

from common import TEST_DATA
from core.data import Example
from core.engine import judge_pairs, parse_metrics, score_examples
from core.progress import progress_bar
from core.training.common_sense import read_pairs

DATA = TEST_DATA
DEFAULT_METRICS = ("mme,mme_fm,mme_rm,mme_tcm,mme_em,mme_sm_nll,mme_sm_nce,mme_sm_ppl,mme_pm_share,mme_pm_evidence,"
                   "bert_ruber_unref")


def side_agreement(better: np.ndarray, worse: np.ndarray) -> np.ndarray:
    """1 where the better reply scores higher, 0.5 on equal scores, 0 otherwise (NaN counts as equal)."""
    d = np.nan_to_num(np.asarray(better, float) - np.asarray(worse, float))
    return np.where(d > 0, 1.0, np.where(d < 0, 0.0, 0.5))


def main(argv: list[str] | None = None) -> int:
    import pandas as pd
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--metrics", default=DEFAULT_METRICS, help="metrics to check ('' for none)")
    ap.add_argument("--no-judge", action="store_true")
    ap.add_argument("--checkpoint", default=None, help="judge checkpoint name (default: the shipped judge)")
    args = ap.parse_args(argv)
    pairs = read_pairs(DATA / "obvious_pairs_rule.jsonl") + read_pairs(DATA / "obvious_pairs_handwritten.jsonl")
    df = pd.DataFrame({"source": [p.source for p in pairs], "kind": [p.kind for p in pairs]})
    df["longer"] = side_agreement([len(p.better.split()) for p in pairs], [len(p.worse.split()) for p in pairs])
    if not args.no_judge:
        out = judge_pairs([list(p.context) for p in pairs], [p.better for p in pairs], [p.worse for p in pairs],
                          checkpoint=args.checkpoint, progress=progress_bar(prefix="judge "))
        tie = np.abs(out.p_a - 0.5) < out.tie_margin
        df["judge"] = np.where(tie, 0.5, (out.p_a > 0.5).astype(float))
    metrics = parse_metrics(args.metrics) if args.metrics else []
    if metrics:
        ex = [Example(f"{p.id}-{side}", side, list(p.context), reply)
              for side in ("better", "worse") for p, reply in
              zip(pairs, [p.better if side == "better" else p.worse for p in pairs])]
        table = score_examples(ex, metrics, progress=progress_bar(prefix="metrics "))
        n = len(pairs)
        for m in metrics:
            v = np.asarray(table.column(m), dtype=float)
            df[m] = side_agreement(v[:n], v[n:])
    cols = [c for c in df.columns if c not in ("source", "kind")]
    rows = [("all", "all", df)] + [("rule", k, g) for k, g in df[df.source == "rule"].groupby("kind")] + \
        [("hand", k, g) for k, g in df[df.source == "hand"].groupby("kind")] + \
        [(s, "all", g) for s, g in df.groupby("source")]
    table = pd.DataFrame([{"source": s, "kind": k, "pairs": len(g), **{c: g[c].mean() for c in cols}}
                          for s, k, g in rows])
    print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
