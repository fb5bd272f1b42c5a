"""The one verdict: how system A compares with system B, per metric, per human dimension and by the judge.

Every surface (``dialeval compare`` and ``judge`` in every format, the dashboard, the report) renders the
:class:`Verdict` built here, so the same two files give the same numbers wherever they are asked.

Rules, fixed here and nowhere else:

- **Resampling unit: the context.** Pairs that share a context (whitespace and case ignored) are resampled
  together. Intervals are full-size percentile bootstrap intervals (``N_BOOT`` = 2,000 resamples, seed 13,
  95 %); the p-value of a metric difference is approximate randomization (``N_PERM`` = 2,000), flipping
  whole contexts (``core.stats.paired_comparison``).
- **A metric's winner** is named only when the randomization p-value is below 0.05 *and* the interval of
  A - B excludes 0; a metric with ``higher_is_better = False`` wins with the lower mean.
- **Ties.** Metric: |a - b| <= 1e-9 x max(1, |a|, |b|). Judge: |P(A) - 0.5| < the judge's tie margin (0.05,
  stored in its checkpoint). Human: the two mean ratings differ by less than a quarter of the rating scale
  (:func:`human_tie_margin`; 1.0 on 1-5; the scale is the known one unless the ratings fall outside it), in
  the human rows of the verdict and in the judge's agreement alike. A tie is never a win: **win rate = wins /
  (wins + losses)** with its Wilson interval and the exact sign test on the same counts (when pairs share a
  context, the sign test on each context's net outcome and an interval that resamples contexts:
  ``stats.clustered_win_stats``); ``win_rate_ties_split`` = (wins + ties / 2) / n is reported beside it for
  readers used to counting ties as half.
- **The judge's winner** is named when that sign test on its wins and losses gives p < 0.05.
- **Agreement with people**: over the pairs where people clearly preferred one reply (their ratings differ
  by at least the human tie margin, or an explicit A/B vote), the share where the judge's P(A) points the
  same way (P(A) = 0.5 counts half). Also reported: agreement on the pairs the judge did not call a tie.
- **Length-controlled judge win rate**: the judge's calls (ties left out) regressed on the replies' length
  difference in words, reported at equal length (``core.stats.length_controlled_win_rate``, AlpacaEval's GLM).
- **What drives a difference** (:class:`Drivers`): per metric, the pairs whose A - B pushes the mean furthest
  in its direction, and whether the metric's winner stays the same with the top 5 % of them left out.
- **The combined evidence** (``Verdict.combined``): when the verdict policy combines signals, their per-pair
  differences, each divided by its standard deviation over the pairs, summed
  (``core.verdict_policy.combined_values``), tested as a metric is (against 0): its winner is named on the
  same rule.
- **The one-line verdict** (:func:`verdict_sentence`): the direction in words with both systems named in full,
  from people's ratings when the input has them, else the signals the verdict policy trusts.
"""
from __future__ import annotations

import math
from collections import Counter
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from core import stats
from core.data import (ID_MISMATCH_ADVICE, Comparison, alignment_words, dimensions, look_alike,
                       mismatched_pairs_words)
from core.engine import input_notes, is_blank, is_reference_copy, reads_references
from core.formatting import (alpha_label, clean_json, counted, fmt_amount, fmt_list, fmt_p, fmt_percent, fmt_percent_bounds,
                             fmt_points)
from core.scoring import JUDGES, metric_class, same_reply
from core.settings import SEED
from core.human_preferences import (MARGIN_SHARE, METRIC_TIE_TOL, PREFERENCE_DIMENSIONS, SCALES,  # noqa: F401
                                    context_groups, human_preference, human_preferences, human_tie_margin, pair_winner,
                                    preference_dimension, scale_of, scales_differ, side_accuracy)
from core.judge_summary import (HumanAgreement, JudgeSummary, judge_length_controlled,  # noqa: F401 (re-exported)
                                reply_length, summarize_judge)
from core.stats import LEVEL, MIN_RESAMPLED, N_BOOT, N_PERM, can_be_significant
from core.verdict_policy import (JUDGE, Decision, SignalRecord, VerdictPolicy, combined_name, combined_values,
                                 decide, deciding_winners, is_measured_judge, judge_name, shipped_policy, silent_sides)

if TYPE_CHECKING:
    from core.engine import ComparisonScores


NOT_SCORED = "not scored: no pair has both values"  # a metric row with n = 0 (e.g. BLEU without references)


# ------------------------------------------------------------------------------------------------
# the verdict's parts


@dataclass
class MetricComparison:
    """A vs B on one metric (``kind`` "metric") or one human dimension (``kind`` "human") over the pairs."""

    metric: str
    kind: str
    n: int
    n_dropped: int
    n_contexts: int
    mean_a: float
    mean_a_low: float
    mean_a_high: float
    mean_b: float
    mean_b_low: float
    mean_b_high: float
    diff: float  # mean A - mean B
    low: float
    high: float
    p_randomization: float
    p_bootstrap: float
    wins: int  # A better on the pair (per higher_is_better)
    ties: int
    losses: int
    win_rate: float  # wins / (wins + losses)
    win_low: float
    win_high: float
    win_rate_ties_split: float
    sign_p: float
    higher_is_better: bool
    winner: str | None  # "A" | "B" | None (no significant difference)
    signature: str = ""
    detectable: float = math.nan  # the smallest difference these pairs detect with 80 % power (stats)
    tie_margin: float | None = None  # a human row's: mean ratings closer than this are a tie in wins/ties/losses
    contexts_differing: int | None = None  # contexts (pairs, where none repeats) whose A - B is not 0

    def better(self, system_a: str, system_b: str) -> str:
        if self.n == 0:
            return NOT_SCORED
        return {"A": system_a, "B": system_b}.get(self.winner or "", "no significant difference")

    def verdict(self, system_a: str, system_b: str) -> str:
        if self.n == 0:
            return NOT_SCORED
        if self.winner is None:
            return stats.NO_DIFF
        return f"A ({system_a}) better" if self.winner == "A" else f"B ({system_b}) better"


@dataclass
class Drivers:
    """What drives one metric's difference: the pairs whose A - B pushes the mean furthest in its direction
    (``top``: pair index, id, A - B and its share of the summed A - B), and the comparison redone without the
    ``n_left_out`` = ceil(5 % of the pairs) most pushing pairs (at most the pairs that push that way; ``n_pairs``
    scored pairs in all): its difference, interval, p and winner; ``survives`` when
    that winner is the metric's winner (a verdict carried by a handful of pairs does not survive). A row with no
    winner whose direction the verdict leans on (``leaned``: the combined test's p below the policy's
    ``combine_lean``, ``lean``) survives when, without those pairs, its p is still below ``lean`` the same way."""

    metric: str
    direction: str  # "A" or "B": the side the mean difference (or the winner) points to
    top: list[dict[str, Any]]
    n_left_out: int
    n_pairs: int  # pairs with a value on both sides (the n the left-out share is of)
    diff_without: float
    low_without: float
    high_without: float
    p_without: float
    winner: str | None
    winner_without: str | None
    survives: bool
    testable: bool = True  # whether the pairs left can give a winner at all (``stats.can_be_significant``)
    leaned: bool = False  # no winner, but its direction is the verdict's "probably" (p below ``lean``)
    lean: float = math.nan  # the p below which the verdict leans on this row's direction (NaN: it never does)

    @property
    def survival(self) -> str:
        """Whether the verdict survives, in words for every table: 'yes', 'NO', '-' (no winner and no lean to
        survive) or 'cannot tell' (too few contexts left for any winner: 5 give no p below 0.05)."""
        if self.leaned:
            return "yes" if self.survives else "NO"
        if self.winner is None:
            return "-"
        if not self.testable:
            return "cannot tell: too few contexts left"
        return "yes" if self.survives else "NO"


