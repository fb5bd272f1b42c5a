"""A leaderboard of two or more systems (made for three or more) that answered the same contexts.

- **Shared contexts.** Every system's rows are matched by id (when every row has one and the ids overlap),
  else by context (whitespace and case ignored); only contexts every system answered are compared, the rest
  are listed, never dropped silently. A context a system answered more than once meets the others' answers to
  it in order of appearance, as ``core.data.align`` pairs two systems, and is one resampling unit.
- **Per metric**: each system's mean with a percentile bootstrap interval over contexts (``core.stats.mean_ci``,
  2,000 resamples, seed 13), and every pair of systems compared as ``core.verdict`` compares two (paired,
  contexts resampled, approximate randomization p). The p-values of one metric's pairs are one family and are
  adjusted with **Holm's** step-down method (``core.stats.holm``); a pair differs when its Holm p < 0.05 and
  its interval excludes 0.
- **With the judge**: every pair of systems is judged on every shared context (both orders, the shipped A/B
  judge through ``core.engine``), and **Bradley-Terry** strengths are fitted to all those preferences
  (``P(i beats j) = sigmoid(theta_i - theta_j)``, Bradley & Terry 1952; a tie is half a win to each side) with
  bootstrap intervals that resample contexts (``core.stats.bradley_terry_ratings``), shown on the Elo scale
  (1000 + 400 / ln 10 * theta) as Chatbot Arena does. Pairwise: the judge's win rate with the sign test,
  Holm-adjusted over the pairs.
- **People's ratings** in the input (``scores``): every human dimension gets each system's mean with its
  interval and every pair compared as the verdict compares people's ratings (``core.verdict.compare_ratings``:
  ties within a quarter of the scale), Holm-adjusted per dimension.
- **Order** (``rank_by``, default ``auto``): as the verdict decides, people first: by the mean rating on the
  dimension that stands for overall preference (``core.verdict.preference_dimension``) when people rated
  every system on every shared context they rated (:func:`rated_alike`); else by the verdict's combined test
  when its signals were computed (:func:`combined_pairs`: every pair as ``compare`` tests two, each system
  listed by its mean combined difference against the others), as ``compare``'s verdict decides; else by the
  Bradley-Terry strength when the judge ran (a judge with no measured record, such as the llm judge, only when
  no metric was asked); else by the first metric's mean (lower first where lower is better). ``rank_by`` may
  name any of these instead (``human:DIM``, ``combined``, ``judge`` or a metric). Means and their intervals do not depend
  on the order of the input's rows (values put in one order by context first, as the verdict does).
  ``rank`` = 1 + the number of systems significantly better on that criterion, so systems that cannot be
  told apart share a rank. A system the ranking criterion could not score on a shared context where it
  scored another system (blank replies) is **not ranked** (``rank`` None, listed last with the reason): its
  mean is over other contexts than the others' and its pairs lose those contexts, so neither its place nor
  "no significant difference" would mean what they mean for the others. A context no system could be scored
  on (no reference, for a metric that needs one) leaves every system's mean alike and ranks them all.
"""
from __future__ import annotations

import itertools
import math
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Callable, Sequence

import numpy as np

from core import stats
from core.cache import ScoreCache
from core.data import (ID_MISMATCH_ADVICE, DataError, Example, Problem, alignment_rule, alignment_words, case_blind_name,
                       dimensions, references_for, repeated_contexts_words, system_not_found, systems_in)
from core.engine import (ScoreTable, check_judge_models, input_notes, is_blank, is_reference_copy, judge_pairs, judged_from_cache,
                         parse_metrics, reads_references, score_examples)
from core.formatting import (alpha_label, clean_json, fmt_interval, fmt_num, level_label,
                             undecided_interval_words)
from core.progress import Progress, within
from core.scoring import Judge, JudgeOutput, Options, judge_choice, metric_class
from core.settings import SEED
from core.judge_summary import judge_win_stats
from core.human_preferences import scale_top, scales_differ
from core.verdict import (LEVEL, N_BOOT, N_PERM, canonical_order, compare_values, context_groups,
                          human_tie_margin, preference_dimension)
from core.verdict_policy import (COMBINED_TEST, combined_values, is_measured_judge, judge_name, shipped_policy,
                                 silent_sides)

# ------------------------------------------------------------------------------------------------
# systems on shared contexts


@dataclass
class SystemGrid:
    """Each system's rows on the contexts every system answered: ``rows[s][k]`` answers context ``k``."""

    systems: list[str]
    rows: dict[str, list[Example]]
    aligned_by: str
    dropped: list[str] = field(default_factory=list)
    alignment_note: str = ""  # why by context although ids are shared (``core.data.alignment_rule``)
    shared_references: dict[str, int] = field(default_factory=dict)  # per system: rows given another's references
    coverage_note: str = ""  # how many contexts some system answered that are not shared, and who answered fewest

    @property
    def n_contexts(self) -> int:
        return len(self.rows[self.systems[0]]) if self.systems else 0

    def examples(self) -> list[Example]:
        """All rows, system by system (the order they are scored in)."""
        return [ex for s in self.systems for ex in self.rows[s]]

    def groups(self) -> list[tuple[str, ...]]:
        """The resampling unit of context ``k`` (``core.verdict.context_groups``)."""
        return context_groups(self.rows[self.systems[0]])

    @property
    def n_groups(self) -> int:
        """Distinct contexts among the shared ones (fewer than :attr:`n_contexts` when a context is answered
        several times by every system)."""
        return len(set(self.groups()))

    def system_pairs(self) -> list[tuple[int, int, list[list[str]], list[str], list[str]]]:
        """``(i, j, contexts, replies of system i, replies of system j)`` for every pair of systems, i < j, over
        the shared contexts: what the judge reads for each pair (A = system i)."""
        contexts = [e.context for e in self.rows[self.systems[0]]]
        return [(i, j, contexts, [e.response for e in self.rows[self.systems[i]]],
                 [e.response for e in self.rows[self.systems[j]]])
                for i, j in itertools.combinations(range(len(self.systems)), 2)]

    def context_mismatches(self) -> list[str]:
        """Shared ids whose rows have different contexts in different systems (aligned by id only; compared as
        alignment by context compares them), each with its rows: ids that number rows pair unrelated rows."""
        if self.aligned_by != "id":
            return []
        out = []
        for k in range(self.n_contexts):
            rows = [self.rows[s][k] for s in self.systems]
            if len(set(context_groups(rows))) > 1:
                out.append(f"id {rows[0].id!r}: " + ", ".join(f"{e.system} ({e.location})" for e in rows)
                           + " have different contexts")
        return out


