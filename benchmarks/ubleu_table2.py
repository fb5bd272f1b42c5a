"""The υBLEU paper's Table 2 on our reference-bearing human-rated sets.

    python benchmarks/ubleu_table2.py [--data-dir ../shared/data/eval] [--sets usr-topical,...] [--out benchmarks/UBLEU_TABLE2.md]

Spearman (and Pearson) against each set's overall-quality dimension, per response, for: BLEU-2 with the
single (first) reference; multi-reference BLEU-2 with 15 references retrieved by each retriever plus the
parrot return (all weights 1); υBLEU (the same references rated by the NN-rater, ΔBLEU-2) per retriever: the paper's configuration
(``ubleu_paper``), not the shipped ``ubleu`` default (k = 50, similarity rater; see benchmarks/ubleu_lodo.py).
"""
import argparse
import datetime
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats


from core.data import load_jsonl
from core.metrics.bleu import BLEU
from core.metrics.ubleu import UBleu
from core.engine import run_metric
from core.models.retrieval import RETRIEVERS
from core.scoring import Options

SETS = {"usr-topical": "Overall", "usr-persona": "Overall", "dailydialog-zhao": "overall", "dailydialog-gupta": "overall",
        "convai2-grade": "coherence", "dailydialog-grade": "coherence", "empathetic-grade": "coherence"}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", default=str(Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "eval"))
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--retrievers", default=",".join(RETRIEVERS))
    ap.add_argument("--rater", default="nn-rater", help="NN-rater checkpoint name")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "UBLEU_TABLE2.md"))
    a = ap.parse_args()
    sets = a.sets.split(",")
    rets = a.retrievers.split(",")
    cols = ["BLEU-2 1 ref"] + [f"BLEU-2 +{r}" for r in rets] + [f"υBLEU {r}" for r in rets]
    rows, timing = {}, {}
    for name in sets:
        exs = load_jsonl(Path(a.data_dir) / f"{name}.jsonl")
        exs = [e for e in exs if e.references and SETS[name] in e.scores]
        human = np.array([e.scores[SETS[name]] for e in exs])
        single = [type(e)(**{**e.__dict__, "references": e.references[:1]}) for e in exs]
        res = {"BLEU-2 1 ref": run_metric(BLEU(), single).scores}
        for r in rets:
            t0 = time.time()
            res[f"BLEU-2 +{r}"] = run_metric(UBleu(Options(retriever=r), k=15, parrot=True, rated=False), exs).scores
            t1 = time.time()
            res[f"υBLEU {r}"] = run_metric(UBleu(Options(retriever=r), k=15, parrot=True, rater=a.rater), exs).scores
            timing[(name, r)] = (t1 - t0, time.time() - t1)
        rows[name] = {c: (stats.spearmanr(v, human).statistic, stats.pearsonr(v, human).statistic, len(v))
                      for c, v in res.items()}
        print(name, {c: round(x[0], 3) for c, x in rows[name].items()}, file=sys.stderr)
    lines = ["# υBLEU Table 2 on the human-rated sets", "",
             f"Made by `python benchmarks/ubleu_table2.py` on {datetime.date.today()}; Spearman ρ (Pearson r) of each "
             "metric with the set's overall-quality dimension (USR: Overall, Zhao/Gupta: overall, GRADE sets: coherence), "
             "per response. Pool: chitchat-dataset; k = 15 retrieved references + parrot return + the original reference.", "",
             "| set | n | " + " | ".join(cols) + " |", "|---|---|" + "---|" * len(cols)]
    for name, r in rows.items():
        n = next(iter(r.values()))[2]
        lines.append(f"| {name} | {n} | " + " | ".join(f"{r[c][0]:.3f} ({r[c][1]:.3f})" for c in cols) + " |")
    mean = {c: np.mean([r[c][0] for r in rows.values()]) for c in cols}
    lines.append("| **mean ρ** | | " + " | ".join(f"**{mean[c]:.3f}**" for c in cols) + " |")
    wins = sum(rows[s][f"υBLEU {rets[0]}"][0] > rows[s]["BLEU-2 1 ref"][0] for s in rows)
    lines += ["", f"υBLEU ({rets[0]}) beats single-reference BLEU-2 on {wins} of {len(rows)} sets."]
    Path(a.out).write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
