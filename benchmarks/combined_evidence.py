"""Would one combined test of several signals name the system people prefer more often than the shipped verdict?
Prints a table (and writes benchmarks/COMBINED_EVIDENCE.md with ``--out``).

    .venv/bin/python benchmarks/combined_evidence.py [--out benchmarks/COMBINED_EVIDENCE.md]

For every system pair of the development sets with several systems on shared contexts (``core.system_eval``:
the same pairs, people's side by the same paired test on the set's overall dimension), each signal's
per-context difference A - B is taken (each default metric, held out where it offers that; the judge's
P(A) - 0.5), divided by its standard deviation over the pair's contexts, and the chosen signals' standardized
differences are summed into one per-context value. That value is tested as the verdict tests a metric
(``core.verdict.compare_values``: contexts resampled, randomization p and an interval at 95 %): **the combined
evidence** names a winner when that test does. Equal weights after standardization: nothing is fitted.

Which signals to combine (and whether the shipped policy's MME-CRS rule follows when the combined test names
none) is then chosen with each set held out in turn by the score the verdict policy uses (right - 4 x wrong), as
``scripts/choose_verdict_policy.py`` chooses its policy. Scores come through the engine and its score cache: with
an empty cache the run scores every row of the sets (about an hour on 2 cores).
"""
from __future__ import annotations

import argparse
import itertools
import sys
from dataclasses import replace

import numpy as np

from common import SHARED_EVAL, emit
from core.system_eval import WRONG_COST

SETS = ("usr-topical", "usr-persona", "dailydialog-zhao", "dailydialog-gupta", "convai2-grade", "dailydialog-grade",
        "empathetic-grade")
SIGNALS = ("mme", "judge", "bert_ruber", "bleu")  # ubleu left out: it prefers a generic reply (SYSTEM_LEVEL.md)


def per_context_differences(name: str, examples, metrics: list[str]) -> list[dict]:
    """Per system pair of one set: people's side and every signal's per-pair difference A - B."""
    from core.engine import judge_comparison, score_examples
    from core.scoring import get_metric
    from core.system_eval import system_pairs
    from core.verdict import compare_ratings, context_groups, preference_dimension
    comps, _ = system_pairs(examples)
    if not comps:
        return []
    rows = list({id(ex): ex for comp in comps for ex in comp.examples()}.values())
    built = [get_metric(m) for m in metrics]
    table = score_examples(rows, built)
    for metric in built:  # learned metrics held out, as the system-level table scores them
        alt = metric.held_out_for(name)
        if alt is not None:
            shipped = table.results[metric.name]
            again = alt.rescored(shipped)
            table.results[metric.name] = (replace(shipped, scores=again) if again is not None
                                          else score_examples(rows, [alt]).results[metric.name])
    position = {id(ex): i for i, ex in enumerate(rows)}
    dim = preference_dimension(rows)
    out = []
    for comp in comps:
        idx, n = [position[id(ex)] for ex in comp.examples()], len(comp.pairs)
        people = next((r for r in compare_ratings(comp) if r.metric == f"human:{dim}"), None)
        diffs = {m: (lambda v: v[:n] - v[n:])(np.asarray(table.results[m].scores, dtype=np.float64)[idx])
                 for m in metrics}
        diffs["judge"] = np.asarray(judge_comparison(comp).p_a, dtype=np.float64) - 0.5
        out.append({"dataset": name, "people": people.winner if people else None,
                    "groups": context_groups(comp.a), "diffs": diffs})
    print(f"{name}: {len(out)} system pairs", file=sys.stderr, flush=True)
    return out


def standardized(x: np.ndarray) -> np.ndarray:
    sd = float(np.nanstd(x))
    return x / sd if sd > 0 else np.zeros_like(x)


def combined_winner(pair: dict, signals: tuple[str, ...]) -> str | None:
    """The combined evidence's winner ("A" / "B" / None): the sum of the signals' standardized differences,
    tested as the verdict tests a metric (module docstring)."""
    from core.verdict import compare_values
    value = sum(standardized(pair["diffs"][s]) for s in signals)
    return compare_values("combined", "metric", value, np.zeros(len(value)), pair["groups"]).winner


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default=None, help="also write the table to this markdown file")
    a = p.parse_args(argv)
    from core.meta_eval import group_datasets
    data = group_datasets([SHARED_EVAL / f"{s}.jsonl" for s in SETS])
    pairs = [q for name, exs in data.items() for q in per_context_differences(name, exs, [s for s in SIGNALS
                                                                                            if s != "judge"])]
    sep = [q for q in pairs if q["people"] is not None]
    subsets = [c for k in range(1, len(SIGNALS) + 1) for c in itertools.combinations(SIGNALS, k)]
    calls = {c: [combined_winner(q, c) for q in sep] for c in subsets}
    mme_alone = {id(q): combined_winner(q, ("mme",)) for q in sep}  # the shipped policy: MME-CRS's own test
    candidates = [(c, then_mme) for c in subsets for then_mme in (False, True)]

    def call(i: int, cand) -> str | None:
        c, then_mme = cand
        w = calls[c][i]
        return mme_alone[id(sep[i])] if w is None and then_mme else w

    def score(idx, cand) -> tuple[int, int]:
        right = sum(call(i, cand) == sep[i]["people"] for i in idx)
        wrong = sum(call(i, cand) not in (None, sep[i]["people"]) for i in idx)
        return right, wrong

    everyone = range(len(sep))
    lines = ["| combined signals | then MME-CRS alone | names people's winner | names the other | names none |",
             "|---|---|---|---|---|"]
    for cand in candidates:
        r, w = score(everyone, cand)
        lines.append(f"| {'+'.join(cand[0])} | {'yes' if cand[1] else 'no'} | {r} of {len(sep)} | {w} | "
                     f"{len(sep) - r - w} |")
    lines += ["", "Each set held out, the candidate chosen on the others (right - 4 x wrong; simpler first on ties):",
              "", "| held-out set | chosen | people separate | names people's winner | names the other |",
              "|---|---|---|---|---|"]
    total_r = total_w = 0
    for held in dict.fromkeys(q["dataset"] for q in sep):
        train = [i for i in everyone if sep[i]["dataset"] != held]
        test = [i for i in everyone if sep[i]["dataset"] == held]
        best = max(candidates, key=lambda c: (score(train, c)[0] - WRONG_COST * score(train, c)[1],
                                              -len(c[0]) - c[1]))
        r, w = score(test, best)
        total_r, total_w = total_r + r, total_w + w
        lines.append(f"| {held} | {'+'.join(best[0])}{' then MME-CRS' if best[1] else ''} | {len(test)} | {r} | {w} |")
    lines.append(f"| **all** | | **{len(sep)}** | **{total_r}** | **{total_w}** |")
    emit("\n".join(lines), a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
