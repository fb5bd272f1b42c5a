"""Build the dashboard's small human-rated sample, so the Correlation page has something to show in a demo.

    python scripts/make_rated_sample.py    # writes demo/rated_sample.jsonl (+ demo/rated_sample_manifest.json)

Source: ``eval/engagement-dd.jsonl`` of the shared rated data (``../shared/data``), converted from
PredictiveEngagement's ``data/Eng_Scores_queries_gen_gtruth_replies.csv`` (Ghazarian et al. 2020,
github.com/PlusLabNLP/PredictiveEngagement), which that repository distributes under the **MIT license**
(``../shared/data/SOURCES.json``). Its 300 queries were each answered twice: rows 1-300 by a generative
dialogue model, rows 301-600 by the ground-truth human reply, each rated for engagement (1-5) by three
people. The queries and the human replies come from DailyDialog's test dialogues (the corpus itself is CC
BY-NC-SA 4.0): this sample ships only the rated file's rows as the MIT-licensed repository publishes them.

What it writes: ``N_CONTEXTS`` (40) queries chosen with ``random.Random(SEED)`` among those that occur once,
each answered by system ``generated`` and system ``human reply``, in our JSONL format with the mean
engagement rating as ``scores.engagement`` and no reference (the rated file has none). Deterministic.
"""
from __future__ import annotations

import argparse
import json
import random
from collections import Counter
from pathlib import Path

from core.settings import SEED, shared_eval_file

ROOT = Path(__file__).resolve().parent.parent
N_CONTEXTS = 40
SOURCE = "engagement-dd"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "demo" / "rated_sample.jsonl"))
    args = ap.parse_args()
    src = shared_eval_file(SOURCE)
    rows = [json.loads(line) for line in src.read_text(encoding="utf-8").splitlines() if line.strip()]
    half = len(rows) // 2
    if len(rows) != 600 or any(rows[i]["context"] != rows[half + i]["context"] for i in range(half)):
        raise SystemExit(f"{src}: expected 600 rows, row i and row 300 + i answering the same query")
    counts = Counter(json.dumps(r["context"]) for r in rows[:half])
    unique = [i for i in range(half) if counts[json.dumps(rows[i]["context"])] == 1]
    chosen = sorted(random.Random(SEED).sample(unique, N_CONTEXTS))
    out = []
    for i in chosen:
        for system, r in (("generated", rows[i]), ("human reply", rows[half + i])):
            out.append({"id": f"eng-{i:03d}", "system": system, "dataset": SOURCE, "context": r["context"],
                        "response": r["response"], "references": [],
                        "scores": {"engagement": round(r["scores"]["engagement"], 4)},
                        "source_id": r["id"]})
    path = Path(args.out)
    path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in out), encoding="utf-8")
    manifest = {"command": "python scripts/make_rated_sample.py", "source": f"../shared/data/eval/{SOURCE}.jsonl",
                "origin": "PlusLabNLP/PredictiveEngagement data/Eng_Scores_queries_gen_gtruth_replies.csv "
                          "(commit 214d3eb20901982d192b05b4d496420dfb273f8e)",
                "license": "MIT (as the PredictiveEngagement repository states); queries and human replies "
                           "originate in DailyDialog's test dialogues",
                "seed": SEED, "n_contexts": N_CONTEXTS,
                "systems": {"generated": "the generative model's reply (rows 1-300 of the rated file)",
                            "human reply": "the ground-truth human reply (rows 301-600)"},
                "scores": "engagement: mean of three ratings, 1-5",
                "rows": [f"{SOURCE}-{i:05d}" for i in chosen]}
    path.with_name("rated_sample_manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    demo_manifest = path.with_name("demo_manifest.json")
    if demo_manifest.exists():  # the demo's manifest names the rated sample that ships beside it
        m = json.loads(demo_manifest.read_text(encoding="utf-8"))
        m["rated_sample"] = {"file": path.name, "manifest": "rated_sample_manifest.json",
                             "license": manifest["license"], "source": manifest["origin"],
                             "command": manifest["command"]}
        demo_manifest.write_text(json.dumps(m, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(out)} rows ({N_CONTEXTS} contexts x 2 systems) to {path}")


if __name__ == "__main__":
    main()
