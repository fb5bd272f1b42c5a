"""``dialeval leaderboard FILE [FILE ...]``: two or more systems (made for three or more) on their shared
contexts: per-metric and per-rated-dimension means with intervals, Bradley-Terry ratings from the judge
(unless ``--no-judge``), every pair Holm-corrected (``core.leaderboard``)."""
from __future__ import annotations

import argparse
import shlex
from typing import Sequence

from core.cli import (add_csv_arguments, add_judge_arguments, add_option_arguments, add_quiet_argument, check_paths,
                      csv_mapping_from, emit, judge_from, judge_usage_note, metric_names_or_none, note, note_estimate,
                      options_from, register_command, tell)
from core.cli.compare import add_output_arguments, add_statistics_arguments
from core.data import load_file, meant_system, rows_of_files, systems_in
from core.engine import DEFAULT_METRICS, blank_text_notes, estimate_work
from core.leaderboard import (holm_floor_note, leaderboard_of_grid, render_leaderboard, shared_contexts,
                              unscored_metric_hint)
from core.progress import progress_bar


def system_names(text: str) -> list[str]:
    """``--systems``: names separated by commas, ``\\,`` a comma inside a name (``a\\, b,c`` is ``a, b`` and
    ``c``); blanks around each name are dropped."""
    names = [part.replace("\0", ",").strip() for part in text.replace("\\,", "\0").split(",")]
    return [n for n in names if n]


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("inputs", nargs="+", help="one multi-system file, or several files (one or more systems each)")
    p.add_argument("--systems", type=system_names, default=None,
                   help="comma-separated systems to rank (default: all); a comma inside a name is written \\,")
    p.add_argument("--input-format", default=None, choices=("jsonl", "dstc10", "columns", "csv"),
                   help="input format (default: detect from the name and content)")
    add_csv_arguments(p)
    p.add_argument("--metrics", type=metric_names_or_none, default=list(DEFAULT_METRICS),
                   help="comma-separated metric names, 'all', or 'none' (the judge and/or people's ratings alone)")
    add_judge_arguments(p, "on every pair of systems (Bradley-Terry ratings)")
    p.add_argument("--rank-by", default="auto",
                   help="what orders the systems: 'auto' (default: people's overall ratings when the input rates "
                        "every system on every shared context, else the verdict's combined test when its signals "
                        "were computed (as compare decides), else the learned judge unless --no-judge (a judge "
                        "with no measured record, such as --judge llm, only when no metric is asked), else the first "
                        "metric), 'combined', 'judge', a metric, or human:DIM for a rated dimension")
    p.add_argument("--no-human", action="store_true", help="leave the human ratings in the input out: neither "
                   "shown nor ranking (the metrics' and the judge's view of a rated file)")
    add_option_arguments(p)
    add_statistics_arguments(p)
    add_output_arguments(p, ("text", "markdown", "csv", "json"), "the output")
    add_quiet_argument(p)


def compare_hint(a: argparse.Namespace, pair: Sequence[str], present: Sequence[str]) -> str:
    """The ``dialeval compare`` command line for two of the ranked systems, quoted for a shell: one input file
    and the two systems named; two files of one system each; else the command's name only. Where the input was
    read with flags of its own (``--input-format``, the CSV columns), the hint says to add them."""
    inputs = a.inputs
    flags = " with the same input flags" if (getattr(a, "input_format", None) or csv_mapping_from(a)) else ""
    if len(inputs) == 1:
        return (f"`dialeval compare {shlex.quote(inputs[0])} --system-a {shlex.quote(pair[0])} "
                f"--system-b {shlex.quote(pair[1])}`{flags}")
    if len(inputs) == 2 and len(present) == 2:
        return f"`dialeval compare {shlex.quote(inputs[0])} {shlex.quote(inputs[1])}`{flags}"
    return "`dialeval compare` on them"


def rejoined(pieces: list[str], present: list[str]) -> list[str]:
    """``pieces`` (``--systems`` split at every comma) with runs of pieces joined again where, joined with commas,
    they name a system: what a user who wrote 'g,h,beta' for the systems 'g,h' and 'beta' meant."""
    def key(name: str) -> str:  # spaces beside a comma are the user's, not the name's to keep
        return ",".join(part.strip() for part in name.split(","))
    names = {key(n): n for n in present}
    out, i = [], 0
    while i < len(pieces):
        for j in range(len(pieces), i, -1):
            name = names.get(key(",".join(pieces[i:j])))
            if name is not None:
                out.append(name)
                i = j
                break
        else:
            out.append(pieces[i])
            i += 1
    return out


