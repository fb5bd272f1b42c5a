"""System-level meta-evaluation: how often each signal, and the one-line verdict itself, names the system people
prefer.

For every rated data set and every pair of its systems that answered shared contexts (``core.data.compare_systems``:
pairwise on the contexts both answered, so a set where no context has every system still counts), the pair is
compared as a user would compare it, with people's ratings hidden: each metric's row of the verdict
(``core.verdict.compare_values``: contexts resampled, randomization p < 0.05 and an interval that excludes 0),
the judge's summary (its sign test on wins and losses, clustered by context) and the one-line verdict's side
under a :class:`~core.verdict_policy.VerdictPolicy` (``decide``). People's side comes from their ratings on the
dimension asked for, else the set's preference dimension (``core.verdict.preference_dimension``), by the same
paired test, with the human tie
margin (a quarter of the scale): **people separate** the two systems when that test names a winner.

Per signal, over the system pairs people separate (:func:`summarize`):

- ``order``: the share where the signal's mean difference (the judge: its win rate among the pairs it decided)
  points to people's winner (pairwise accuracy);
- ``right`` / ``wrong`` / ``none``: where the signal's own test names people's winner, the other system, or
  neither;
- Kendall's tau of its ordering against people's over every system pair of the set, separated or not:
  (concordant - discordant) / pairs, a pair people rate exactly alike counting as neither (tau-a over system
  pairs, which needs no common set of contexts).

Rows whose reply copies their own reference (the "ground truth" systems of USR and Zhao et al.) are left out
as in the per-row meta-evaluation: a reference-reading metric scores them perfectly by construction. Learned
metrics are scored held out where they offer it (``Metric.held_out_for``); the judge as shipped, with the sets
it trained on flagged (``JUDGE_TRAINING_SETS``).

Command line: ``dialeval meta-eval --level system FILE...`` (``core/cli/meta_eval.py``).
"""
from __future__ import annotations

import itertools
import math
from collections import OrderedDict
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from core.data import Example, case_blind_name, compare_systems, dimensions, systems_in
from core.engine import is_reference_copy, judge_comparison, score_examples
from core.rated_sets import rated_set_of
from core.scoring import Metric, Options, get_metric
from core.verdict import (LEVEL, N_BOOT, N_PERM, compare_ratings, compare_values, comparison_silent_sides,
                          context_groups, preference_dimension, summarize_judge)
from core.settings import SEED
from core.verdict_policy import (COMBINED, JUDGE, SignalRecord, VerdictPolicy, combined_name,
                                 combined_values, decide)

VERDICT = "verdict"  # the one-line verdict's name among the signals
COMBINED_LEAN_P = (0.1, 0.2, 0.3)  # the p below which a candidate policy's combined test may lean (0: never)
GENERIC_BAR = 0.95  # a deciding signal prefers a real reply to a generic one in at least this share of rule-made pairs
# the sets the shipped judge trained on (their training-split contexts; docs/judge.md): its system-level record
# on them is not a held-out one
JUDGE_TRAINING_SETS = ("usr-topical", "usr-persona", "convai2-grade", "empathetic-grade", "persona-zhao", "dstc7",
                       "humod")
MIN_SHARED_CONTEXTS = 5  # system pairs with fewer shared contexts cannot be significant at 0.05 (skipped, counted)


@dataclass
class SignalCall:
    """One signal on one system pair: which system its mean difference favours (``order``: "A", "B" or None for
    a tie or no score) and which its own test names (``winner``: "A", "B" or None); ``p``: the p-value of that
    test (a metric's randomization p, the judge's sign test), NaN where it has none."""

    order: str | None
    winner: str | None
    p: float = math.nan


PEOPLE_TIE_TOL = 1e-9  # |people's mean difference| at most this (in rating points): the two systems rated alike


