"""Training, kept apart from inference: one module per trainable thing, each registered as a
``dialeval train NAME`` subcommand (:func:`register_trainer`).

| NAME | module | what it writes |
|---|---|---|
| rater | rater.py | ``nn-rater`` (υBLEU's NN-rater) |
| ruber | ruber.py | ``ruber-unref``, ``ruber-bert-unref`` (RUBER / BERT-RUBER unreferenced scorers) and their
  normalization constants |
| adem | adem.py | ``adem`` and the leave-one-dataset-out ``adem-lodo-*`` |
| mme | mme.py | ``mme-fm``, ``mme-rm``, ``mme-tcm``, ``mme-em``, ``mme-sm``, ``mme-ref`` (MME-CRS sub-metrics) |
| crs | crs.py | ``crs_weights.json`` (MME-CRS correlation re-scaling weights) |
| judge | judge.py | ``judge`` (the A/B judge's MiniLM cross-encoder), or a re-fit on your votes |
| judge-lm | judge_lm.py | the judge's SmolLM2 reader, written into the judge checkpoint |

Every trainer records in the checkpoint's manifest the command that made it, its data, seed and measured
quality; ``scripts/`` reproduce the shipped checkpoints.
"""
from __future__ import annotations

import sys
import time

from core.registry import Registry, Subcommand

TRAINERS: Registry[Subcommand] = Registry("trainer", "core.training")
register_trainer = TRAINERS.subcommand
"""``@register_trainer(name, help, add_arguments)``: ``run(args) -> exit code`` becomes ``dialeval train NAME``;
the CLI sets ``args.command_line`` to the command as typed (manifests record it)."""


def log(msg: str) -> None:
    """A timestamped line on stderr: what a trainer is doing."""
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def set_threads(n: int) -> None:
    import torch
    torch.set_num_threads(max(1, int(n)))


def seed_everything(seed: int) -> None:
    """Seed Python's, numpy's and torch's generators (every trainer starts here)."""
    import random

    import numpy as np
    import torch
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def log_progress(every: float = 30.0):
    """A ``Progress`` for long training steps: a :func:`log` line at most every ``every`` seconds."""
    last = [0.0]

    def progress(done: int, total: int, desc: str) -> None:
        if time.time() - last[0] > every:
            last[0] = time.time()
            log(f"  {desc}: {done}/{total}")
    return progress
