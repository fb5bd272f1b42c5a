"""``dialeval compare``: the verdict on two systems (``core.verdict``), per metric and by the judge (``--no-judge``
leaves it out)."""
from __future__ import annotations

import argparse
from typing import Callable

from core.cli import (add_input_arguments, add_judge_arguments, add_option_arguments, add_quiet_argument, check_paths,
                      csv_mapping_from, emit, interval_level, judge_from, judge_usage_note, metric_names_or_none, note,
                      note_estimate, options_from, register_command, whole_number)
from core.data import Comparison, load_comparison
from core.engine import (DEFAULT_METRICS, ComparisonScores, blank_text_notes, check_judge_models,
                         estimate_comparison, judge_comparison, score_comparison)
from core.progress import progress_bar
from core.report import render_verdict
from core.settings import SEED
from core.stats import MAX_RESAMPLES, MIN_BOOT
from core.verdict import (LEVEL, N_BOOT, N_PERM, Verdict, alignment_warning, build_verdict, check_something_to_compare,
                          mismatch_words, summarize_judge)


def add_statistics_arguments(p: argparse.ArgumentParser) -> None:
    """The statistics settings of a verdict or a leaderboard: resamples, randomizations, level and seed."""
    p.add_argument("--n-boot", type=whole_number(MIN_BOOT, MAX_RESAMPLES), default=N_BOOT,
                   help=f"bootstrap resamples, at least {MIN_BOOT} (default {N_BOOT})")
    p.add_argument("--n-perm", type=whole_number(1, MAX_RESAMPLES), default=N_PERM,
                   help=f"randomizations (default {N_PERM}; at least 1/(1 - level): 20 at 0.95, so that a "
                        "p below 1 - level is possible)")
    p.add_argument("--level", type=interval_level, default=LEVEL, help=f"interval level (default {LEVEL})")
    p.add_argument("--seed", type=whole_number(0), default=SEED)


def add_output_arguments(p: argparse.ArgumentParser, formats: tuple[str, ...], what: str) -> None:
    """``--format`` (one of ``formats``, text by default) and ``--out`` (``what`` is written there, whole or
    not at all, instead of stdout)."""
    p.add_argument("--format", default="text", choices=formats)
    p.add_argument("-o", "--out", help=f"write {what} here instead of stdout (written whole or not at all)")


def add_verdict_arguments(p: argparse.ArgumentParser) -> None:
    """What a verdict is computed from: the inputs, metrics, the judge, run options and statistics settings
    (``compare`` and ``report`` take the same)."""
    add_input_arguments(p)
    p.add_argument("--metrics", type=metric_names_or_none, default=list(DEFAULT_METRICS),
                   help="comma-separated metric names, 'all', or 'none' (people's ratings and/or the judge alone)")
    add_judge_arguments(p)
    p.add_argument("--no-human", action="store_true", help="do not compare the human scores present in the input")
    add_option_arguments(p)
    add_statistics_arguments(p)
    add_quiet_argument(p)


def verdict_from(a: argparse.Namespace, out: str | None, no_metrics: str = "--metrics none",
                 check_loaded: Callable[[Comparison], None] | None = None
                 ) -> tuple[Comparison, ComparisonScores, Verdict]:
    """Check every path first (the inputs, ``--pool``, the output ``out``), then load the comparison the
    arguments name, score it, judge it when asked, and build the verdict. ``no_metrics``: how a message names
    the choice of no metric (``plan --by human:DIM`` makes it); ``check_loaded``: a command's own check of the
    loaded comparison, run before anything is scored (``gate --by human:DIM``)."""
    mapping = csv_mapping_from(a)
    check_paths(a, [a.input, a.input_b], out)
    comp = load_comparison(a.input, a.input_b, a.system_a, a.system_b, a.input_format, mapping)
    comp.require_pairs()
    note([mismatch_words(comp)] if comp.context_mismatches() else [])  # on stderr too, before anything runs
    note([alignment_warning(comp)] if comp.alignment_note else [])  # rows not paired as their ids say
    if check_loaded is not None:
        check_loaded(comp)
    judge = judge_from(a)
    check_something_to_compare(comp, a.metrics, judge is not None, not a.no_human, no_metrics,
                               "the judge (drop --no-judge)", "--no-human")
    note(blank_text_notes(comp.examples(), a.metrics, judged=judge or False))
    checkpoint = getattr(a, "checkpoint", None)  # the learned judge's (judge_from refuses it for another judge)
    if judge is not None:  # a missing model package or an endpoint that does not answer is said before the metrics run
        check_judge_models(comp, judge, checkpoint)
    options = options_from(a)  # once: what it says about the options is said once
    if not a.quiet:  # never a wait without saying how long (the time estimates of core.time_estimates)
        note_estimate(estimate_comparison(comp, a.metrics, options, judge, checkpoint))
    progress = progress_bar(a.quiet)
    cs = score_comparison(comp, a.metrics, options, progress=progress)
    summary = None
    if judge is not None:
        summary = summarize_judge(comp, judge_comparison(comp, judge, checkpoint, progress=progress), level=a.level,
                                  n_boot=a.n_boot, seed=a.seed, people=not a.no_human)
        judge_usage_note(judge)
    verdict = build_verdict(comp, cs, summary, human=not a.no_human, n_boot=a.n_boot, n_perm=a.n_perm,
                            level=a.level, seed=a.seed)
    return comp, cs, verdict


def _arguments(p: argparse.ArgumentParser) -> None:
    add_verdict_arguments(p)
    add_output_arguments(p, ("text", "markdown", "csv", "json"), "the table")


@register_command("compare", "paired comparison of two systems per metric (intervals by context, p-values, verdict)",
                  _arguments)
def compare(a: argparse.Namespace) -> int:
    out = a.out if a.out != "-" else None
    _, _, verdict = verdict_from(a, out)
    emit(render_verdict(verdict, a.format), out)
    return 0