@dataclass
class SystemPair:
    """One pair of systems of one data set, compared with people's ratings hidden."""

    dataset: str
    system_a: str
    system_b: str
    n_pairs: int
    n_contexts: int
    dimension: str
    people_diff: float  # people's mean rating of A - B
    people_low: float
    people_high: float
    people: str | None  # people's winner by the paired test ("A" / "B"), None when they do not separate them
    calls: dict[str, SignalCall] = field(default_factory=dict)
    computed: list[str] = field(default_factory=list)  # the signals with values here (empty: every one called)
    rated_set: str = ""  # the development set its rows are, known by content (core.rated_sets), where not ``dataset``

    @property
    def people_order(self) -> str | None:
        """The side people's mean rating favours; None where they rated the two alike (within
        :data:`PEOPLE_TIE_TOL`: two means of the same ratings differ in the 17th digit) or did not rate both."""
        if not math.isfinite(self.people_diff) or abs(self.people_diff) <= PEOPLE_TIE_TOL:
            return None
        return "A" if self.people_diff > 0 else "B"

    @property
    def rated(self) -> bool:
        """Whether people rated both systems on the pair's contexts (their mean difference exists)."""
        return math.isfinite(self.people_diff)

    def metric_calls(self) -> list[tuple[str, str | None, float, str | None]]:
        return [(s, c.winner, c.p, c.order) for s, c in self.calls.items()
                if s not in (JUDGE, VERDICT) and not s.startswith(COMBINED)]

    def verdict_under(self, policy: VerdictPolicy, level: float = LEVEL) -> SignalCall:
        """The one-line verdict's call on this pair under ``policy`` (people's ratings hidden)."""
        judge = self.calls.get(JUDGE)
        # the policy's combined test of the signals computed here, as the product chooses it
        names = policy.combination(self.computed or [s for s in self.calls
                                                     if s != VERDICT and not s.startswith(COMBINED)])
        combined = self.calls.get(combined_name(names)) if names else None
        d = decide(policy, None, judge.winner if judge else None, self.metric_calls(), level,
                   judge.order if judge else None,
                   (combined.winner, names, combined.order, combined.p) if combined else None)
        return SignalCall(d.side, d.side)


def policy_combinations(policy: VerdictPolicy) -> list[tuple[str, ...]]:
    """The sets of signals whose combined test ``policy`` may read: its ``combine`` and ``combine_allowed``."""
    return [tuple(policy.combine), *policy.combine_allowed] if policy.combine else []


def combinations_of(signals: Sequence[str], smallest: int = 1) -> list[tuple[str, ...]]:
    """Every subset of ``signals`` with at least ``smallest`` members, each in sorted order."""
    names = sorted(signals)
    return [c for k in range(smallest, len(names) + 1) for c in itertools.combinations(names, k)]


def system_pairs(examples: Sequence[Example], min_contexts: int = MIN_SHARED_CONTEXTS,
                 keep_reference_copies: bool = False) -> tuple[list, int]:
    """Every pair of systems (names in sorted order, A first) aligned on the contexts both answered, and how many
    pairs were skipped for sharing fewer than ``min_contexts`` contexts."""
    rows = [ex for ex in examples if keep_reference_copies or not is_reference_copy(ex)]
    out, skipped = [], 0
    for a, b in itertools.combinations(sorted(systems_in(rows)), 2):
        comp = compare_systems(rows, a, b)
        if len(set(context_groups(comp.a))) < min_contexts:
            skipped += 1
            continue
        out.append(comp)
    return out, skipped


def _order(diff: float, higher_is_better: bool = True) -> str | None:
    if not math.isfinite(diff) or diff == 0:
        return None
    return "A" if (diff > 0) == higher_is_better else "B"


