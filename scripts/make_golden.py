"""Write tests/golden/scores.json: every registered metric's per-row scores on a fixed 60-row input (the rows of
the first 30 ids of demo/demo.jsonl, both systems) and the judge's P(A) on 40 pairs (the first 40 C-BM25 rows
against the SmolLM2-135M row of the same id), with their signatures.

    .venv/bin/python scripts/make_golden.py

tests/test_golden.py checks that the engine reproduces these numbers to 1e-6. Regenerating the file is a
deliberate act: do it only when a change is meant to move numbers, and record what moved and why in
docs/architecture.md ("Golden outputs").

The numbers are kept per kind of CPU (``core.models.device.device_key``: SmolLM2's bfloat16 kernels round
differently on AMX and on AVX-512 BF16 CPUs). A run records this machine's kind and keeps the other kinds'
records while the signatures are unchanged; after a change that moves a signature it keeps only this
machine's kind (re-run it on the other kinds of machine, then scripts/precompute_demo.py there).
"""
from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from core.data import load_jsonl
from core.engine import judge_pairs, score_examples
from core.models.device import active_device, device_key
from core.scoring import available_metrics
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


def main() -> int:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    use_float32_encodings("scripts/make_golden.py")  # the numbers it records are float32's
    rows = golden_rows()
    table = score_examples(rows, list(available_metrics()))
    a, b = golden_pairs()
    out = judge_pairs([x.context for x in a], [x.response for x in a], [y.response for y in b])
    here = device_key(active_device())
    doc = {"input": "demo/demo.jsonl: the rows of its first 30 ids (60 rows, both systems), in file order",
           "rows": [[e.id, e.system] for e in rows],
           "signatures": table.signatures(),
           "judge": {"pairs": "the first 40 C-BM25 rows (A) against the SmolLM2-135M row of the same id (B)",
                     "ids": [x.id for x in a], "signature": out.signature},
           "computed_on": {}}
    old = json.loads(OUT.read_text(encoding="utf-8")) if OUT.exists() else {}
    same = all(old.get(k) == doc[k] for k in ("rows", "signatures", "judge"))
    kept = {kind: rec for kind, rec in old.get("computed_on", {}).items() if same and kind != here}
    dropped = sorted(set(old.get("computed_on", {})) - set(kept) - {here})
    doc["computed_on"] = dict(sorted({**kept, here: {
        "metrics": {m: [None if math.isnan(v) else float(v) for v in table.column(m)] for m in table.metrics},
        "judge_p_a": [float(p) for p in out.p_a]}}.items()))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT} ({len(rows)} rows x {len(table.metrics)} metrics, {len(a)} judged pairs) for {here}; "
          f"kept: {', '.join(kept) or 'none'}" + (f"; dropped (signatures moved: re-record on such a CPU): "
                                                   f"{', '.join(dropped)}" if dropped else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