def shared_contexts(examples: Sequence[Example], systems: Sequence[str] | None = None) -> SystemGrid:
    """The rows of ``systems`` (default: all, in order of appearance; each named once) on the contexts every one
    answered. A context a system answered more than once meets the others' answers to it in order of appearance
    (the k-th with the k-th, as ``core.data.align`` pairs two systems); answers without a counterpart are listed."""
    if systems is not None and not list(systems):
        raise ValueError("systems: name one or more systems (or leave it out to rank them all)")
    names = list(systems) if systems else systems_in(examples)
    twice = sorted({s for s in names if names.count(s) > 1})
    if twice:
        raise ValueError(f"systems names {', '.join(map(repr, twice))} more than once; name each system once")
    missing = [s for s in names if not any(e.system == s for e in examples)]
    src = examples[0].source if examples else ""
    if missing:
        raise DataError([Problem(src, None, "system", system_not_found(s, systems_in(examples))) for s in missing])
    if len(names) < 2:
        raise DataError([Problem(src, None, "system", f"a leaderboard needs at least two systems, got {names}")])
    chosen = [e for e in examples if e.system in names]
    rule, note = alignment_rule([[e for e in chosen if e.system == s] for s in names])
    by_id = rule == "id"
    keyf = (lambda e: e.id) if by_id else (lambda e: context_groups([e])[0])  # noqa: E731
    per: dict[str, dict[Any, Example]] = {s: {} for s in names}
    times: Counter = Counter()
    keyed = []
    for e in chosen:
        times[e.system, keyf(e)] += 1
        keyed.append((e, (keyf(e), times[e.system, keyf(e)])))
        per[e.system][keyed[-1][1]] = e
    keys = [k for k in per[names[0]] if all(k in per[s] for s in names[1:])]
    shared = set(keys)
    repeated = {k[0] for k in shared if k[1] > 1}
    if repeated and not by_id:  # as core.data.align says it for two systems
        said = repeated_contexts_words(len(repeated), "a system's side")
        note = f"{note}; {said}" if note else said

    def lacking(key: tuple[Any, int]) -> str:
        missing = ", ".join(s for s in names if key not in per[s])
        if key[1] == 1:
            return f"not answered by {missing}"
        return f"answer {key[1]} to its {'id' if by_id else 'context'}, which {missing} answered fewer times"

    dropped = [f"system {e.system}: {e.location}, id {e.id!r}: {lacking(key)}" for e, key in keyed
               if key not in shared]
    if not keys:
        raise DataError([Problem(src, None, None, f"no context was answered by all of {names}")])
    rows = {s: [per[s][k] for k in keys] for s in names}
    shared: Counter = Counter()
    for i in range(len(keys)):  # references belong to the context, one set for every system (core.data.share_references)
        answers = [rows[s][i] for s in names]
        for s, e in zip(names, answers):
            refs = None if any(r.strip() for r in e.references) else references_for(e, answers)
            if refs is not None:
                rows[s][i] = replace(e, references=refs)
                shared[s] += 1
    return SystemGrid(names, rows, rule, dropped, note, dict(shared), coverage_words(names, per, len(keys)))


def coverage_words(names: Sequence[str], per: dict[str, dict[Any, Example]], n_shared: int) -> str:
    """'every system is compared on the 2 contexts all of them answered, of the 10 some system answered (answered:
    delta 2; ...)' when some answered context is not shared, naming the systems that answered fewer than all,
    fewest first (the note never starts with a name, which a page's sentence case would change); '' when every
    system answered every context."""
    every = {k for s in names for k in per[s]}
    if n_shared == len(every):
        return ""
    # keys are (context, answer number): counted as distinct contexts, as meta-eval counts them (a context
    # answered twice by each system was two 'contexts' here)
    shared_keys = set.intersection(*(set(per[s]) for s in names)) if names else set()
    n_shared = len({k[0] for k in shared_keys})
    answered = {s: len({k[0] for k in per[s]}) for s in names}
    n_every = len({k[0] for k in every})
    fewer = [s for s in names if answered[s] < n_every]
    if n_shared == n_every or not fewer:  # every context shared: one answered more often (repeats say it)
        return ""
    who = ", ".join(f"{s} {answered[s]}" for s in sorted(fewer, key=lambda s: (answered[s], names.index(s))))
    return (f"every system is compared on the {n_shared} contexts all of them answered, of the {n_every} some "
            f"system answered (answered: {who}; the rest are listed under the rows left out; leaving a system out "
            "compares the others on more)")


# ------------------------------------------------------------------------------------------------
# the leaderboard


@dataclass
class PairwiseRow:
    """System ``first`` vs ``second`` on one metric (or ``judge``): ``diff`` = first - second (for the judge:
    first's win rate, ties excluded) with its interval, the raw p and the Holm-adjusted p over the family of
    that metric's pairs; ``better`` names the significantly better system, else None."""

    metric: str
    first: str
    second: str
    diff: float
    low: float
    high: float
    p: float
    p_holm: float
    better: str | None
    wins: int
    ties: int
    losses: int
    measure: str = ""  # what ``diff`` and ``p`` are, in words (:func:`pair_measure`), so a JSON or CSV row says it
    vetoed_by: list[str] = field(default_factory=list)  # the combined test: its veto signals naming the other system

    def __post_init__(self) -> None:
        self.measure = self.measure or pair_measure(self.metric)


def pair_measure(metric: str) -> str:
    """What a pair row's ``diff`` and ``p`` are: the judge's win rate with the sign test's p, else a difference
    first - second (the combined test's in standard deviations of its signals' differences) with the
    randomization test's p."""
    if metric == "judge":
        return "diff: the first system's win rate over the pairs the judge decided (ties left out); p: sign test"
    if metric == COMBINED_TEST:
        return ("diff: the combined test's mean difference first - second (in standard deviations of its signals' "
                "differences); p: approximate randomization")
    return "diff: mean first - second; p: approximate randomization"


@dataclass
class SystemEntry:
    """One system's line: its rank, its mean per metric with interval, and (with the judge) its rating."""

    system: str
    rank: int | None  # None: not ranked (``unranked`` says why)
    metrics: dict[str, dict[str, float]]  # per metric and ``human:DIM``: mean, low, high, n (contexts scored/rated)
    judge: dict[str, float] | None = None
    unranked: str | None = None
    combined: float | None = None  # its mean combined difference against the others (:func:`combined_pairs`)


@dataclass
class Leaderboard:
    systems: list[SystemEntry]  # best first
    pairwise: list[PairwiseRow]
    n_contexts: int
    aligned_by: str
    dropped: list[str]
    ranked_by: str
    metrics: list[str]  # the metrics scored; people's dimensions are in ``human``
    signatures: dict[str, str]
    judge_signature: str | None
    n_boot: int
    n_perm: int
    level: float
    seed: int
    human: list[str] = field(default_factory=list)  # ``human:DIM`` of every dimension people rated
    rank_note: str | None = None  # why the automatic order is not by people's ratings although they are there
    context_mismatches: list[str] = field(default_factory=list)  # shared ids with different contexts
    n_groups: int = 0  # distinct contexts among the ``n_contexts`` shared answers
    reference_note: str | None = None  # replies that copy their reference, which referenced metrics favour
    alignment_note: str = ""  # why by context although ids are shared (``core.data.alignment_rule``)
    shared_references_note: str | None = None  # systems whose rows took another system's references
    combined_signals: list[str] = field(default_factory=list)  # the verdict's combined test's signals, when it ran
    coverage_note: str = ""  # contexts some system answered that not every system did (``SystemGrid.coverage_note``)
    input_notes: dict[str, str] = field(default_factory=dict)  # ``core.engine.input_notes`` but the reference copies

    def notes(self) -> list[str]:
        """What the text's header says besides the table: alignment, how it is ranked, reference copies, shared
        references, what the pairs' p corrects over."""
        return [n for n in (self.coverage_note, self.alignment_note and "aligned by " + alignment_words(
                                self.aligned_by, self.alignment_note),
                            self.rank_note, rank_jump_note(self), self.reference_note, self.shared_references_note,
                            self.holm_floor(), PAIRS_FAMILY_NOTE) if n]

    def holm_floor(self) -> str:
        """:func:`holm_floor_note` where a randomization test reads the pairs (a metric, people's ratings)."""
        return holm_floor_note(len(self.systems), self.n_perm, self.level, "--n-perm, n_perm=",
                               self.n_groups or self.n_contexts) if (self.metrics or self.human) else ""

    def to_dict(self) -> dict[str, Any]:
        """The board as plain JSON data, the notes included: ``dialeval leaderboard --format json``'s data (a
        number that does not exist is None)."""
        return clean_json({**asdict(self), "notes": self.notes()})

    def render(self, fmt: str = "text") -> str:
        """The board as ``dialeval leaderboard`` prints it (text, markdown, csv or json: :func:`render_leaderboard`)."""
        return render_leaderboard(self, fmt)

    def __str__(self) -> str:  # print(board): the text table, as the command prints it
        return self.render()

    def __repr__(self) -> str:  # a notebook cell's echo: the order, not every field
        order = ", ".join(f"{'-' if e.rank is None else e.rank}. {e.system!r}" for e in self.systems[:8])
        more = f" and {len(self.systems) - 8} more" if len(self.systems) > 8 else ""
        return (f"<Leaderboard of {len(self.systems)} systems on {self.n_contexts} contexts, ranked by "
                f"{self.ranked_by}: {order}{more}; print() for the table, .to_dict() for the data>")