def evaluate_dataset(name: str, examples: Sequence[Example], metrics: Sequence[str | Metric], judge: bool = True,
                     held_out: bool = True, options: Options | None = None, n_boot: int = N_BOOT,
                     n_perm: int = N_PERM, level: float = LEVEL, seed: int = SEED,
                     min_contexts: int = MIN_SHARED_CONTEXTS, keep_reference_copies: bool = False,
                     progress: Callable | None = None, log: Callable[[str], None] | None = None,
                     combine: bool | Sequence[Sequence[str]] = False,
                     dimension: str | None = None, warn: Callable[[str], None] | None = None) -> list[SystemPair]:
    """Every system pair of one data set (:func:`system_pairs`) with each metric's, the judge's and people's
    calls, and the combined test's call (``core.verdict_policy.combined_values``, named by
    :func:`combined_name`) for every set of those signals (``combine`` True) or for each set ``combine`` lists
    whose signals were all computed (:func:`policy_combinations` gives the shipped policy's).
    People's side is read on ``dimension`` (case ignored where only one dimension matches it, ``core.data.case_blind_name``;
    a set without it is skipped, and said), by default on
    the set's overall-like dimension (``core.human_preferences.preference_dimension``).
    Each row is scored once (score cache consulted), then sliced per pair. What is left out (a set without the
    dimension, rows that copy their reference, system pairs with too few shared contexts) goes to ``warn``, else
    to ``log``; progress to ``log``."""
    warn = warn or log
    chosen = None
    if dimension is not None:
        chosen = case_blind_name(dimension, dimensions(examples))
        if chosen is None:
            if warn:
                alike = [d for d in dimensions(examples) if d.casefold() == dimension.casefold()]
                warn(f"{name}: " + (f"{len(alike)} human dimensions match {dimension!r} but for case ({', '.join(alike)}): "
                                   "name one as the file spells it" if alike else
                                   f"no human dimension {dimension!r} (it has {dimensions(examples) or 'none'})")
                    + ": skipped")
            return []
    comps, skipped = system_pairs(examples, min_contexts, keep_reference_copies)
    copies = [] if keep_reference_copies else [ex for ex in examples if is_reference_copy(ex)]
    if warn and copies:  # a system whose every reply is its reference leaves the table: said, not silently
        kept = set(systems_in(ex for ex in examples if not is_reference_copy(ex)))
        gone = [s for s in systems_in(examples) if s not in kept]
        warn(f"{name}: {len(copies)} row(s) that copy their own reference left out"
            + (f" ({', '.join(gone)}: every row, so no pair of {'it' if len(gone) == 1 else 'them'})" if gone else "")
            + "; --keep-reference-copies keeps them")
    if warn and skipped:
        warn(f"{name}: {skipped} system pair(s) share fewer than {min_contexts} contexts: skipped")
    if not comps:
        return []
    rows = list({id(ex): ex for comp in comps for ex in comp.examples()}.values())
    source = rated_set_of(rows)  # the development set these rows are, whatever the set is called
    trained_as = source.name if source else name
    if log and held_out and trained_as != name:
        log(f"{name}: {source.rows} of {source.of} rows are rows of the development set {trained_as}: the learned "
            "metrics are held out from it")
    built = [spec if isinstance(spec, Metric) else get_metric(spec, options) for spec in metrics]
    table = score_examples(rows, built, options, progress) if built else None
    for metric in built if held_out else []:  # learned metrics held out: re-weighed, else scored again
        alt = metric.held_out_for(trained_as)
        if alt is None:
            continue
        shipped = table.results[metric.name]
        again = alt.rescored(shipped)
        table.results[metric.name] = (replace(shipped, scores=again, signature=alt.signature()) if again is not None
                                      else score_examples(rows, [alt], options, progress).results[metric.name])
    position = {id(ex): i for i, ex in enumerate(rows)}
    dim = chosen or preference_dimension(rows)
    better = {m.name: m.higher_is_better for m in built}
    out = []
    for comp in comps:
        idx = [position[id(ex)] for ex in comp.examples()]
        groups = context_groups(comp.a)
        n = len(comp.pairs)
        summary = summarize_judge(comp, judge_comparison(comp, progress=progress), level=level, n_boot=n_boot,
                                  seed=seed) if judge else None
        people = next((r for r in compare_ratings(comp, n_boot, n_perm, level, seed) if r.metric == f"human:{dim}"),
                      None)
        pair = SystemPair(name, comp.system_a, comp.system_b, n, len(set(groups)), dim or "",
                          people.diff if people else math.nan, people.low if people else math.nan,
                          people.high if people else math.nan, people.winner if people else None,
                          rated_set=trained_as if trained_as != name else "")
        differences = {}  # per signal, its per-pair difference oriented to favour A when positive
        for m, res in (table.results.items() if table else ()):
            values = np.asarray(res.scores, dtype=np.float64)[idx]
            r = compare_values(m, "metric", values[:n], values[n:], groups, higher_is_better=better[m],
                               n_boot=n_boot, n_perm=n_perm, level=level, seed=seed)
            pair.calls[m] = SignalCall(_order(r.diff, r.higher_is_better) if r.n else None, r.winner,
                                       r.p_randomization)
            if r.n:
                differences[m] = (values[:n] - values[n:]) * (1 if better[m] else -1)
        if summary is not None:
            w = summary.win
            pair.calls[JUDGE] = SignalCall(_order(w.rate - 0.5) if w.wins + w.losses else None, summary.winner,
                                           w.sign_p)
            differences[JUDGE] = np.asarray(summary.p_a, dtype=np.float64) - 0.5
        pair.computed = list(differences)
        combos = (combinations_of(list(differences)) if combine is True else
                  [tuple(sorted(c)) for c in combine or () if set(c) <= set(differences)])
        silent = comparison_silent_sides(comp)
        for combo in dict.fromkeys(combos):
            r = compare_values("combined", "combined", combined_values({s: differences[s] for s in combo}, silent),
                               np.zeros(n), groups, n_boot=n_boot, n_perm=n_perm, level=level, seed=seed)
            pair.calls[combined_name(combo)] = SignalCall(_order(r.diff) if r.n else None, r.winner,
                                                          r.p_randomization)
        out.append(pair)
    if log:
        unrated = sum(not p.rated for p in out)
        rated = {ex.system for ex in rows if dim is not None and math.isfinite(ex.scores.get(dim, math.nan))}
        unrated_systems = [s for s in systems_in(rows) if s not in rated]
        log(f"{name}: {len(out)} system pairs, people separate {sum(p.people is not None for p in out)}"
            + (f"; {unrated} pair(s) without people's ratings on both sides"
               + (f" ({', '.join(unrated_systems)}: no {dim} rating)" if dim and unrated_systems else
                  " (no human dimension)" if not dim else "") + ": not in Kendall tau" if unrated else ""))
    return out


