"""Reproduce the shipped A/B judge checkpoint (checkpoints/judge.safetensors + judge.json).

    .venv/bin/python scripts/train_judge.py --threads 2

runs the two commands that built it, in order:

1. ``dialeval train judge --threads 2`` (its defaults are the shipped settings: ``--val-share 0.1
   --members 2 --n-frozen 3 --cap-train 8000 --cap-test 70``; 38 min on 2 shared cores): pairs from
   ../shared/data/eval (non-DailyDialog sets, at most 8,000 per set, split by context into train /
   validation / test), MiniLM layers 0-2 frozen and run once per sequence, then two members (train seeds
   13 and 14) each train layers 3-5 + head for 2 epochs on both orders of every pair; combined (mean
   logit, float16) and evaluated on the held-out pairs. Any arguments are passed to this step.
2. ``dialeval train judge-lm --threads 2`` (its default ``--common-sense 1600`` is the shipped setting; about
   40 min on 2 loaded cores the first time, most of it reading replies, which are kept in the cache folder):
   the frozen SmolLM2 reader's scorer on all clear-margin training pairs plus 1,600 rule-made obvious pairs,
   its mixing weights on the validation pairs, written into the same checkpoint (core/training/judge_lm.py).
"""
import argparse
import sys

from core.cli import main as dialeval
from core.judges.pairwise import CHECKPOINT, forget_loaded_judges


def main(argv: list[str]) -> int:
    if any(a.split("=")[0] == "--out-dir" for a in argv):
        raise SystemExit("--out-dir: step 2 (judge-lm) reads and writes checkpoints/ only; use --out NAME instead")
    rc = dialeval(["train", "judge", *argv])
    # step 2 only for a newly trained judge (not --no-save, not a re-fit on votes)
    if rc or any(a.split("=")[0] in ("--no-save", "--votes", "--from-rated") for a in argv):
        return rc
    forget_loaded_judges()  # step 2 must load the checkpoint step 1 just wrote
    ap = argparse.ArgumentParser(add_help=False)
    ap.add_argument("--out", default=CHECKPOINT)
    ap.add_argument("--threads", default="2")
    known, _ = ap.parse_known_args(argv)
    return dialeval(["train", "judge-lm", "--base", known.out, "--threads", str(known.threads)])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
