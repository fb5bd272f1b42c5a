"""``dialeval judge``: the learned A/B judge over every pair of two systems, with its win rate and agreement
with people (human ratings in the input, or a votes file)."""
from __future__ import annotations

import argparse

from core.cli import (add_cache_argument, add_input_arguments, add_judge_arguments, add_quiet_argument, check_paths,
                      csv_mapping_from, interval_level, judge_from, judge_usage_note, note, note_estimate,
                      note_jsonl_out, register_command, tell, write_stdout)
from core.data import dimensions, load_comparison
from core.engine import blank_text_notes, check_judge_models, estimate_comparison, judge_comparison
from core.judges.pairs import load_votes, votes_for_pairs, votes_matched
from core.models.device import use_device
from core.progress import progress_bar
from core.report import PAIR_COLUMNS, judge_rows, markdown_text, render, render_verdict, to_json, write_jsonl
from core.verdict import LEVEL, alignment_warning, build_verdict, judge_sentence, mismatch_words, summarize_judge


def _arguments(p: argparse.ArgumentParser) -> None:
    add_input_arguments(p)
    add_judge_arguments(p, optional=False)
    p.add_argument("--checkpoint", default=None, help="the learned judge's checkpoint name (default: the shipped "
                                                      "judge)")
    p.add_argument("--dimension", help="human score dimension for agreement (default: the overall-like one)")
    p.add_argument("--votes", help="votes JSONL (context, response_a, response_b, vote) to measure agreement with "
                                   "instead of human scores; matched to the pairs by context and replies")
    p.add_argument("--format", default="text", choices=("text", "markdown", "csv", "json"))
    p.add_argument("--level", type=interval_level, default=LEVEL,
                   help=f"level of the win rate's and agreement's intervals (default {LEVEL})")
    p.add_argument("-o", "--out", help="write the per-pair rows as JSONL here (the summary still goes to stdout); "
                                 "written whole or not at all")
    add_quiet_argument(p)
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda", "mps", "auto"),
                   help="where the judge's models run (default cpu; auto: CUDA, then MPS, then the CPU)")
    add_cache_argument(p)


@register_command("judge", "A/B judge (learned, or --judge llm): which of two replies a person would prefer, every pair",
                  _arguments)
def judge(a: argparse.Namespace) -> int:
    mapping = csv_mapping_from(a)
    out_path = a.out if a.out != "-" else None
    check_paths(a, [a.input, a.input_b], out_path)
    note_jsonl_out(out_path, "the per-pair rows", "; for them as CSV, leave --out out and use --format csv (stdout)")
    comp = load_comparison(a.input, a.input_b, a.system_a, a.system_b, a.input_format, mapping)
    comp.require_pairs()
    note([mismatch_words(comp)] if comp.context_mismatches() else [])  # as compare says it, before anything runs
    note([alignment_warning(comp)] if comp.alignment_note else [])
    if a.dimension and a.dimension not in dimensions(comp.examples()):
        raise ValueError(f"--dimension {a.dimension!r} is not in the data; its human dimensions are "
                         f"{dimensions(comp.examples()) or 'none'}")
    votes = None
    if a.votes:
        voted = load_votes(a.votes)
        votes = votes_for_pairs(comp, voted)
        note(votes_matched(comp, voted) + ([f"--dimension {a.dimension} is not used: with --votes the judge's "
                                            "agreement is with the votes"] if a.dimension else []))
    use_device(a.device)  # before anything loads: an unavailable device is exit 2 with its one line
    judge = judge_from(a)
    note(blank_text_notes(comp.examples(), judged=judge))
    check_judge_models(comp, judge, a.checkpoint)
    if not a.quiet:
        note_estimate(estimate_comparison(comp, (), None, judge, a.checkpoint))
    out = judge_comparison(comp, judge, a.checkpoint, progress=progress_bar(a.quiet))
    judge_usage_note(judge)
    verdict = build_verdict(comp, None, summarize_judge(comp, out, a.dimension, votes, a.level), level=a.level)
    rows = judge_rows(verdict, comp)
    if out_path:
        write_jsonl(rows, out_path)
        tell(f"wrote {len(rows)} rows to {out_path}", routine=True)
    lines: list[str] = []  # written whole (core.cli.write_stdout: a closed pipe is exit 141)
    if a.format == "json":
        lines.append(to_json({**verdict.to_dict(), "judge_sentence": judge_sentence(verdict),
                              "pairs": [] if out_path else rows}))
    elif a.format == "csv":
        lines.append(render_verdict(verdict, "csv", pairs=[] if out_path else rows, lead=judge_sentence(verdict)))
    else:
        lead = judge_sentence(verdict)  # the judge's own finding; the one-line verdict is compare's (all signals)
        lines.append(f"**{markdown_text(lead)}**\n" if a.format == "markdown" else lead + "\n")
        if not out_path and a.format == "markdown":
            lines.append(render(rows, PAIR_COLUMNS, "markdown") + "\n")
        elif not out_path:
            people = ", people" if any(r["human"] for r in rows) else ""
            lines.append(f"per pair: id of A, id of B, P(A preferred), the judge's call (A, B or tie; within "
                         f"{verdict.judge.tie_margin:g} of 0.5 is a tie){people}:")
            lines += [f"{r['id_a']}\t{r['id_b']}\tp_a={r['p_a']:.3f}\t{r['verdict']}"
                      + (f"\thuman={r['human']}" if r["human"] else "") for r in rows]
        lines.append(render_verdict(verdict, a.format, with_sentence=False))
    write_stdout("".join(line + "\n" for line in lines))
    return 0
