"""Write tests/golden/scores.json: every registered metric's per-row scores on a fixed 60-row input (the rows of
the first 30 ids of demo/demo.jsonl, both systems) and the judge's P(A) on 40 pairs (the first 40 C-BM25 rows
against the SmolLM2-135M row of the same id), with their signatures.

    .venv/bin/python scripts/make_golden.py

tests/test_golden.py checks that the engine reproduces these numbers to 1e-6. Regenerating the file is a
deliberate act: do it only when a change is meant to move numbers, and record what moved and why in
docs/architecture.md ("Golden outputs").

Records are kept per metric and, within a metric, per kind of CPU (``core.models.device.device_key``: SmolLM2's
bfloat16 kernels round differently on AMX and on AVX-512 BF16 CPUs), each under the metric's signature without the
package version (``core.scoring.versionless``). A run re-records every metric on this machine's kind; another
kind's numbers of a metric are kept while that metric's signature is unchanged and dropped, for that metric
alone, when it moved (re-run this on such a CPU to record them again). Every number is computed afresh (the score
cache and the demo's precomputed scores are not read). Where this kind's fresh numbers of a metric match its record
within the golden test's tolerance (:data:`SAME_TO` of each number's size, the bits a CPU maker of the same kind
rounds otherwise), the record is kept as it is: a release that moves no number changes no record, and a new
metric adds its own alone.
"""
from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from core.data import load_jsonl
from core.engine import judge_pairs, score_examples
from core.models.device import active_device, device_key
from core.scoring import available_metrics, versionless
from core.settings import use_float32_encodings

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "demo" / "demo.jsonl"
OUT = ROOT / "tests" / "golden" / "scores.json"


def golden_rows(path: Path = DEMO):
    exs = load_jsonl(path)
    ids = set(list(dict.fromkeys(e.id for e in exs))[:30])
    return [e for e in exs if e.id in ids]


def golden_pairs(path: Path = DEMO):
    exs = load_jsonl(path)
    a = [e for e in exs if e.system == "C-BM25"][:40]
    b = {e.id: e for e in exs if e.system == "SmolLM2-135M"}
    return a, [b[x.id] for x in a]


def upgraded(old: dict) -> dict:
    """A golden file of the older layout (one record per kind of CPU holding every metric) in this layout."""
    if "metrics" in old or not old:
        return old
    metrics = {m: {"signature": versionless(sig), "computed_on": {kind: rec["metrics"][m]
                                                                  for kind, rec in old["computed_on"].items()
                                                                  if m in rec["metrics"]}}
               for m, sig in old["signatures"].items()}
    judge = {**{k: v for k, v in old["judge"].items() if k != "signature"},
             "signature": versionless(old["judge"]["signature"]),
             "computed_on": {kind: rec["judge_p_a"] for kind, rec in old["computed_on"].items()}}
    return {"input": old["input"], "rows": old["rows"], "metrics": metrics, "judge": judge}


SAME_TO = 1e-6  # tests/test_golden.py's TOL: a number within this of its size (at least 1e-6) has not moved


def unmoved(old: list | None, new: list) -> bool:
    """Whether ``new`` holds the numbers of the record ``old`` (None in the same places, every other number
    within :data:`SAME_TO` of its size, as tests/test_golden.py compares them)."""
    if old is None or len(old) != len(new):
        return False
    return all((a is None) == (b is None) and (a is None or abs(a - b) <= SAME_TO * max(1.0, abs(a)))
               for a, b in zip(old, new))


def merged(old: dict | None, signature: str, here: str, values: list) -> tuple[dict, list[str]]:
    """One record: this kind's ``values`` (its old record's, where they have not moved: :func:`unmoved`), and
    the other kinds' kept when ``signature`` is the old record's."""
    same = (old or {}).get("signature") == signature
    if same and unmoved(old.get("computed_on", {}).get(here), values):
        values = old["computed_on"][here]
    kept = {k: v for k, v in (old or {}).get("computed_on", {}).items() if same and k != here}
    dropped = sorted(set((old or {}).get("computed_on", {})) - set(kept) - {here})
    return {"signature": signature, "computed_on": dict(sorted({**kept, here: values}.items()))}, dropped


def main() -> int:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    use_float32_encodings("scripts/make_golden.py")  # the numbers it records are float32's
    rows = golden_rows()
    table = score_examples(rows, list(available_metrics()), cache=False)  # computed, never read back
    a, b = golden_pairs()
    out = judge_pairs([x.context for x in a], [x.response for x in a], [y.response for y in b], cache=False)
    here = device_key(active_device())
    old = upgraded(json.loads(OUT.read_text(encoding="utf-8"))) if OUT.exists() else {}
    if old and old.get("rows") != [[e.id, e.system] for e in rows]:
        old = {}  # other rows: nothing of the old file applies
    doc = {"input": "demo/demo.jsonl: the rows of its first 30 ids (60 rows, both systems), in file order",
           "rows": [[e.id, e.system] for e in rows], "metrics": {}}
    dropped: dict[str, list[str]] = {}
    for m in table.metrics:
        values = [None if math.isnan(v) else float(v) for v in table.column(m)]
        doc["metrics"][m], gone = merged(old.get("metrics", {}).get(m), versionless(table.results[m].signature),
                                         here, values)
        if gone:
            dropped[m] = gone
    judge, gone = merged(old.get("judge") if old.get("judge", {}).get("ids") == [x.id for x in a] else None,
                         versionless(out.signature), here, [float(p) for p in out.p_a])
    doc["judge"] = {"pairs": "the first 40 C-BM25 rows (A) against the SmolLM2-135M row of the same id (B)",
                    "ids": [x.id for x in a], **judge}
    if gone:
        dropped["judge"] = gone
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT} ({len(rows)} rows x {len(table.metrics)} metrics, {len(a)} judged pairs) for {here}")
    for m, kinds in dropped.items():
        print(f"  {m}: its signature moved, so the records of {', '.join(kinds)} were dropped (re-record there)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
