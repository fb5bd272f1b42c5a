"""``dialeval score INPUT``: every row of a file scored with the chosen metrics, one JSON line per row."""
from __future__ import annotations

import argparse
import json
import sys

from core.cli import (add_csv_arguments, add_option_arguments, check_paths, csv_mapping_from, metric_names, note,
                      options_from, register_command)
from core.data import load_file
from core.engine import DEFAULT_METRICS, blank_text_notes, score_examples
from core.progress import progress_bar
from core.report import clean_json, write_jsonl


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("input", help="JSONL, DSTC10 JSON, column JSON or CSV/TSV")
    p.add_argument("--metrics", type=metric_names, default=list(DEFAULT_METRICS),
                   help=f"comma-separated names (see `dialeval metrics`), or 'all' (default {','.join(DEFAULT_METRICS)})")
    p.add_argument("--format", choices=["jsonl", "dstc10", "columns", "csv"], default=None,
                   help="input format (default: detect)")
    add_csv_arguments(p)
    add_option_arguments(p)
    p.add_argument("--out", default="-", help="output JSONL (default: stdout); written whole or not at all")
    p.add_argument("--no-details", action="store_true", help="omit per-example details")
    p.add_argument("--quiet", action="store_true", help="no progress bars (the model libraries' included)")


@register_command("score", "score every row of a file with chosen metrics -> JSONL (one line per row, in order)",
                  _arguments)
def score(a: argparse.Namespace) -> int:
    mapping = csv_mapping_from(a)
    check_paths(a, [a.input], a.out)
    examples = load_file(a.input, a.format, csv_mapping=mapping)
    note(blank_text_notes(examples, a.metrics))
    table = score_examples(examples, a.metrics, options_from(a), progress=progress_bar(a.quiet))
    records = table.to_records(with_details=not a.no_details)
    if a.out == "-":
        for rec in records:
            print(json.dumps(clean_json(rec), ensure_ascii=False))
        sys.stdout.flush()
    else:
        write_jsonl(records, a.out)
        print(f"wrote {len(records)} rows to {a.out}", file=sys.stderr)
    for m, sig in table.signatures().items():
        print(f"{m}: {sig}", file=sys.stderr)
    return 0
