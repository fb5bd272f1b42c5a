"""Ship or not: the verdict reduced to a decision a CI job can act on, and how many contexts a decision needs.

The baseline is system A, the candidate system B of a :class:`~core.verdict.Verdict` (the same paired comparison,
contexts resampled). Each **criterion** (``by``: ``judge``, ``combined``, a metric's name, or ``human:DIM``;
default :func:`default_criteria`, what the one-line verdict decides on) is read on the candidate's side
(:class:`Criterion`):

- a metric: the candidate's improvement, B - A where higher is better (A - B where lower is), with the verdict's
  interval; the verdict's own test says which side is significantly better;
- the judge: the candidate's win rate among the pairs the judge decided, minus 0.5, with its interval (contexts
  resampled) and the judge's sign test;
- ``combined``: the verdict's combined test (a sum of standardized differences), as a metric;
- people's ratings on ``DIM``: as a metric.

Before the criteria, two checks of what the candidate answers (:func:`missing_replies_check`,
:func:`blank_replies_check`) fail a candidate that leaves more inputs unanswered or blank than the baseline.

A **requirement** (:func:`check`) turns it into PASS or FAIL:

- ``not-worse`` (the default): FAIL only when the baseline is significantly better;
- ``non-inferior`` with a margin M: PASS only when the whole interval of the improvement lies above -M (for the
  judge: the candidate's win-rate interval above 0.5 - M). A candidate no worse than the baseline whose interval
  still reaches below -M fails with "non-inferiority not shown" (more contexts would narrow the interval);
- ``better``: PASS only when the candidate is significantly better.

Under any requirement a criterion whose test can move too few contexts for any p below the threshold
(:meth:`Criterion.units`: the contexts whose difference is not 0; 5 or fewer at 0.95, :func:`fewest_contexts`)
fails with "too few contexts (or differing pairs) to show any difference": no candidate could fail there. A
candidate whose replies are the baseline's passes (nothing changed); a veto of the combined test is exempt, as it
only ever blocks on a significant difference.

Default margins (:func:`default_margin`) are stated in the criterion's own units: 5 points of win rate for the
judge; 0.2 per signal summed for the combined test; for a metric or people's ratings, a fifth of the baseline's
standard deviation over its rows (a "small" standardized difference, Cohen's d = 0.2), rounded to two significant
digits.

**Power.** A paired comparison over n contexts has a standard error SE = (high - low) / (2 z_{1-a/2}), read off
its own interval (percentile bootstrap over contexts, so clustering by context is in it). The smallest difference
it detects with power 1 - b at level a is ``core.stats.detectable_difference`` = (z_{1-a/2} + z_{1-b}) x SE (the normal
approximation of a two-sided test); every "no significant difference" states it. :func:`contexts_needed` turns
a pilot's SE into the contexts a difference D needs: n = ceil(((z_{1-a/2} + z_{1-b}) x SE x sqrt(n_pilot) / D)^2),
since SE x sqrt(n) estimates the standard deviation of one context's paired difference. tests/test_gate.py checks
by simulation that planted differences of the stated size are detected at about the stated rate.
"""
from __future__ import annotations

import difflib
import math
import re
from dataclasses import asdict, dataclass, replace
from statistics import NormalDist
from typing import Any, Sequence
from xml.sax.saxutils import escape, quoteattr

import numpy as np

from core.data import ID_MISMATCH_ADVICE, Comparison, case_blind_name, mismatched_pairs_words
from core.formatting import (alpha_label, clean_json, fmt_amount, fmt_percent, fmt_percent_bounds, fmt_points,
                             undecided_interval_words)
from core.report import render_verdict, to_json
from core.stats import MIN_RESAMPLED, POWER, can_be_significant, detectable_difference, fewest_differing
from core.verdict import MetricComparison, Verdict, context_groups, preferred_human_row, verdict_decision
from core.verdict_policy import COMBINED_TEST, JUDGE, is_measured_judge, judge_name, shipped_policy

REQUIREMENTS = ("not-worse", "non-inferior", "better")
JUDGE_MARGIN = 0.05  # 5 points of win rate
SMALL_EFFECT = 0.2  # a default margin of a metric: this share of the baseline's standard deviation


def _z(level: float) -> float:
    return NormalDist().inv_cdf(1 - (1 - level) / 2)


MOST_CONTEXTS = 10 ** 9  # a plan beyond this is no plan: the effect asked for is too small for the pilot's spread


def contexts_needed(low: float, high: float, n_contexts: int, effect: float, level: float = 0.95,
                    power: float = POWER) -> int:
    """Contexts a paired comparison needs to detect ``effect`` with ``power``, from a pilot of ``n_contexts``
    whose interval is [low, high] (module docstring)."""
    if effect <= 0 or not math.isfinite(effect):
        raise ValueError(f"the effect to detect must be a positive number, got {effect}")
    if n_contexts < 2 or not (math.isfinite(low) and math.isfinite(high)):
        raise ValueError(f"the pilot has no interval (fewer than {MIN_RESAMPLED} contexts, or no pair scored): nothing "
                         "to plan from")
    sd = (high - low) / (2 * _z(level)) * math.sqrt(n_contexts)
    if sd <= 0:
        raise ValueError("the pilot's paired differences do not vary (every pair differs by the same amount, often "
                         "0), so there is no spread to plan from: run the pilot on more, or more varied, contexts")
    root = (_z(level) + NormalDist().inv_cdf(power)) * sd / effect
    if not root < math.sqrt(MOST_CONTEXTS):  # also an effect so small that squaring would overflow
        raise ValueError(f"a difference of {effect:.3g} would need more than {MOST_CONTEXTS:,} contexts with this "
                         f"pilot's spread (its interval is {high - low:.3g} wide): plan for a larger difference")
    return max(2, math.ceil(root ** 2))


EVEN_SPREAD_CAP = 0.95  # a pilot win rate beyond this (or below 1 - it) is read as this one when it is widened