@register_command("leaderboard", "rank two or more systems on shared contexts (metrics, judge ratings, Holm)",
                  _arguments)
def leaderboard_command(a: argparse.Namespace) -> int:
    out = a.out if a.out != "-" else None
    mapping = csv_mapping_from(a)
    check_paths(a, a.inputs, out)
    examples = rows_of_files([(path, load_file(path, a.input_format, csv_mapping=mapping)) for path in a.inputs])
    if a.systems is not None and not a.systems:
        raise ValueError("--systems: name one or more systems (or leave the flag out to rank them all)")
    systems = a.systems or None
    present = systems_in(examples)
    with_comma = [s for s in present if "," in s]
    if systems and with_comma and not set(systems) <= set(present):
        meant = rejoined(systems, present)
        said = [n for n in with_comma if n in meant] or with_comma
        raise ValueError(f"--systems: {', '.join(repr(s) + meant_system(s, present) for s in systems if s not in present)}"
                         " not found; "
                         f"{', '.join(map(repr, said))} {'has a comma in its name' if len(said) == 1 else 'have commas in their names'}"
                         ": write each such comma as \\, (--systems "
                         f"{shlex.quote(','.join(n.replace(',', chr(92) + ',') for n in meant))})")
    twice = sorted({s for s in systems or [] if systems.count(s) > 1})
    if twice:
        raise ValueError(f"--systems names {', '.join(map(repr, twice))} more than once; name each system once")
    if not a.metrics and a.judge is None and (a.no_human or not any(e.scores for e in examples)):
        raise ValueError("--metrics none leaves nothing to rank: " + (
            "--no-human leaves the human ratings out; drop it or --no-judge" if a.no_human and any(
                e.scores for e in examples) else "the input has no human ratings; drop --no-judge"))
    if a.rank_by.lower() not in ("auto", "combined", "judge") and not a.rank_by.lower().startswith("human:") \
            and a.rank_by.lower() not in [m.lower() for m in a.metrics] and unscored_metric_hint(a.rank_by):
        raise ValueError(f"--rank-by {a.rank_by}: not among the metrics scored ({', '.join(a.metrics) or 'none'})"
                         + unscored_metric_hint(a.rank_by, "--metrics"))  # before scoring what it would then refuse
    grid = shared_contexts(examples, systems)  # the rows ranked, references shared as the leaderboard shares them
    ranked = systems or present
    if len(ranked) == 2 and not a.quiet:  # after the systems were found
        tell(f"note: two systems: {compare_hint(a, ranked, present)} gives their full verdict (per-metric "
             "tests, what drives the difference, slices); the leaderboard ranks them too")
    note(blank_text_notes(grid.examples(), a.metrics, judged=a.judge or False))
    if a.metrics or (not a.no_human and any(e.scores for e in grid.examples())):  # randomization tests, Holm
        floor = holm_floor_note(len(ranked), a.n_perm, a.level, n_contexts=grid.n_groups)
        note([floor] if floor else [])
    judge = judge_from(a)
    options = options_from(a)  # once: what it says about the options is said once
    if not a.quiet:  # how long, before it starts: every system's rows scored, every pair of systems judged
        note_estimate(estimate_work(grid.examples(), a.metrics, options,
                                    [(c, x, y) for _, _, cs, xs, ys in grid.system_pairs() for c, x, y in zip(cs, xs, ys)],
                                    judge, rows_read=grid.examples(), checkpoint=a.checkpoint))
    lb = leaderboard_of_grid(grid, a.metrics, judge, options, progress_bar(a.quiet), checkpoint=a.checkpoint,
                             n_boot=a.n_boot, n_perm=a.n_perm, level=a.level, seed=a.seed, rank_by=a.rank_by,
                             human=not a.no_human)
    judge_usage_note(judge)
    emit(render_leaderboard(lb, a.format), out)
    return 0
