"""``dialeval gate BASELINE CANDIDATE``: PASS (exit 0) or FAIL (exit 1) on one or more criteria of the verdict
(``core.gate``), made for a CI job: markdown for a pull-request comment, the GitHub step summary, JUnit XML."""
from __future__ import annotations

import argparse
import math
import os

from core.cli import emit, note, number_above, register_command
from core.cli.compare import add_output_arguments, add_verdict_arguments, verdict_from
from core.gate import REQUIREMENTS, gate, junit_xml, passed, render_checks
from core.engine import is_blank
from core.outputs import OutputError, check_output, write_text
from core.report import render_verdict, to_json
from core.verdict import context_groups

EXIT_FAIL = 1


def _criteria(text: str) -> list[str]:
    names = [s.strip() for s in text.split(",") if s.strip()]
    if not names:
        raise argparse.ArgumentTypeError("name one or more criteria: judge, a metric, or human:DIM")
    return names


def _arguments(p: argparse.ArgumentParser) -> None:
    add_verdict_arguments(p)
    p.add_argument("--by", type=_criteria, default=None,
                   help="criteria, comma-separated: judge, a metric, or human:DIM (default: what the one-line "
                        "verdict trusts: people's ratings when they decide, else the judge, else a deciding metric)")
    p.add_argument("--require", choices=REQUIREMENTS, default="not-worse",
                   help="not-worse (default): fail when the candidate is significantly worse; non-inferior: pass "
                        "only when the improvement's interval lies above -MARGIN; better: pass only when the "
                        "candidate is significantly better")
    p.add_argument("--margin", type=number_above(0, inclusive=True), default=None,
                   help="non-inferiority margin in the criterion's units (default: 0.05 of win rate for the "
                        "judge; a fifth of the baseline's standard deviation for a metric)")
    add_output_arguments(p, ("text", "markdown", "json"), "the report")
    p.add_argument("--junit", help="also write a JUnit XML file: one test case per criterion")


@register_command("gate", "PASS or FAIL for CI: is the candidate (second system) not worse than the baseline?",
                  _arguments)
def gate_command(a: argparse.Namespace) -> int:
    out = a.out if a.out != "-" else None
    if a.margin is not None and a.require != "non-inferior":
        note([f"--margin {a.margin:g} has no effect: it is the non-inferiority margin, read only with --require "
              f"non-inferior (this gate requires {a.require})"])
    if a.junit is not None:  # checked with --out, before anything is loaded or scored
        check_output(a.junit, [a.input, a.input_b, getattr(a, "pool", None)], "--junit")
        if out is not None and os.path.realpath(a.junit) == os.path.realpath(out):
            raise OutputError(f"--junit {a.junit} is also --out: one file cannot hold both the report and the "
                              "JUnit XML; choose another name for one of them")
    comp, cs, verdict = verdict_from(a, out)
    baseline = {m: list(cs.a(m)) for m in cs.metrics}
    for r in verdict.rows("human"):
        dim = r.metric.split(":", 1)[1]
        baseline[r.metric] = [ex.scores.get(dim, math.nan) for ex in comp.a]
    blank = (sum(is_blank(ex.response) for ex in comp.a), sum(is_blank(ex.response) for ex in comp.b))
    checks = gate(verdict, a.by, a.require, a.margin, baseline, len(set(context_groups(comp.a))), blank)
    ok = passed(checks)
    if a.format == "json":
        text = to_json({"passed": ok, "checks": [c.to_dict() for c in checks], "verdict": verdict.to_dict()})
    else:
        text = render_checks(checks, a.format) + "\n\n" + render_verdict(verdict, a.format)
    emit(text, out)
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:  # the job's summary page on GitHub Actions
        with open(summary, "a", encoding="utf-8") as f:
            f.write(render_checks(checks, "markdown") + "\n\n" + render_verdict(verdict, "markdown") + "\n")
    if a.junit:
        write_text(a.junit, junit_xml(checks, verdict.sentence))
    return 0 if ok else EXIT_FAIL