@dataclass
class Verdict:
    """Everything the product says about A vs B: per-metric and per-human-dimension comparisons (``metrics``;
    :meth:`rows` by kind), the verdict's combined test (``combined``, of ``combined_signals``) and the judge's
    summary (``judge``), with the settings that produced them, and what the input held (``blank_replies``,
    ``left_out``, ``unmatched``, ``context_mismatches``, ``reference_copies``, ``input_notes``). In words:
    :attr:`sentence` (the one-line verdict), :attr:`glance` (it at a glance), ``str(verdict)`` (both, as
    ``dialeval compare`` opens); as data: :meth:`to_dict`."""

    system_a: str
    system_b: str
    n_pairs: int
    aligned_by: str
    unmatched: list[str]
    n_boot: int
    n_perm: int
    level: float
    seed: int
    metrics: list[MetricComparison] = field(default_factory=list)
    judge: JudgeSummary | None = None
    resampled: str = "contexts"
    identical_pairs: int = 0  # pairs where A and B gave the same reply (all of them: a file compared with itself)
    drivers: list[Drivers] = field(default_factory=list)
    n_unmatched: int = 0  # rows of A or B without a partner (listed in ``unmatched``)
    unmatched_by_side: dict[str, int] = field(default_factory=dict)  # "A"/"B" -> that side's rows without a partner
    left_out: list[dict[str, Any]] = field(default_factory=list)  # per row with n_dropped: which pairs and why
    context_mismatches: list[str] = field(default_factory=list)  # pairs aligned by id whose contexts differ
    reference_copies: dict[str, int] = field(default_factory=dict)  # per side: pairs whose reply copies its reference
    alignment_note: str = ""  # why by context though ids are shared; contexts repeated on a side (``core.data.align``)
    one_sided_ratings: dict[str, str] = field(default_factory=dict)  # dimension -> "A"/"B" (only side rated), ""
    shared_references: dict[str, int] = field(default_factory=dict)  # per side: rows scored with the other's references
    input_notes: dict[str, str] = field(default_factory=dict)  # kind -> what the input's rows do to the scores
    combined: MetricComparison | None = None  # the combined test of ``combined_signals`` (module docstring)
    combined_signals: list[str] = field(default_factory=list)
    blank_replies: dict[str, int] = field(default_factory=dict)  # per side ("A", "B"): pairs whose reply is blank
    rating_scales: dict[str, str] = field(default_factory=dict)  # dimensions rated on two scales: not compared

    def rows(self, kind: str | None = None) -> list[MetricComparison]:
        return [r for r in self.metrics if kind is None or r.kind == kind]

    def table_rows(self) -> list[MetricComparison]:
        """The rows a verdict table shows: every metric and human row, then the combined test's row (named
        'combined: bleu+judge+mme') when there is one."""
        if self.combined is None:
            return list(self.metrics)
        return [*self.metrics, replace(self.combined, metric="combined: " + "+".join(self.combined_signals))]

    @property
    def sentence(self) -> str:
        """The one-line verdict (:func:`verdict_sentence`)."""
        return verdict_sentence(self)

    @property
    def glance(self) -> dict[str, str]:
        """The verdict at a glance (:func:`verdict_glance`) as {"verdict", "evidence", "track_record"}: the JSON's
        ``glance``; {} when there is nothing to compare."""
        return {k.lower().replace(" ", "_"): text for k, text in verdict_glance(self)}

    def __str__(self) -> str:
        """``print(verdict)``: the one-line verdict and its glance's evidence and track record, the lines
        ``dialeval compare`` prints first (:func:`verdict_with_glance`); the whole report is
        ``core.report.render_verdict(verdict, fmt)``."""
        return verdict_with_glance(self)

    def __repr__(self) -> str:  # a notebook cell's echo: the one-line verdict, not every field
        sentence = verdict_sentence(self)
        short = sentence if len(sentence) <= 240 else sentence[:239] + "…"
        return (f"<Verdict {self.system_a!r} vs {self.system_b!r}, {self.n_pairs} pairs: {short} (print() for the "
                "evidence, .to_dict() for the data)>")

    def to_dict(self) -> dict[str, Any]:
        """The verdict as plain data; each metric row adds its verdict in words and, for metrics, ``p_holm``
        (Holm over the metrics compared), ``holm_winner`` (its winner if it survives that correction),
        ``decides`` (whether the verdict policy gives it a say here: it decides or is part of the combined test
        that was run, ``core.verdict_policy``) and
        ``deciding_winner`` (its winner if it decides and survives Holm over the deciding metrics: what the
        one-line verdict reads), so a program tells which rows' winners it may quote. ``decision``: the side
        the one-line verdict names and on what basis; ``glance``: :func:`verdict_glance` as {"verdict",
        "evidence", "track_record"} ({} when there is nothing to compare). Plain JSON data, as ``--format json``
        writes it (``core.formatting.clean_json``: a value that is not a number is None)."""
        d = asdict(self)
        adjusted, passed = holm_adjusted(self), holm_winners(self)
        policy = shipped_policy().policy
        deciding = deciding_winners(policy, [(m.metric, m.winner, m.p_randomization) for m in self.metrics
                                             if m.kind == "metric" and m.n > 0], self.level)
        for r, m in zip(d["metrics"], self.metrics):
            r["verdict"] = m.verdict(self.system_a, self.system_b)
            if m.kind == "metric":
                r["p_holm"] = adjusted.get(m.metric, math.nan)
                r["holm_winner"] = m.winner if m.metric in passed else None
                r["decides"] = policy.decides(m.metric) or m.metric in self.combined_signals
                r["deciding_winner"] = deciding.get(m.metric)
        decision = verdict_decision(self, policy)
        d["decision"] = {"side": decision.side, "basis": decision.basis, "named": list(decision.named),
                         "against": list(decision.against),
                         "judge_decides": (policy.decides(JUDGE) and self.judge is not None
                                           and is_measured_judge(self.judge.signature))
                                          or JUDGE in self.combined_signals}
        if self.judge is not None and d.get("judge") and d["judge"].get("length_controlled") is not None:
            d["judge"]["length_controlled"]["blank_left_out"] = self.judge.blank_left_out  # pairs it leaves out
        d["notes"] = verdict_notes(self)
        d["sentence"] = self.sentence
        d["glance"] = self.glance
        return clean_json(d)


# ------------------------------------------------------------------------------------------------
# building it


def canonical_order(a: Sequence[float], b: Sequence[float], groups: Sequence) -> np.ndarray:
    """Indices that sort the pairs by their context group (as text), then A's and B's values (NaN last): the
    same pairs in any input order come out in one order."""
    fa, fb = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if not len(fa) == len(fb) == len(groups):
        raise ValueError(f"{len(fa)} values of A, {len(fb)} of B and {len(groups)} groups: one each per pair")
    return stats.canonical_rows(groups, fa, fb)


def compare_values(name: str, kind: str, a: Sequence[float], b: Sequence[float], groups: Sequence, *,
                   higher_is_better: bool = True, signature: str = "", n_boot: int = N_BOOT, n_perm: int = N_PERM,
                   level: float = LEVEL, seed: int = SEED, tie_margin: float | None = None) -> MetricComparison:
    """One row of the verdict from paired values ``a[i]``, ``b[i]`` (NaN pairs dropped, counted). Ties: the
    one metric tie rule (:func:`pair_winner`), or for human ratings ``tie_margin`` (:func:`human_tie_margin`),
    the rule the judge's agreement with people uses. The pairs are put in one canonical order first (by
    context, then values), so the resamples, and every interval and p-value, do not depend on the order of
    the input's rows."""
    order = canonical_order(a, b, groups)
    a = np.asarray(a, dtype=np.float64)[order]
    b = np.asarray(b, dtype=np.float64)[order]
    groups = [groups[i] for i in order]
    pr = stats.paired_comparison(a, b, groups=groups, n_boot=n_boot, n_perm=n_perm, seed=seed,
                                 higher_is_better=higher_is_better, level=level, tie_tol=METRIC_TIE_TOL,
                                 tie_margin=tie_margin)
    keep = np.isfinite(a) & np.isfinite(b)
    kept_groups = [g for g, k in zip(groups, keep) if k]
    ma, la, ua = stats.mean_ci(a[keep], level, n_boot, seed, kept_groups)
    mb, lb, ub = stats.mean_ci(b[keep], level, n_boot, seed, kept_groups)
    winner = {"A better": "A", "B better": "B"}.get(pr.verdict)
    return MetricComparison(name, kind, pr.n, pr.n_dropped, len(set(kept_groups)), ma, la, ua, mb, lb, ub,
                            pr.diff, pr.low, pr.high, pr.p_randomization, pr.p_bootstrap, pr.wins, pr.ties,
                            pr.losses, pr.win_rate, pr.win_low, pr.win_high, pr.win_rate_ties_split, pr.sign_p,
                            higher_is_better, winner, signature,
                            # where no p could fall below 1 - level, no difference is detectable: no statement
                            stats.detectable_difference(pr.low, pr.high, level)
                            if stats.can_be_significant(len(set(kept_groups)), 1 - level, pr.n_differing)
                            else math.nan, tie_margin, pr.n_differing)


def compare_scores(cs: "ComparisonScores", human: bool = True, n_boot: int = N_BOOT, n_perm: int = N_PERM,
                   level: float = LEVEL, seed: int = SEED) -> list[MetricComparison]:
    """One row per metric of ``cs`` and (``human``) per human dimension both systems carry."""
    comp = cs.comparison
    groups = context_groups(comp.a)
    rows = []
    for m in cs.metrics:
        rows.append(compare_values(m, "metric", cs.a(m), cs.b(m), groups,
                                   higher_is_better=metric_class(m).higher_is_better,
                                   signature=str(cs.table.results[m].signature),
                                   n_boot=n_boot, n_perm=n_perm, level=level, seed=seed))
    return rows + (compare_ratings(comp, n_boot, n_perm, level, seed) if human else [])


def one_sided_ratings(comp: Comparison) -> dict[str, str]:
    """{dimension: "A", "B" or "" (both, never on one pair)} for the human dimensions no pair is rated on on both
    sides: people's ratings that :func:`compare_ratings` cannot compare (a dimension named ``fluency`` in one
    file and ``Fluency`` in the other is two such dimensions)."""
    out = {}
    for dim in dimensions(comp.examples()):
        a, b = (np.array([math.isfinite(ex.scores.get(dim, math.nan)) for ex in side]) for side in (comp.a, comp.b))
        if not (a & b).any():
            out[dim] = "" if a.any() and b.any() else "A" if a.any() else "B"
    return out


def rating_scales_differ(comp: Comparison) -> dict[str, str]:
    """{dimension: why} for the human dimensions the two systems are rated on scales of different size
    (``core.human_preferences.scales_differ``): :func:`compare_ratings` does not compare them, and the verdict
    says so (``Verdict.rating_scales``)."""
    out = {}
    for dim in dimensions(comp.examples()):
        why = scales_differ(dim, {comp.system_a: [ex.scores.get(dim, math.nan) for ex in comp.a],
                                  comp.system_b: [ex.scores.get(dim, math.nan) for ex in comp.b]})
        if why:
            out[dim] = why
    return out