def judged_in_cache(grid: SystemGrid, judge: "str | Judge" = "pairwise") -> bool:
    """Whether the score cache (or the demo's precomputed layer) holds the judge's output on every pair of
    systems of ``grid``, so :func:`judge_grid` reads it without loading the judge."""
    return all(judged_from_cache(contexts, a, b, judge) for _, _, contexts, a, b in grid.system_pairs())


def pairs_family_note(verdict: str = "`compare`") -> str:
    """Which family the leaderboard's p (Holm) corrects over, and how that differs from ``verdict`` on one pair."""
    return (f"p (Holm) corrects over the pairs of systems on one criterion; {verdict} on two systems tests that one "
            "pair, so its table calls each metric on its own p (uncorrected) and can name a winner where this says "
            "'no significant difference'; its one-line verdict rests on people's ratings or its combined test (the "
            "combined test's rows here, where its signals were computed)")


PAIRS_FAMILY_NOTE = pairs_family_note()


def judge_grid(grid: SystemGrid, judge: "str | Judge" = "pairwise", checkpoint: str | None = None,
               progress: Progress | None = None, cache: "ScoreCache | bool | None" = None
               ) -> dict[tuple[int, int], JudgeOutput]:
    """The judge on every pair of systems ``(i, j)``, i < j, over every shared context (A = system i);
    ``cache`` as in ``core.engine.judge_pairs``."""
    pairs = grid.system_pairs()
    return {(i, j): judge_pairs(contexts, a, b, judge, checkpoint, within(progress, k, len(pairs)), cache)
            for k, (i, j, contexts, a, b) in enumerate(pairs)}


def human_dimensions(grid: SystemGrid) -> list[str]:
    """``human:DIM`` for every dimension people rated in the grid's rows, the preference dimension first."""
    dims = dimensions(grid.examples())
    first = preference_dimension(grid.examples())
    return [f"human:{d}" for d in sorted(dims, key=lambda d: d != first)]


def rated_alike(grid: SystemGrid, dim: str) -> bool:
    """Whether people rated every system on ``dim`` (``human:DIM``) on every shared context where they rated
    any, and on one at least."""
    d = dim[len("human:"):]
    rated = np.array([[math.isfinite(e.scores.get(d, math.nan)) for e in grid.rows[s]] for s in grid.systems])
    return bool(rated.any()) and bool((rated.all(axis=0) == rated.any(axis=0)).all())


def scale_mismatch(grid: SystemGrid, dim: str) -> str | None:
    """A note when people's ratings on ``dim`` (``human:DIM``) lie on scales of different size in different
    systems (one system's largest rating at least 5 times another's: 0-100 beside 1-5, 0-1 beside 1-5), whose
    means cannot be compared; ``None`` otherwise."""
    d = dim[len("human:"):]
    return scales_differ(d, {s: [e.scores.get(d, math.nan) for e in grid.rows[s]] for s in grid.systems})


def unscored_metric_hint(name: str, where: str = "--metrics (metrics= in Python)") -> str:
    """'; it is a metric: add it to --metrics' where ``name`` is a registered metric that was not scored (``where``:
    how the user names the metrics scored), else ''."""
    from core.registry import UnknownName
    from core.scoring import metric_class
    try:
        metric_class(name)
    except (UnknownName, ValueError):
        return ""
    return f"; it is a metric: add it to {where}"


def ranking_criterion(grid: SystemGrid, metrics: Sequence[str], judged: bool, rank_by: str = "auto",
                      unmeasured_judge: str | None = None, combined: bool = False,
                      people: bool = True) -> tuple[str, str | None]:
    """What orders the systems, and (for ``auto``) a note when people's ratings are there but cannot order
    them. ``auto``: people's preference dimension when every system was rated on every shared context where
    any was (:func:`rated_alike`) on one scale (:func:`scale_mismatch`), or when there is nothing else; else the
    verdict's combined test when its signals were computed (``combined``: :func:`combined_signals`), as
    ``compare``'s verdict decides; else the judge when it ran, else the first metric. A judge with no measured record (``unmeasured_judge``: its name,
    such as 'llm') is a diagnostic in the verdict, so ``auto`` passes over it to a metric where there is one,
    and says so. Any other value must name one of those that is present
    (``human:overall`` finds the dimension ``Overall`` when no other differs from it only in case). ``people``
    False: people's ratings are left out (``--no-human``), as if the input had none."""
    human = human_dimensions(grid) if people else []
    present = [*human, *([COMBINED_TEST] if combined else []), *(["judge"] if judged else []), *metrics]
    if rank_by == "auto" and judged and unmeasured_judge and metrics and not combined:
        by, note = ranking_criterion(grid, metrics, False, "auto", people=people)
        if by == metrics[0]:
            note = "; ".join(x for x in (note, f"the {unmeasured_judge} judge has no measured record, so it does not "
                                               "order the systems (--rank-by judge orders by it)") if x)
        return by, note
    if not present:
        raise ValueError("nothing to rank by: no metric, no judge and no human ratings in the input"
                         + ("" if people or not human_dimensions(grid) else " (they are left out)"))
    if rank_by != "auto":
        rank_by = case_blind_name(rank_by, present) or rank_by
        if rank_by not in present:
            left_out = ("; people's ratings are left out (--no-human, human=False)" if rank_by.casefold().startswith(
                "human:") and not people and human_dimensions(grid) else
                        "; the judge was not run (--no-judge, judge=False)" if rank_by.casefold() == "judge"
                        and not judged else "")
            raise ValueError(f"rank by {rank_by!r}: not among what this leaderboard has ({', '.join(present)})"
                             + (left_out or unscored_metric_hint(rank_by)))
        return rank_by, None
    mixed = scale_mismatch(grid, human[0]) if human else None
    if mixed and present == human:  # as compare refuses it: means on two scales order nothing
        raise ValueError(f"nothing to rank by: {mixed}, and no metric or judge was computed")
    if human and ((rated_alike(grid, human[0]) and not mixed) or present == human):
        return human[0], mixed
    if human:
        why = mixed or (f"people's {human[0][len('human:'):]} ratings do not cover every system on the same "
                        "contexts")
        return present[len(human)], f"{why}, so they do not order the systems (shown beside them)"
    return present[0], None