def system_level(datasets: Mapping[str, Sequence[Example]], metrics: Sequence[str | Metric], judge: bool = True,
                 **kwargs: Any) -> list[SystemPair]:
    """:func:`evaluate_dataset` over every data set ({name: rows}, as ``core.meta_eval.group_datasets`` gives)."""
    out: list[SystemPair] = []
    for name, exs in datasets.items():
        out += evaluate_dataset(name, exs, metrics, judge, **kwargs)
    return out


def with_verdict(pairs: Iterable[SystemPair], policy: VerdictPolicy, level: float = LEVEL) -> list[SystemPair]:
    """The pairs with the one-line verdict's call under ``policy`` added as the signal ``"verdict"``."""
    out = []
    for p in pairs:
        q = SystemPair(**{**asdict(p), "calls": dict(p.calls)})
        q.calls = {**p.calls, VERDICT: p.verdict_under(policy, level)}
        out.append(q)
    return out


UNDECIDED = "the verdict cannot decide on these signals: see the warning"  # its rows' note where it cannot


def undecidable_verdict_note(signals: Sequence[str], policy: VerdictPolicy) -> str | None:
    """The warning when the one-line verdict cannot decide on ``signals`` (its combined test needs signals not
    among them, and none may decide alone): its row would count every pair as 'names none'; None when it can."""
    if not policy.combine or policy.combination(signals) or any(policy.decides(s) for s in signals):
        return None
    return (f"the one-line verdict cannot decide on {', '.join(signals) or 'nothing'}: its combined test sums "
            f"{'+'.join(policy.combine)} (or one of the sets the policy allows in its place: "
            f"{'; '.join('+'.join(c) for c in policy.combine_allowed[:3])}; ...), so its row counts every pair as "
            "'names none'; add the missing signals to measure it")


