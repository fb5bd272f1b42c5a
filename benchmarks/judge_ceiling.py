"""How well do the humans themselves agree on the judge's test pairs? A noise ceiling for issue 6.

For every test pair of ``benchmarks/judge.py`` (same seed, caps and context split) whose two responses
carry raw annotator ratings (``ratings`` in ../shared/data/eval), this script measures two things on the
preference dimension the judge is scored on:

* **one rater vs the rest**: for each rating slot j, the preference of rating j of A against rating j of B
  (equal ratings count half) compared with the preference of the mean of the *other* ratings
  (pairs where the others' means are equal are left out). The rating slots of A and B need not be the
  same person in every set (crowd data), so this is a pessimistic "single human" number.
* **half vs half**: the ratings of each response are split into two halves (first half / second half of
  the slots); agreement of the two half-panels' mean preferences (equal means count half).

and, for comparison, the judge's agreement with the full-panel label on the same pairs (read from the
held-out prediction cache of ``python -m core train judge`` / ``benchmarks/judge.py`` when present, else
computed). Sets with a single rating per response (dailydialog-gupta) have no ceiling and are listed as —.

    .venv/bin/python benchmarks/judge_ceiling.py                 # 610 test pairs (cap 70 per set)
    .venv/bin/python benchmarks/judge_ceiling.py --cap-test 300  # 1,928 test pairs
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from common import markdown_table
from core.judges.pairwise import PairwiseJudge, load_judge
from core.settings import SEED, shared_data_dir
from core.training.judge_pairs import DAILYDIALOG_SETS, TRAIN_SETS, heldout_cache_path, load_heldout_predictions, train_test_pairs
from core.verdict import preference_dimension, side_accuracy




def raw_ratings(names) -> dict[str, dict[str, list[float]]]:
    """id -> dimension -> list of raw ratings, straight from the rated JSONL files."""
    out: dict[str, dict[str, list[float]]] = {}
    d = (lambda: shared_data_dir() / "eval")()
    for name in names:
        with open(d / f"{name}.jsonl", encoding="utf-8") as f:
            for line in f:
                rec = json.loads(line)
                r = rec.get("ratings") or {}
                out[rec["id"]] = {k: [float(x) for x in v] for k, v in r.items() if isinstance(v, list)}
    return out


def _pref(d: float) -> float:
    """1 if A, 0 if B, 0.5 if equal."""
    return 0.5 + 0.5 * float(np.sign(d))


def pair_ceiling(ra: list[float], rb: list[float]) -> tuple[float | None, float | None]:
    """(one-vs-rest agreement averaged over slots, half-vs-half agreement) for one pair; None if undefined."""
    k = min(len(ra), len(rb))
    if k < 2:
        return None, None
    a, b = np.asarray(ra[:k]), np.asarray(rb[:k])
    agree = []
    for j in range(k):
        rest = np.delete(a, j).mean() - np.delete(b, j).mean()
        if rest == 0:
            continue
        single = _pref(a[j] - b[j])
        agree.append(1.0 - abs(single - _pref(rest)))
    h = k // 2
    d1, d2 = a[:h].mean() - b[:h].mean(), a[h:].mean() - b[h:].mean()
    half = 1.0 - abs(_pref(d1) - _pref(d2))
    return (float(np.mean(agree)) if agree else None), half


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cap-train", type=int, default=8000)
    ap.add_argument("--cap-test", type=int, default=70)
    ap.add_argument("--checkpoint", default="judge")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", help="also write the numbers as JSON here")
    args = ap.parse_args()
    import pandas as pd

    _, test = train_test_pairs(SEED, args.cap_train, args.cap_test)
    ratings = raw_ratings(TRAIN_SETS + DAILYDIALOG_SETS)

    import torch
    torch.set_num_threads(args.threads)
    judge = load_judge(args.checkpoint)
    cache = heldout_cache_path(PairwiseJudge.cache_identity(args.checkpoint))
    out = load_heldout_predictions(test, cache, judge.tie_margin)
    if out is None:
        out = judge.predict([p.context for p in test], [p.response_a for p in test], [p.response_b for p in test])

    rows = []
    for k, p in enumerate(test):
        dim = preference_dimension([p.example_a])
        ra = ratings.get(p.example_a.id, {}).get(dim, [])
        rb = ratings.get(p.example_b.id, {}).get(dim, [])
        one, half = pair_ceiling(ra, rb)
        rows.append({"dataset": p.dataset, "raters": min(len(ra), len(rb)), "one_vs_rest": one,
                     "half_vs_half": half, "p_a": out.p_a[k], "gold": p.vote})
    df = pd.DataFrame(rows)
    table = []
    for name, g in list(df.groupby("dataset", sort=False)) + [("overall (pairs with >= 2 ratings)",
                                                               df[df.raters >= 2])]:
        has = g[g.raters >= 2]
        table.append({"dataset": name, "pairs": len(g), "ratings per response": int(g.raters.median()),
                      "one rater vs the rest": has.one_vs_rest.dropna().mean() if len(has) else float("nan"),
                      "half vs half": has.half_vs_half.mean() if len(has) else float("nan"),
                      "judge vs full panel": side_accuracy(g.p_a.values, list(g.gold))})
    t = pd.DataFrame(table)
    print(markdown_table(t))
    if args.json:
        Path(args.json).write_text(json.dumps(t.to_dict("records"), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