def compare_ratings(comp: Comparison, n_boot: int = N_BOOT, n_perm: int = N_PERM, level: float = LEVEL,
                    seed: int = SEED) -> list[MetricComparison]:
    """One row per human dimension both systems carry (``human:DIM``), ties by :func:`human_tie_margin`: the
    people's side of the verdict, there with or without metric scores."""
    groups = context_groups(comp.a)
    rows = []
    two_scales = rating_scales_differ(comp)  # 8 on a 1-10 scale beside 0.6 on 0-1: no comparison
    for dim in dimensions(comp.examples()):
        a = np.array([ex.scores.get(dim, math.nan) for ex in comp.a])
        b = np.array([ex.scores.get(dim, math.nan) for ex in comp.b])
        if dim in two_scales:
            continue
        if (np.isfinite(a) & np.isfinite(b)).any():  # a pair people rated on both sides
            rows.append(compare_values(f"human:{dim}", "human", a, b, groups, signature="human ratings in the input",
                                       n_boot=n_boot, n_perm=n_perm, level=level, seed=seed,
                                       tie_margin=human_tie_margin(dim, [*a, *b])))
    return rows


def check_something_to_compare(comp: Comparison, metrics: Sequence[str], judge: bool, human: bool = True,
                               metrics_name: str = "metrics=[]", judge_name: str = "judge=True",
                               human_name: str = "human=False") -> None:
    """No metric (``metrics`` empty) and no judge leave people's ratings alone to compare: a ``ValueError``
    when there are none (or ``human`` leaves them out); the names say how the caller's options are spelled."""
    if metrics or judge:
        return
    if not human:
        why = f"{human_name} leaves out people's ratings"
    elif not any(e.scores for e in comp.examples()):
        why = "these rows carry no human ratings"
    elif compare_ratings(comp, n_boot=stats.MIN_BOOT, n_perm=1):
        return
    elif two_scales := rating_scales_differ(comp):
        why = "; ".join(two_scales.values())
    else:
        one_sided = one_sided_ratings(comp)
        why = ("people rated " + ", ".join(f"{d!r} " + (f"for {comp.system_a if s == 'A' else comp.system_b} only"
                                                         if s else "on both sides but never on the same pair")
                                           for d, s in one_sided.items())
               + ", so no pair is rated on both sides")
    raise ValueError(f"{metrics_name} and no judge leave nothing to compare: {why}; name metrics or add "
                     f"{judge_name}")


def signal_differences(cs: "ComparisonScores | None", judge: JudgeSummary | None,
                       signals: Sequence[str]) -> dict[str, np.ndarray]:
    """{signal: its per-pair difference oriented so that a positive value favours A} for each of ``signals``
    computed here: a metric's A - B (negated when lower is better) where it scored at least one pair, the
    judge's P(A) - 0.5 where it judged every pair and is the judge the records were measured with
    (``core.verdict_policy.is_measured_judge``; another judge is a diagnostic)."""
    out = {}
    for s in signals:
        if s == JUDGE:
            n = len(cs.comparison.pairs) if cs is not None else None
            if (judge is not None and judge.p_a and (n is None or len(judge.p_a) == n)  # every pair judged
                    and is_measured_judge(judge.signature)):
                out[s] = np.asarray(judge.p_a, dtype=np.float64) - 0.5
        elif cs is not None and s in cs.metrics:
            d = np.asarray(cs.a(s), dtype=np.float64) - np.asarray(cs.b(s), dtype=np.float64)
            if np.isfinite(d).any():
                out[s] = d if metric_class(s).higher_is_better else -d
    return out


def comparison_silent_sides(comp: Comparison) -> list[str | None]:
    """Per pair of ``comp``, which side left its reply blank (``core.verdict_policy.silent_sides``)."""
    return silent_sides([is_blank(a.response) for a, _ in comp.pairs], [is_blank(b.response) for _, b in comp.pairs])


def combined_pair_values(comp: Comparison, differences: dict[str, np.ndarray]) -> np.ndarray:
    """The combined test's value of each pair of ``comp`` (``combined_values``, a pair only one side left blank
    counted as that side's loss)."""
    return combined_values(differences, comparison_silent_sides(comp))


def compare_combined(comp: Comparison, differences: dict[str, np.ndarray], n_boot: int = N_BOOT,
                     n_perm: int = N_PERM, level: float = LEVEL, seed: int = SEED) -> MetricComparison:
    """The combined evidence of ``differences`` (:func:`signal_differences`) as one row of the verdict
    (:func:`combined_pair_values`, tested against 0 as a metric is; its unit: standard deviations of the signals'
    differences). The row has a difference A - B and no mean per system (NaN): a combined value exists only for a
    pair."""
    values = combined_pair_values(comp, differences)
    row = compare_values("combined", "combined", values, np.zeros(len(values)), context_groups(comp.a),
                         signature="sum of standardized differences: " + "+".join(differences), n_boot=n_boot,
                         n_perm=n_perm, level=level, seed=seed)
    return replace(row, **{f: math.nan for f in ("mean_a", "mean_a_low", "mean_a_high", "mean_b", "mean_b_low",
                                                  "mean_b_high")})


def build_verdict(comp: Comparison, cs: "ComparisonScores | None" = None, judge: JudgeSummary | None = None,
                  human: bool = True, n_boot: int = N_BOOT, n_perm: int = N_PERM, level: float = LEVEL,
                  seed: int = SEED, combine: Sequence[str] | None = None) -> Verdict:
    """The :class:`Verdict` for ``comp`` from its metric scores ``cs`` and the judge's summary; ``combine``: the
    signals of its combined test (default: the shipped verdict policy's, as many as were computed:
    ``VerdictPolicy.combination``). ``n_boot`` below ``stats.MIN_BOOT``, ``n_perm`` too few for any p below
    1 - ``level`` (``stats.min_permutations``), a ``level`` outside (0, 1) or a negative ``seed`` raise
    ``ValueError`` (``stats.check_settings``)."""
    stats.check_settings(n_boot, n_perm, level, seed)
    policy = shipped_policy().policy
    differences = signal_differences(cs, judge, policy.combinable() if combine is None else combine)
    if combine is None:  # the policy's signals, or when some were not computed an allowed set of the others
        differences = {s: differences[s] for s in policy.combination(list(differences))}
    combined = compare_combined(comp, differences, n_boot, n_perm, level, seed) if differences else None
    rows = compare_scores(cs, False, n_boot, n_perm, level, seed) if cs is not None else []
    if human:  # people's ratings count whether or not any metric was scored (or every metric failed)
        rows += compare_ratings(comp, n_boot, n_perm, level, seed)
    drivers = []
    groups = context_groups(comp.a)
    if cs is not None:
        for r in rows:
            if r.kind == "metric":
                drivers.append(difference_drivers(r, cs.a(r.metric), cs.b(r.metric), groups, [a.id for a in comp.a],
                                                  n_boot=n_boot, n_perm=n_perm, level=level, seed=seed))
    if combined is not None and combined.n:  # what decides the verdict: does it rest on a handful of pairs?
        values = combined_pair_values(comp, differences)
        named = replace(combined, metric="combined: " + "+".join(differences))
        drivers.append(difference_drivers(named, values, np.zeros(len(values)), groups, [a.id for a in comp.a],
                                          n_boot=n_boot, n_perm=n_perm, level=level, seed=seed,
                                          lean=policy.combine_lean if policy.combine else math.nan))
    identical = sum(same_reply(a.response, b.response) for a, b in comp.pairs)
    unmatched = comp.describe_unmatched()
    copies = {"A": sum(is_reference_copy(a) for a, _ in comp.pairs),
              "B": sum(is_reference_copy(b) for _, b in comp.pairs)}
    return Verdict(comp.system_a, comp.system_b, len(comp.pairs), comp.aligned_by, unmatched,
                   n_boot, n_perm, level, seed, rows, judge, identical_pairs=identical, drivers=drivers,
                   n_unmatched=len(unmatched),
                   unmatched_by_side={"A": len(comp.unmatched_a), "B": len(comp.unmatched_b)},
                   left_out=left_out_pairs(comp, cs, rows),
                   context_mismatches=comp.context_mismatches(), reference_copies=copies,
                   alignment_note=comp.alignment_note, one_sided_ratings=one_sided_ratings(comp) if human else {},
                   shared_references={k: n for k, n in comp.shared_references.items() if n},
                   input_notes=comparison_notes(comp, cs.metrics if cs is not None else [],
                                                _judge_registered(judge)),
                   combined=combined, combined_signals=list(differences),
                   blank_replies={"A": sum(is_blank(a.response) for a, _ in comp.pairs),
                                  "B": sum(is_blank(b.response) for _, b in comp.pairs)},
                   rating_scales=rating_scales_differ(comp) if human else {})