def build_leaderboard(grid: SystemGrid, table: ScoreTable | None = None,
                      judged: dict[tuple[int, int], JudgeOutput] | None = None, n_boot: int = N_BOOT,
                      n_perm: int = N_PERM, level: float = LEVEL, seed: int = SEED, rank_by: str = "auto",
                      human: bool = True) -> Leaderboard:
    """The :class:`Leaderboard` from the grid's scores (``table`` over ``grid.examples()``), people's ratings
    in its rows (``human`` False: left out, neither shown nor ranking) and the judge's outputs on every pair of
    systems (:func:`judge_grid`); of the three at least one. ``rank_by`` as :func:`ranking_criterion`;
    ``n_boot``, ``n_perm``, ``level`` and ``seed`` as ``core.stats.check_settings`` allows."""
    stats.check_settings(n_boot, n_perm, level, seed)
    metrics = table.metrics if table is not None else []
    signature = next((o.signature for o in (judged or {}).values()), "")
    unmeasured = judge_name(signature) if judged and not is_measured_judge(signature) else None
    scored = [m for m in metrics if np.isfinite(np.asarray(table.column(m), dtype=np.float64)).any()] \
        if table is not None else []  # as compare combines: the signals that scored something
    signals = combined_signals(scored, bool(judged) and unmeasured is None)
    ranked_by, rank_note = ranking_criterion(grid, metrics, bool(judged), rank_by, unmeasured, bool(signals), human)
    if not human and human_dimensions(grid):
        rank_note = "; ".join(x for x in ("people's ratings in the input are left out", rank_note) if x)
    human = human_dimensions(grid) if human else []
    S, n = grid.systems, grid.n_contexts
    groups = grid.groups()
    alpha = 1 - level
    per_metric: dict[str, dict[str, dict[str, float]]] = {s: {} for s in S}
    pairwise: list[PairwiseRow] = []
    silent = {s: np.array([is_blank(e.response) for e in grid.rows[s]], dtype=bool) for s in S}
    columns = []  # (name, values of every system in grid order, higher is better, human dimension or None)
    for h in human:
        d = h[len("human:"):]
        columns.append((h, np.array([e.scores.get(d, math.nan) for e in grid.examples()], dtype=np.float64), True, d))
    columns += [(m, np.asarray(table.column(m), dtype=np.float64), metric_class(m).higher_is_better, None)
                for m in metrics]
    for m, col, hib, dim in columns:
        vals = {s: col[k * n:(k + 1) * n] for k, s in enumerate(S)}
        for s in S:
            order = canonical_order(vals[s], vals[s], groups)  # as compare_values orders pairs: by context
            mean, lo, hi = stats.mean_ci(vals[s][order], level, n_boot, seed, [groups[i] for i in order])
            per_metric[s][m] = {"mean": mean, "low": lo, "high": hi, "n": int(np.isfinite(vals[s]).sum())}
        scorable = np.any([np.isfinite(vals[s]) for s in S], axis=0)
        for s in S:  # contexts some system was scored on and this one was not
            per_metric[s][m]["unscored"] = int((scorable & ~np.isfinite(vals[s])).sum())
            # of them, where its reply is blank: the combined test counts those as its losses, not as gaps
            per_metric[s][m]["blank"] = int((scorable & ~np.isfinite(vals[s]) & silent[s]).sum())
        # people's ties as the verdict of that pair draws them: a quarter of the pair's own rating scale; where the
        # systems' ratings lie on two scales (scale_mismatch), two systems whose ratings top out on different usual
        # scales are not compared, as compare leaves such ratings out
        tops = ({s: scale_top(vals[s]) for s in S} if dim is not None and scale_mismatch(grid, m) else {})
        compared = [(i, j) for i, j in itertools.combinations(range(len(S)), 2)
                    if tops.get(S[i]) == tops.get(S[j])]
        rows = [compare_values(m, "metric" if dim is None else "human", vals[S[i]], vals[S[j]], groups,
                               higher_is_better=hib, n_boot=n_boot, n_perm=n_perm, level=level, seed=seed,
                               tie_margin=None if dim is None else human_tie_margin(dim, [*vals[S[i]], *vals[S[j]]]))
                for i, j in compared]
        adj = stats.holm([r.p_randomization for r in rows])
        for (i, j), r, ph in zip(compared, rows, adj):
            sig = ph < alpha and (r.low > 0 or r.high < 0)
            better = None if not sig else (S[i] if (r.diff > 0) == hib else S[j])
            pairwise.append(PairwiseRow(m, S[i], S[j], r.diff, r.low, r.high, r.p_randomization, float(ph), better,
                                        r.wins, r.ties, r.losses))
    judge_info: dict[str, dict[str, Any]] = {}
    judge_signature = None
    if judged:
        first, second, outcome, bt_groups = [], [], [], []
        jrows = []
        for (i, j), out in sorted(judged.items()):
            judge_signature = out.signature
            unread = set(out.unparsed)  # pairs the judge could not read (the llm judge's): no call, not a tie
            read = [k for k in range(len(out.verdict)) if k not in unread]
            for k in read:
                v = out.verdict[k]
                first.append(i)
                second.append(j)
                outcome.append(1.0 if v == "A" else 0.0 if v == "B" else 0.5)
                bt_groups.append(groups[k])
            ws = judge_win_stats(out.verdict, read, groups, level, n_boot, seed)
            jrows.append(((i, j), ws))
        # one order of the comparisons whatever the order of the rows (by context, then the pair of systems and
        # the outcome), so the resampled contexts, and the intervals, are the same
        order = stats.canonical_rows(bt_groups, first, second, outcome)
        bt = stats.bradley_terry_ratings(S, [first[k] for k in order], [second[k] for k in order],
                                         [outcome[k] for k in order], [bt_groups[k] for k in order], n_boot, seed,
                                         level)
        for k, s in enumerate(S):
            wins = sum(ws.wins if i == k else ws.losses for (i, j), ws in jrows if k in (i, j))
            losses = sum(ws.losses if i == k else ws.wins for (i, j), ws in jrows if k in (i, j))
            ties = sum(ws.ties for (i, j), ws in jrows if k in (i, j))
            judge_info[s] = {"theta": bt.theta[k], "theta_low": bt.low[k], "theta_high": bt.high[k],
                             "rating": bt.rating[k], "rating_low": bt.rating_low[k],
                             "rating_high": bt.rating_high[k], "wins": wins, "ties": ties, "losses": losses}
        adj = stats.holm([ws.sign_p for _, ws in jrows])
        for ((i, j), ws), ph in zip(jrows, adj):
            better = None
            if ph < alpha and ws.wins != ws.losses:
                better = S[i] if ws.wins > ws.losses else S[j]
            pairwise.append(PairwiseRow("judge", S[i], S[j], ws.rate, ws.low, ws.high, ws.sign_p, float(ph), better,
                                        ws.wins, ws.ties, ws.losses))
        unbounded = unbounded_ratings(pairwise)
        if bt.n_groups >= stats.MIN_RESAMPLED and not set(unbounded) - {s for s, why in unbounded.items()
                                                                         if why == UNREAD_RATING}:
            unbounded.update({s: why for s in S if s not in unbounded
                              for why in [ridge_set_interval(bt.ridge_bound, bt.n_boot, level)] if why})
        for s, why in unbounded.items():  # the ridge's numbers are no interval: none in the data
            judge_info[s].update(theta_low=math.nan, theta_high=math.nan, rating_low=math.nan, rating_high=math.nan,
                                 no_interval=why)
    combined_score: dict[str, float] = {}
    if signals:
        rows_c, combined_score = combined_pairs(grid, table, judged or {}, signals, n_boot, n_perm, level, seed)
        pairwise += with_vetoes(rows_c, pairwise, shipped_policy().policy.vetoes_for(signals), metrics, alpha)
    if ranked_by not in ("judge", COMBINED_TEST) and not any(math.isfinite(per_metric[s][ranked_by]["mean"]) for s in S):
        scored = [m for m in metrics if any(math.isfinite(per_metric[s][m]["mean"]) for s in S)]
        if rank_by == "auto" and not judged and scored:  # e.g. bleu first on a file without references
            rank_note = (f"{ranked_by} scored none of the shared contexts, so {scored[0]} orders the systems"
                         + (f" ({rank_note})" if rank_note else ""))
            ranked_by = scored[0]
        else:
            rank_note = f"{ranked_by} scored none of the shared contexts: nothing orders the systems"
    if ranked_by == "judge":
        key = {s: -judge_info[s]["theta"] for s in S}
    elif ranked_by == COMBINED_TEST:
        key = {s: -combined_score[s] for s in S}
    else:
        sign = -1.0 if ranked_by in human or metric_class(ranked_by).higher_is_better else 1.0
        key = {s: sign * per_metric[s][ranked_by]["mean"] for s in S}
    unranked = {}
    if ranked_by == COMBINED_TEST:
        for s in S:
            gaps = [f"{m} could not score it on {per_metric[s][m]['unscored'] - per_metric[s][m]['blank']}"
                    for m in signals if m in per_metric[s] and per_metric[s][m]["unscored"] > per_metric[s][m]["blank"]]
            if gaps:
                unranked[s] = (f"{'; '.join(gaps)} of the shared contexts where it scored another system (rows "
                               "it cannot score; a blank reply counts as a loss): its combined differences rest on "
                               "other contexts than the others', so it is not ranked")
    elif ranked_by != "judge":
        what = (f"people did not rate it on {{u}} of the shared contexts where they rated another system on "
                f"{ranked_by[len('human:'):]}" if ranked_by in human else
                f"{ranked_by} could not score it on {{u}} of the shared contexts where it scored another system "
                "(blank replies or rows it cannot score)")
        for s in S:
            u = per_metric[s][ranked_by].pop("unscored")
            if u:
                unranked[s] = (what.format(u=u) + ": a mean over other contexts than the others' is not "
                               "comparable, so it is not ranked")
    for s in S:
        for v in per_metric[s].values():
            v.pop("unscored", None)
            v.pop("blank", None)
    # equal criteria (identical systems' ratings differ in the last bits of a fit) keep the input's order
    order = sorted(S, key=lambda s: (s in unranked, round(key[s], 9) if math.isfinite(key[s]) else math.inf,
                                     S.index(s)))
    beaten = {s: sum(1 for r in pairwise if r.metric == ranked_by and r.better is not None and r.better != s
                     and r.better not in unranked and s in (r.first, r.second)) for s in S}
    entries = [SystemEntry(s, None if s in unranked else 1 + beaten[s], per_metric[s], judge_info.get(s),
                           unranked.get(s), combined_score.get(s)) for s in order]
    notes = input_notes(grid.examples(), metrics, judged=bool(judged))  # as `compare` says them, on every row ranked
    return Leaderboard(entries, pairwise, n, grid.aligned_by, grid.dropped, ranked_by, list(metrics),
                       table.signatures() if table is not None else {}, judge_signature, n_boot, n_perm, level, seed,
                       human, rank_note, grid.context_mismatches(), grid.n_groups,
                       copies_rank_note(grid, notes.get("reference copy"), metrics, ranked_by, signals),
                       grid.alignment_note,
                       "; ".join(f"{n} of {s}'s rows have no reference: they are scored with another system's "
                                 "references for the same context" for s, n in grid.shared_references.items()) or None,
                       list(signals), grid.coverage_note,
                       {k: v for k, v in notes.items() if k != "reference copy"})  # (that one is reference_note)