def planning_interval(c: "Criterion") -> tuple[float, float]:
    """The interval :func:`contexts_needed` plans from: the criterion's own, except the judge's, widened to the
    spread of an even win rate. A win rate's spread shrinks away from 0.5 (its variance is r(1 - r)), and the
    gate tests the judge against an even 0.5, so a lopsided pilot (the candidate winning 90 %) would promise too
    few contexts for a difference near 0.5: its half-width is scaled by 0.5 / sqrt(r(1 - r)), r the pilot's win
    rate (held within [1 - :data:`EVEN_SPREAD_CAP`, :data:`EVEN_SPREAD_CAP`])."""
    if not c.is_judge or not (math.isfinite(c.low) and math.isfinite(c.high)):
        return c.low, c.high
    r = min(max(0.5 + c.effect, 1 - EVEN_SPREAD_CAP), EVEN_SPREAD_CAP)
    centre, half = (c.low + c.high) / 2, (c.high - c.low) / 2 * 0.5 / math.sqrt(r * (1 - r))
    return centre - half, centre + half


@dataclass
class Criterion:
    """One criterion on the candidate's side: ``effect`` (the improvement; for the judge its win rate - 0.5) with
    its interval, which side the verdict's own test finds better (``better``: "candidate", "baseline" or None),
    and the smallest difference the comparison could detect (``detectable``, 80 % power)."""

    name: str
    n: int  # pairs (the judge: the pairs it decided)
    n_contexts: int
    effect: float
    low: float
    high: float
    better: str | None
    detectable: float
    level: float
    baseline_sd: float = math.nan  # the baseline's standard deviation over its rows (a metric, people)
    baseline_scale: float = 0.0  # the largest magnitude among them: a spread below 1e-9 of it is rounding
    unread: int = 0  # the judge: pairs it could not read (an llm's answers naming neither reply), of ``pairs``
    pairs: int = 0  # the judge: the pairs it was asked
    diagnostic: str = ""  # the judge: why it has no measured record (``--judge llm``), said beside its line
    p: float = math.nan  # the p that decides ``better`` with the interval (a winner needs both below the threshold)
    p_name: str = ""  # what that p is: 'randomization p', 'sign test p'
    differing: int | None = None  # contexts whose difference is not 0 (the judge: its sign test's units); None: unknown
    unchanged: bool = False  # the candidate's replies are the baseline's, pair for pair (nothing changed)

    def units(self) -> int:
        """How many contexts the test can move at most: its contexts, and no more than those whose difference is
        not 0 (a randomization flips only those; the judge's sign test counts only contexts whose decided pairs do
        not cancel, ``WinStats.sign_units``)."""
        return self.n_contexts if self.differing is None else min(self.n_contexts, self.differing)

    @property
    def is_judge(self) -> bool:
        return self.name == JUDGE

    @property
    def interval_of(self) -> str:
        """The value the interval must exclude for a winner, in words: '50 %' for the judge's win rate, '0' else
        (``low`` and ``high`` are differences from it, 0 for every criterion, so the data needs no field)."""
        return "50 %" if self.is_judge else "0"

    @property
    def label(self) -> str:
        """'the judge', 'the combined test of bert_ruber+judge+ubleu', or the metric's name."""
        if self.is_judge:
            return "the judge"
        if is_combined(self.name):
            signals = self.name.split(":", 1)[1].strip() if ":" in self.name else ""
            return f"the combined test of {signals}" if signals else "the combined test"
        return self.name

    def amount(self, x: float, signed: bool = True) -> str:
        """``x`` in the criterion's units: points of win rate for the judge, the metric's own units else."""
        return fmt_points(x, signed) if self.is_judge else fmt_amount(x, signed)

    def evidence(self) -> str:
        """'wins 38 % [29–47 %] of 120 pairs' (the judge; 'it decided none of the pairs (each a tie)' without a
        win rate) or '-0.041 [-0.070, -0.012] over 60 contexts'."""
        unread = f"; it could not read {self.unread} of the {self.pairs} pairs" if self.unread else ""
        if self.is_judge and self.unread and self.unread >= self.pairs:
            return f"it could read none of the {self.pairs} pairs (its answers named neither reply)"
        if self.is_judge and not self.n:  # no win rate: every pair it read a tie (identical replies)
            return f"it decided none of the pairs (each a tie){unread}"
        if self.is_judge:
            return (f"wins {fmt_percent(0.5 + self.effect)} {fmt_percent_bounds(0.5 + self.low, 0.5 + self.high)} "
                    f"of the {self.n} pairs it decided{unread}")
        return (f"{self.amount(self.effect)} [{self.amount(self.low)}, {self.amount(self.high)}] over "
                f"{self.n_contexts} contexts")

    def unseen(self) -> str:
        """'with these 60 contexts a difference smaller than 0.09 in bert_ruber could go unseen'."""
        if not math.isfinite(self.detectable):
            return ""
        what = "in the judge's win rate" if self.is_judge else f"in {self.label}"
        return (f"with these {self.n_contexts} contexts a difference smaller than "
                f"{self.amount(self.detectable, signed=False)} {what} could go unseen")


def _metric_criterion(r: MetricComparison, baseline_sd: float, level: float) -> Criterion:
    sign = -1.0 if r.higher_is_better else 1.0  # diff is A - B; the candidate is B
    lo, hi = sorted((sign * r.low, sign * r.high))
    better = {"A": "baseline", "B": "candidate"}.get(r.winner or "")
    return Criterion(r.metric, r.n, r.n_contexts, sign * r.diff, lo, hi, better, r.detectable, level, baseline_sd,
                     p=r.p_randomization, p_name="randomization p", differing=r.contexts_differing)


COMBINED = COMBINED_TEST
"""``--by combined``: the verdict's combined test (``Verdict.combined``; named 'combined: bert_ruber+judge+ubleu')."""


def criteria_names(v: Verdict) -> list[str]:
    """Every criterion ``v`` can be gated on."""
    return (([JUDGE] if v.judge is not None else []) + [r.metric for r in v.metrics if r.n > 0]
            + ([COMBINED] if v.combined is not None and v.combined.n > 0 else []))


def is_combined(name: str) -> bool:
    """Whether a criterion's name is the combined test's ('combined', or its full name 'combined: bleu+mme')."""
    return name == COMBINED or name.startswith(COMBINED + ":")


