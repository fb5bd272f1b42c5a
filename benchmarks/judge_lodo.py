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

``--probe`` (with ``--mme``) also measures a fourth term on the same pairs: SmolLM2-135M-Instruct asked whether each
reply makes sense (:func:`sense_probe`, log P("Yes") - log P("No") at its answer's first token), per-pair logit
``d + w * (q(A) - q(B)) + v * (s(A) - s(B))``, (w, v) chosen for each group on the other groups (nested).

    .venv/bin/python benchmarks/judge_lodo.py --synthetic 6000 --common-sense 1600 --mme 500 --probe
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
    ap.add_argument("--probe", action="store_true",
                    help="with --mme: also measure the yes/no sense probe as a fourth term (sense_probe)")
    args = ap.parse_args(argv)
    if args.probe and not args.mme:
        ap.error("--probe is measured on the --mme sample: give --mme N")
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
    rows, with_mme, with_probe, probe_diff = [], [], [], {}
    for group, names in GROUPS.items():
        out = np.isin(ds, names)
        sample, q = None, None
        if args.mme:
            sample = np.sort(np.random.default_rng(13).permutation(np.where(out)[0])[:args.mme])
            q = mme_difference([train[i] for i in sample], names)
            if args.probe:
                probe_diff[group] = sense_difference([train[i] for i in sample])
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
                    if args.probe:
                        s_ = probe_diff[group]
                        with_probe.append({"left out": group, "balance": b, "synthetic": n, "common sense": m, "seed": seed,
                                           **{f"{w:g}|{v:g}": float(np.mean((ds_ + w * q + v * s_ > 0) == (y[sample] > 0.5)))
                                              for w in MME_GRID for v in PROBE_GRID},
                                           "probe alone": float(np.mean((s_ > 0) == (y[sample] > 0.5)))})
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
    if with_probe:
        print_with_probe(pd.DataFrame(with_probe), args.mme)
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


PROBE_GRID = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0)  # v of d + w * (q(A) - q(B)) + v * (s(A) - s(B))
PROBE_QUESTION = "Does the reply make sense and fit what was said before? Answer Yes or No."


def probe_prompt(context, reply: str) -> str:
    """The probe's one user message: the last three turns as "A:" / "B:" lines (the last one A's, each cut to its
    first 60 words), B's reply (its first 40 words), then :data:`PROBE_QUESTION`."""
    from core.models.smollm_reading import context_turns
    turns = context_turns(context)[-3:]
    lines = [f"{'A' if (len(turns) - 1 - j) % 2 == 0 else 'B'}: {' '.join(t.split()[:60])}" for j, t in enumerate(turns)]
    return ("Conversation:\n" + "\n".join(lines) + f"\n\nReply from B: {' '.join(reply.split()[:40])}\n\n"
            + PROBE_QUESTION)


def sense_probe(contexts, replies, batch: int = 16) -> np.ndarray:
    """s = log P("Yes") - log P("No") for SmolLM2-135M-Instruct's first answer token after :func:`probe_prompt` in
    its chat format (the shared reading's model and dtype, ``core.models.smollm_reading.chat_reading``)."""
    import torch
    from core.models.encoders import smollm_threads
    from core.models.smollm_reading import chat_reading
    cr = chat_reading()
    yes, no = cr.encode("Yes"), cr.encode("No")
    seqs = [cr.im_start + cr.user + cr.encode(probe_prompt(c, r)) + cr.im_end_nl + cr.im_start + cr.assistant
            for c, r in zip(contexts, replies)]
    order = np.argsort([len(q) for q in seqs], kind="stable")
    out = np.zeros(len(seqs), dtype=np.float32)
    bar = progress_bar(prefix="probe ")
    with smollm_threads(), torch.inference_mode():
        for k in range(0, len(order), batch):
            idx = order[k:k + batch]
            length = max(len(seqs[i]) for i in idx)
            ids = torch.full((len(idx), length), cr.pad, dtype=torch.long)
            mask = torch.zeros((len(idx), length), dtype=torch.long)
            for j, i in enumerate(idx):
                ids[j, :len(seqs[i])] = torch.tensor(seqs[i])
                mask[j, :len(seqs[i])] = 1
            h = cr.model.model(input_ids=ids, attention_mask=mask).last_hidden_state
            last = h[torch.arange(len(idx)), torch.tensor([len(seqs[i]) - 1 for i in idx])]
            lp = torch.log_softmax(cr.model.lm_head(last).float(), -1)
            out[idx] = (lp[:, yes[0]] - lp[:, no[0]]).numpy()
            bar(k + len(idx), len(seqs), "probe")
    return out


def sense_difference(pairs) -> np.ndarray:
    """s(A) - s(B) per pair (:func:`sense_probe`)."""
    s = sense_probe([list(p.context) for p in pairs] * 2, [p.response_a for p in pairs] + [p.response_b for p in pairs])
    return s[:len(pairs)] - s[len(pairs):]


def print_with_probe(df, n: int) -> None:
    """Agreement of d + w * (q(A) - q(B)) + v * (s(A) - s(B)) on the sample per group (mean over seeds), (w, v)
    chosen per group on the other groups' mean (nested); beside it the same with v = 0."""
    keys = ["balance", "synthetic", "common sense"]
    for cfg, g in df.groupby(keys):
        grid = [c for c in g.columns if "|" in str(c)]  # "w|v"
        per = g.groupby("left out")[[*grid, "probe alone"]].mean()
        print(f"\nreader + MME-CRS + sense probe, {n} pairs per group, {dict(zip(keys, cfg))}:")
        print(per["probe alone"].to_string(float_format=lambda v: f"{v:.3f}"))
        nested, nested0 = [], []
        for group in per.index:
            others = per.drop(index=group)[grid].mean()
            wv = others.idxmax()
            w0 = others[[c for c in grid if c.endswith("|0")]].idxmax()
            nested.append(per.loc[group, wv])
            nested0.append(per.loc[group, w0])
            print(f"  {group}: w|v = {wv} (chosen on the other groups) -> {per.loc[group, wv]:.3f}; "
                  f"with v = 0: w = {w0.split('|')[0]} -> {per.loc[group, w0]:.3f}")
        print(f"mean: probe alone {per['probe alone'].mean():.3f}, reader + MME-CRS (nested w) {np.mean(nested0):.3f}, "
              f"+ sense probe (nested w, v) {np.mean(nested):.3f}")


if __name__ == "__main__":
    sys.exit(main())