def copies_rank_note(grid: SystemGrid, note: str | None, metrics: Sequence[str], ranked_by: str,
                     signals: Sequence[str]) -> str | None:
    """The input's reference-copy ``note`` (``core.engine.input_notes``), and, where the ranking criterion reads
    references (a referenced metric, or a combined test with one), which systems copy their reference in most
    of their rows: their place on it is by construction, not people's preference; None without copies."""
    if note is None:
        return None
    reading = [m for m in (signals if ranked_by == COMBINED_TEST else [ranked_by]) if m in metrics and
               reads_references(m)]
    if not reading:
        return note
    rows = grid.examples()
    n = grid.n_contexts
    copying = [s for k, s in enumerate(grid.systems) if 2 * sum(map(is_reference_copy, rows[k * n:(k + 1) * n])) > n]
    if not copying:
        return note
    which = ", ".join(copying)
    return (f"{note}; the ranking reads references ({'+'.join(reading)}), so the place of {which}, which "
            f"cop{'ies its' if len(copying) == 1 else 'y their'} reference in most rows, is by construction, not "
            "people's preference")


def combined_signals(metrics: Sequence[str], measured_judge: bool) -> tuple[str, ...]:
    """The signals of the verdict's combined test on a board of ``metrics`` (registry names), the judge the
    records were measured with run or not: what ``compare`` combines (``VerdictPolicy.combination``), or ()."""
    policy = shipped_policy().policy
    computed = [m for m in metrics if m in policy.combinable()] + (["judge"] if measured_judge else [])
    return policy.combination(computed)


def with_vetoes(combined: list[PairwiseRow], others: Sequence[PairwiseRow], vetoes: Sequence[str],
                metrics: Sequence[str], alpha: float) -> list[PairwiseRow]:
    """The combined test's pair rows with ``compare``'s vetoes: a pair whose combined winner a veto signal
    (``VerdictPolicy.vetoes_for``) names the other system of, by its own test (its uncorrected p below ``alpha``
    and its interval excluding no difference; the judge: its sign test), has no winner and says which signal
    vetoed it, as ``compare`` abstains on it."""
    own = {(r.metric, r.first, r.second): r for r in others}
    out = []
    for r in combined:
        against = []
        for sig in vetoes if r.better is not None else ():
            v = own.get((sig, r.first, r.second))
            if v is None or not (v.p < alpha):
                continue
            if sig == "judge":
                named = None if v.wins == v.losses else (r.first if v.wins > v.losses else r.second)
            elif v.low > 0 or v.high < 0:
                hib = metric_class(sig).higher_is_better if sig in metrics else True
                named = r.first if (v.diff > 0) == hib else r.second
            else:
                named = None
            if named is not None and named != r.better:
                against.append(sig)
        out.append(replace(r, better=None, vetoed_by=against) if against else r)
    return out


