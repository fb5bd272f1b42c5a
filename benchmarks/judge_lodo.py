"""Does a change to the judge's SmolLM2 reader help on a data set it never saw? Leave one data set out.

The judge's validation pairs come from the same seven rated sets it trains on, but a user's data (and
the four DailyDialog-derived test sets) are new sets. This script measures the reader's scorer
(:mod:`core.judges.smollm_reader`) the way the judge meets a new set: for each group below, the scorer is trained on
the training pairs of the *other* sets and scored on all clear-margin training-split pairs of the group
(no test or validation pairs are used; the reader alone, no MiniLM mix, because the MiniLM judge was
trained on every set). The reader's features come from the same cache as ``python -m core train judge-lm``
(on a fresh machine SmolLM2 reads the ~13,400 training replies first, about 15 min, and the ~12,000
replies of the 6,000 synthetic pairs, about 16 min). Synthetic pairs (``--synthetic``, machine-made from
chitchat-dataset, :func:`core.judge.synthetic_pairs`) are added to the training side only.

    .venv/bin/python benchmarks/judge_lodo.py                  # --balance 0 --synthetic 0,6000 --seeds 13,16
    .venv/bin/python benchmarks/judge_lodo.py --balance 0,0.5 --synthetic 0
    .venv/bin/python benchmarks/judge_lodo.py --balance 0,0.25,0.5,1 --synthetic 0 --seeds 13

Prints one row per (group, balance, synthetic) with the agreement per seed and their mean, then the mean
over groups.
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np
from core.judges.smollm_reader import scores
from core.progress import progress_bar
from core.settings import SEED
from core.training.judge_lm import COMMON_SENSE_WEIGHT, SYNTHETIC_WEIGHT, pair_features, set_weights, train_scorer
from core.training.judge_pairs import common_sense_pairs, synthetic_pairs, train_test_pairs



GROUPS = {"dstc7": ["dstc7"], "humod": ["humod"], "persona-zhao": ["persona-zhao"],
          "usr+grade": ["usr-topical", "usr-persona", "convai2-grade", "empathetic-grade"]}


def main(argv: list[str] | None = None) -> int:
    import pandas as pd
    import torch
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--balance", default="0", help="comma-separated values of train judge-lm --balance")
    ap.add_argument("--synthetic", default="0,6000",
                    help="comma-separated values of train judge-lm --synthetic (synthetic pairs added to training)")
    ap.add_argument("--synthetic-weight", type=float, default=SYNTHETIC_WEIGHT)
    ap.add_argument("--common-sense", default="0",
                    help="comma-separated values of train judge-lm --common-sense (rule-made obvious pairs added to "
                         "training; the shipped reader since 0.4.0: 1600)")
    ap.add_argument("--common-sense-weight", type=float, default=COMMON_SENSE_WEIGHT)
    ap.add_argument("--common-sense-without", default="",
                    help="comma-separated kinds of rule-made pairs to leave out (core.training.common_sense.KINDS)")
    ap.add_argument("--seeds", default="13,16", help="scorer seeds (each trains members seed, seed+1, ...)")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    balances = [float(b) for b in args.balance.split(",")]
    synthetic = [int(n) for n in args.synthetic.split(",")]
    sense = [int(n) for n in args.common_sense.split(",")]
    seeds = [int(s) for s in args.seeds.split(",")]
    train, _ = train_test_pairs(SEED, 10 ** 9, 70, val_share=0.1)  # the reader's training pairs
    fa, fb = pair_features(train, progress_bar(prefix="train "))
    y = np.array([p.label for p in train], dtype=np.float32)
    ds = np.array([p.dataset for p in train])
    syn_feats = {}
    for n in synthetic:
        if n:
            syn = synthetic_pairs(n, SEED)
            syn_feats[n] = (*pair_features(syn, progress_bar(prefix="synthetic ")),
                            np.array([p.label for p in syn], dtype=np.float32))
    sense_feats = {}
    for n in sense:
        if n:
            without = {"common-sense-" + k.strip() for k in args.common_sense_without.split(",") if k.strip()}
            cs = [p for p in common_sense_pairs(n, SEED) if p.dataset not in without]
            sense_feats[n] = (*pair_features(cs, progress_bar(prefix="common sense ")),
                              np.array([p.label for p in cs], dtype=np.float32))
    rows = []
    for group, names in GROUPS.items():
        out = np.isin(ds, names)
        for b, n, m in [(b, n, m) for b in balances for n in synthetic for m in sense]:
            t0 = time.time()
            accs = []
            sa, sb, sy = syn_feats.get(n, (fa[:0], fb[:0], y[:0]))
            ca, cb, cy = sense_feats.get(m, (fa[:0], fb[:0], y[:0]))
            w = np.concatenate([set_weights(list(ds[~out]), b),
                                np.full(len(sy), args.synthetic_weight, dtype=np.float32),
                                np.full(len(cy), args.common_sense_weight, dtype=np.float32)])
            for seed in seeds:
                sc = train_scorer(np.concatenate([fa[~out], sa, ca]), np.concatenate([fb[~out], sb, cb]),
                                    np.concatenate([y[~out], sy, cy]), seed=seed, weights=w)
                d = scores(sc, fa[out]) - scores(sc, fb[out])
                accs.append(float(np.mean((d > 0) == (y[out] > 0.5))))
            rows.append({"left out": group, "pairs": int(out.sum()), "balance": b, "synthetic": n, "common sense": m,
                         **{f"seed {s}": a for s, a in zip(seeds, accs)}, "mean": float(np.mean(accs)),
                         "seconds": round(time.time() - t0)})
            print(rows[-1], file=sys.stderr, flush=True)
    df = pd.DataFrame(rows)
    print(df.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print("\nmean over the left-out groups:")
    print(df.groupby(["balance", "synthetic", "common sense"])["mean"].mean().to_string(
        float_format=lambda v: f"{v:.3f}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
