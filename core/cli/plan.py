"""``dialeval plan PILOT --by CRITERION --effect D``: how many contexts a comparison needs to detect a difference
of D with 80 % power, from a pilot comparison's paired variance by context (``core.gate.contexts_needed``)."""
from __future__ import annotations

import argparse

from core.cli import emit, number_above, register_command
from core.cli.compare import add_verdict_arguments, verdict_from
from core.formatting import fmt_percent, level_label
from core.gate import POWER, contexts_needed, criterion, default_criterion
from core.report import to_json
from core.verdict import context_groups
from core.verdict_policy import JUDGE


def _arguments(p: argparse.ArgumentParser) -> None:
    add_verdict_arguments(p)
    p.add_argument("--by", default=None, help="the criterion: judge, a metric, or human:DIM (default: what the "
                                              "one-line verdict trusts)")
    p.add_argument("--effect", type=number_above(0), required=True,
                   help="the difference to detect, in the criterion's units (the judge: points of win rate as a "
                        "fraction, 0.05 = 5 points)")
    p.add_argument("--power", type=number_above(0, maximum=1), default=POWER, help=f"the chance to detect it (default {POWER})")
    p.add_argument("--format", default="text", choices=("text", "json"))


def _check_judge_effect(effect: float) -> None:
    if effect > 0.5:
        raise ValueError(f"--effect {effect:g}: the judge's win rate moves at most 0.5 from an even 0.5 (a fraction: "
                         "0.05 = 5 points)")


@register_command("plan", "how many contexts a comparison needs to detect a difference (from a pilot comparison)",
                  _arguments)
def plan_command(a: argparse.Namespace) -> int:
    if a.by == JUDGE:  # said before anything runs; a default criterion is known only after the pilot's verdict
        _check_judge_effect(a.effect)
    comp, _, verdict = verdict_from(a, None)
    by = a.by or default_criterion(verdict)
    c = criterion(verdict, by, n_contexts=len(set(context_groups(comp.a))))
    if c.is_judge and a.by != JUDGE:  # the judge became the criterion by default: checked now
        _check_judge_effect(a.effect)
    n = contexts_needed(c.low, c.high, c.n_contexts, a.effect, verdict.level, a.power)
    what = "the judge's win rate" if c.is_judge else by
    if a.format == "json":
        emit(to_json({"criterion": by, "effect": a.effect, "power": a.power, "level": verdict.level,
                      "pilot_contexts": c.n_contexts, "contexts_needed": n,
                      "detectable_with_pilot": c.detectable}), None)
        return 0
    emit(f"To detect a difference of {c.amount(a.effect, signed=False)} in {what} with {fmt_percent(a.power)} power "
         f"at the {level_label(verdict.level)} level, compare about {n} contexts (from this pilot's "
         f"{c.n_contexts} contexts: paired, clustered by context; with them, {c.unseen() or 'no interval'}).", None)
    return 0
