"""How often does a second group of raters name the system the first group prefers? The verdict's ceiling.

Issue 53 asks the one-line verdict to name people's preferred system in >= 92 % of the system pairs people
separate, and the other one in <= 2 %. This measures what a signal as good as other people reaches under the same
protocol. The raw ratings of each rated development set are split into two panels (the first half of each row's
rating slots and the rest: 2 + 2 raters on DailyDialog-Zhao, 1 + 2 on the USR sets, 5 + 5 on the GRADE sets;
DailyDialog-Gupta has means only and is left out). One panel's mean is people's side, read by the verdict's own
paired test (``core.verdict.compare_ratings``, tie margin included); the other panel's mean is tested exactly as
the verdict tests a metric (``core.verdict.compare_values``, randomization over contexts), and its direction at
p < 0.3 is read as the verdict reads its combined test's lean. Each panel takes each role in turn.

Beside it, on the same pairs and against the same panel: the one-line verdict, each development set judged by the
policy chosen without it (the calls ``scripts/choose_verdict_policy.py`` keeps in the cache folder; run it first).

    .venv/bin/python benchmarks/verdict_ceiling.py             # prints the table
    .venv/bin/python benchmarks/verdict_ceiling.py --out F.md  # and writes it
"""
from __future__ import annotations

import argparse
import json
import math
import os
from dataclasses import replace
from typing import Sequence

import numpy as np
from common import SHARED_EVAL, emit

os.environ["DIALEVAL_NO_CACHE"] = "1"  # the panels' means are this script's own: never kept in the score cache

from core.data import Example, load_jsonl  # noqa: E402
from core.engine import DEFAULT_METRICS  # noqa: E402
from core.human_preferences import preference_dimension  # noqa: E402
from core.scoring import Metric, MetricResult, Signature  # noqa: E402
from core.settings import cache_dir  # noqa: E402
from core.system_eval import (GENERIC_BAR, WRONG_COST, SignalCall, SystemPair, bar_candidates,  # noqa: E402
                              best_policy, evaluate_dataset, record)
from core.verdict_policy import shipped_policy  # noqa: E402

SETS = ("usr-topical", "usr-persona", "dailydialog-zhao", "convai2-grade", "dailydialog-grade", "empathetic-grade")
PANEL = "panel"


def raw_ratings(name: str, dim: str) -> dict[str, list[float]]:
    """Row id -> its raters' ratings on ``dim`` (the file's ``ratings``; the loader keeps only their mean), a
    rating that is not a number (a rater who did not rate) left out before the panels are split."""
    out = {}
    with open(SHARED_EVAL / f"{name}.jsonl", encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            out[str(row["id"])] = [x for x in (row.get("ratings") or {}).get(dim, [])
                                   if isinstance(x, (int, float)) and math.isfinite(x)]
    return out


def panel_mean(ratings: list[float], panel: int) -> float:
    """The mean of one panel's ratings of a row: panel 0 the first half of its rating slots (rounded down),
    panel 1 the rest; NaN where the row has fewer than two ratings."""
    r = ratings
    if len(r) < 2:
        return math.nan
    half = len(r) // 2
    return float(np.mean(r[:half] if panel == 0 else r[half:]))


class PanelMean(Metric):
    """The other panel's mean rating of each row, as a metric (its rows looked up by id)."""

    name = PANEL
    higher_is_better = True

    def __init__(self, values: dict[str, float]):
        super().__init__(None)
        self.values = values

    def compute(self, examples: Sequence[Example], progress=None) -> MetricResult:
        return MetricResult(self.name, np.array([self.values[ex.id] for ex in examples]), self.signature())

    def signature(self) -> Signature:
        return Signature(PANEL, "other raters")


def held_out_verdicts() -> dict[tuple[str, str, str], str | None]:
    """(set, system A, system B) -> the one-line verdict's winner, each set under the policy chosen without it,
    from the calls scripts/choose_verdict_policy.py keeps (people's side there is the full panel's; the verdict's
    call does not read it)."""
    calls = json.loads((cache_dir() / "system-level-calls.json").read_text())
    generic = json.loads((cache_dir() / "system-level-generic.json").read_text())
    pairs = [SystemPair(**{**d, "calls": {k: SignalCall(**c) for k, c in d["calls"].items()}}) for d in calls]
    _, _, candidates = bar_candidates(generic, list(DEFAULT_METRICS), GENERIC_BAR)
    out = {}
    for ds in dict.fromkeys(p.dataset for p in pairs):
        policy = best_policy([p for p in pairs if p.dataset != ds], candidates, WRONG_COST)
        out.update({(p.dataset, p.system_a, p.system_b): p.verdict_under(policy).winner
                    for p in pairs if p.dataset == ds})
    return out


def tally(pairs: list[SystemPair], signal: str) -> tuple[int, int, int]:
    r = record(pairs, signal)
    return r.right, r.wrong, r.pairs


def share(k: int, n: int) -> str:
    return f"{k} of {n} ({100 * k / n:.0f} %)" if n else "-"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    verdicts = held_out_verdicts()
    lean_p = shipped_policy().policy.combine_lean  # the verdict's own lean (0.3 as shipped)
    pairs: list[SystemPair] = []
    for name in SETS:
        rows = load_jsonl(SHARED_EVAL / f"{name}.jsonl")
        dim = preference_dimension(rows)
        ratings = raw_ratings(name, dim)
        for people in (0, 1):
            other = 1 - people
            as_people = [replace(ex, scores={dim: panel_mean(ratings[ex.id], people)}) for ex in rows]
            signal = PanelMean({ex.id: panel_mean(ratings[ex.id], other) for ex in rows})
            for q in evaluate_dataset(name, as_people, [signal], judge=False, held_out=False, dimension=dim):
                call = q.calls[PANEL]
                lean = call.winner or (call.order if call.p < lean_p else None)
                q.calls[f"{PANEL} (lean)"] = SignalCall(call.order, lean, call.p)
                v = verdicts.get((q.dataset, q.system_a, q.system_b))
                q.calls["verdict"] = SignalCall(v, v)
                q.dataset = f"{name} (panel {people + 1} as people)"
                pairs.append(q)
    lines = [f"| people's side | pairs it separates | the other panel's test | with its lean at p < {lean_p:g} | "
             "the one-line verdict (held out) |", "|---|---|---|---|---|"]
    for ds in [*dict.fromkeys(q.dataset for q in pairs), "all"]:
        ps = [q for q in pairs if ds in ("all", q.dataset)]
        cells = []
        for signal in (PANEL, f"{PANEL} (lean)", "verdict"):
            right, wrong, n = tally(ps, signal)
            cells.append(f"{share(right, n)} right, {wrong} wrong")
        n = sum(q.people is not None for q in ps)
        lines.append(f"| {'**all**' if ds == 'all' else ds} | {n} | " + " | ".join(cells) + " |")
    text = "\n".join(lines)
    emit(text, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
