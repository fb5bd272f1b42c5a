"""Throughput of the RUBER family and ADEM (examples per second) and, for the embedding-based ones, the
ratio to raw MiniLM encoder throughput on the same distinct texts (target >= 0.8).

    .venv/bin/python benchmarks/ruber_adem.py [--data ../shared/data/eval/usr-topical.jsonl] [--n 200] [--threads 1]
    .venv/bin/python benchmarks/ruber_adem.py --quality [--datasets usr-topical,...]   # meta-evaluation table

Each metric runs cold (its per-text caches cleared, models already loaded); the reference time for a
metric is ``core.models.encoders.encode`` on exactly the distinct texts that metric has to embed, so the
ratio measures the metric's overhead beyond the encoder itself. Prints a markdown table.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from common import ROOT


# Yeh et al. 2021, turn level, Spearman: (RUBER, BERT-RUBER, ADEM); dimension scored
ANCHORS = {"usr-topical": (0.259, 0.348, -0.061, "Overall"), "usr-persona": (0.190, 0.248, -0.085, "Overall"),
           "convai2-grade": (-0.042, 0.314, -0.057, "coherence"), "dailydialog-grade": (-0.094, 0.128, 0.071, "coherence"),
           "empathetic-grade": (-0.039, 0.148, -0.028, "coherence")}
QUALITY_METRICS = ("ruber_ref", "ruber_unref", "ruber", "bert_ruber_ref", "bert_ruber_unref", "bert_ruber",
                   "ruber_ubleu", "adem")


def quality(args) -> None:
    """Spearman / Pearson (n) of each metric with the set's overall-quality dimension; ADEM is scored by
    the leave-one-dataset-out model that never saw the set."""
    import numpy as np
    import torch
    from scipy.stats import pearsonr, spearmanr
    torch.set_num_threads(args.threads)
    from core.data import load_jsonl
    from core.engine import run_metric
    from core.scoring import available_metrics, get_metric
    from core.training.adem import pick_dimension
    data_dir = Path(args.data).parent
    names = [m for m in args.quality_metrics.split(",") if m in available_metrics()]
    print("| dataset | dim | metric | Spearman | Pearson | n | anchor (Yeh 2021, Spearman) |")
    print("|---|---|---|---:|---:|---:|---:|")
    for ds in [d.strip() for d in args.datasets.split(",") if d.strip()]:
        exs = load_jsonl(data_dir / f"{ds}.jsonl")
        dim = ANCHORS[ds][3] if ds in ANCHORS else pick_dimension(exs)
        y = np.array([e.scores.get(dim, np.nan) for e in exs])
        for name in names:
            m = get_metric(name)
            m = m.held_out_for(ds) or m
            t = time.perf_counter()
            try:
                s = run_metric(m, exs).scores
            except Exception as e:  # noqa: BLE001 - report and go on (e.g. υBLEU not available yet)
                print(f"| {ds} | {dim} | {name} | error: {type(e).__name__}: {str(e)[:60]} | | | |", flush=True)
                continue
            ok = np.isfinite(s) & np.isfinite(y)
            anchor = ""
            if ds in ANCHORS:
                anchor = {"ruber": ANCHORS[ds][0], "bert_ruber": ANCHORS[ds][1], "adem": ANCHORS[ds][2]}.get(name, "")
            if ok.sum() < 3 or np.std(s[ok]) == 0:
                print(f"| {ds} | {dim} | {name} | n/a | n/a | {int(ok.sum())} | {anchor} |", flush=True)
                continue
            print(f"| {ds} | {dim} | {name} | {spearmanr(s[ok], y[ok])[0]:.3f} | {pearsonr(s[ok], y[ok])[0]:.3f} | "
                  f"{int(ok.sum())} | {anchor} |", flush=True)
            print(f"  ({name} on {ds}: {time.perf_counter() - t:.1f}s)", file=sys.stderr, flush=True)


def ablation(args) -> None:
    """Spearman of the hybrids under min / max / gmean / amean (parts computed once per dataset)."""
    import numpy as np
    import torch
    from scipy.stats import spearmanr
    torch.set_num_threads(args.threads)
    from core.data import load_jsonl
    from core.engine import score_examples
    from core.metrics.ruber import COMBINES, hybrid
    from core.scoring import get_metric
    data_dir = Path(args.data).parent
    print("| dataset | hybrid | " + " | ".join(COMBINES) + " |")
    print("|---|---|" + "---:|" * len(COMBINES))
    for ds in [d.strip() for d in args.datasets.split(",") if d.strip()]:
        exs = load_jsonl(data_dir / f"{ds}.jsonl")
        dim = ANCHORS[ds][3] if ds in ANCHORS else "overall"
        y = np.array([e.scores.get(dim, np.nan) for e in exs])
        for hyb, ref, unref in (("ruber", "ruber_ref", "ruber_unref"), ("bert_ruber", "bert_ruber_ref", "bert_ruber_unref")):
            table = score_examples(exs, [ref, unref])
            r, u = table.column(ref), table.column(unref)
            ranges = get_metric(hyb).ranges()
            cells = [f"{spearmanr(hybrid(r, u, *ranges, c)[0], y)[0]:.3f}" for c in COMBINES]
            print(f"| {ds} | {hyb} | " + " | ".join(cells) + " |", flush=True)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "eval" / "usr-topical.jsonl"))
    p.add_argument("--n", type=int, default=200)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--repeat", type=int, default=2, help="timings per metric (best kept)")
    p.add_argument("--metrics", default="ruber_ref,ruber_unref,ruber,bert_ruber_ref,bert_ruber_unref,bert_ruber,adem,ruber_ubleu")
    p.add_argument("--quality", action="store_true", help="meta-evaluation table instead of throughput")
    p.add_argument("--datasets", default=",".join(ANCHORS))
    p.add_argument("--quality-metrics", default=",".join(QUALITY_METRICS))
    p.add_argument("--ablation", action="store_true", help="Spearman of ruber / bert_ruber under each combination")
    args = p.parse_args()
    if args.quality:
        return quality(args)
    if args.ablation:
        return ablation(args)
    import torch
    torch.set_num_threads(args.threads)
    import os
    os.environ["DIALEVAL_THREADS"] = str(args.threads)
    from core.data import load_jsonl
    from core.models.encoders import encode
    from core.engine import run_metric
    from core.scoring import available_metrics, get_metric
    from core.metrics import adem as A
    from core.models.memo import forget_all

    exs = load_jsonl(args.data)[: args.n]
    n = len(exs)
    refs = [r for e in exs for r in e.references if r.strip()]
    needs = {
        "bert_ruber_ref": [e.response for e in exs] + refs,
        "bert_ruber_unref": [e.utterance for e in exs] + [e.response for e in exs],
        "bert_ruber": [e.response for e in exs] + [e.utterance for e in exs] + refs,
        "adem": [A.context_text(e.context) for e in exs] + [e.response for e in exs] + refs,
    }
    encode(["warm up the encoder"] * 8)

    def time_encoder(name: str) -> tuple[float, int]:
        uniq = list(dict.fromkeys(needs[name]))
        t = time.perf_counter()
        encode(uniq)
        return time.perf_counter() - t, len(uniq)

    def time_metric(m) -> float:
        forget_all()  # every in-process memory (vectors, contextual embeddings): the metric runs cold
        t = time.perf_counter()
        run_metric(m, exs)
        return time.perf_counter() - t

    rows = []
    for name in [m.strip() for m in args.metrics.split(",") if m.strip()]:
        if name not in available_metrics():
            rows.append((name, None, None, "not registered yet"))
            continue
        m = get_metric(name)
        run_metric(m, exs[:4])  # load models
        # the machine is shared: interleave encoder and metric timings and keep the best of `repeat`
        dt, et, nt = float("inf"), float("inf"), 0
        for _ in range(args.repeat):
            if name in needs:
                e, nt = time_encoder(name)
                et = min(et, e)
            dt = min(dt, time_metric(m))
        eps = n / dt
        ratio, note = None, ""
        if name in needs:
            ratio = et / dt
            note = f"encoder alone: {nt} distinct texts in {et:.2f}s"
        elif name == "ruber_ubleu":
            note = "includes υBLEU (retrieval + NN-rater), see the υBLEU benchmark"
        else:
            note = "no sentence encoder (static word pieces / Bi-GRU)"
        rows.append((name, eps, ratio, note))
    print(f"\n{n} examples of {Path(args.data).name}, torch threads={args.threads}\n")
    print("| metric | examples/s | ratio to raw encoder | note |")
    print("|---|---:|---:|---|")
    for name, eps, ratio, note in rows:
        print(f"| {name} | {'-' if eps is None else f'{eps:.1f}'} | {'-' if ratio is None else f'{ratio:.2f}'} | {note} |")


if __name__ == "__main__":
    main()
