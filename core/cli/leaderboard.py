"""``dialeval leaderboard FILE [FILE ...]``: three or more systems on their shared contexts: per-metric means
with intervals, Bradley-Terry ratings from the judge (``--judge``), every pair Holm-corrected
(``core.leaderboard``)."""
from __future__ import annotations

import argparse

from core.cli import (add_csv_arguments, add_option_arguments, check_paths, csv_mapping_from, emit, interval_level,
                      metric_names, note, options_from, register_command, whole_number)
from core.data import load_file, rows_of_files
from core.engine import DEFAULT_METRICS, blank_text_notes
from core.leaderboard import leaderboard, render_leaderboard
from core.progress import progress_bar
from core.settings import SEED
from core.verdict import LEVEL, N_BOOT, N_PERM


def metric_names_or_none(text: str) -> list[str]:
    """``--metrics``: as ``compare`` takes it, or 'none' (rank by the judge alone)."""
    return [] if text.strip() == "none" else metric_names(text)


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("inputs", nargs="+", help="one multi-system file, or several files (one or more systems each)")
    p.add_argument("--systems", default=None, help="comma-separated systems to rank (default: all)")
    p.add_argument("--input-format", default=None, choices=("jsonl", "dstc10", "columns", "csv"),
                   help="input format (default: detect from the name and content)")
    add_csv_arguments(p)
    p.add_argument("--metrics", type=metric_names_or_none, default=list(DEFAULT_METRICS),
                   help="comma-separated metric names, 'all', or 'none' (with --judge: the judge alone)")
    p.add_argument("--judge", action="store_true", help="judge every pair of systems; rank by Bradley-Terry rating")
    p.add_argument("--format", default="text", choices=("text", "markdown", "csv", "json"))
    add_option_arguments(p)
    p.add_argument("--n-boot", type=whole_number(1), default=N_BOOT, help=f"bootstrap resamples (default {N_BOOT})")
    p.add_argument("--n-perm", type=whole_number(1), default=N_PERM, help=f"randomizations (default {N_PERM})")
    p.add_argument("--level", type=interval_level, default=LEVEL, help=f"interval level (default {LEVEL})")
    p.add_argument("--seed", type=whole_number(0), default=SEED)
    p.add_argument("--out", help="write the output here instead of stdout (written whole or not at all)")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr (the model libraries' included)")


@register_command("leaderboard", "rank three or more systems on shared contexts (metrics, judge ratings, Holm)",
                  _arguments)
def leaderboard_command(a: argparse.Namespace) -> int:
    if not a.metrics and not a.judge:
        raise ValueError("--metrics none leaves nothing to rank; add --judge")
    out = a.out if a.out != "-" else None
    mapping = csv_mapping_from(a)
    check_paths(a, a.inputs, out)
    examples = rows_of_files([(path, load_file(path, a.input_format, csv_mapping=mapping)) for path in a.inputs])
    systems = [s.strip() for s in a.systems.split(",") if s.strip()] if a.systems else None
    twice = sorted({s for s in systems or [] if systems.count(s) > 1})
    if twice:
        raise ValueError(f"--systems names {', '.join(map(repr, twice))} more than once; name each system once")
    note(blank_text_notes([e for e in examples if systems is None or e.system in systems], a.metrics,
                          judged=a.judge))  # about the systems ranked only
    lb = leaderboard(examples, a.metrics, a.judge, systems, options_from(a), progress_bar(a.quiet),
                     n_boot=a.n_boot, n_perm=a.n_perm, level=a.level, seed=a.seed)
    emit(render_leaderboard(lb, a.format), out)
    return 0
