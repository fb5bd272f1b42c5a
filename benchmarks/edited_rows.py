"""What re-scoring a file costs after a tenth of its rows changed (issue 23, item 2: "about 10 % of the time").

    python benchmarks/edited_rows.py                       # 240 rows, the default metrics; ~6 min on 2 AVX2 cores
    python benchmarks/edited_rows.py --rows 1000 --metrics bleu,ubleu

Every run is the installed command in a fresh process (``common.run_dialeval``: `dialeval score FILE --out F`), with
one score cache folder for the whole benchmark (a fresh ``XDG_CACHE_HOME``):

- **load**: a 2-row file (one context, two systems) scored with ``--no-cache``, twice; the second run's time
  (loading the metrics' models once their files are in the cache folder, such as SmolLM2's float32 copy, which
  the first run writes) is subtracted from the runs that load models, as "seconds beyond loading";
- **cold**: the file, nothing cached (rows from ``common.build_rows(all_new=True)``: none is a demo row, whose
  scores ship precomputed);
- **all cached**: the same file again (no model is loaded: nothing is subtracted);
- **a tenth edited**: the same file with every tenth row's response changed (`` (edited)`` appended), so those
  rows are new to the cache and the others are not.

The edited run's output must equal the cold run's on every row it did not edit (checked, byte for byte), and its
share of the cold run's time beyond loading is what the issue's "about 10 %" asks about. Prints one table.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import tempfile
from pathlib import Path

from common import build_rows, run_dialeval, uptime

EDIT_EVERY = 10


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=240, help="rows in the file (pairs of two systems per context)")
    ap.add_argument("--metrics", default=None, help="comma-separated metrics (default: dialeval's default metrics)")
    a = ap.parse_args()
    before = uptime()
    started = datetime.datetime.now(datetime.timezone.utc)
    metric_args = ["--metrics", a.metrics] if a.metrics else []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        os.environ.pop("DIALEVAL_NO_CACHE", None)
        os.environ["XDG_CACHE_HOME"] = str(work / "cache")
        os.environ.pop("DIALEVAL_CACHE", None)
        src, tiny, edited = work / "rows.jsonl", work / "rows-2.jsonl", work / "edited.jsonl"
        build_rows(a.rows, src, all_new=True)
        build_rows(2, tiny, all_new=True)
        rows = [json.loads(line) for line in src.read_text(encoding="utf-8").splitlines()]
        changed = set(range(0, len(rows), EDIT_EVERY))
        with open(edited, "w", encoding="utf-8") as f:
            for i, row in enumerate(rows):
                if i in changed:
                    row = {**row, "response": f"{row['response']} (edited)"}
                f.write(json.dumps(row, ensure_ascii=False) + "\n")

        def score(path: Path, out: str, *extra: str) -> dict:
            return run_dialeval(["score", str(path), *metric_args, "--quiet", "--out", str(work / out), *extra], work)

        first = score(tiny, "tiny.jsonl", "--no-cache")
        load = score(tiny, "tiny.jsonl", "--no-cache")
        cold = score(src, "cold.jsonl")
        cached = score(src, "cached.jsonl")
        again = score(edited, "edited-out.jsonl")
        cold_lines = (work / "cold.jsonl").read_text(encoding="utf-8").splitlines()
        cached_same = (work / "cached.jsonl").read_text(encoding="utf-8").splitlines() == cold_lines
        edited_lines = (work / "edited-out.jsonl").read_text(encoding="utf-8").splitlines()
        kept_same = all(edited_lines[i] == cold_lines[i] for i in range(len(rows)) if i not in changed)
        edits_differ = all(edited_lines[i] != cold_lines[i] for i in changed)

    beyond = {"cold": cold["wall"] - load["wall"], "cached": cached["wall"], "edited": again["wall"] - load["wall"]}
    names = a.metrics or "the default metrics"
    print(f"# Re-scoring after a tenth of the rows changed\n\n`python benchmarks/edited_rows.py --rows {a.rows}"
          f"{' --metrics ' + a.metrics if a.metrics else ''}` on {started:%Y-%m-%d %H:%M} UTC, {os.cpu_count()} CPU "
          f"cores; `uptime` before: {before}; after: {uptime()}.\n\n{a.rows} rows, {names}; {len(changed)} rows "
          f"edited (every {EDIT_EVERY}th response). Load = a 2-row run with --no-cache: {load['wall']:.1f} s "
          f"({first['wall']:.1f} s the first time, which writes the models' files into the cache folder), "
          "subtracted for \"beyond loading\" from the runs that load models.\n")
    print("| run | seconds | share of cold's seconds | beyond loading | share of cold's beyond loading | "
          "peak RSS MiB | output |")
    print("|---|---:|---:|---:|---:|---:|---|")
    notes = {"cold": "", "cached": "equals cold, byte for byte" if cached_same else "DIFFERS from cold",
             "edited": ("unedited rows equal cold's, edited rows differ" if kept_same and edits_differ
                        else "UNEDITED ROWS DIFFER from cold" if not kept_same else "an edited row equals cold's")}
    for name, label, r in (("cold", "cold", cold), ("cached", "all cached", cached),
                           ("edited", "a tenth edited", again)):
        share = beyond[name] / beyond["cold"] if beyond["cold"] > 0 else float("nan")
        print(f"| {label} | {r['wall']:.1f} | {r['wall'] / cold['wall']:.1%} | {beyond[name]:.1f} | {share:.1%} | "
              f"{r['maxrss_mib']:,.0f} | {notes[name]} |")
    return 0 if cached_same and kept_same and edits_differ else 1


if __name__ == "__main__":
    sys.exit(main())