def without_undecided_verdict(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """:func:`summarize`'s rows where the verdict could not decide (:func:`undecidable_verdict_note`): its rows'
    order and Kendall tau are None (no ranking to compare, where 0.000 read as 'never agrees with people') and
    their note says why."""
    return [{**r, "order": None, "kendall_tau": None, "note": UNDECIDED} if r["signal"] == VERDICT else
            {**r, "note": r.get("note", "")} for r in rows]


def signals_of(pairs: Sequence[SystemPair]) -> list[str]:
    """The signals called on ``pairs`` (the combined tests left out: one per set of signals)."""
    return list(dict.fromkeys(s for p in pairs for s in p.calls if not s.startswith(COMBINED)))


def record(pairs: Sequence[SystemPair], signal: str) -> SignalRecord:
    """``signal``'s :class:`SignalRecord` over the pairs people separate."""
    sep = [p for p in pairs if p.people is not None and signal in p.calls]
    right = sum(p.calls[signal].winner == p.people for p in sep)
    wrong = sum(p.calls[signal].winner not in (None, p.people) for p in sep)
    order = sum(p.calls[signal].order == p.people for p in sep)
    return SignalRecord(signal, len(sep), right, wrong, order, len({p.dataset for p in sep}))


def kendall_tau(pairs: Sequence[SystemPair], signal: str) -> float:
    """(concordant - discordant) / system pairs people rated: ``signal``'s order against people's mean order (a
    pair either side leaves unordered, people's tie included, counts as neither: tau-a); a pair people did not rate
    on both sides is left out; NaN without pairs, or where people order none of them (every rating alike: no
    order to agree with, where 0.000 read as 'unrelated to people')."""
    xs = [p for p in pairs if signal in p.calls and p.rated]
    if not xs or all(p.people_order is None for p in xs):
        return math.nan
    score = sum(0 if p.people_order is None or p.calls[signal].order is None else
                (1 if p.calls[signal].order == p.people_order else -1) for p in xs)
    return score / len(xs)


def summarize(pairs: Sequence[SystemPair], by_dataset: bool = True) -> list[dict[str, Any]]:
    """One row per (data set, signal) and per signal over all sets (``dataset`` "all"): system pairs, pairs
    people separate, order agreement, right / wrong / none, Kendall's tau."""
    groups: OrderedDict[str, list[SystemPair]] = OrderedDict()
    if by_dataset:
        for p in pairs:
            groups.setdefault(p.dataset, []).append(p)
    rows = []
    for ds, ps, pooled in [*((d, ps, False) for d, ps in groups.items()), ("all", list(pairs), True)]:
        for s in signals_of(ps):
            r = record(ps, s)
            taus = [kendall_tau([p for p in ps if p.dataset == d], s) for d in dict.fromkeys(p.dataset for p in ps)]
            taus = [t for t in taus if math.isfinite(t)]
            rows.append({"dataset": ds,
                         "dimension": ", ".join(dict.fromkeys(p.dimension for p in ps)), "signal": s,
                         "system_pairs": sum(s in p.calls for p in ps),
                         "rated_pairs": sum(s in p.calls and p.rated for p in ps),
                         "separated": r.pairs, "order": r.order / r.pairs if r.pairs else math.nan,
                         "right": r.right, "wrong": r.wrong, "none": r.pairs - r.right - r.wrong,
                         "right_share": r.right / r.pairs if r.pairs else math.nan,
                         "wrong_share": r.wrong / r.pairs if r.pairs else math.nan,
                         "kendall_tau": float(np.mean(taus)) if taus else math.nan,
                         "judge_trained_on": bool({p.rated_set or p.dataset for p in ps} & set(JUDGE_TRAINING_SETS)) and (
                             s == JUDGE or s == VERDICT and any(JUDGE in p.calls for p in ps)),
                         "pooled": pooled})
    return rows


# ------------------------------------------------------------------------------------------------
# choosing the verdict policy


def candidate_policies(metrics: Sequence[str], lean: bool = True, judge: bool = True,
                       combine: Sequence[tuple[str, ...]] = (), lean_p: Sequence[float] = COMBINED_LEAN_P
                       ) -> list[VerdictPolicy]:
    """Every policy over ``metrics``: each subset may decide, the judge first, in agreement, or off, metrics
    alone or never alone (the empty subset once per judge role); with ``lean``, each of those without a lean and
    with the lean of every set of two or more signals (the judge, when ``judge``, and ``metrics``). Then, for
    each set of signals in ``combine``, its combined test first (vetoed by those of its signals that are among
    the judge and ``metrics``), followed by nothing or by each of those policies without a lean, and last its
    direction at p below nothing or each of ``lean_p`` (:data:`COMBINED_LEAN_P`). Simpler policies come first."""
    signals = [JUDGE, *metrics] if judge else list(metrics)
    leans = [()] + ([tuple(c) for k in range(2, len(signals) + 1) for c in itertools.combinations(signals, k)]
                    if lean else [])
    out = []
    for leaning_on in leans:
        for k in range(len(metrics) + 1):
            for subset in itertools.combinations(metrics, k):
                for role in ("first", "agree", "off"):
                    for alone in ((True, False) if subset else (False,)):
                        if role == "off" and not alone:
                            continue
                        if role == "agree" and not subset:
                            continue
                        out.append(VerdictPolicy(tuple(subset), role, alone, leaning_on))
    plain = [p for p in out if not p.lean]
    for combo in combine:
        # the combined test's signals that may decide alone veto it when their own test names the other system
        test = {"combine": tuple(sorted(combo)), "combine_vetoes": tuple(s for s in sorted(combo) if s in signals)}
        for below in (0.0, *lean_p):
            out += [VerdictPolicy((), "off", False, (), **test, combine_lean=below)]
            out += [replace(p, **test, combine_lean=below) for p in plain]
    return out


def bar_candidates(generic: Mapping[str, float], metrics: Sequence[str], bar: float,
                   lean_p: Sequence[float] = COMBINED_LEAN_P
                   ) -> tuple[list[str], list[tuple[str, ...]], list[VerdictPolicy]]:
    """The candidate policies over the signals that pass the generic-reply bar: ``generic`` gives, per signal and
    per combined test (:func:`combined_name`), the share of rule-made pairs where it prefers a real reply to a
    generic one; a metric at ``bar`` or above may decide alone, a set of two or more signals may be combined.
    Returns (those metrics, those sets, :func:`candidate_policies` over them, leaning below each of ``lean_p``)."""
    sane = [m for m in metrics if generic.get(m, 0) >= bar]
    combos = [c for c in combinations_of([JUDGE, *metrics], 2) if generic.get(combined_name(c), 0) >= bar]
    return sane, combos, candidate_policies(sane, judge=generic.get(JUDGE, 0) >= bar, combine=combos, lean_p=lean_p)


def policy_score(pairs: Sequence[SystemPair], policy: VerdictPolicy, level: float = LEVEL) -> tuple[int, int, int]:
    """(right, wrong, separated) of the verdict under ``policy`` on the pairs people separate."""
    sep = [p for p in pairs if p.people is not None]
    calls = [p.verdict_under(policy, level).winner for p in sep]
    right = sum(c == p.people for c, p in zip(calls, sep))
    wrong = sum(c not in (None, p.people) for c, p in zip(calls, sep))
    return right, wrong, len(sep)


def best_policy(pairs: Sequence[SystemPair], candidates: Sequence[VerdictPolicy], wrong_cost: float,
                level: float = LEVEL) -> VerdictPolicy:
    """The candidate with the highest right - ``wrong_cost`` x wrong on ``pairs``; equal scores go to the
    candidate listed first (fewer deciding metrics first: :func:`candidate_policies`' order)."""
    def utility(pol: VerdictPolicy) -> float:
        right, wrong, _ = policy_score(pairs, pol, level)
        return right - wrong_cost * wrong
    return max(enumerate(candidates), key=lambda ic: (utility(ic[1]), -ic[0]))[1]


def leave_one_set_out(pairs: Sequence[SystemPair], candidates: Sequence[VerdictPolicy], wrong_cost: float,
                      level: float = LEVEL) -> list[dict[str, Any]]:
    """For each data set: the policy chosen on the other sets (:func:`best_policy`) and its verdict's right /
    wrong / none on the held-out set's separated pairs; ``by_pair``: (shared contexts, "right" / "wrong" /
    "none") for each of them."""
    rows = []
    for ds in dict.fromkeys(p.dataset for p in pairs):
        train = [p for p in pairs if p.dataset != ds]
        test = [p for p in pairs if p.dataset == ds]
        pol = best_policy(train, candidates, wrong_cost, level)
        by_pair = [(p.n_contexts, "right" if c == p.people else "none" if c is None else "wrong")
                   for p in test if p.people is not None for c in [p.verdict_under(pol, level).winner]]
        got = [k for _, k in by_pair]
        rows.append({"held_out": ds, "policy": pol.name, "separated": len(got), "right": got.count("right"),
                     "wrong": got.count("wrong"), "none": got.count("none"), "by_pair": by_pair})
    return rows


_SYSTEM_TABLE = [("dataset", "dataset"), ("dimension", "dimension"), ("signal", "signal"),
                 ("system_pairs", "system pairs"), ("rated_pairs", "people rated"),
                 ("separated", "people separate"), ("order", "same order"), ("right", "names people's winner"),
                 ("wrong", "names the other"), ("none", "names none"), ("kendall_tau", "Kendall tau-a"),
                 ("note", "note")]


def with_settings(rows: Sequence[dict[str, Any]], level: float, n_boot: int, n_perm: int,
                  seed: int) -> list[dict[str, Any]]:
    """:func:`summarize`'s rows with the settings their tests ran under (``ci_level``, ``n_boot``, ``n_perm``,
    ``seed``, as the turn level's rows carry theirs): two tables made at another level or seed are told apart."""
    return [{**r, "ci_level": level, "n_boot": n_boot, "n_perm": n_perm, "seed": seed} for r in rows]


def format_system_rows(rows: Sequence[dict[str, Any]], fmt: str = "text") -> str:
    """:func:`summarize`'s rows as a table (text / markdown / csv) or JSON; text and markdown open with the
    settings (:func:`with_settings`) where the rows carry them."""
    from core.formatting import fmt_num, fmt_percent, level_label
    from core.report import render, to_json
    if fmt == "json":
        return to_json(rows)
    if fmt == "csv":
        return render(rows, [(k, k) for k in rows[0]] if rows else [], "csv")
    cells = []
    for r in rows:
        n = r["separated"]
        c = {k: r.get(k, "") for k in ("dataset", "dimension", "signal", "system_pairs", "rated_pairs", "separated")}
        c["order"] = f"{fmt_num(r['order'])}" if n and r["order"] is not None else "-"
        for k in ("right", "wrong"):
            c[k] = f"{r[k]} ({fmt_percent(r[k], n)})" if n else "-"
        c["none"] = str(r["none"]) if n else "-"
        c["kendall_tau"] = fmt_num(r["kendall_tau"])
        c["note"] = r.get("note") or (("the judge trained on some of these sets' other contexts" if r.get("pooled")
                                       else "the judge trained on this set's other contexts")
                                      if r.get("judge_trained_on")
                                      else "")
        cells.append(c)
    first = rows[0] if rows else {}
    head = (f"people's winner and each signal's by paired tests at {level_label(first['ci_level'])} "
            f"({first['n_boot']:,} resamples of the contexts, {first['n_perm']:,} randomizations, seed "
            f"{first['seed']})\n" if "ci_level" in first else "")
    return head + render(cells, _SYSTEM_TABLE, fmt)