def combined_pairs(grid: SystemGrid, table: ScoreTable | None, judged: dict[tuple[int, int], JudgeOutput],
                   signals: Sequence[str], n_boot: int = N_BOOT, n_perm: int = N_PERM, level: float = LEVEL,
                   seed: int = SEED) -> tuple[list[PairwiseRow], dict[str, float]]:
    """Every pair of systems on the verdict's combined test of ``signals``, as ``compare`` tests two
    (``core.verdict_policy.combined_values``: the signals' differences, each over its standard deviation on that
    pair's contexts, summed, and tested against 0 with contexts resampled), Holm-adjusted over the pairs; and
    each system's mean combined difference against the others (positive: it is preferred), which orders them
    when they are ranked by it. The combined value exists only for a pair, so a system has no mean of its own."""
    S, n = grid.systems, grid.n_contexts
    groups = grid.groups()
    alpha = 1 - level
    cols = {m: np.asarray(table.column(m), dtype=np.float64) for m in signals if m != "judge" and table is not None}
    blank = [is_blank(ex.response) for ex in grid.examples()]
    rows, done = [], []
    for i, j in itertools.combinations(range(len(S)), 2):
        differences = {}
        for sig in signals:
            if sig == "judge":
                differences[sig] = np.asarray(judged[(i, j)].p_a, dtype=np.float64) - 0.5
            else:
                d = cols[sig][i * n:(i + 1) * n] - cols[sig][j * n:(j + 1) * n]
                differences[sig] = d if metric_class(sig).higher_is_better else -d
        values = combined_values(differences, silent_sides(blank[i * n:(i + 1) * n], blank[j * n:(j + 1) * n]))
        rows.append(compare_values(COMBINED_TEST, "combined", values, np.zeros(n), groups, n_boot=n_boot, n_perm=n_perm,
                                   level=level, seed=seed))
        done.append((i, j))
    adj = stats.holm([r.p_randomization for r in rows])
    out, against = [], {s: [] for s in S}
    for (i, j), r, ph in zip(done, rows, adj):
        sig = ph < alpha and (r.low > 0 or r.high < 0)
        out.append(PairwiseRow(COMBINED_TEST, S[i], S[j], r.diff, r.low, r.high, r.p_randomization, float(ph),
                               None if not sig else S[i] if r.diff > 0 else S[j], r.wins, r.ties, r.losses))
        against[S[i]].append(r.diff)
        against[S[j]].append(-r.diff)
    means = {}
    for s, v in against.items():
        x = np.asarray(v, dtype=np.float64)
        means[s] = float(x[np.isfinite(x)].mean()) if np.isfinite(x).any() else math.nan
    return out, means


def leaderboard(examples: Sequence[Example], metrics: Sequence[str] | str | None = None,
                judge: "bool | str | Judge | None" = False,
                systems: Sequence[str] | None = None, options: Options | None = None,
                progress: Progress | None = None, cache: "ScoreCache | bool | None" = None,
                checkpoint: str | None = None, **settings: Any) -> Leaderboard:
    """Score (and with ``judge`` judge) every system of ``examples`` on their shared contexts through the
    engine, and build the :class:`Leaderboard` (people's ratings in ``examples`` included). ``judge``: ``True``
    the learned judge, a judge's name or a :class:`~core.scoring.Judge` (``core.scoring.judge_choice``);
    ``checkpoint``: the learned judge's (default: the shipped one). ``metrics`` ``[]``: the judge and people's
    ratings alone. ``cache`` as in ``core.engine.score_examples``. ``settings``: :func:`build_leaderboard`'s
    ``n_boot``, ``n_perm``, ``level``, ``seed`` and ``rank_by``."""
    return leaderboard_of_grid(shared_contexts(examples, systems), metrics, judge, options, progress, cache,
                               checkpoint, **settings)


def leaderboard_of_grid(grid: SystemGrid, metrics: Sequence[str] | str | None = None,
                        judge: "bool | str | Judge | None" = False, options: Options | None = None,
                        progress: Progress | None = None, cache: "ScoreCache | bool | None" = None,
                        checkpoint: str | None = None, **settings: Any) -> Leaderboard:
    """:func:`leaderboard` of the rows :func:`shared_contexts` chose (for a caller that built the grid already)."""
    judge = judge_choice(judge)
    names = parse_metrics(metrics) if metrics is None or len(metrics) else []
    measured = judge == "pairwise" and checkpoint is None  # the judge the records were measured with
    ranking_criterion(grid, names, judge is not None, settings.get("rank_by", "auto"),  # fails before scoring
                      combined=bool(combined_signals(names, measured)), people=settings.get("human", True))
    if judge is not None:  # a missing model package (or an endpoint that does not answer) too
        check_judge_models([triple for _, _, contexts, a, b in grid.system_pairs() for triple in zip(contexts, a, b)],
                           judge, checkpoint)
    table = None
    if names:
        table = score_examples(grid.examples(), names, options,
                               within(progress, 0, 2) if judge is not None else progress, cache=cache)
    judged = judge_grid(grid, judge, checkpoint, within(progress, 1, 2) if table is not None else progress,
                        cache=cache) if judge is not None else None
    return build_leaderboard(grid, table, judged, **settings)


# ------------------------------------------------------------------------------------------------
# rendering


def _ci(mean: float, lo: float, hi: float, digits: int = 3, n: int | None = None, of: int | None = None) -> str:
    """``mean [low, high]`` (``core.formatting.fmt_interval``); `` (on n of N)`` when the mean covers fewer than
    all N shared contexts."""
    if mean is None or not math.isfinite(mean):
        return "-" if n is None or of is None else f"- (on 0 of {of})"
    on = f" (on {n} of {of})" if n is not None and of is not None and n < of else ""
    return fmt_interval(mean, lo, hi, digits) + on


UNREAD_RATING = "the judge read none of its pairs"  # why a system's judge rating has no interval, when it is so


def ridge_set_interval(ridge_bound: int, n_boot: int, level: float) -> str:
    """Why no judge rating has an interval when the won-or-tied graph is strongly connected (a fit exists) but more
    than a tail's share of the bootstrap replicates, ``(1 - level) / 2``, lose every upset that makes it so
    (``ridge_bound`` of ``n_boot``, :func:`core.stats.connected_replicates`): an interval's end would be the
    fit's ridge, not the data (one upset among few contexts); '' when they are fewer."""
    if not n_boot or ridge_bound <= (1 - level) / 2 * n_boot:
        return ""
    return (f"too few upsets to bound it: {ridge_bound:,} of {n_boot:,} resamples of the contexts lose every upset "
            "that ties the systems together")


def ratings_without_interval(lb: Leaderboard) -> dict[str, str]:
    """The systems of ``lb`` whose judge rating has no interval, each with why: as its pairs show
    (:func:`unbounded_ratings`) or as the leaderboard recorded it (``no_interval``, also
    :func:`ridge_set_interval`)."""
    return {**unbounded_ratings(lb.pairwise),
            **{e.system: e.judge["no_interval"] for e in lb.systems if e.judge and e.judge.get("no_interval")}}


