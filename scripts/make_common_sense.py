"""Write the rule-made half of the common-sense check set: ``tests/data/obvious_pairs_rule.jsonl``.

240 obvious pairs (30 of each kind of :mod:`core.training.common_sense`) from the *held-out* chitchat-dataset
conversations, with the ``check`` word lists, so no judge trained on ``part="train"`` pairs has seen their
conversations or their generic, terse and rude phrases. The other half of the check set,
``tests/data/obvious_pairs_handwritten.jsonl`` (97 pairs: terse, generic, off-topic, word salad, parroting,
contradicting the context, rude, nonsense), was written by hand and is never generated or trained on.

    python scripts/make_common_sense.py
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from core.models.corpus import chitchat_split
from core.training.common_sense import obvious_pairs

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "obvious_pairs_rule.jsonl"


def main() -> None:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    _train, held = chitchat_split()
    pairs = obvious_pairs(held, 240, part="check")
    with open(OUT, "w", encoding="utf-8") as f:
        for p in pairs:
            f.write(json.dumps(p.to_dict(), ensure_ascii=False) + "\n")
    longer = sum(len(p.worse.split()) > len(p.better.split()) for p in pairs)
    print(f"wrote {len(pairs)} pairs to {OUT} (worse reply longer in {longer})")


if __name__ == "__main__":
    main()
