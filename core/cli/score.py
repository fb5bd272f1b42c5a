"""``dialeval score INPUT``: every row of a file scored with the chosen metrics, one JSON line per row.

The rows are scored in blocks on a backend (``core.backends``: this process, or Ray workers with
``--backend ray``) and written block by block in input order as they finish, so the output of a large input
is never held whole in memory; a JSON Lines or CSV/TSV input is checked first and then read block by block
(``core.data.open_examples``), so memory stays bounded however large the input. An ``--out`` file is still
written whole or not at all (``core.outputs``)."""
from __future__ import annotations

import argparse

from core.backends import DEFAULT_BLOCK_SIZE, ScoreJob, available_backends, backend_class, stream_scores
from core.cli import (add_csv_arguments, add_option_arguments, add_quiet_argument, check_paths, csv_mapping_from,
                      metric_names, note, note_estimate, note_jsonl_out, options_from, register_command, tell,
                      whole_number, write_stdout)
from core.data import open_examples
from core.engine import DEFAULT_METRICS, BlankTextCount, estimate_work
from core.outputs import atomic_open
from core.progress import progress_bar
from core.scoring import fixed_pass_threads

ESTIMATED_UP_TO = 20_000  # rows: a larger file starts at once (its bar gives the time left), not after a pass over it


INPUT_FORMATS = ["jsonl", "dstc10", "columns", "csv"]


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("input", help="JSONL, DSTC10 JSON, column JSON or CSV/TSV")
    p.add_argument("--metrics", type=metric_names, default=list(DEFAULT_METRICS),
                   help=f"comma-separated names (see `dialeval metrics`), or 'all' (default {','.join(DEFAULT_METRICS)})")
    p.add_argument("--input-format", dest="format", choices=INPUT_FORMATS, default=None,
                   help="input format (default: detect); score always writes JSON lines")
    p.add_argument("--format", dest="older_format", choices=INPUT_FORMATS, default=None,
                   help="the older name of --input-format (elsewhere --format is the output's format)")
    add_csv_arguments(p)
    add_option_arguments(p)
    p.add_argument("-o", "--out", default="-", help="output JSONL (default: stdout); written whole or not at all")
    p.add_argument("--no-details", action="store_true", help="omit per-example details")
    add_quiet_argument(p)
    g = p.add_argument_group("where it runs (the output is the same bytes on every backend)")
    g.add_argument("--backend", default="local", choices=sorted(available_backends()),
                   help="; ".join(f"{name}: {text}" for name, text in sorted(available_backends().items())))
    g.add_argument("--address", default=None, metavar="ADDR",
                   help="--backend ray: join this Ray cluster (auto, HOST:6379 or ray://HOST:10001); default: "
                        "start one on this machine for the run")
    g.add_argument("--workers", type=whole_number(1), default=None, metavar="N",
                   help="--backend ray: Ray workers, one model copy each (default: the CPU count of this machine "
                        "or of the cluster)")
    g.add_argument("--block-size", type=whole_number(1), default=None, metavar="ROWS",
                   help=f"rows per block: the unit sent to a worker, written to the output and counted by the "
                        f"progress bar (default: even blocks of at most {DEFAULT_BLOCK_SIZE}; with Ray a multiple of "
                        "the workers). Smaller blocks show progress sooner and hold less in memory, but the neural "
                        "metrics pad their batches per block: 64-row blocks made bert_ruber 3 times slower")

@register_command("score", "score every row of a file with chosen metrics -> JSONL (one line per row, in order)",
                  _arguments)
def score(a: argparse.Namespace) -> int:
    if a.older_format is not None:
        if a.format not in (None, a.older_format):
            raise ValueError(f"--format {a.older_format} and --input-format {a.format} name two input formats")
        a.format = a.older_format
        note([f"--format {a.older_format} reads the input as {a.older_format} (in score, --format is the older name "
              "of --input-format; score always writes JSON lines, and elsewhere --format is the output's format)"])
    mapping = csv_mapping_from(a)
    check_paths(a, [a.input], a.out)
    note_jsonl_out(a.out if a.out != "-" else None, "the scores")
    backend = backend_class(a.backend)(workers=a.workers, address=a.address,
                                       pass_threads=fixed_pass_threads(a.metrics))
    backend.check()  # e.g. Ray not installed: exit 2 before the input is read
    progress = progress_bar(a.quiet)
    blank = BlankTextCount()
    examples = open_examples(a.input, a.format, csv_mapping=mapping, each=blank.add, progress=progress)
    note(blank.notes(a.metrics))
    options = options_from(a)
    if not a.quiet and a.backend == "local" and len(examples) <= ESTIMATED_UP_TO:  # how long, before it starts
        note_estimate(estimate_work(examples, a.metrics, options))
    job = ScoreJob(tuple(a.metrics), options, with_details=not a.no_details)
    with backend:
        where = backend.describe()
        if where and not a.quiet:
            tell(where)
        if a.out == "-":
            signatures = stream_scores(examples, job, backend, write_stdout, a.block_size, progress)
        else:
            with atomic_open(a.out) as f:
                signatures = stream_scores(examples, job, backend, f.write, a.block_size, progress)
    for line in backend.notes():
        tell(line)
    if a.out != "-":
        tell(f"wrote {len(examples)} rows to {a.out}", routine=True)
    for m, sig in signatures.items():
        tell(f"{m}: {sig}")
    return 0