def unbounded_ratings(pairwise: Sequence[PairwiseRow]) -> dict[str, str]:
    """The systems whose judge rating has no interval, each with why: 'won every judged pair', 'lost every judged
    pair', 'above or below each other system in every judged pair' (alone, no upset either way), or 'no upset
    ties a, b to the other systems' (a group whose members upset each other, but nobody outside it).

    A Bradley-Terry fit exists exactly when the judge's "won or tied" relation between systems (an edge from i
    to j when i won or tied at least one pair against j) leads from every system to every other (Ford 1957: the
    graph is strongly connected). Where it does not, the gap between two of its strongly connected groups is held
    finite only by the fit's ridge (``core.stats.bradley_terry``) and every bootstrap replicate sees the same
    order, so no rating, centred over all systems, has an interval that measures anything: tables and charts
    show every rating without one (the order stands). A system whose every pair the judge could not read (no win,
    tie or loss) has a rating set by the ridge alone: 'the judge read none of its pairs'. ``pairwise``: a
    leaderboard's pairwise rows (the judge's are read)."""
    judged = [r for r in pairwise if r.metric == "judge"]
    rows = [r for r in judged if r.wins + r.ties + r.losses]
    names = sorted({n for r in rows for n in (r.first, r.second)})
    unread = {n: UNREAD_RATING for r in judged for n in (r.first, r.second) if n not in names}
    beats: dict[str, set[str]] = {n: set() for n in names}
    for r in rows:
        if r.wins or r.ties:
            beats[r.first].add(r.second)
        if r.losses or r.ties:
            beats[r.second].add(r.first)

    def reach(start: str) -> set[str]:
        seen, todo = {start}, [start]
        while todo:
            for nxt in beats[todo.pop()] - seen:
                seen.add(nxt)
                todo.append(nxt)
        return seen

    reached = {n: reach(n) for n in names}
    group = {n: sorted(m for m in reached[n] if n in reached[m]) for n in names}  # its strongly connected component
    if not names or len(group[names[0]]) == len(names):
        return unread
    out = dict(unread)
    for n in names:
        if len(group[n]) > 1:
            out[n] = f"no upset ties {', '.join(group[n])} to the other systems"
            continue
        beaten_by = [m for m in names if n in beats[m]]
        out[n] = ("won every judged pair" if not beaten_by else "lost every judged pair" if not beats[n] else
                  "above or below each other system in every judged pair")
    return out


def unscored_metrics(lb: Leaderboard) -> list[str]:
    """The metrics of ``lb`` that scored no row of any system (a referenced metric on rows without references):
    the ranking table leaves their columns out and :func:`unscored_note` says so."""
    return [m for m in lb.metrics if lb.systems and all(
        e.metrics[m]["mean"] is None or not math.isfinite(e.metrics[m]["mean"]) for e in lb.systems)]


def unscored_note(lb: Leaderboard, name: Callable[[str], str] = str) -> str:
    """'bleu and ubleu scored no row (they need references): not in the ranking table' (each metric through
    ``name``: the dashboard's display names); '' when every metric scored."""
    from core.engine import needs_references
    gone = unscored_metrics(lb)
    if not gone:
        return ""
    names = [name(m) for m in gone]
    listed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
    why = ("" if not all(needs_references(m) for m in gone) else
           " (it needs references)" if len(gone) == 1 else " (they need references)")
    return f"{listed} scored no row{why}: not in the ranking table"


def leaderboard_rows(lb: Leaderboard) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """The ranking as formatted cells and their (key, header) columns; a metric that scored no row
    (:func:`unscored_metrics`) has no column."""
    ci = f"{level_label(lb.level)} CI"
    combined = [(COMBINED_TEST, "combined test: mean difference against the others")] if lb.combined_signals else []
    judge = ([("judge", f"judge rating (Bradley-Terry) [{ci}]"), ("wtl", "judge wins/ties/losses")]
             if lb.systems and lb.systems[0].judge is not None else [])
    # what the ranking is by first, then the combined test and the judge, the metrics asked for, then people's
    # other dimensions
    first = [lb.ranked_by] if lb.ranked_by in lb.human else []
    gone = unscored_metrics(lb)
    shown = [*first, *(m for m in lb.metrics if m not in gone), *(h for h in lb.human if h not in first)]
    means = [(m, f"people: {m[len('human:'):]} mean [{ci}]" if m in lb.human else f"{m} mean [{ci}]") for m in shown]
    by = [c for c in means if c[0] == lb.ranked_by]  # a metric's or people's mean orders the systems
    lead = judge + combined if lb.ranked_by == "judge" else by + combined + judge
    cols = [("rank", "rank"), ("system", "system"), *lead, *(c for c in means if c not in lead)]
    rows = []
    unbounded = ratings_without_interval(lb)
    for e in lb.systems:
        r: dict[str, Any] = {"rank": "-" if e.rank is None else str(e.rank), "system": e.system}
        if lb.combined_signals:
            r[COMBINED_TEST] = fmt_num(e.combined, signed=True) if e.combined is not None else "-"
        if e.judge is not None:
            why = unbounded.get(e.system)
            r["judge"] = (f"{e.judge['rating']:.0f} ({why}: no interval)" if why else
                          _ci(e.judge["rating"], e.judge["rating_low"], e.judge["rating_high"], 0))
            r["wtl"] = f"{e.judge['wins']:.0f}/{e.judge['ties']:.0f}/{e.judge['losses']:.0f}"
        for m in shown:
            v = e.metrics[m]
            r[m] = _ci(v["mean"], v["low"], v["high"], n=v.get("n"), of=lb.n_contexts)
        rows.append(r)
    return rows, cols


def holm_floor_note(n_systems: int, n_perm: int, level: float, flag: str = "--n-perm",
                    n_contexts: int = 0) -> str:
    """Why no pair of ``n_systems`` can differ on a metric or people's ratings: Holm's correction multiplies the
    smallest p by the m = n(n - 1) / 2 pairs, and the smallest p of the randomization test is 1 / (n_perm + 1),
    or 2 / 2^G where its ``n_contexts`` G contexts are few enough that every sign flip is enumerated
    (``core.stats.approximate_randomization``); where m times it is not below 1 - ``level`` every pair ties,
    whatever the data. '' where a pair can differ. ``flag``: the setting, as the caller's surface spells it."""
    m, alpha = n_systems * (n_systems - 1) // 2, 1 - level
    if m < 2:
        return ""
    exact = bool(n_contexts) and 2 ** n_contexts <= n_perm
    if n_contexts and m * 2 / 2 ** n_contexts >= alpha:  # not even the exact test can: more contexts are needed
        need = next(g for g in range(n_contexts + 1, 200) if m * 2 / 2 ** g < alpha)
        return (f"with {n_contexts} shared contexts and {m} pairs of systems the smallest p (Holm) a metric or "
                f"people's ratings can reach is {m} x 2/2^{n_contexts} = {m * 2 / 2 ** n_contexts:.3g}, not below "
                f"{alpha:.3g}: no pair can differ on them, whatever the data; it takes {need} shared contexts or "
                "more (or fewer systems)")
    if exact or m / (n_perm + 1) < alpha:
        return ""
    return (f"with {n_perm} randomizations and {m} pairs of systems the smallest p (Holm) a metric or people's "
            f"ratings can reach is {m}/{n_perm + 1} = {m / (n_perm + 1):.3g}, not below {alpha:.3g}: no pair can "
            f"differ on them, whatever the data; ask for at least {math.ceil(m / alpha)} ({flag})")


def rank_jump_note(lb: Leaderboard) -> str:
    """Where a system shares a better rank than one listed above it (its interval is wide, so fewer systems are
    significantly better than it: Chatbot Arena's rule), that it is so; '' when ranks never improve down the
    list."""
    ranks = [e.rank for e in lb.systems if e.rank is not None]
    jumps = [e.system for k, e in enumerate(lb.systems) if e.rank is not None
             and any(r > e.rank for r in ranks[:k])]
    if not jumps:
        return ""
    return (f"{', '.join(jumps)} {'has' if len(jumps) == 1 else 'have'} a better rank than a system listed above: "
            "the list follows the means, the rank counts only the systems significantly better, and fewer are "
            "so where an interval is wide")


def mismatch_note(mismatches: Sequence[str], n_shared: int) -> str:
    """The warning for shared ids whose contexts differ across systems (:meth:`SystemGrid.context_mismatches`;
    '' when there are none)."""
    if not mismatches:
        return ""
    return (f"warning: {len(mismatches)} of {n_shared} shared ids have different contexts in different systems; "
            f"{ID_MISMATCH_ADVICE}")