def criterion_name(by: str, judged: bool, human: bool = True) -> str:
    """One criterion as it is read: 'judge' (any case) and 'combined' and 'human:DIM' as given, a metric's name as
    the registry reads it ('BLEU' is bleu; an unknown one the registry's error, listing the known). A ``ValueError``
    for the judge when it does not run (``judged`` False), for 'human:DIM' when people's ratings are left out
    (``human`` False), and for 'all' or several names where one is asked for."""
    from core.engine import parse_metrics
    from core.registry import UnknownName
    if by.casefold() == JUDGE:
        if not judged:
            raise ValueError("the judge is the criterion and it does not run")
        return JUDGE
    if by.startswith("human:"):
        if not human:
            raise ValueError("people's ratings are the criterion and they are left out")
        return by
    if is_combined(by):
        return by
    if "," in by:  # 'bert_ruber,judge' is two criteria, not one metric's name
        raise ValueError(f"name criteria one at a time ({by!r} names {len(by.split(','))})")
    try:
        names = parse_metrics([by])
    except UnknownName as e:  # not a metric: a near criterion's name ('judg' is judge) is said, with what one is
        from core.scoring import available_metrics
        close = difflib.get_close_matches(by.casefold(), [JUDGE, COMBINED, *available_metrics()], 1, 0.6)
        if close and close[0] in (JUDGE, COMBINED):
            raise UnknownName(f"unknown criterion {by!r} (did you mean {close[0]!r}?); a criterion is judge, "
                              "combined, human:DIM or a metric") from None
        raise UnknownName(f"{e.args[0] if e.args else e}; or judge, combined, human:DIM") from None
    if len(names) != 1:
        raise ValueError("name criteria one by one (judge, combined, a metric, human:DIM)")
    return names[0]


def untrusted_criteria_notes(names: Sequence[str], measured_judge: bool, flag: str = "--by ") -> list[str]:
    """For each criterion of ``names`` that is one signal the verdict never lets decide alone (a metric or the judge:
    ``VerdictPolicy.decides``), a line with its measured system-level record beside the combined test's, the
    gate's default: a gate on one such signal passes what that signal favours (υBLEU scores a file of "ok." above
    engaged replies, docs/ubleu.md), which the verdict would not. No line for combined and human:DIM. The judge's
    record is the shipped judge's: another judge (``measured_judge`` False: the llm judge, a re-fit) has none.
    ``flag``: how the line names the criterion ('--by ', or the API's 'by=')."""
    shipped = shipped_policy()
    combined = shipped.record(COMBINED_TEST)
    out = []
    for by in dict.fromkeys(names):  # a name given twice (bleu,BLEU, once read) is said once
        if is_combined(by) or by.startswith("human:") or shipped.policy.decides(by):
            continue
        rec, who = shipped.record(by), "the judge" if by == JUDGE else by
        known = (f"on rated data {rec.words(who)}" if rec is not None and rec.pairs and (by != JUDGE or measured_judge)
                 else "it has no measured system-level record")
        beside = (f"; the verdict's combined test (the gate's default criterion) in {combined.right} of "
                  f"{combined.pairs}" + (f", the other one in {combined.wrong}" if combined.wrong else
                                         ", never the other one")
                  if combined is not None and combined.pairs else "")
        out.append(f"{flag}{by}: the verdict never lets {who} decide alone: {known}{beside}")
    return out


def unreadable_criterion(by: str, metrics: Sequence[str], measured_judge: bool) -> str | None:
    """Why the criterion ``by`` (as :func:`criterion_name` reads it) cannot be read on a comparison of ``metrics``
    (registry names), the judge the records were measured with run or not (``measured_judge``), said before
    anything is scored; None when it can. 'human:DIM' is checked once the inputs are read (:func:`missing_dimension`)."""
    if by == JUDGE or by.startswith("human:"):
        return None
    if is_combined(by):
        policy = shipped_policy().policy
        if policy.combination([*metrics, *([JUDGE] if measured_judge else [])]):
            return None
        return (f"the verdict's combined test needs {'+'.join(policy.combine)} (the shipped judge) or a set the policy "
                f"allows; with the metrics {','.join(metrics) or 'none'}{'' if measured_judge else ' and no shipped judge'}"
                " it cannot run")
    return None if by in metrics else f"it is not among the metrics compared ({', '.join(metrics) or 'none'})"


def human_criterion(by: str, comp: Comparison) -> str:
    """A 'human:DIM' criterion as the loaded inputs spell DIM ('human:overall' is 'human:Overall' when no other
    dimension differs from it only in case, as the leaderboard's ``--rank-by`` reads it); others as given."""
    from core.data import dimensions
    if not by.startswith("human:"):
        return by
    found = case_blind_name(by[len("human:"):], dimensions(comp.examples()))
    return by if found is None else "human:" + found


def missing_dimension(by: str, comp: Comparison) -> str | None:
    """For a 'human:DIM' criterion, why the loaded inputs cannot give it (they have no such rating, in any case);
    else None."""
    from core.data import dimensions
    have = dimensions(comp.examples())
    if not by.startswith("human:"):
        return None
    dim = human_criterion(by, comp)[len("human:"):]
    if dim in have:
        sides = [side for side, rows in (("baseline", comp.a), ("candidate", comp.b)) if dim not in dimensions(rows)]
        if sides:  # people's ratings compare only where both systems carry them
            return (f"only the {'candidate' if sides == ['baseline'] else 'baseline'}'s rows carry people's "
                    f"{dim!r} ratings, the {sides[0]}'s none: a human:DIM criterion needs both systems' rows rated")
        return None
    return f"the inputs have no such human rating; they have {', '.join('human:' + d for d in have) or 'none'}"


