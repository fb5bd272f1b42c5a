"""``dialeval score INPUT``: every row of a file scored with the chosen metrics, one JSON line per row."""
from __future__ import annotations

import argparse
import json
import sys

from core.cli import add_option_arguments, options_from, register_command
from core.data import load_file
from core.engine import DEFAULT_METRICS, parse_metrics, score_examples
from core.progress import progress_bar
from core.report import clean_json, write_jsonl


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("input", help="JSONL, DSTC10 JSON, column JSON or CSV")
    p.add_argument("--metrics", default=",".join(DEFAULT_METRICS),
                   help=f"comma-separated names (see `dialeval metrics`), or 'all' (default {','.join(DEFAULT_METRICS)})")
    p.add_argument("--format", choices=["jsonl", "dstc10", "columns", "csv"], default=None,
                   help="input format (default: detect)")
    add_option_arguments(p)
    p.add_argument("--out", default="-", help="output JSONL (default: stdout)")
    p.add_argument("--no-details", action="store_true", help="omit per-example details")
    p.add_argument("--quiet", action="store_true", help="no progress bars")


@register_command("score", "score every row of a file with chosen metrics -> JSONL (one line per row, in order)",
                  _arguments)
def score(a: argparse.Namespace) -> int:
    names = parse_metrics(a.metrics)
    examples = load_file(a.input, a.format)
    table = score_examples(examples, names, options_from(a), progress=progress_bar(a.quiet))
    records = table.to_records(with_details=not a.no_details)
    if a.out == "-":
        for rec in records:
            print(json.dumps(clean_json(rec), ensure_ascii=False))
    else:
        write_jsonl(records, a.out)
        print(f"wrote {len(records)} rows to {a.out}", file=sys.stderr)
    for m, sig in table.signatures().items():
        print(f"{m}: {sig}", file=sys.stderr)
    return 0
