"""Reproduce the shipped A/B judge checkpoint (checkpoints/judge.safetensors + judge.json).

    .venv/bin/python scripts/train_judge.py --threads 2

is the same as ``python -m core train judge --threads 2`` (its defaults are the shipped settings:
``--val-share 0.1 --members 2 --n-frozen 3 --cap-train 8000 --cap-test 70``; 38 min on 2 shared cores):
pairs from ../shared/data/eval (non-DailyDialog sets, at most 8,000 per set, split by context into
train / validation / test), MiniLM layers 0-2 frozen and run once per sequence, then two members (train
seeds 13 and 14) each train layers 3-5 + head for 2 epochs on both orders of every pair, with the
validation table printed after every epoch; the two are combined (mean logit, float16) and evaluated on
the held-out pairs. Any other arguments are passed through (see ``python -m core train judge --help``).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.judge import train_main  # noqa: E402

if __name__ == "__main__":
    sys.exit(train_main(sys.argv[1:]))