def criterion(v: Verdict, by: str, baseline_values: Sequence[float] | None = None,
              n_contexts: int | None = None) -> Criterion:
    """The criterion ``by`` of ``v`` on the candidate's (B's) side. ``baseline_values``: the baseline's per-row
    values of that metric (for its default margin); ``n_contexts``: the comparison's contexts (the judge's
    count; by default the metrics' or the pairs')."""
    if by == JUDGE:
        j = v.judge
        if j is None:
            raise ValueError("--by judge: the judge was not run (drop --no-judge)")
        w = j.win
        n_ctx = n_contexts or j.n_contexts or max([r.n_contexts for r in v.metrics] or [v.n_pairs])
        better = {"A": "baseline", "B": "candidate"}.get(j.winner or "")
        lo, hi = 0.5 - w.high, 0.5 - w.low
        diagnostic = "" if is_measured_judge(j.signature) else (
            f"the {judge_name(j.signature)} judge has no measured record: a diagnostic, which the verdict does not "
            "decide on")
        return Criterion(JUDGE, w.wins + w.losses, n_ctx, 0.5 - w.rate, lo, hi, better, j.detectable(v.level),
                         v.level, unread=len(j.unparsed), pairs=j.n, diagnostic=diagnostic, p=w.sign_p,
                         p_name="sign test p", differing=w.sign_units if w.sign_units >= 0 else w.wins + w.losses)
    if is_combined(by):
        c = v.combined
        if c is None or c.n == 0:
            raise ValueError(f"--by {by}: the verdict's combined test did not run on these inputs (it needs "
                             f"{', '.join(shipped_policy().policy.combine)}, or a set of signals the policy allows); "
                             f"choose one of {', '.join(criteria_names(v)) or 'none'}")
        return _metric_criterion(replace(c, metric=f"{COMBINED}: " + "+".join(v.combined_signals)), math.nan,
                                 v.level)
    rows = {r.metric: r for r in v.metrics}
    dim = case_blind_name(by[len("human:"):], v.rating_scales) if by.startswith("human:") else None
    two_scales = v.rating_scales.get(dim) if dim else None
    if by not in rows:
        why = f" ({two_scales})" if two_scales else ""
        raise ValueError(f"--by {by}: not compared here{why}; choose one of "
                         f"{', '.join(criteria_names(v)) or 'none'}")
    r = rows[by]
    if r.n == 0:
        raise ValueError(f"--by {by}: it scored no pair of these inputs")
    vals = np.asarray([x for x in (baseline_values or []) if x is not None and math.isfinite(x)], dtype=float)
    c = _metric_criterion(r, float(np.std(vals, ddof=1)) if len(vals) > 1 else math.nan, v.level)
    return replace(c, baseline_scale=float(np.max(np.abs(vals))) if len(vals) else 0.0)


__all__ = ["POWER", "REQUIREMENTS", "detectable_difference", "contexts_needed", "criterion", "default_criterion",
           "default_criteria", "gate_verdict", "gate_checks", "check", "blank_replies_check", "missing_replies_check",
           "passed", "planning_interval", "render_checks", "junit_xml"]


def default_criteria(v: Verdict) -> list[str]:
    """What the gate checks when ``--by`` is not given: what the one-line verdict decides on. People's rating on
    the dimension the verdict reads (:func:`~core.verdict.preferred_human_row`) when they name a winner; else,
    where the verdict's combined test ran, that test and the signals that may veto it (the judge: a candidate the
    judge finds significantly worse fails, as the verdict would abstain); else :func:`default_criterion`."""
    d = verdict_decision(v)
    if d.basis == "people":
        return [default_criterion(v)]
    if v.combined is not None and v.combined.n > 0:
        return [COMBINED, *combined_vetoes(v)]
    return [default_criterion(v)]


def unscored_default_criteria(v: Verdict) -> list[str] | None:
    """What the default gate reads where the verdict's combined test had no pair to read (an input check failed:
    every candidate reply blank, say) but would have combined the signals asked for: the combined test (which
    then fails, 'nothing to gate on') and the signals that may veto it, so the JSON and JUnit keep the cases a
    scoring run gives; None where the combined test ran, people's ratings decide, or the policy would not
    combine these signals."""
    if (v.combined is not None and v.combined.n > 0) or verdict_decision(v).basis == "people":
        return None
    measured = v.judge is not None and is_measured_judge(v.judge.signature)
    asked = [r.metric for r in v.metrics if r.kind == "metric"] + ([JUDGE] if measured else [])
    policy = shipped_policy().policy
    combination = policy.combination(asked)
    if not combination:
        return None
    names = criteria_names(v)
    return [COMBINED, *(s for s in policy.vetoes_for(combination) if s in names and (s != JUDGE or measured))]


def combined_vetoes(v: Verdict) -> list[str]:
    """The signals that may veto the verdict's combined test (the verdict policy's ``vetoes_for`` its signals)
    that this verdict computed: the judge when its record is measured. Checked beside the combined test wherever
    the gate reads it, by default or named (``--by combined``)."""
    if v.combined is None or v.combined.n == 0:
        return []
    names = criteria_names(v)
    measured = v.judge is not None and is_measured_judge(v.judge.signature)
    return [s for s in shipped_policy().policy.vetoes_for(v.combined_signals)
            if s in names and (s != JUDGE or measured)]


def default_criterion(v: Verdict, unscored: bool = False) -> str:
    """One criterion for what the one-line verdict trusts (``dialeval plan``'s default): people's rating on the
    dimension the verdict reads when they name a winner, else the judge when the verdict policy gives it a say
    (it decides or is part of the combined test), else the first deciding metric that scored (or a metric of the
    combined test the policy allows alone), else the signal with the best measured system-level record
    (``SignalRecord.score``), whatever the order of ``--metrics``. ``unscored``: metrics that scored no pair
    count too (the criterion the gate would have read had they scored: :func:`gate_checks` after a failed input
    check, so that its JSON and JUnit keep the criterion, failed, rather than drop it)."""
    d = verdict_decision(v)
    if d.basis == "people":
        human = preferred_human_row(v)
        if human is not None:
            return human.metric
    names = [n for n in criteria_names(v) if n != COMBINED]
    if unscored:
        names += [r.metric for r in v.metrics if r.n == 0 and not r.metric.startswith("human:")]
    if not names:
        raise ValueError("nothing to gate on: no metric scored a pair and the judge was not run")
    policy = shipped_policy().policy
    # a signal of the combined test counts when it may also decide alone (the judge; a metric allowed alone); a
    # judge without a measured record (--judge llm, a re-fit checkpoint) is a diagnostic: the last resort
    measured = v.judge is not None and is_measured_judge(v.judge.signature)
    trusted = [n for n in names if (n != JUDGE or measured) and (
        policy.decides(n) or (n == JUDGE and policy.trusts(n)) or (n,) in policy.combine_allowed)]
    if trusted:
        return trusted[0]
    # none the verdict trusts: the diagnostic with the best measured record (SignalRecord.score, as the policy is
    # chosen), whatever order --metrics named them in; one without a record last, then by name
    shipped = shipped_policy()

    def worth(n: str) -> tuple:
        rec = shipped.record(n) if (n != JUDGE or measured) else None
        return (rec is None, -rec.score if rec else 0.0, n)
    return min(names, key=worth)