def ranking_label(ranked_by: str, signals: Sequence[str] = ()) -> str:
    """What the ranking is by, in words: 'the judge's Bradley-Terry rating', 'people's mean Overall rating',
    'mean bleu', 'the verdict's combined test of bert_ruber+judge+ubleu (...)' (``signals``: its signals)."""
    if ranked_by == "judge":
        return "the judge's Bradley-Terry rating"
    if ranked_by == COMBINED_TEST:
        return (f"the verdict's combined test{' of ' + '+'.join(signals) if signals else ''}, as compare decides "
                "(each system's mean combined difference against the others)")
    if ranked_by.startswith("human:"):
        return f"people's mean {ranked_by[len('human:'):]} rating"
    return f"mean {ranked_by}"


def pairwise_columns(level: float = 0.95) -> list[tuple[str, str]]:
    """The (key, header) columns of the every-pair table; the interval's header names its level."""
    return [("metric", "metric"), ("first", "system 1"), ("second", "system 2"),
            ("diff", f"1 - 2, or the judge's win rate of 1 [{level_label(level)} CI]"), ("p", "p"),
            ("p_holm", "p (Holm)"),
            ("wtl", "1 wins/ties/2 wins"), ("better", "better")]


def pairwise_cells(lb: Leaderboard) -> list[dict[str, str]]:
    return [{"metric": r.metric, "first": r.first, "second": r.second,
             "diff": fmt_interval(r.diff, r.low, r.high, signed=r.metric != "judge"),
             "p": fmt_num(r.p, p=True), "p_holm": fmt_num(r.p_holm, p=True), "wtl": f"{r.wins}/{r.ties}/{r.losses}",
             "better": r.better or (f"none: {'+'.join(r.vetoed_by)} names the other system (a veto, as in compare)"
                                    if r.vetoed_by else
                                    "no significant difference (every pair a tie)" if r.metric == "judge"
                                    and not r.wins and not r.losses and r.ties else
                                    "not scored: no context has both values" if math.isnan(r.diff)
                                    else "no significant difference" + _which_p(r, lb.level))} for r in lb.pairwise]


def _which_p(r: PairwiseRow, level: float) -> str:
    """' (the interval excludes 0, but p (Holm) 0.125 >= 0.05: a winner needs both)' for a row of a metric (or the
    combined test, or people) with no winner whose interval excludes 0, as compare's table says it; '' else."""
    if r.better is not None or r.metric == "judge":  # the judge's interval is of a win rate, around 0.5
        return ""
    why = undecided_interval_words(r.low, r.high, r.p_holm, "p (Holm)", level)
    return f" ({why})" if why else ""


def render_leaderboard(lb: Leaderboard, fmt: str = "text") -> str:
    """``dialeval leaderboard``'s output: text / markdown (ranking, then every pair), csv (one table, rows told
    apart by ``kind``) or json (the systems best first, each with its scores and intervals; the pairs)."""
    from core.report import render, to_json
    notes = lb.notes()  # what text says in its header
    if fmt == "json":
        return to_json(lb.to_dict())
    rows, cols = leaderboard_rows(lb)
    if fmt == "csv":
        flat: list[dict[str, Any]] = [{"kind": "note", "note": n} for n in notes]
        for e in lb.systems:
            r: dict[str, Any] = {"kind": "system", "rank": e.rank, "system": e.system}
            if lb.combined_signals:
                r["combined"] = e.combined
            for m, v in e.metrics.items():
                r.update({f"{m}_mean": v["mean"], f"{m}_low": v["low"], f"{m}_high": v["high"], f"{m}_n": v["n"]})
            if e.judge is not None:
                r.update({f"judge_{k}": v for k, v in e.judge.items()})
            if e.unranked:
                r["note"] = e.unranked
            flat.append(r)
        flat += [{"kind": "pairwise", **asdict(r)} for r in lb.pairwise]
        flat += [{"kind": "dropped", "note": d} for d in lb.dropped]
        flat += [{"kind": "input_note", "note": n} for n in lb.input_notes.values()]  # as compare's csv writes them
        keys: list[str] = []
        for r in flat:
            keys += [k for k in r if k not in keys]
        return render(flat, [(k, k) for k in keys], "csv")
    by = ranking_label(lb.ranked_by, lb.combined_signals)
    groups = lb.n_groups or lb.n_contexts
    shared = (f"{lb.n_contexts} shared contexts" if groups == lb.n_contexts else
              f"{groups} shared contexts, {lb.n_contexts} answers each")
    head = (f"{len(lb.systems)} systems on {shared} (aligned by "
            f"{alignment_words(lb.aligned_by, lb.alignment_note)}); ranked by "
            f"{by}; rank = 1 + systems significantly better (Holm-adjusted p < {alpha_label(lb.level)}); intervals "
            f"resample contexts ({lb.n_boot} resamples, seed {lb.seed})")
    from core.stats import MIN_RESAMPLED
    if groups < MIN_RESAMPLED:
        head += (f"; {groups} shared context{'s' * (groups != 1)} cannot be resampled (fewer than "
                 f"{MIN_RESAMPLED}): no interval or p ('-'), so no system is significantly better and all share "
                 f"a rank")
    if lb.rank_note:
        head += f"; {lb.rank_note}"
    if lb.holm_floor():
        head += f"; {lb.holm_floor()}"
    jump = rank_jump_note(lb)
    if jump:
        head += f"; {jump}"
    parts = [head]
    if lb.coverage_note:
        parts.append(f"warning: {lb.coverage_note}")
    if lb.reference_note:
        parts.append(f"warning: {lb.reference_note}")
    if lb.shared_references_note:
        parts.append(f"note: {lb.shared_references_note}")
    unscored = unscored_note(lb)
    if unscored:
        parts.append(f"note: {unscored}")
    if lb.context_mismatches:
        bullet = "- " if fmt == "markdown" else "  "
        listed = "\n".join(bullet + m for m in lb.context_mismatches[:20])
        more = len(lb.context_mismatches) - 20
        parts.append(mismatch_note(lb.context_mismatches, lb.n_contexts) + ":\n" + listed
                     + (f"\n{bullet}... and {more} more" if more > 0 else ""))
    parts.append(render(rows, cols, fmt))
    unranked = [e for e in lb.systems if e.unranked]
    if unranked:
        bullet = "- " if fmt == "markdown" else "  "
        parts.append("Not ranked (rank -):\n" + "\n".join(f"{bullet}{e.system}: {e.unranked}" for e in unranked))
    parts += [f"Every pair ({PAIRS_FAMILY_NOTE}):", render(pairwise_cells(lb), pairwise_columns(lb.level), fmt)]
    if lb.input_notes:
        bullet = "- " if fmt == "markdown" else "  "
        parts.append("notes on the input:\n" + "\n".join(bullet + n for n in lb.input_notes.values()))
    if lb.dropped:
        bullet = "- " if fmt == "markdown" else "  "
        parts.append(f"{len(lb.dropped)} row(s) not on a context every system answered, left out:\n"
                     + "\n".join(bullet + d for d in lb.dropped))
    sigs = [f"{m}: {s}" for m, s in lb.signatures.items()] + ([f"judge: {lb.judge_signature}"] if lb.judge_signature
                                                              else [])
    if sigs:
        parts.append("Signatures:\n" + "\n".join(("- " if fmt == "markdown" else "  ") + s for s in sigs))
    return "\n\n".join(parts)
