"""``dialeval gate BASELINE CANDIDATE``: PASS (exit 0) or FAIL (exit 1) on one or more criteria of the verdict
(``core.gating``), made for a CI job: markdown for a pull-request comment, the GitHub step summary, JUnit XML."""
from __future__ import annotations

import argparse
import os
from typing import Callable

from core.cli import criterion_name, emit, note, number_above, register_command, tell
from core.cli.compare import add_output_arguments, add_verdict_arguments, verdict_from
from core.data import Comparison
from core.gating import (REQUIREMENTS, check_one_margin, file_order_note, gate_comparison, human_criterion,
                         is_combined, junit_xml, missing_dimension, unchanged_candidate_note, unreadable_criterion,
                         untrusted_criteria_notes)
from core.outputs import OutputError, check_output, write_text

EXIT_FAIL = 1


def _criteria(text: str) -> list[str]:
    names = [s.strip() for s in text.split(",") if s.strip()]
    if not names:
        raise argparse.ArgumentTypeError("name one or more criteria: judge, combined, a metric, or human:DIM")
    return names


def _arguments(p: argparse.ArgumentParser) -> None:
    add_verdict_arguments(p)
    p.add_argument("--by", type=_criteria, default=None,
                   help="criteria, comma-separated: judge, combined (the verdict's combined test, with the judge "
                        "that may veto it), a metric, or "
                        "human:DIM (default: what the one-line verdict decides on: people's ratings on its "
                        "dimension when they name a winner, else its combined test and the judge that may veto it, "
                        "else the judge or a deciding metric)")
    p.add_argument("--require", choices=REQUIREMENTS, default="not-worse",
                   help="not-worse (default): fail when the candidate is significantly worse; non-inferior: pass "
                        "only when the improvement's interval lies above -MARGIN; better: pass only when the "
                        "candidate is significantly better; under each, a criterion over too few contexts that "
                        "differ for any p below the threshold (5 or fewer at 0.95) fails")
    p.add_argument("--margin", type=number_above(0, inclusive=True), default=None,
                   help="non-inferiority margin in the criterion's units, one criterion per margin (default: 0.05 "
                        "of win rate for the judge; 0.2 per signal for the combined test; a fifth of the baseline's "
                        "standard deviation for a metric or people's ratings, none where the baseline does not "
                        "vary); by default the judge that may veto the combined test is checked as not "
                        "significantly worse, whatever --require and --margin say")
    add_output_arguments(p, ("text", "markdown", "json"), "the report")
    p.add_argument("--junit", help="also write a JUnit XML file: one test case per criterion")


def check_criteria(a: argparse.Namespace) -> Callable[[Comparison], None]:
    """``--by`` checked before anything is loaded or scored (a typo cost a whole scoring run): the judge needs the
    judge, the combined test the signals the verdict policy combines, a metric to be among ``--metrics`` (its
    name as ``--metrics`` reads it: 'BLEU' is bleu). Returns the check of ``human:DIM`` criteria, which needs
    the loaded comparison (``verdict_from``'s ``check_loaded``)."""
    measured = a.judge == "pairwise" and getattr(a, "checkpoint", None) is None
    names = []
    for by in a.by or []:
        by = criterion_name(by, a)  # 'BLEU' is bleu; an unknown name: the registry's error, listing the known
        why = unreadable_criterion(by, a.metrics, measured)
        if why is not None:  # a metric not compared is named with the flag that adds it
            raise ValueError(f"--by {by}: " + (why if is_combined(by) else
                                               f"it is not among --metrics {','.join(a.metrics) or 'none'}; add it"))
        names.append(by)
    if a.by:
        a.by = list(dict.fromkeys(names))  # a criterion named twice ('judge,JUDGE') is checked once
        check_one_margin(a.by, a.require, a.margin)

    def human_dimensions(comp: Comparison) -> None:
        for by in a.by or []:
            why = missing_dimension(by, comp)
            if why:
                raise ValueError(f"--by {by}: {why}")
        if a.by:  # human:overall read as the inputs spell it (human:Overall)
            a.by = list(dict.fromkeys(human_criterion(by, comp) for by in a.by))
    return human_dimensions


def step_summary() -> str | None:
    """``$GITHUB_STEP_SUMMARY`` (GitHub Actions' job summary, appended to), or None when unset or its folder does
    not exist (said: the gate's PASS or FAIL does not depend on it)."""
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if not path:
        return None
    if not os.path.isdir(os.path.dirname(os.path.abspath(path))):
        note([f"GITHUB_STEP_SUMMARY={path}: its folder does not exist, so no job summary is written"])
        return None
    return path


@register_command("gate", "PASS or FAIL for CI: is the candidate (second system) not worse than the baseline?",
                  _arguments)
def gate_command(a: argparse.Namespace) -> int:
    out = a.out if a.out != "-" else None
    if a.margin is not None and a.require != "non-inferior":
        note([f"--margin {a.margin:g} has no effect: it is the non-inferiority margin, read only with --require "
              f"non-inferior (this gate requires {a.require})"])
    if a.junit == "-":
        raise OutputError("--junit -: name a file for the JUnit XML (standard output holds the decision; a file "
                          "named '-' would be written)")
    if a.junit is not None:  # checked with --out, before anything is loaded or scored
        check_output(a.junit, [a.input, a.input_b, getattr(a, "pool", None)], "--junit")
        if out is not None and os.path.realpath(a.junit) == os.path.realpath(out):
            raise OutputError(f"--junit {a.junit} is also --out: one file cannot hold both the report and the "
                              "JUnit XML; choose another name for one of them")
    human_dimensions = check_criteria(a)
    note(untrusted_criteria_notes(a.by or [], a.judge == "pairwise" and getattr(a, "checkpoint", None) is None))
    summary = step_summary()

    def loaded(comp: Comparison) -> None:  # once the inputs are read, before anything is scored
        human_dimensions(comp)
        if a.input_b is None and not a.system_a and not a.system_b:  # which is which decides PASS or FAIL
            note([file_order_note(comp)])
    comp, cs, verdict = verdict_from(a, out, check_loaded=loaded)
    result = gate_comparison(comp, {m: list(cs.a(m)) for m in cs.metrics}, verdict, a.by, a.require, a.margin)
    unchanged = unchanged_candidate_note(verdict, a.require, result.passed)
    if unchanged:
        note([unchanged])
    emit(result.render(a.format), out)
    if a.junit:
        write_text(a.junit, junit_xml(result.checks, verdict.sentence))
        tell(f"wrote {a.junit}", routine=True)
    if summary:  # the job's summary page on GitHub Actions; a failure to write it is said, not the gate's result
        try:
            with open(summary, "a", encoding="utf-8") as f:
                f.write(result.render("markdown") + "\n")
        except OSError as e:
            note([f"GITHUB_STEP_SUMMARY={summary}: the job summary could not be written ({e.strerror or e})"])
    return 0 if result else EXIT_FAIL