def default_margin(c: Criterion) -> float:
    """5 points of win rate for the judge; for the combined test (a sum of standardized differences, one per
    signal) a fifth for each signal it sums (a small standardized difference on every one); else a fifth of the
    baseline's standard deviation (2 significant digits); NaN when that is unknown or does not vary."""
    if c.is_judge:
        return JUDGE_MARGIN
    if is_combined(c.name):
        return SMALL_EFFECT * max(1, len(c.name.split(":", 1)[-1].split("+")))
    m = SMALL_EFFECT * c.baseline_sd
    if not math.isfinite(m) or m <= 0 or c.baseline_sd <= 1e-9 * max(1.0, c.baseline_scale):
        return math.nan  # a baseline that does not vary (rounding aside) sets no margin
    return float(f"{m:.2g}")


@dataclass
class GateCheck:
    """One criterion's decision: ``passed`` and the one line that says why."""

    criterion: Criterion
    require: str
    margin: float
    passed: bool
    reason: str

    @property
    def id(self) -> str:
        """'combined: not-worse', 'bleu: not-worse', 'judge: not significantly worse (a veto of the combined test)':
        the criterion as asked and its requirement, the same from run to run whichever signals the combined test
        used (a JUnit case's name; ``id`` in JSON)."""
        asked = COMBINED if is_combined(self.criterion.name) else self.criterion.name
        return f"{asked}: {self.require}"

    @property
    def kind(self) -> str:
        """What is checked, one word a pipeline can select on: 'combined', 'judge', 'human', 'metric', or the input
        check's name ('same inputs', 'missing replies', 'blank replies')."""
        name = self.criterion.name
        if name in (SAME_INPUTS, MISSING_REPLIES, BLANK_REPLIES):
            return name
        return ("combined" if is_combined(name) else "judge" if name == JUDGE else
                "human" if name.startswith("human:") else "metric")

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, **asdict(self), "criterion": asdict(self.criterion)}


def check_one_margin(names: Sequence[str], require: str, margin: float | None, flag: str = "--margin") -> None:
    """Refuse one non-inferiority ``margin`` for two or more criteria: each has its own units (the judge's
    win-rate points, a metric's own scale), so one number cannot serve them all; and a margin for the judge that
    no candidate could fail (:func:`check_judge_margin`)."""
    if require == "non-inferior" and margin is not None and list(set(names)) == [JUDGE]:
        check_judge_margin(margin, flag)
    n = len(set(names))
    if require == "non-inferior" and margin is not None and n > 1:
        raise ValueError(f"{flag}{'' if flag.endswith('=') else ' '}{margin:g} with {n} criteria: each criterion "
                         "has its own units (the judge's win-rate points, a metric's own scale), so one margin cannot "
                         f"serve them all; gate on one criterion per {flag.strip('= ')}, or leave it out for each "
                         "one's default")


def check_judge_margin(margin: float, flag: str = "--margin") -> None:
    """Refuse a non-inferiority margin of 0.5 or more for the judge: it passes when the candidate's win-rate
    interval lies above 0.5 - M, which a win rate (0 to 1) always does then, a candidate that loses every pair
    included (``--margin 5`` read as 5 points is 500)."""
    if margin >= 0.5:
        raise ValueError(f"{flag}{'' if flag.endswith('=') else ' '}{margin:g} for the judge: its margin is a share "
                         f"of win rate (0.05 = 5 points), and one of 0.5 or more passes any candidate, one that loses "
                         f"every pair included; the default is {JUDGE_MARGIN:g}")


def fewest_contexts(level: float) -> int:
    """The fewest contexts over which a test at ``level`` can reach p < 1 - level at all (6 at 0.95: the smallest
    randomization or sign-test p over k is 2/2^k, and a bootstrap needs ``MIN_RESAMPLED``)."""
    return max(MIN_RESAMPLED, fewest_differing(1 - level))


def check(c: Criterion, require: str = "not-worse", margin: float | None = None, veto: bool = False) -> GateCheck:
    """PASS or FAIL of criterion ``c`` under ``require`` (module docstring). Where too few contexts differ for any
    p below the threshold (:meth:`Criterion.units`), it fails, saying so: no candidate could fail there, so a pass
    would say nothing; not when the candidate's replies are the baseline's (``c.unchanged``), nor for a ``veto``,
    which only ever blocks on a significant difference."""
    if require not in REQUIREMENTS:
        raise ValueError(f"--require {require}: choose one of {', '.join(REQUIREMENTS)}")
    defaulted = margin is None
    margin = default_margin(c) if margin is None else margin
    if require == "non-inferior" and not (math.isfinite(margin) and margin >= 0):
        why = (f"; none by default: the baseline's {c.label} does not vary, or its spread is unknown"
               if defaulted else "")
        raise ValueError(f"--require non-inferior needs a margin >= 0 in {c.label}'s units (--margin M; margin= "
                         f"in Python){why}")
    if require == "non-inferior" and c.is_judge:
        check_judge_margin(margin)
    on = f"on {c.label}"
    ev = c.evidence()
    why_margin = f"; margin {c.amount(margin, signed=False)}" if require == "non-inferior" else ""
    if require == "not-worse":
        passed = c.better != "baseline"
        head = ("candidate is worse" if not passed else "candidate is better" if c.better == "candidate"
                else "no significant difference")
    elif require == "better":
        passed = c.better == "candidate"
        head = "candidate is better" if passed else (
            "candidate is worse" if c.better == "baseline" else "candidate is not significantly better")
    else:
        passed = c.low > -margin
        if passed:
            head = "candidate is non-inferior"
        elif c.effect > -margin and c.better != "baseline":
            head = ("non-inferiority not shown " + (
                f"(the interval reaches {c.amount(c.low)}, below {c.amount(-margin)}: more contexts would narrow it)"
                if math.isfinite(c.low) else "(too few contexts: they give no interval)"))
        else:
            head = ("candidate is worse by more than the margin" if c.high < -margin else
                    "candidate is worse" if c.better == "baseline" else "candidate may be worse")
    too_few = ""
    if c.is_judge and c.unread and c.unread >= c.pairs:  # nothing read is nothing shown: never a pass
        passed, head = False, "nothing to gate on"
    elif (not veto and not c.unchanged and c.better is None and c.n_contexts and passed
          and not can_be_significant(c.n_contexts, 1 - c.level, c.differing)):  # no candidate could fail here
        changed = c.units() < c.n_contexts and c.n_contexts >= MIN_RESAMPLED
        passed, k = False, c.units() if changed else c.n_contexts
        head = f"too few {'differing pairs' if changed else 'contexts'} to show any difference"
        needed = fewest_differing(1 - c.level) if changed else fewest_contexts(c.level)
        who = "the judge" if c.is_judge else c.label
        what = ((f"the judge's sign test can move {k} of the {c.n_contexts} contexts (those where it decided "
                 "pairs that do not cancel)" if c.is_judge else
                 f"{who} differs in {k or 'none'} of the {c.n_contexts} contexts") if changed else f"{k} contexts")
        too_few = (f"{what}: " + (
            f"fewer than {MIN_RESAMPLED} give no interval or p" if k < MIN_RESAMPLED and not changed else
            f"the smallest p there is 2/2^{k} = {2 / 2 ** k:.3g} >= {alpha_label(c.level)}" if k else
            "no p can fall below 1")
            + f", so no candidate could fail and a pass would say nothing; gate on {needed} or more"
            + (" that differ, or review the changed replies by hand" if changed else ""))
    line = f"{'PASS' if passed else 'FAIL'}: {head} {on}: {ev}{why_margin}"
    if too_few:
        line += f" ({too_few})"
    if c.better is None and c.unseen() and not (c.unread and c.unread >= c.pairs) and not too_few:
        line += f" ({c.unseen()})"
    if c.better is None and require != "non-inferior" and c.p_name and not too_few:  # else it reads as contradicting itself
        decides = undecided_interval_words(c.low, c.high, c.p, c.p_name, c.level, c.interval_of)
        line += f" ({decides})" if decides else ""
    if c.diagnostic:
        line += f" ({c.diagnostic})"
    # a margin only non-inferiority reads: none for the others (JSON null), whatever the default would be
    return GateCheck(c, require, margin if require == "non-inferior" else math.nan, passed, line)