def comparison_notes(comp: Comparison, metrics: Sequence[str], judged: "bool | str") -> dict[str, str]:
    """``core.engine.input_notes`` over both systems' rows. Rows read from files name their file and row; rows
    handed over in memory (``core.compare_replies``: ``item N``, N their index in the list) are counted per system
    and each system's note is named (``v1: 2 of 60 rows ...; v2: ...``), a note both sides give alike (the
    references they share) once, so an index is never ambiguous."""
    if any(ex.source for ex in comp.examples()):
        notes = input_notes(comp.examples(), metrics, judged=judged)
        notes.pop("look-alike systems", None)  # the verdict's own note says it of its two systems (names_note)
        if comp.unmatched_a or comp.unmatched_b:  # a repeat may be left without a partner: counted over every row
            every = input_notes(comp.examples() + comp.unmatched_a + comp.unmatched_b, metrics, judged=judged)
            if "repeated row" in every:
                notes["repeated row"] = every["repeated row"]
        return notes
    sides = {comp.system_a: input_notes(comp.a, metrics, judged=judged),
             comp.system_b: input_notes(comp.b, metrics, judged=judged)}
    out = {}
    for kind in dict.fromkeys(k for notes in sides.values() for k in notes):
        said = {system: notes[kind] for system, notes in sides.items() if kind in notes}
        out[kind] = (next(iter(said.values())) if len(said) == 2 and len(set(said.values())) == 1
                     else "; ".join(f"{system}: {note}" for system, note in said.items()))
    return out


def _judge_registered(judge: JudgeSummary | None) -> "bool | str":
    """Which judge ran, as the input's notes take it (what it reads of a reply): its registry name ('llm'), True
    for the learned judge (any checkpoint), False for none."""
    if judge is None:
        return False
    name = judge_name(judge.signature)
    return name if name in JUDGES and not is_measured_judge(judge.signature) else True


def mismatch_words(comp: Comparison) -> str:
    """'3 of 12 pairs were aligned by id but have different contexts; (advice)', '' when none: said on stderr and
    as the API's warning before anything is scored."""
    n = len(comp.context_mismatches())
    return f"{mismatched_pairs_words(n, len(comp.pairs))}; {ID_MISMATCH_ADVICE}" if n else ""


def alignment_warning(comp: Comparison) -> str:
    """'pairs aligned by context: ids are shared, but ...' where the rows were not paired as their ids say (or
    repeated contexts paired in file order), '' otherwise: said on stderr and as the API's warning before anything
    is scored, as the text's header and the JSON's ``alignment_note`` say it."""
    return f"pairs aligned by {alignment_words(comp.aligned_by, comp.alignment_note)}" if comp.alignment_note else ""


def mismatch_warning(v: Verdict) -> str:
    """The warning for pairs aligned by id whose contexts differ ('' when there are none)."""
    if not v.context_mismatches:
        return ""
    n = len(v.context_mismatches)
    return f"warning: {mismatched_pairs_words(n, v.n_pairs)}; {ID_MISMATCH_ADVICE}"


LEFT_OUT_LISTED = 20  # pairs named per verdict row; the count is always complete
ONE_REASON_LISTED = 3  # pairs named when every missing value has the same reason (said once)


def _unscored_reason(v: "Verdict", unscored: Sequence["MetricComparison"]) -> str:
    """Why metrics scored no pair, from the reasons their left-out pairs give (:func:`left_out_pairs`): blank
    replies, no references, both; empty when unknown."""
    from core.engine import BLANK_RESPONSE, NO_REFERENCE
    names = {r.metric for r in unscored}
    reasons = {why for d in v.left_out if d["metric"] in names for why in d["reasons"]}
    found = [label for reason, label in ((BLANK_RESPONSE, "blank replies"), (NO_REFERENCE, "no references"))
             if reason in reasons]
    return f" ({' and '.join(found)})" if found else ""


def left_out_pairs(comp: Comparison, cs: "ComparisonScores | None", rows: Sequence[MetricComparison]
                   ) -> list[dict[str, Any]]:
    """For every verdict row that left pairs out of its ``n`` (no score for A or B), the count, the first
    pairs with where each side came from and why it has no value (a blank response, no reference, no human
    rating), ``reason``: the one reason of every missing value when they share one (then left out of each listed
    pair), else None, and ``reasons``, how many missing values each reason explains. Nothing leaves ``n`` without a word."""
    n = len(comp.pairs)
    out = []
    for r in rows:
        if not r.n_dropped:
            continue
        if r.kind == "metric" and cs is not None:
            a, b = cs.a(r.metric), cs.b(r.metric)
            reasons = (lambda i, m=r.metric: cs.table.why_null(m, i), lambda i, m=r.metric: cs.table.why_null(m, n + i))
        else:
            dim = r.metric.split(":", 1)[1]
            a = np.array([ex.scores.get(dim, math.nan) for ex in comp.a])
            b = np.array([ex.scores.get(dim, math.nan) for ex in comp.b])
            reasons = (lambda i: "no human rating", lambda i: "no human rating")
        pairs, why_counts = [], Counter()
        for i in range(n):
            sides = [(f"{side} {ex.location}", why(i)) for side, ex, value, why in
                     (("A", comp.a[i], a[i], reasons[0]), ("B", comp.b[i], b[i], reasons[1]))
                     if not np.isfinite(value)]
            if sides:
                pairs.append(sides)
                why_counts.update(w for _, w in sides)
        # one reason for every missing value ("no reference" on a file without any) is said once, not per row
        one_reason = next(iter(why_counts)) if len(why_counts) == 1 else None
        listed = ["; ".join(where if one_reason else f"{where}: {w}" for where, w in sides)
                  for sides in pairs[:ONE_REASON_LISTED if one_reason else LEFT_OUT_LISTED]]
        out.append({"metric": r.metric, "n_left_out": len(pairs), "n_pairs": n, "pairs": listed,
                    "reason": one_reason, "reasons": dict(why_counts)})
    return out


# ------------------------------------------------------------------------------------------------
# what drives a difference

TOP_SHOWN = 5  # pairs listed as the top contributors of a metric's difference
LEAVE_OUT_SHARE = 0.05  # the share of most-pushing pairs left out to test whether a verdict survives


