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

``--mme N`` also measures the reader with the MME-CRS difference of the two replies added, as the judge's mix adds
it since 0.6.3: on N pairs per group (a seed-13 sample; MME reads ~2 replies per pair, ~15 replies/s), MME-CRS with
CRS weights fitted *without* the group's sets (``MMECRS(exclude=...)``), per-pair logit ``d + w * (q(A) - q(B))``
for w on a grid, and w chosen for each group on the other groups (nested): the number to compare with the reader
alone on the same pairs.

    .venv/bin/python benchmarks/judge_lodo.py --synthetic 6000 --common-sense 1600 --mme 500
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
    ap.add_argument("--mme", type=int, default=0,
                    help="pairs per group on which the reader + MME-CRS difference is measured (0: not measured)")
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
    rows, with_mme = [], []
    for group, names in GROUPS.items():
        out = np.isin(ds, names)
        sample, q = None, None
        if args.mme:
            sample = np.sort(np.random.default_rng(13).permutation(np.where(out)[0])[:args.mme])
            q = mme_difference([train[i] for i in sample], names)
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
                if sample is not None:
                    ds_ = d[np.searchsorted(np.where(out)[0], sample)]
                    with_mme.append({"left out": group, "balance": b, "synthetic": n, "common sense": m, "seed": seed,
                                     **{w: float(np.mean((ds_ + w * q > 0) == (y[sample] > 0.5))) for w in MME_GRID},
                                     "mme alone": float(np.mean((q > 0) == (y[sample] > 0.5)))})
            rows.append({"left out": group, "pairs": int(out.sum()), "balance": b, "synthetic": n, "common sense": m,
                         **{f"seed {s}": a for s, a in zip(seeds, accs)}, "mean": float(np.mean(accs)),
                         "seconds": round(time.time() - t0)})
            print(rows[-1], file=sys.stderr, flush=True)
    df = pd.DataFrame(rows)
    print(df.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print("\nmean over the left-out groups:")
    print(df.groupby(["balance", "synthetic", "common sense"])["mean"].mean().to_string(
        float_format=lambda v: f"{v:.3f}"))
    if with_mme:
        print_with_mme(pd.DataFrame(with_mme), args.mme)
    return 0


MME_GRID = (0.0, 0.5, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0, 32.0)  # w of d + w * (q(A) - q(B))


def mme_difference(pairs, left_out: list[str]) -> np.ndarray:
    """q(A) - q(B) per pair: MME-CRS ('overall') with CRS weights fitted without the sets ``left_out``, through
    the engine (its score cache keeps the sub-scores between runs); 0 where a reply has no score."""
    from core.data import Example
    from core.metrics import crs
    from core.metrics.mme import MMECRS
    from core.training.crs import sub_metric_scores
    weights = MMECRS(exclude=left_out).weights_for("overall")[1]
    ex = [Example(f"{p.id}-{side}", side, list(p.context), r) for side in ("a", "b")
          for p, r in ((p, p.response_a if side == "a" else p.response_b) for p in pairs)]
    q = crs.combine(sub_metric_scores(ex, progress_bar(prefix="MME ")), weights)
    return np.nan_to_num(q[:len(pairs)] - q[len(pairs):], nan=0.0)


def print_with_mme(df, n: int) -> None:
    """Agreement of d + w * (q(A) - q(B)) on the MME sample per group (mean over seeds), w chosen per group on
    the other groups' mean (nested)."""
    keys = ["balance", "synthetic", "common sense"]
    for cfg, g in df.groupby(keys):
        per = g.groupby("left out")[[*MME_GRID, "mme alone"]].mean()
        print(f"\nreader + MME-CRS difference, {n} pairs per group, {dict(zip(keys, cfg))}:")
        print(per.to_string(float_format=lambda v: f"{v:.3f}"))
        nested = []
        for group in per.index:
            others = per.drop(index=group)[list(MME_GRID)].mean()
            w = float(others.idxmax())
            nested.append(per.loc[group, w])
            print(f"  {group}: w = {w:g} (chosen on the other groups) -> {per.loc[group, w]:.3f}")
        print(f"mean: reader alone {per[0.0].mean():.3f}, MME-CRS alone {per['mme alone'].mean():.3f}, "
              f"reader + MME-CRS (nested w) {np.mean(nested):.3f}")


if __name__ == "__main__":
    sys.exit(main())