BLANK_REPLIES = "blank replies"  # the blank-replies check's name, as a criterion's
BLANK_REQUIREMENT = "no more than the baseline's"  # its own requirement, whatever --require says


def blank_replies_check(blank_baseline: int, blank_candidate: int, n_pairs: int,
                        level: float = 0.95) -> GateCheck | None:
    """The candidate's blank replies against the baseline's, over the ``n_pairs`` compared: FAIL when the
    candidate's reply is blank in more pairs than the baseline's, under every requirement (a blank reply answers
    nothing, and every metric leaves its pair out of the n it tests, so a candidate that stops answering would
    otherwise be judged on the pairs it still answers); PASS when it has blank replies but no more than the
    baseline's; None when it has none. One blank reply more than the baseline's is enough to fail: a CI job that
    accepts some sets its candidate's blank replies aside itself. ``effect``: the share of pairs, the baseline's
    blank replies minus the candidate's; its requirement is :data:`BLANK_REQUIREMENT`, not the criteria's."""
    if not blank_candidate:
        return None
    effect = (blank_baseline - blank_candidate) / max(n_pairs, 1)
    worse = blank_candidate > blank_baseline
    c = Criterion(BLANK_REPLIES, n_pairs, n_pairs, effect, effect, effect, "baseline" if worse else None, math.nan,
                  level)
    said = (f"the candidate's reply is blank in {blank_candidate} of {n_pairs} pairs, the baseline's in "
            f"{blank_baseline}")
    reason = (f"FAIL: candidate answers less: {said} (a blank reply answers nothing; every metric leaves its pair "
              "out)" if worse else f"PASS: no more blank replies than the baseline: {said}")
    return GateCheck(c, BLANK_REQUIREMENT, math.nan, not worse, reason)


SAME_INPUTS = "same inputs"  # the check that the pairs answer the same contexts
SAME_INPUTS_REQUIREMENT = "every pair on one context"


def file_order_note(comp: Comparison, choosers: str = "--system-a and --system-b") -> str:
    """What the gate says when one file of two systems was read without naming them: which is the baseline and
    which the candidate (the file's order), since that decides PASS or FAIL; ``choosers``: what names them."""
    return (f"one file of two systems: the baseline is {comp.system_a}, the candidate {comp.system_b} (in the "
            f"file's order; {choosers} choose)")


def unchanged_candidate_note(v: Verdict, require: str = "not-worse", passed: bool = True,
                             better: str = "--require better") -> str | None:
    """What the gate says beside its checks when the candidate gives the baseline's reply in every pair (a
    candidate that changed nothing, or the same file named twice): under ``require`` 'not-worse' or
    'non-inferior' it passes, which a pipeline that wrote its candidate to the wrong place would take for a pass;
    under 'better' it fails, and why is said; ``passed`` False (another check failed: rows without a reply, say):
    only that the compared pairs are unchanged. None when some reply differs. ``better``: the setting that asks
    for 'better', as the caller's surface spells it."""
    if not v.n_pairs or v.identical_pairs != v.n_pairs:
        return None
    if not passed and require != "better":
        return (f"the candidate gives the baseline's reply in all {v.n_pairs} pairs compared: nothing changed in "
                "them")
    outcome = ("so it cannot be better" if require == "better" else
               f"so it passes as {require.replace('-', ' ')} ({better} fails it)")
    return (f"the candidate gives the baseline's reply in all {v.n_pairs} pairs (the same file twice?): nothing "
            f"changed, {outcome}")


def same_inputs_check(mismatched: int, n_pairs: int, level: float = 0.95) -> GateCheck | None:
    """FAIL when ``mismatched`` of the ``n_pairs`` compared were paired by id but have different contexts (the two
    replies answer different inputs, so no criterion read on them says which system is better), under every
    requirement; None when there are none. ``effect``: minus the share of such pairs."""
    if not mismatched:
        return None
    share = mismatched / max(n_pairs, 1)
    c = Criterion(SAME_INPUTS, n_pairs, n_pairs, -share, -share, -share, "baseline", math.nan, level)
    reason = (f"FAIL: not the same inputs: {mismatched_pairs_words(mismatched, n_pairs)}, so their replies answer "
              f"different inputs; {ID_MISMATCH_ADVICE}")
    return GateCheck(c, SAME_INPUTS_REQUIREMENT, math.nan, False, reason)


