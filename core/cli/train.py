"""``dialeval train NAME ...``: reproduce or retrain a checkpoint; NAME comes from the trainer registry
(``core.training``)."""
from __future__ import annotations

import argparse

from core.cli import register_command
from core.training import TRAINERS


def _arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="trainer", metavar="NAME", required=True)
    for name, trainer in TRAINERS.items():
        tp = sub.add_parser(name, help=trainer.help, description=trainer.help)
        trainer.add_arguments(tp)
        tp.set_defaults(train=trainer.run)


@register_command("train", "train a checkpoint: " + ", ".join(name for name, _ in TRAINERS.items()), _arguments)
def train(a: argparse.Namespace) -> int:
    if getattr(a, "out_dir", None) is None:
        from core.settings import writable_checkpoint_dir
        writable_checkpoint_dir()  # nowhere to write is said before training, not after it
    return a.train(a)
