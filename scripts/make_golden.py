"""Write tests/golden/scores.json: every registered metric's per-row scores on a fixed 60-row input (the rows of
the first 30 ids of demo/demo.jsonl, both systems) and the judge's P(A) on 40 pairs (the first 40 C-BM25 rows
against the SmolLM2-135M row of the same id), with their signatures.

    .venv/bin/python scripts/make_golden.py

tests/test_golden.py checks that the engine reproduces these numbers to 1e-6. Regenerating the file is a
deliberate act: do it only when a change is meant to move numbers, and record what moved and why in
docs/architecture.md ("Golden outputs").
"""
from __future__ import annotations

import json
import math
from pathlib import Path

from core.data import load_jsonl
from core.engine import judge_pairs, score_examples
from core.scoring import available_metrics

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
    rows = golden_rows()
    table = score_examples(rows, list(available_metrics()))
    a, b = golden_pairs()
    out = judge_pairs([x.context for x in a], [x.response for x in a], [y.response for y in b])
    doc = {"input": "demo/demo.jsonl: the rows of its first 30 ids (60 rows, both systems), in file order",
           "rows": [[e.id, e.system] for e in rows],
           "metrics": {m: [None if math.isnan(v) else float(v) for v in table.column(m)] for m in table.metrics},
           "signatures": table.signatures(),
           "judge": {"pairs": "the first 40 C-BM25 rows (A) against the SmolLM2-135M row of the same id (B)",
                     "ids": [x.id for x in a], "p_a": [float(p) for p in out.p_a], "signature": out.signature}}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT} ({len(rows)} rows x {len(table.metrics)} metrics, {len(a)} judged pairs)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