MISSING_REPLIES = "missing replies"  # the missing-replies check's name
VETO_REQUIREMENT = "not significantly worse (a veto of the combined test)"
"""The requirement of a default criterion that may veto the verdict's combined test (the judge), whatever
``--require`` says: it fails a candidate it finds significantly worse, as the verdict would then abstain; ``--require``
and ``--margin`` are the combined test's."""


def missing_replies_check(missing_baseline: int, missing_candidate: int, n_pairs: int,
                          level: float = 0.95) -> GateCheck | None:
    """The rows each side has no partner for: ``missing_candidate`` of the baseline's rows have no candidate reply
    (contexts the candidate does not answer), ``missing_baseline`` of the candidate's rows no baseline reply. FAIL
    when the candidate leaves more of them out than the baseline, under every requirement (those rows are not
    compared, so a candidate that drops inputs would be judged on the ones it kept, as
    :func:`blank_replies_check` says of blank replies); PASS when it leaves some out but no more than the
    baseline; None when it leaves none out. Its requirement is :data:`BLANK_REQUIREMENT`."""
    if not missing_candidate:
        return None
    worse = missing_candidate > missing_baseline
    effect = (missing_baseline - missing_candidate) / max(n_pairs + missing_candidate, 1)
    c = Criterion(MISSING_REPLIES, n_pairs, n_pairs, effect, effect, effect, "baseline" if worse else None, math.nan,
                  level)
    said = (f"{missing_candidate} of the baseline's rows have no candidate reply, {missing_baseline} of the "
            f"candidate's no baseline reply ({n_pairs} pairs compared)")
    reason = (f"FAIL: candidate answers fewer inputs: {said}; rows without a partner are not compared"
              if worse else f"PASS: no more unanswered inputs than the baseline: {said}")
    return GateCheck(c, BLANK_REQUIREMENT, math.nan, not worse, reason)


def gate_verdict(v: Verdict, by: Sequence[str] | str | None = None, require: str = "not-worse",
                 margin: float | None = None, baseline_values: dict[str, Sequence[float]] | None = None,
                 n_contexts: int | None = None, blank: tuple[int, int] | None = None,
                 missing: tuple[int, int] | None = None) -> "GateResult":
    """The gate on a verdict already made: a :class:`GateResult` (truthy when every check passes), as
    ``core.gate`` gives. :func:`gate_checks` says what it checks."""
    checks = gate_checks(v, by, require, margin, baseline_values, n_contexts, blank, missing)
    return GateResult(passed(checks), checks, v)


def gate_checks(v: Verdict, by: Sequence[str] | str | None = None, require: str = "not-worse",
                margin: float | None = None, baseline_values: dict[str, Sequence[float]] | None = None,
                n_contexts: int | None = None, blank: tuple[int, int] | None = None,
                missing: tuple[int, int] | None = None) -> list[GateCheck]:
    """One :class:`GateCheck` per criterion of ``by`` (default: :func:`default_criteria`, whose vetoes of the
    combined test are checked as :data:`VETO_REQUIREMENT` says, not under ``require``); ``baseline_values``:
    {criterion: the baseline's per-row values} for the default margins. ``missing``: (the candidate's rows
    without a baseline reply, the baseline's rows without a candidate reply): :func:`missing_replies_check` comes
    first; ``blank``: (the baseline's, the candidate's) blank replies among the compared pairs:
    :func:`blank_replies_check` next; the verdict's pairs aligned by id whose contexts differ
    (:func:`same_inputs_check`) before both. ``blank`` left out is the verdict's own count
    (``v.blank_replies``), so a verdict made from replies in memory is gated on its blank replies as a file's is.
    When one fails, a criterion that has no pair left to read (every candidate reply blank) fails with that
    reason rather than stopping the gate: the first FAIL stands."""
    if blank is None:
        blank = (v.blank_replies.get("A", 0), v.blank_replies.get("B", 0))
    firsts = [same_inputs_check(len(v.context_mismatches), v.n_pairs, v.level),
              missing_replies_check(*missing, v.n_pairs, v.level) if missing else None,
              blank_replies_check(*blank, v.n_pairs, v.level) if blank else None]
    checks = [c for c in firsts if c is not None]
    failed = any(not c.passed for c in checks)
    if by:
        check_one_margin([by] if isinstance(by, str) else by, require, margin)
    vetoes: list[str] = []
    intended = None if by or not failed else unscored_default_criteria(v)
    try:
        if by:
            names = [by] if isinstance(by, str) else list(by)
            if any(is_combined(n) for n in names):  # the combined test named: with its vetoes, as by default
                vetoes = [s for s in combined_vetoes(v) if s not in names]
                at = next(i for i, n in enumerate(names) if is_combined(n)) + 1
                names[at:at] = vetoes
        elif intended:  # the combined test had no pair to read: it fails beside the failed check, its vetoes checked
            names, vetoes = intended, intended[1:]
        else:
            names = default_criteria(v)
            vetoes = names[1:] if is_combined(names[0]) else []
    except ValueError:
        if not failed:
            raise
        try:  # nothing scored a pair (every candidate reply blank, say): the criterion a run that scored would read
            names = [default_criterion(v, unscored=True)]
        except ValueError:  # no metric asked for and no judge: the failed input check is the whole gate
            return checks
    for name in names:
        try:
            c = criterion(v, name, (baseline_values or {}).get(name), n_contexts)
            # the candidate's replies are the baseline's: nothing changed, unless people rated the same replies
            # differently (two panels), which their criterion still reads
            c = replace(c, unchanged=0 < v.n_pairs <= v.identical_pairs and (not name.startswith("human:")
                                                                             or not c.differing))
        except ValueError as e:
            if failed and (is_combined(name) or name != JUDGE and any(r.metric == name and r.n == 0
                                                                      for r in v.metrics)):
                # it scored no pair (every pair has a blank reply, or it needs references): a failed check of its
                # own, so the JSON and JUnit keep the criterion asked for; the other FAIL stands
                nothing = Criterion(name, 0, 0, math.nan, math.nan, math.nan, None, math.nan, v.level)
                why = str(e).split(": ", 1)[-1]
                checks.append(GateCheck(nothing, require, math.nan, False,
                                        f"FAIL: nothing to gate on ({nothing.label}): {why}"))
                continue
            raise
        if name in vetoes:  # a veto of the combined test: it fails the candidate it finds significantly worse
            checks.append(replace(check(c, "not-worse", veto=True), require=VETO_REQUIREMENT, margin=math.nan))
        elif not by and stands_in(v, name):
            done = check(c, require, margin)
            checks.append(replace(done, reason=f"{done.reason} ({stands_in(v, name)})"))
        else:
            checks.append(check(c, require, margin))
    return checks


