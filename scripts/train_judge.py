"""Reproduce the shipped A/B judge checkpoint (checkpoints/judge.safetensors + judge.json).

    .venv/bin/python scripts/train_judge.py --threads 2 --cap-train 800 --cap-test 70

is the same as ``python -m core train judge --threads 2 --cap-train 800 --cap-test 70`` (13.5 min on 2 quiet
cores, far longer when the machine is shared):
pairs from ../shared/data/eval (non-DailyDialog sets, split by context), MiniLM layers 0-4 frozen,
layer 5 + head trained 2 epochs on both orders of every pair, evaluated on the held-out pairs.
Any other arguments are passed through (see ``python -m core train judge --help``).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.judge import train_main  # noqa: E402

if __name__ == "__main__":
    sys.exit(train_main(sys.argv[1:]))