def difference_drivers(row: MetricComparison, a: Sequence[float], b: Sequence[float], groups: Sequence,
                       ids: Sequence[str], top: int = TOP_SHOWN, share: float = LEAVE_OUT_SHARE,
                       n_boot: int = N_BOOT, n_perm: int = N_PERM, level: float = LEVEL,
                       seed: int = SEED, lean: float = math.nan) -> Drivers:
    """:class:`Drivers` of one metric row: pair i contributes ``d_i = a_i - b_i`` to the mean difference
    ``sum(d) / n``; pairs are ranked by ``d_i`` in the direction of the winner (else of the mean difference),
    equal ``d_i`` in one order whatever the input's (context, values, id); the first ``top`` that push that way
    (``d_i`` of that sign, not 0) are listed with ``d_i / sum(d)``, and the comparison is redone (:func:`compare_values`, same settings) without the first ``ceil(share * n)`` of them
    (fewer when fewer pairs push that way). ``lean``: the p below which the verdict names the side this row's
    mean favours when it names no winner (the combined test's ``combine_lean``); such a lean survives when the
    pairs left still lean that way below it."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    d = a - b
    fin = np.flatnonzero(np.isfinite(d))
    if row.winner is not None:
        sign = 1.0 if (row.winner == "A") == row.higher_is_better else -1.0
    else:
        sign = 1.0 if (np.nansum(d) >= 0) else -1.0
    direction = "A" if (sign > 0) == row.higher_is_better else "B"
    # largest push first; pairs that push alike in one canonical order (context, values, id), not the input's
    order = np.array(sorted(fin, key=lambda i: (-sign * d[i], str(groups[i]), a[i], b[i], str(ids[i]))),
                     dtype=np.int64)
    pushing = order[sign * d[order] > 0]  # a pair that ties or pushes the other way drives nothing this way
    total = float(np.sum(d[fin])) if len(fin) else math.nan
    shown = [{"pair": int(i), "id": str(ids[i]), "diff": float(d[i]),
              "share": float(d[i] / total) if total else math.nan} for i in pushing[:top]]
    k = min(int(math.ceil(share * len(fin))), len(pushing)) if len(fin) else 0
    keep = np.setdiff1d(np.arange(len(d)), pushing[:k])
    again = compare_values(row.metric, row.kind, a[keep], b[keep], [groups[i] for i in keep],
                           higher_is_better=row.higher_is_better, n_boot=n_boot, n_perm=n_perm, level=level,
                           seed=seed)
    leaned = (row.winner is None and lean > 0 and math.isfinite(row.p_randomization)
              and row.p_randomization < lean)
    survives = again.winner == row.winner
    if leaned:  # the lean's own rule: below ``lean``, the same way
        again_side = ("A" if (again.diff > 0) == row.higher_is_better else "B") if again.diff else None
        survives = bool(again.p_randomization < lean and again_side == direction)
    return Drivers(row.metric, direction, shown, k, len(fin), again.diff, again.low, again.high, again.p_randomization,
                   row.winner, again.winner, survives, stats.can_be_significant(again.n_contexts, 1 - level),
                   leaned, lean if leaned else math.nan)


# ------------------------------------------------------------------------------------------------
# the one-line verdict


_WORDS: ContextVar[Callable[[str], str] | None] = ContextVar("verdict_words", default=None)
"""Set by :func:`verdict_sentence`'s ``label`` for one call: metric names through it and intervals said in words
(the dashboard's reading); unset, the command line's ids and brackets."""


def _label(metric: str) -> str:
    label = _WORDS.get()
    return label(metric) if label is not None else metric


def _bracket(lo: str, hi: str) -> str:
    """' [lo, hi]', or ', between lo and hi' when the sentence is said in words."""
    return f", between {lo} and {hi}" if _WORDS.get() is not None else f" [{lo}, {hi}]"


def _span(lo: float, hi: float) -> str:
    if _WORDS.get() is not None:
        return f", between {100 * lo:.0f} and {100 * hi:.0f} %"
    return f" {fmt_percent_bounds(lo, hi)}"


def _names(rows: Sequence[MetricComparison]) -> str:
    return fmt_list(_label(r.metric) for r in rows)


def _margin(r: MetricComparison, side: str) -> str:
    """``r``'s difference in favour of ``side`` ('A': A - B, 'B': B - A) with its interval."""
    if side == "A":
        return f"{fmt_amount(r.diff)}{_bracket(fmt_amount(r.low), fmt_amount(r.high))}"
    return f"{fmt_amount(-r.diff)}{_bracket(fmt_amount(-r.high), fmt_amount(-r.low))}"


def preferred_human_row(v: Verdict) -> MetricComparison | None:
    """The verdict's row for the human dimension that stands for overall preference, if any."""
    rows = {r.metric[len("human:"):]: r for r in v.rows("human")}
    for d in PREFERENCE_DIMENSIONS:
        if d in rows:
            return rows[d]
    return next(iter(rows.values()), None)


def holm_adjusted(v: Verdict) -> dict[str, float]:
    """{metric: its randomization p adjusted by Holm's method over the metrics that scored pairs}."""
    scored = [r for r in v.rows("metric") if r.n > 0]
    adjusted = stats.holm([r.p_randomization for r in scored]) if scored else []
    return {r.metric: float(p) for r, p in zip(scored, adjusted)}


def holm_winners(v: Verdict) -> set[str]:
    """The metrics whose winner survives Holm's correction over every metric compared (randomization p-values,
    :func:`holm_adjusted`): the JSON's ``holm_winner`` column, since one of 22 metrics at p < 0.05 is what chance
    gives. The one-line verdict reads :func:`deciding_holm` (the policy's deciding metrics only); each metric's
    own row keeps its own test."""
    adjusted = holm_adjusted(v)
    return {r.metric for r in v.rows("metric") if r.winner and adjusted.get(r.metric, 1.0) < 1 - v.level}


def deciding_holm(v: Verdict) -> tuple[list[MetricComparison], set[str]]:
    """The metric rows the shipped verdict policy lets decide (that scored pairs), and those whose winner survives
    Holm's correction over them: what the one-line verdict reads of the metrics' own tests."""
    policy = shipped_policy().policy
    deciding = [r for r in v.rows("metric") if r.n > 0 and policy.decides(r.metric)]
    return deciding, set(deciding_winners(policy, [(r.metric, r.winner, r.p_randomization) for r in deciding],
                                          v.level))


def _copy_clause(v: Verdict, side: str, favouring: Sequence[MetricComparison]) -> list[str]:
    """The caveat for metrics that favour ``side`` and read references when ``side`` replies with its own
    reference more often than the other system (``engine.is_reference_copy``): they score such replies as a
    perfect match, whatever people think of them."""
    referenced = [r for r in favouring if reads_references(r.metric)]
    k, k_other = v.reference_copies.get(side, 0), v.reference_copies.get("B" if side == "A" else "A", 0)
    if not referenced or k <= k_other:
        return []
    name, other = (v.system_a, v.system_b) if side == "A" else (v.system_b, v.system_a)
    return [f"but {name} replies with its own reference in {k} of {v.n_pairs} pairs ({other}: {k_other}), which "
            f"{_names(referenced)} score{'s' * (len(referenced) == 1)} as a perfect match"]


def verdict_decision(v: Verdict, policy: VerdictPolicy | None = None) -> Decision:
    """Which side the one-line verdict names and on what basis (``core.verdict_policy.decide``): people's ratings
    in the input first, then the judge and the deciding metrics as ``policy`` (default: the shipped one) says."""
    policy = policy or shipped_policy().policy
    human = preferred_human_row(v)
    metrics = [(r.metric, r.winner, r.p_randomization, _leans(r.diff, r.higher_is_better))
               for r in v.rows("metric") if r.n > 0]
    j = v.judge if v.judge is not None and is_measured_judge(v.judge.signature) else None  # else a diagnostic
    judge_order = _leans(j.win.rate - 0.5) if j is not None and j.win.wins + j.win.losses else None
    c = v.combined
    combined = ((c.winner, tuple(v.combined_signals), _leans(c.diff) if c.n else None, c.p_randomization)
                if c is not None else None)
    return decide(policy, human.winner if human is not None else None, j.winner if j else None,
                  metrics, v.level, judge_order, combined)


def _leans(diff: float, higher_is_better: bool = True) -> str | None:
    """The side a mean difference A - B favours ("A" / "B"), None for none or no value."""
    if diff is None or not math.isfinite(diff) or diff == 0:
        return None
    return "A" if (diff > 0) == higher_is_better else "B"


def _record_words(signal: str, label: str | None = None) -> str:
    """' (on rated data it named people's preferred system in 41 of 45 system pairs, ...)', '' without a record."""
    rec = shipped_policy().record(signal)
    return f" ({rec.words(label or signal)})" if rec is not None and rec.pairs else ""


def _records(rows: Sequence[MetricComparison]) -> str:
    """Each row's measured system-level record (:func:`_record_words`), named as the sentence names it."""
    return "".join(_record_words(r.metric, _label(r.metric) if _WORDS.get() is not None else None) for r in rows)


FRAGILE = "; it rests on a few pairs: not significant without the top 5 %"


def _fragile(v: Verdict, r: MetricComparison) -> str:
    """:data:`FRAGILE` when ``r``'s winner does not survive leaving out its most pushing pairs (``v.drivers``; the
    combined test's driver is named 'combined: ...'); for a lean that does not survive, its p without them; else
    ''."""
    drv = next((d for d in v.drivers if d.metric == r.metric), None)
    if drv is not None and drv.leaned and not drv.survives:
        without = f"without the top {LEAVE_OUT_SHARE * 100:g} %"
        return ("; it rests on a few pairs: " + (f"{without} it leans the other way" if drv.p_without < drv.lean
                                                  else f"{fmt_p(drv.p_without)} {without}, not below {drv.lean:g}"))
    return FRAGILE if drv is not None and drv.testable and not drv.leaned and not drv.survives else ""


def _metric_clauses(v: Verdict, rows: Sequence[MetricComparison], side: str | None, basis: str | None,
                    diagnostic: bool, passed: set[str] = frozenset(), others: bool = False,
                    members: bool = False, with_records: bool = True) -> list[str]:
    """What ``rows`` (the deciding metrics, the diagnostics, or with ``members`` the metrics of the combined test
    that do not decide alone) say, in favour of ``side`` first. ``passed``: the deciding metrics whose winner
    survives Holm's correction over the deciding metrics (only these decide); ``others``: whether diagnostics
    are shown beside them (the deciding ones are then called so). Diagnostics carry their measured
    system-level record, so a reader sees why they do not decide; the combined test's metrics are said on
    their own, as parts of it."""
    if members:
        clauses = _metric_clauses(v, rows, side, basis, True, with_records=False)
        lead = "as diagnostics, which do not decide: "
        return ["within the combined test, " + clauses[0][len(lead):], *clauses[1:]] if clauses else []
    sys_name = {"A": v.system_a, "B": v.system_b}
    clauses = []
    if side is not None and not diagnostic and basis != "metrics" and rows and not any(r.winner == side for r in rows):
        clauses.append("no deciding metric agrees")
    for s in ([side, {"A": "B", "B": "A"}[side]] if side else ["A", "B"]):
        fav = [r for r in rows if r.winner == s]
        if not fav:
            continue
        # quote the strongest: one that passes Holm, then the smallest p
        best = min(fav, key=lambda r: (diagnostic or r.metric not in passed, r.p_randomization))
        if s == side and not diagnostic:
            verb = ("say so", "says so") if basis == "metrics" else ("agree", "agrees")
            kind = "deciding metric" if others else "metric"
            agreeing = (f"{len(fav)} of {len(rows)} {kind}s {verb[len(fav) == 1]}" if len(rows) > 1
                        else f"its one {kind} {verb[1]}")
            records = _records(fav) if basis == "metrics" else ""
            clauses.append(f"{agreeing} ({_label(best.metric)} {_margin(best, s)}{_fragile(v, best)}){records}")
        else:
            lead = "but " if side is not None and s != side and not diagnostic else ""
            chance = "" if diagnostic or best.metric in passed else (
                f", not significant once the {len(rows)} deciding metrics are corrected together (Holm)")
            records = _records(fav) if diagnostic and with_records else ""
            clauses.append(f"{lead}{_names(fav)} favour{'s' * (len(fav) == 1)} {sys_name[s]} "
                           f"({_label(best.metric)} {_margin(best, s)}{chance}{_fragile(v, best)}){records}")
        clauses += _copy_clause(v, s, fav)
    none = [r for r in rows if r.winner is None]
    if none:
        if len(none) == len(rows) and not diagnostic and len(rows) > 1:
            clauses.append("no metric finds a significant difference")
        else:
            clauses.append(f"{_names(none)} find{'s' * (len(none) == 1)} no significant difference")
        if not diagnostic and side is None:
            clauses[-1] += _unseen(none)
    if diagnostic and clauses:
        clauses[0] = "as diagnostics, which do not decide: " + clauses[0]
    return clauses


def _unseen(rows: Sequence[MetricComparison]) -> str:
    """' (with these 60 contexts a difference smaller than 0.09 in bert_ruber could go unseen)': what the
    comparison could have missed at 80 % power (``stats.detectable_difference``), for metrics that found none."""
    known = [r for r in rows if math.isfinite(r.detectable)]
    if not known:
        return ""
    n = max(r.n_contexts for r in known)
    parts = [f"{fmt_amount(r.detectable, signed=False)} in {_label(r.metric)}" for r in known]
    many = len(parts) > 1
    listed = fmt_list(parts)
    return (f" (with these {n} contexts {'differences' if many else 'a difference'} smaller than {listed} could "
            "go unseen)")


def _listed(signals: Sequence[str]) -> str:
    """'bert_ruber, the judge and ubleu' (the metrics through the sentence's labels)."""
    return fmt_list("the judge" if s == JUDGE else _label(s) for s in signals)


def _scored_metrics(v: Verdict) -> set[str]:
    """The metrics that scored at least one pair of ``v``."""
    return {r.metric for r in v.rows("metric") if r.n}


def _judged_every_pair(v: Verdict) -> bool:
    """Whether a judge ran on every pair of ``v``."""
    return v.judge is not None and len(v.judge.p_a) == v.n_pairs


def _not_computed(v: Verdict, signals: Sequence[str]) -> str:
    """Why some of ``signals`` are not in the combined test here: 'the judge not run on every pair', 'bleu not
    computed'."""
    scored = _scored_metrics(v)
    judged = _judged_every_pair(v)
    why = [(_unmeasured(v) or "" if judged else "the judge not run" if v.judge is None
            else "the judge not run on every pair")
           if s == JUDGE else
           ("" if s in scored else f"{_label(s)} not computed") for s in signals]
    return "; ".join(w for w in why if w) or "not all computed"


def _what_would_combine(v: Verdict, policy: VerdictPolicy) -> str:
    """'; with the judge as well it would run', '; with mme as well it could combine bleu and mme': the set of
    signals the combined test may sum (``policy.combine``, then ``combine_allowed``, best record first) that
    needs the fewest signals more than were computed here (the measured judge counts when it ran on every
    pair); '' when none is in reach."""
    have = _scored_metrics(v) | ({JUDGE} if _judged_every_pair(v) and is_measured_judge(v.judge.signature) else set())
    sets = [tuple(policy.combine), *(tuple(c) for c in policy.combine_allowed)]
    reach = [(len(set(c) - have), i, c) for i, c in enumerate(sets) if c]
    if not reach:
        return ""
    _, i, best = min(reach)
    missing = [s for s in best if s not in have]
    if not missing:
        return ""
    # the judge that is missing, said as what it lacks: not run, another judge ran, or it ran on some pairs only
    judge = ("the judge" if v.judge is None else "the learned judge" if not is_measured_judge(v.judge.signature)
             else "the judge on every pair")
    added = fmt_list(judge if s == JUDGE else _label(s) for s in missing)
    also = " as well" if len(missing) < len(best) else ""
    if i == 0:
        return f"; with {added}{also} it would run"
    if len(best) == 1:
        return f"; {added} could decide alone"
    return f"; with {added}{also} it could combine {_listed(best)}" if also else f"; with {added} it could combine them"


def _unmeasured(v: Verdict) -> str:
    """'the llm judge has no measured record: the records are the learned judge's' when the judge that ran is
    not the one the records were measured with; '' otherwise."""
    if v.judge is None or is_measured_judge(v.judge.signature):
        return ""
    return f"the {judge_name(v.judge.signature)} judge has no measured record: the records are the learned judge's"


def _combined_clause(v: Verdict, side: str | None, basis: str | None) -> str:
    """What the combined test says ('the combined evidence of mme, the judge and bleu favours it in 25 of the 30
    pairs (p = 0.004)'), with its measured record when it decided."""
    c = v.combined
    policy = shipped_policy().policy
    listed = _listed(v.combined_signals)
    shipped = tuple(v.combined_signals) == tuple(policy.combine)
    if not shipped and policy.combine:
        listed += f" (in place of {_listed(policy.combine)}: {_not_computed(v, policy.combine)})"
    if basis == "combined lean":  # its record: the verdict's, measured for the shipped set only
        fragile = _fragile(v, replace(c, metric="combined: " + "+".join(v.combined_signals)))
        return (f"the combined evidence of {listed} leans its way, {_pairs_for(c, side)} ("
                f"{fmt_p(c.p_randomization)}: not significant, but below the {policy.combine_lean:g} at "
                f"which the verdict says 'probably'{fragile})"
                + (_record_words("verdict", "on rated data the verdict") if shipped else ""))
    if c.winner is None:
        return f"the combined evidence of {listed} finds no significant difference"
    name = "it" if c.winner == side else {"A": v.system_a, "B": v.system_b}[c.winner]
    record = "combined" if shipped else combined_name(v.combined_signals)
    trust = _record_words(record, "on rated data this combined test") if basis == "combined" else ""
    fragile = _fragile(v, replace(c, metric="combined: " + "+".join(v.combined_signals)))
    return (f"{'but ' if side not in (None, c.winner) else ''}the combined evidence of {listed} favours {name} "
            f"{_pairs_for(c, c.winner)} ({fmt_p(c.p_randomization)}{fragile}){trust}")


def _pairs_for(c: MetricComparison, side: str) -> str:
    """'in 33 of the 60 pairs, the other way in 27': where the combined value favours ``side`` and where the other
    system (a side is named by the mean, which a few large pairs can move against most). The sentence says the
    combined test in pairs, not in its unit (standard deviations of each signal's differences, summed: a signal
    whose differences barely vary, such as a judge sure of every pair, makes it large); the tables' row has it."""
    mine, other = (c.wins, c.losses) if side == "A" else (c.losses, c.wins)
    return f"in {mine} of the {c.n} pairs" + (f", the other way in {other}" if other else "")


def judge_sentence(v: Verdict) -> str:
    """What ``dialeval judge`` opens with: the judge's own finding ('The judge prefers v2 to v1 in 80 % of the 30
    pairs it decided [62-91 %] (sign test p = 0.001).'), and its place in the one-line verdict, which ``compare``
    gives from the judge and the metrics together."""
    j = v.judge
    if j is None:
        return ""
    name = {"A": v.system_a, "B": v.system_b}
    w = j.win
    decided = w.wins + w.losses
    unread = len(j.unparsed)
    if not decided and not w.ties and unread:
        found = (f"The judge could not read an answer naming either reply in both orders for any of the "
                 f"{counted(unread, 'pair')}, so it states no preference between {v.system_a} and {v.system_b} "
                 "(the unparsed pairs are listed below).")
    elif not decided:
        ties = w.ties  # the pairs it read (unread ones are no tie: they have no call)
        found = (f"The judge finds no preference between {v.system_a} and {v.system_b}: it calls "
                 f"{'all ' * (not unread and ties > 1)}{counted(ties, 'pair')} {'a tie' if ties == 1 else 'ties'} "
                 f"(P(A) within {j.tie_margin:g} of 0.5)"
                 + (f"; for {unread} it did not get an answer naming a reply in each order (listed below)"
                    if unread else "") + ".")
    elif j.winner:
        s, other = j.winner, "B" if j.winner == "A" else "A"
        rate, lo, hi = (w.rate, w.low, w.high) if s == "A" else (1 - w.rate, 1 - w.high, 1 - w.low)
        lc = j.length_controlled
        at_len = (f", {fmt_percent(lc.rate if s == 'A' else 1 - lc.rate)} at equal length{j.at_length_words()}"
                  if lc is not None and math.isfinite(lc.rate) else "")
        found = (f"The judge prefers {name[s]} to {name[other]} in {fmt_percent(rate)} of the "
                 f"{counted(decided, 'pair')} it decided{_span(lo, hi)} (sign test {fmt_p(w.sign_p)}{at_len}).")
    else:
        found = (f"The judge finds no significant preference between {v.system_a} and {v.system_b} ({v.system_a} "
                 f"wins {fmt_percent(w.rate)} of the {counted(decided, 'pair')} it decided{_span(w.low, w.high)}).")
    if not is_measured_judge(j.signature):
        return found + f" {_unmeasured(v)[:1].upper()}{_unmeasured(v)[1:]}."
    if JUDGE in shipped_policy().policy.combinable():
        return found + " The one-line verdict (`dialeval compare`) weighs it with the metrics in one combined test."
    return found


def _blank_clause(v: Verdict) -> list[str]:
    """["bot-v2's reply is blank in 3 of the 20 pairs (bot-v1's in 0), which every metric leaves out and the
    combined test counts as lost by it"] when one side left more replies blank than the other (the gate fails such
    a candidate: ``core.gating``; the combined test counts a pair only one side left blank as that side's loss:
    ``core.verdict_policy.combined_values``); [] else."""
    a, b = v.blank_replies.get("A", 0), v.blank_replies.get("B", 0)
    if a == b:
        return []
    more, fewer = (v.system_a, v.system_b) if a > b else (v.system_b, v.system_a)
    lost = (" and the combined test counts as lost by it where only its reply is blank"
            if v.combined is not None and v.combined.n else "")
    return [f"{more}'s reply is blank in {max(a, b)} of the {v.n_pairs} pairs ({fewer}'s in {min(a, b)}), which "
            f"every metric leaves out{lost}"]


def _said_with(label: Callable[[str], str], say: Callable[[Verdict], Any], v: Verdict) -> Any:
    """``say(v)`` with the metrics named through ``label`` and intervals said in words (``_WORDS``), for that
    call only."""
    token = _WORDS.set(label)
    try:
        return say(v)
    finally:
        _WORDS.reset(token)


def verdict_sentence(v: Verdict, label: Callable[[str], str] | None = None) -> str:
    """The one-line verdict: :func:`verdict_parts` joined (its headline, then the evidence)."""
    return "".join(verdict_parts(v, label))


def verdict_parts(v: Verdict, label: Callable[[str], str] | None = None) -> tuple[str, str]:
    """The one-line verdict as (headline, the rest), whose concatenation is :func:`verdict_sentence`: the
    headline says which system is better, or that none is ("X is probably better than Y"); the rest says on what
    evidence, from its colon on (or, when nothing was measured, a parenthesis; '' when the headline is the whole
    sentence). A page shows the headline large and the evidence as text below it.

    The verdict in one line a stakeholder reads in five seconds: which system is better, in words, both
    named in full, on what evidence, and how far that evidence is trusted. The side comes from
    :func:`verdict_decision`: people's ratings in the input when they name a winner, else the judge and the
    metrics that the shipped verdict policy lets decide (``core.verdict_policy``: chosen by how often each
    signal names the system people prefer on rated data); the deciding signal's measured record is stated
    beside it. Metrics outside the policy are shown as diagnostics and never decide. Differences are stated in
    favour of the better system (``+x [low, high]``), never only by a sign. Metrics that read references and
    favour a system that replies with its own reference more often than the other carry that caveat
    (:func:`_copy_clause`). ``label`` (the dashboard's display names, e.g. 'bert_ruber' -> 'BERT-RUBER') names the
    metrics through it and says intervals as "between x and y"; without it the sentence is the command line's."""
    if label is not None and _WORDS.get() is None:
        return _said_with(label, verdict_parts, v)
    sys_name = {"A": v.system_a, "B": v.system_b}
    other = {"A": "B", "B": "A"}
    if v.n_pairs and v.identical_pairs == v.n_pairs:
        return (f"{v.system_a} and {v.system_b} give the same reply in all {v.n_pairs} pairs, so there is nothing "
                "to compare (is the same file loaded twice?).", "")
    policy = shipped_policy().policy
    decision = verdict_decision(v, policy)
    side, basis = decision.side, decision.basis
    human = preferred_human_row(v)
    j = v.judge
    clauses = []
    if human is not None:
        dim = human.metric[len("human:"):]
        if human.winner:
            w = human.winner
            clauses.append(f"people rate {'it' if w == side else sys_name[w]} higher on {dim} "
                           f"({_margin(human, w)} on the {human.n} pairs)")
        else:
            clauses.append(f"people's {dim} ratings show no significant difference")
    clauses += _blank_clause(v)
    if v.context_mismatches:  # the replies of those pairs answer different inputs: nothing read on them is a comparison
        clauses.append(f"{mismatched_pairs_words(len(v.context_mismatches), v.n_pairs)}, so their replies answer "
                       "different inputs")
    combined_ran = v.combined is not None and bool(v.combined.n)
    could_not_combine = bool(policy.combine) and not combined_ran and bool(v.rows("metric") or j is not None)
    if combined_ran:
        clauses.append(_combined_clause(v, side, basis))
    elif could_not_combine:
        clauses.append(f"the verdict's combined test of {_listed(policy.combine)} could not run "
                       f"({_not_computed(v, policy.combine)}){_what_would_combine(v, policy)}")
    if basis == "lean":
        clauses.append(f"{_listed(decision.named)} all lean its way, none significantly"
                       + _record_words("verdict", "on rated data such a verdict"))
    if j is not None:
        s = j.winner or side or "A"  # the side the judge's numbers are stated for
        w = j.win
        rate, lo, hi = (w.rate, w.low, w.high) if s == "A" else (1 - w.rate, 1 - w.high, 1 - w.low)
        decided = w.wins + w.losses
        trust = _record_words(JUDGE, "on rated data it") if basis in ("judge", "conflict") else ""
        role = ("" if policy.decides(JUDGE) and is_measured_judge(j.signature) or JUDGE in v.combined_signals
                else f" ({judge_name(j.signature)}: diagnostic, no measured record)" if not is_measured_judge(j.signature)
                else " (diagnostic, not deciding)")
        if j.winner:
            lc = j.length_controlled
            at_len = ""
            if lc is not None and math.isfinite(lc.rate):
                at_len = f" ({fmt_percent(lc.rate if s == 'A' else 1 - lc.rate)} at equal length{j.at_length_words()})"
            # 'it' is the verdict's side, unless a clause before named the other system (then 'it' reads as that)
            named_other = side is not None and any(sys_name[other[side]] in c for c in clauses)
            clauses.append(f"{'but ' if side not in (None, s) else ''}the judge{role} prefers "
                           f"{'it' if s == side and not named_other else sys_name[s]} in {fmt_percent(rate)} of the "
                           f"{counted(decided, 'pair')} it decided{_span(lo, hi)}{at_len}{trust}")
        elif not decided:
            unread = len(j.unparsed)
            clauses.append(f"the judge{role} decides none of the {counted(j.n, 'pair')}" +
                           (f" ({unread} without an answer naming a reply in each order)" if unread
                            else " (it calls every one a tie)"))
        else:
            unseen = j.detectable(v.level)
            after = (f"; with these {j.n_contexts} contexts a difference smaller than {fmt_points(unseen)} "
                     "could go unseen" if math.isfinite(unseen) and j.n_contexts else "")
            clauses.append(f"the judge{role} finds no significant preference ({sys_name[s]} wins {fmt_percent(rate)} of "
                           f"the {counted(decided, 'pair')} it decided{_span(lo, hi)}{after})")
    mrows = v.rows("metric")
    unscored = [r for r in mrows if r.n == 0]
    mrows = [r for r in mrows if r.n > 0]
    in_test = set(v.combined_signals) if v.combined is not None else set()
    deciding = [r for r in mrows if policy.decides(r.metric)]
    members = [r for r in mrows if not policy.decides(r.metric) and r.metric in in_test]
    diagnostics = [r for r in mrows if not policy.decides(r.metric) and r.metric not in in_test]
    passed = set(deciding_winners(policy, [(r.metric, r.winner, r.p_randomization) for r in deciding], v.level))
    named_side, named_basis = (None, None) if basis in ("lean", "combined lean") else (side, basis)  # no metric decided
    clauses += _metric_clauses(v, deciding, named_side, named_basis, False, passed, others=bool(diagnostics))
    clauses += _metric_clauses(v, members, named_side, named_basis, True, members=True)
    clauses += _metric_clauses(v, diagnostics, named_side, named_basis, diagnostic=True)
    if unscored:
        clauses.append(f"{_names(unscored)} could not score these pairs{_unscored_reason(v, unscored)}")
    if basis in ("lean", "combined lean"):
        head = f"{sys_name[side]} is probably better than {sys_name[other[side]]}"
    elif side is not None:
        head = f"{sys_name[side]} is better than {sys_name[other[side]]}"
        if basis == "metrics" and (human is not None or j is not None):
            head += " on the metrics"  # people's ratings or the judge are there and name no winner
    elif basis == "conflict":
        head = f"Mixed evidence on {v.system_a} vs {v.system_b}"
    elif combined_ran and (any(r.winner for r in members + diagnostics) or (j is not None and j.winner)):
        head = f"The combined evidence does not separate {v.system_a} and {v.system_b}"
    elif could_not_combine and human is None:
        head = f"No verdict on {v.system_a} vs {v.system_b}"  # what it trusts was not computed: the clause says what
    elif any(r.winner for r in diagnostics) or (j is not None and j.winner and not policy.decides(JUDGE)
                                                 and JUDGE not in v.combined_signals):
        head = f"No trusted signal separates {v.system_a} and {v.system_b}"
    else:
        head = f"No significant difference between {v.system_a} and {v.system_b}"
    if not clauses:
        if v.rating_scales:  # people's ratings were all there was, and they could not be compared
            return (f"No verdict on {v.system_a} vs {v.system_b}", f" ({v.n_pairs} pairs; people's ratings are on "
                    "two scales and nothing else was measured).")
        return head, f" ({v.n_pairs} pairs; nothing was measured yet)."
    return head, ": " + "; ".join(clauses) + "."


def _track_record(rec: SignalRecord, who: str) -> str:
    """'dialeval's verdict named the one people preferred in 71 of 97 pairs of systems they rated, the other one in
    2 and neither in 24' (``who`` names what the record is of)."""
    neither = rec.pairs - rec.right - rec.wrong
    return (f"{who} named the one people preferred in {rec.right} of {rec.pairs} pairs of systems they rated, "
            f"the other one in {rec.wrong} and neither in {neither}")


def verdict_with_glance(v: Verdict) -> str:
    """The one-line verdict, then the evidence and the track record of :func:`verdict_glance`, a line each
    (``evidence: ...``): the head of ``dialeval compare``'s text."""
    return v.sentence + "".join(f"\n{k.lower()}: {t}" for k, t in verdict_glance(v)[1:])


def verdict_glance(v: Verdict, label: Callable[[str], str] | None = None) -> list[tuple[str, str]]:
    """The verdict for a reader with ten seconds, as labelled lines: [("Verdict", the headline of
    :func:`verdict_parts`), ("Evidence", how strong: statistically significant, a lean that is not, mixed, or
    none, in words), ("Track record", how often such a verdict named the system people prefer on rated data:
    the shipped policy's held-out record, ``checkpoints/verdict-policy.json``)]; [] for a verdict with nothing
    to compare. The one-line verdict (:func:`verdict_sentence`) gives the evidence signal by signal."""
    head, rest = verdict_parts(v, label)
    if not rest.startswith(":"):  # identical replies, nothing measured: the headline is the whole verdict
        return []
    if label is not None and _WORDS.get() is None:
        return _said_with(label, verdict_glance, v)
    shipped = shipped_policy()
    decision = verdict_decision(v, shipped.policy)
    basis, c = decision.basis, v.combined
    ran = c is not None and bool(c.n)
    in_place = ran and tuple(v.combined_signals) != tuple(shipped.policy.combine)
    n = counted(v.n_pairs, "pair")  # each test below is said on the pairs it read, as the sentence says it
    if basis == "people":
        human = preferred_human_row(v)
        evidence = (f"people's ratings in the input (statistically significant, {fmt_p(human.p_randomization)}, "
                    f"{counted(human.n, 'pair')}); the verdict follows them")
    elif basis == "combined":
        evidence = (f"strong (statistically significant): the combined evidence of {_listed(v.combined_signals)} "
                    f"({fmt_p(c.p_randomization)}, {counted(c.n, 'pair')})")
    elif basis == "combined lean":
        evidence = (f"weak (not statistically significant): the combined evidence of {_listed(v.combined_signals)} "
                    f"leans this way ({fmt_p(c.p_randomization)}, {counted(c.n, 'pair')}), so 'probably'")
    elif basis == "judge":
        w = v.judge.win
        evidence = (f"strong (statistically significant): the judge ({fmt_p(w.sign_p)}, "
                    f"{counted(w.wins + w.losses, 'pair')} it decided)")
    elif basis == "metrics":
        evidence = f"strong (statistically significant): {_listed(decision.named)} ({n})"
    elif basis == "lean":
        evidence = (f"weak (not statistically significant): {_listed(decision.named)} all lean this way ({n}), so "
                    "'probably'")
    elif basis == "conflict" and ran and tuple(decision.named) == tuple(v.combined_signals):
        evidence = (f"mixed: the combined evidence of {_listed(v.combined_signals)} names one system and "
                    f"{_listed(decision.against)}, by its own test, the other, so the verdict names neither")
    elif basis == "conflict":
        evidence = (f"mixed: {_listed(decision.named)} name one system and {_listed(decision.against)} the other, so "
                    "the verdict names neither")
    elif ran:
        evidence = (f"not enough: the combined evidence of {_listed(v.combined_signals)} does not separate them "
                    f"({fmt_p(c.p_randomization)}, {counted(c.n, 'pair')}); more contexts might")
    elif shipped.policy.combine and not decision.named:
        evidence = f"none: the verdict's combined test could not run ({_not_computed(v, shipped.policy.combine)})"
    else:
        evidence = f"not enough: no signal the verdict trusts separates them ({n})"
    if basis == "people":
        record = "the verdict comes from people's own ratings of these replies"
    elif shipped.policy.combine and not ran:
        record = "none for a verdict without its combined test"
    elif in_place:
        rec = shipped.record(combined_name(v.combined_signals))
        record = (f"not measured for this verdict ({_not_computed(v, shipped.policy.combine)}); "
                  + (_track_record(rec, f"where significant, the combined test of {_listed(v.combined_signals)}")
                     if rec is not None and rec.pairs else "its combined test has no record"))
    else:
        rec = shipped.record("verdict")
        record = (_track_record(rec, "tested on rated sets it was not tuned on, dialeval's verdict")
                  if rec is not None and rec.pairs else "not measured")
        significant = shipped.record("combined")  # the sentence quotes it beside the combined test: tied to it here
        if basis == "combined" and rec is not None and rec.pairs and significant is not None and significant.pairs:
            record += (f"; where its combined test was significant, as here: the one people preferred in "
                       f"{significant.right}, the other one in {significant.wrong}")
    return [("Verdict", head), ("Evidence", evidence), ("Track record", record)]


# ------------------------------------------------------------------------------------------------
# the verdict's notes (every surface shows them: text and markdown headers, csv note rows, json, the report, Home)


def names_note(v: Verdict) -> str:
    """A warning when the two systems' names differ only in white space, case or how an accent is encoded ('bot'
    and 'bot ', 'béta' typed as one character or two: ``core.data.look_alike``), which every table shows alike;
    the names as ``ascii`` writes them, so the difference shows; empty otherwise."""
    a, b = v.system_a, v.system_b
    if a == b or look_alike(a) != look_alike(b):
        return ""
    return (f"the two systems' names differ only in spaces, case or how an accent is encoded ({ascii(a)} and "
            f"{ascii(b)}): check they are the ones meant")


def one_sided_ratings_note(v: Verdict) -> str:
    """Which human dimensions only one system is rated on (not compared), with a hint when two of them differ
    only in case ('fluency' and 'Fluency'); empty otherwise."""
    if not v.one_sided_ratings:
        return ""
    name = {"A": v.system_a, "B": v.system_b}
    listed = ", ".join(f"{d!r} ({name[s] + ' only' if s else 'both, never one pair'})"
                       for d, s in v.one_sided_ratings.items())
    folded = Counter(d.casefold() for d in v.one_sided_ratings)
    hint = ("; names that differ only in case are different dimensions: rename one in its file to compare them"
            if any(n > 1 for n in folded.values()) else "")
    return f"people's ratings of {listed} rate no pair on both sides, so they are not compared{hint}"


def verdict_notes(v: Verdict) -> dict[str, str]:
    """The verdict's notes every surface shows (text and markdown headers, the csv's ``note`` rows, the HTML
    report, the home page), keyed by an anchor: metrics that do not pass Holm, few contexts, names alike,
    ratings on one side only, references taken from the other side, what a tie is in people's rows."""
    notes = {"holm": holm_note(v), "few-contexts": few_contexts_note(v), "names": names_note(v),
             "one-sided-ratings": one_sided_ratings_note(v),
             "rating-scales": "; ".join(f"{why}: not compared" for why in v.rating_scales.values()), "shared-references": shared_references_note(v),
             "human-ties": human_ties_note(v)}
    return {k: n for k, n in notes.items() if n}


def human_ties_note(v: Verdict) -> str:
    """'in people's win/tie/loss, mean ratings closer than 1 on overall (a quarter of the scale) are a tie': the
    human rows count ties by a margin (``core.human_preferences.human_tie_margin``), the metric rows only equal
    values; empty without human rows."""
    by_margin: dict[float, list[str]] = {}
    for r in v.rows("human"):
        if r.tie_margin:
            by_margin.setdefault(r.tie_margin, []).append(r.metric.split(":", 1)[1])
    if not by_margin:
        return ""
    said = "; ".join(f"{m:g} on {', '.join(dims)}" for m, dims in by_margin.items())
    return f"in people's win/tie/loss, mean ratings closer than {said} (a quarter of the scale) are a tie"


def shared_references_note(v: Verdict) -> str:
    """Which side's rows had no references and were scored with the other side's for the same context
    (``core.data.share_references``); empty when none were."""
    name = {"A": v.system_a, "B": v.system_b}
    other = {"A": "B", "B": "A"}
    return "; ".join(f"{n} of {name[side]}'s rows have no reference: they are scored with {name[other[side]]}'s "
                     "references for the same context (references belong to the context, so both replies are "
                     "scored against the same ones)" for side, n in v.shared_references.items() if n)


def holm_note(v: Verdict) -> str:
    """Which deciding metrics name a winner alone but not once the deciding metrics are corrected together
    (Holm), as the one-line verdict reads them; empty when there are none (or the verdict policy lets no metric
    decide on its own test)."""
    deciding, passed = deciding_holm(v)
    alone = [r.metric for r in deciding if r.winner and r.metric not in passed]
    if not alone:
        return ""
    return (f"each metric's row tests it alone, the one-line verdict its {len(deciding)} deciding metrics that "
            f"scored pairs together (Holm), which {', '.join(alone)} do{'es' * (len(alone) == 1)} not pass")


def few_contexts_note(v: Verdict) -> str:
    """Why rows have no interval, bootstrap p or winner when a metric covers fewer than ``MIN_RESAMPLED``
    contexts, or too few for any p below the threshold (5 contexts: the smallest randomization p is 2/2^5 =
    0.0625); empty otherwise (text and markdown headers, the csv's ``note`` row, the HTML report, the
    dashboard)."""
    few = sorted({r.n_contexts for r in v.metrics if 0 < r.n_contexts < MIN_RESAMPLED})
    alpha = 1 - v.level
    hopeless = sorted({r.n_contexts for r in v.metrics if r.n_contexts >= MIN_RESAMPLED
                       and not can_be_significant(r.n_contexts, alpha)})
    notes = []
    if few:
        notes.append(f"{' or '.join(map(str, few))} context{'s' * (few != [1])} cannot be resampled (fewer than "
                     f"{MIN_RESAMPLED}): no interval or bootstrap p ('-') and no winner there")
    if hopeless:
        k = hopeless[0]
        notes.append(f"{' or '.join(map(str, hopeless))} contexts are too few for any winner at p < {alpha_label(v.level)}: "
                     f"the smallest randomization p there is 2/2^{k} = {2 / 2 ** k:.3g}")
    return "; ".join(notes)