def stands_in(v: Verdict, name: str) -> str:
    """Why the default gate reads ``name``, one signal the verdict never lets decide alone, where the verdict
    itself decides on none ('the verdict's combined test could not run here, so the gate stands on bleu alone,
    which the verdict treats as a diagnostic'); '' for any other criterion."""
    if is_combined(name) or name.startswith("human:") or shipped_policy().policy.decides(name):
        return ""
    measured = v.judge is not None and is_measured_judge(v.judge.signature)
    if name == JUDGE and measured:
        return ""
    who = "the judge" if name == JUDGE else name
    return (f"the verdict's combined test could not run here, so the gate stands on {who} alone, which the verdict "
            "treats as a diagnostic")


def passed(checks: Sequence[GateCheck]) -> bool:
    return all(c.passed for c in checks)


@dataclass
class GateResult:
    """The gate's decision (``passed``: every check passed; truthy when it did, so ``assert core.gate(...)`` gates
    a test), its :class:`GateCheck` s and the verdict they read."""

    passed: bool
    checks: list[GateCheck]
    verdict: Verdict

    def __bool__(self) -> bool:
        return self.passed

    def to_dict(self) -> dict[str, Any]:
        """What ``dialeval gate --format json`` writes, as plain JSON data (``core.report.clean_json``: a value
        that is not a number, such as the margin of a check that has none, is None)."""
        return clean_json({"passed": self.passed, "checks": [c.to_dict() for c in self.checks],
                           "verdict": self.verdict.to_dict()})

    def render(self, fmt: str = "text") -> str:
        """What ``dialeval gate --format FMT`` prints: the decision lines, then the verdict (text, markdown), or
        :meth:`to_dict` as JSON (json)."""
        if fmt == "json":
            return to_json(self.to_dict())
        if fmt not in ("text", "markdown"):
            raise ValueError(f"format {fmt!r}: choose text, markdown or json")
        signed = any(c.kind in ("metric", "human", "combined") and math.isfinite(c.criterion.effect)
                     for c in self.checks)
        sides = ("\n(the numbers above are the candidate's improvement on the baseline: B - A where higher is "
                 "better; the verdict's table below gives A - B)" if signed else "")
        return render_checks(self.checks, fmt) + sides + "\n\n" + render_verdict(self.verdict, fmt)

    def __str__(self) -> str:  # print(result): the text ``dialeval gate`` prints
        return self.render()

    def __repr__(self) -> str:  # a notebook cell's echo: the decision, not every field
        failed = sum(not c.passed for c in self.checks)
        return (f"<GateResult {'PASS' if self.passed else 'FAIL'}: {len(self.checks)} check(s), {failed} failed; "
                "print() for the lines, .to_dict() for the data>")


def gate_comparison(comp: Comparison, baseline_values: dict[str, Sequence[float]], v: Verdict,
                    by: Sequence[str] | str | None = None, require: str = "not-worse",
                    margin: float | None = None) -> GateResult:
    """:func:`gate_verdict` on the verdict of ``comp`` (baseline A, candidate B): ``baseline_values`` {metric: the
    baseline's per-row scores} for the default margins (people's ratings are read from the rows); the missing
    and blank replies as the comparison and the verdict count them."""
    baseline = dict(baseline_values)
    for r in v.rows("human"):
        dim = r.metric.split(":", 1)[1]
        baseline[r.metric] = [ex.scores.get(dim, math.nan) for ex in comp.a]
    blank = (v.blank_replies["A"], v.blank_replies["B"])
    missing = (len(comp.unmatched_b), len(comp.unmatched_a))  # rows of each side the other does not answer
    return gate_verdict(v, by, require, margin, baseline, len(set(context_groups(comp.a))), blank, missing)


def render_checks(checks: Sequence[GateCheck], fmt: str = "text") -> str:
    """The decision lines (text), a pull-request comment's head (markdown)."""
    if fmt == "markdown":
        mark = {True: "✅", False: "❌"}
        return "\n".join(f"{mark[c.passed]} **{c.reason.split(':', 1)[0]}**:{c.reason.split(':', 1)[1]}"
                         for c in checks)
    return "\n".join(c.reason for c in checks)


# characters XML 1.0 does not allow in a document (C0 controls but tab and line ends, lone surrogates, U+FFFE/F)
XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_legal(text: str) -> str:
    """``text`` with each character XML 1.0 does not allow written as ``#xHH`` (as pytest's JUnit report writes
    them): a system named with a terminal colour code (ESC) made the gate's report unreadable to every CI."""
    return XML_ILLEGAL.sub(lambda m: f"#x{ord(m.group()):02X}", text)


def junit_xml(checks: Sequence[GateCheck], verdict_sentence: str = "") -> str:
    """A JUnit XML report: one test case per criterion (a failure element where it failed). A case's name is the
    criterion as asked (``combined: not-worse``, ``bleu: not-worse``), the same from run to run, so that a CI's
    test history follows it; which signals the combined test used, which can change with the run, is in the
    case's ``system-out``. Every text is well-formed XML whatever the input's names hold (:func:`xml_legal`)."""
    failures = sum(not c.passed for c in checks)
    cases = []
    for c in checks:
        name = quoteattr(xml_legal(c.id))
        body = ("" if c.passed else
                f"<failure message={quoteattr(xml_legal(c.reason))}>{escape(xml_legal(verdict_sentence))}</failure>")
        if is_combined(c.criterion.name) and c.criterion.name != COMBINED:
            body += f"<system-out>{escape(xml_legal(c.criterion.label))}</system-out>"
        cases.append(f'  <testcase classname="dialeval.gate" name={name} time="0">{body}</testcase>')
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            f'<testsuite name="dialeval gate" tests="{len(checks)}" failures="{failures}" errors="0">\n'
            + "\n".join(cases) + "\n</testsuite>\n")
