"""``python -m core score`` and ``python -m core metrics``."""
from __future__ import annotations

import argparse
import json
import sys

from core.data import load_file
from core.engine import parse_metrics, score_examples, write_jsonl
from core.metrics import available_metrics


def cli_progress():
    """A tqdm bar on stderr driven by the engine's (done, total, desc) callbacks."""
    from tqdm import tqdm
    bars: dict[str, tqdm] = {}

    def progress(done: int, total: int, desc: str) -> None:
        bar = bars.get(desc)
        if bar is None:
            bar = bars[desc] = tqdm(total=total, desc=desc, file=sys.stderr, leave=False, dynamic_ncols=True)
        bar.n = done
        bar.refresh()
        if done >= total:
            bar.close()
    return progress


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m core score",
                                description="Score every row of INPUT; writes one JSON line per row, in input order.")
    p.add_argument("input", help="JSONL, DSTC10 JSON, column JSON or CSV")
    p.add_argument("--metrics", default="bleu,ubleu", help="comma-separated names (see `python -m core metrics`), or 'all'")
    p.add_argument("--format", choices=["jsonl", "dstc10", "columns", "csv"], default=None, help="input format (default: detect)")
    p.add_argument("--pool", default=None, help="reference pool for υBLEU: JSONL of {utterance, response} or DailyDialog "
                                                "__eou__ text (default: chitchat-dataset)")
    p.add_argument("--retriever", default=None, choices=["emb-u", "emb-ur", "bm25-u", "bm25-ur"],
                   help="υBLEU reference retriever (default emb-u)")
    p.add_argument("--out", default="-", help="output JSONL (default: stdout)")
    p.add_argument("--dimension", default=None, help="MME-CRS target dimension for the 'mme' metric (default overall; "
                                                     "unknown names fall back to the overall weights)")
    p.add_argument("--no-details", action="store_true", help="omit per-example details")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    a = p.parse_args(argv)
    names = parse_metrics(a.metrics)
    examples = load_file(a.input, a.format)
    options: dict = {}
    uopts = {k: v for k, v in (("pool", a.pool), ("retriever", a.retriever)) if v}
    if uopts:
        for n in names:
            if n in ("ubleu", "ruber_ubleu"):
                options[n] = dict(uopts)
    if a.dimension and "mme" in names:
        options["mme"] = {"dimension": a.dimension}
    table = score_examples(examples, names, options, progress=None if a.quiet else cli_progress())
    records = table.to_records(with_details=not a.no_details)
    if a.out == "-":
        for rec in records:
            print(json.dumps(rec, ensure_ascii=False))
    else:
        write_jsonl(records, a.out)
        print(f"wrote {len(records)} rows to {a.out}", file=sys.stderr)
    for m, sig in table.signatures().items():
        print(f"{m}: {sig}", file=sys.stderr)
    return 0


def list_main(argv: list[str]) -> int:
    for name, desc in available_metrics().items():
        print(f"{name:<14} {desc}")
    return 0
