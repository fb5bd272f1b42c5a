"""``dialeval plan PILOT --by CRITERION --effect D``: how many contexts a comparison needs to detect a difference
of D with 80 % power, from a pilot comparison's paired variance by context (``core.gating.contexts_needed``)."""
from __future__ import annotations

import argparse

from core.cli import criterion_name, emit, number_above, register_command
from core.cli.compare import add_verdict_arguments, verdict_from
from core.engine import DEFAULT_METRICS
from core.formatting import alpha_label, fmt_percent, level_label
from core.gating import (POWER, contexts_needed, criterion, default_criteria, fewest_contexts, is_combined,
                          planning_interval)
from core.report import to_json
from core.verdict import context_groups
from core.verdict_policy import JUDGE


def _arguments(p: argparse.ArgumentParser) -> None:
    add_verdict_arguments(p)
    p.add_argument("--by", default=None, help="the criterion: judge, combined (the verdict's combined test), a "
                                              "metric, or human:DIM (default: the first the gate checks by default: "
                                              "people's rating on the verdict's dimension, else the combined test)")
    p.add_argument("--effect", type=number_above(0), required=True,
                   help="the difference to detect, in the criterion's units (the judge: points of win rate as a "
                        "fraction, 0.05 = 5 points; the combined test: standardized differences summed over its "
                        "signals, 0.2 per signal is a small one)")
    p.add_argument("--power", type=number_above(0.5, inclusive=True, maximum=1), default=POWER,
                   help=f"the chance to detect it, 0.5 or more (default {POWER}; below an even chance a difference "
                        "would be planned to go unseen)")
    p.add_argument("--format", default="text", choices=("text", "json"))
    # not given: what --by needs (a metric alone, the judge alone, people's ratings), else compare's defaults
    p.set_defaults(metrics=None, judge=BY_CRITERION)


BY_CRITERION = object()  # the judge the criterion needs: the learned judge for --by judge (or none given), else none


def _what_by_needs(a: argparse.Namespace) -> None:
    """Fill ``--metrics`` and the judge, where the command line left them out, with what ``--by`` needs: the
    metric it names alone, the judge alone, or neither for people's ratings; without ``--by``, what ``compare``
    computes (the default metrics and the judge: the default criterion is known only from that verdict)."""
    by = a.by = None if a.by is None else criterion_name(a.by, a)  # 'BLEU' is bleu, as --metrics reads it
    needs_all = by is None or is_combined(by)  # compare's defaults: the verdict (or its combined test) needs them
    if a.metrics is None:
        a.metrics = list(DEFAULT_METRICS) if needs_all else [] if by == JUDGE or by.startswith("human:") else [by]
    if a.judge is BY_CRITERION:
        if not (needs_all or by == JUDGE) and getattr(a, "checkpoint", None) is not None:
            raise ValueError(f"--checkpoint names the learned judge's checkpoint, and --by {by} does not read the "
                             "judge: drop --checkpoint, or add --judge to run it as well")
        a.judge = "pairwise" if needs_all or by == JUDGE else None


EVEN_SPREAD = "; the win rate's spread taken at an even 50 %, which the gate tests against"


def _check_judge_effect(effect: float) -> None:
    if effect > 0.5:
        raise ValueError(f"--effect {effect:g}: the judge's win rate moves at most 0.5 from an even 0.5 (a fraction: "
                         "0.05 = 5 points)")


@register_command("plan", "how many contexts a comparison needs to detect a difference (from a pilot comparison)",
                  _arguments)
def plan_command(a: argparse.Namespace) -> int:
    _what_by_needs(a)
    if (a.by is not None and a.by != JUDGE and not a.by.startswith("human:") and not is_combined(a.by)
            and a.by not in a.metrics):
        raise ValueError(f"--by {a.by}: it is not among --metrics {','.join(a.metrics) or 'none'}; add it, or leave "
                         "--metrics out to compute only what --by needs")
    if a.by == JUDGE:  # said before anything runs; a default criterion is known only after the pilot's verdict
        _check_judge_effect(a.effect)
    nothing_else = (f"--by {a.by} (people's ratings alone)" if a.by and a.by.startswith("human:") and not a.metrics
                    else "--metrics none")
    comp, _, verdict = verdict_from(a, None, nothing_else)
    by = a.by or default_criteria(verdict)[0]  # what the gate checks first by default
    c = criterion(verdict, by, n_contexts=len(set(context_groups(comp.a))))
    if c.is_judge and a.by != JUDGE:  # the judge became the criterion by default: checked now
        _check_judge_effect(a.effect)
    n = contexts_needed(*planning_interval(c), c.n_contexts, a.effect, verdict.level, a.power)
    floor = fewest_contexts(verdict.level)  # fewer can show no difference at all: the gate fails them
    n_planned, n = n, max(n, floor)
    what = "the judge's win rate" if c.is_judge else c.label
    # the pilot's own power: none where too few contexts can reach p below the threshold (its interval still plans)
    pilot_words = f"too few for any p below {alpha_label(verdict.level)}, so no difference could be shown there"
    more = (f"; the power alone asks for {n_planned}, but fewer than {floor} contexts can show no difference at this "
            "level (the gate fails them)" if n_planned < floor else "")
    if a.format == "json":
        emit(to_json({"criterion": by, "effect": a.effect, "power": a.power, "level": verdict.level,
                      "pilot_contexts": c.n_contexts, "contexts_needed": n, "contexts_for_power": n_planned,
                      "fewest_the_gate_reads": floor,
                      "detectable_with_pilot": c.detectable}), None)
        return 0
    emit(f"To detect a difference of {c.amount(a.effect, signed=False)} in {what} with {fmt_percent(a.power)} power "
         f"at the {level_label(verdict.level)} level, compare about {n} contexts (from this pilot's "
         f"{c.n_contexts} contexts: paired, clustered by context{EVEN_SPREAD if c.is_judge else ''}; "
         f"{c.unseen() or pilot_words}){more}.", None)
    return 0
