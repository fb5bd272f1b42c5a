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


# the trainers' numeric settings and the least each may be: checked before anything loads (a 0 used to end in a
# traceback or a cryptic numpy message after seconds of work, a negative one to train on everything)
AT_LEAST = {
    1: ("epochs", "bert_epochs", "batch", "batch_size", "members", "hidden", "mlp_hidden", "bert_mlp_hidden",
        "heldout_pairs", "bert_heldout_convs", "cap_test", "cap_val", "near_queries", "min_words", "n"),
    2: ("folds",),
    0: ("seed", "train_seed", "max_minutes", "max_rows", "max_per_dataset", "train_pairs", "bert_train_convs",
        "cap_train", "synthetic", "common_sense", "n_frozen", "threads", "max_train"),
}
OPEN_UNIT = ("val_share",)  # strictly between 0 and 1
POSITIVE = ("lr", "bert_lr", "synthetic_weight", "common_sense_weight")  # above 0


def check_trainer_settings(a: argparse.Namespace) -> None:
    """Every numeric setting of the chosen trainer within its range (:data:`AT_LEAST`, :data:`OPEN_UNIT`,
    :data:`POSITIVE`), ``--sizes`` whole numbers, and the folder or file it writes usable: a ``ValueError``
    naming the flag, before any data or model is loaded."""
    import math
    for least, names in AT_LEAST.items():
        for name in names:
            value = getattr(a, name, None)
            if value is not None and value < least:
                raise ValueError(f"--{name.replace('_', '-')} must be {least} or more, got {value}")
    for name in OPEN_UNIT:
        value = getattr(a, name, None)
        if value is not None and not (0 < value < 1):
            raise ValueError(f"--{name.replace('_', '-')} must lie strictly between 0 and 1, got {value}")
    for name in POSITIVE:
        value = getattr(a, name, None)
        if value is not None and not (math.isfinite(value) and value > 0):
            raise ValueError(f"--{name.replace('_', '-')} must be above 0, got {value}")
    near = getattr(a, "near", None)
    if near is not None and not (-1 <= near <= 1):
        raise ValueError(f"--near is a cosine between -1 and 1, got {near}")
    sizes = getattr(a, "sizes", None)
    if isinstance(sizes, str):
        parts = [x.strip() for x in sizes.split(",") if x.strip()]
        if not parts or not all(x.isdigit() and int(x) > 0 for x in parts):
            raise ValueError(f"--sizes takes whole numbers above 0 separated by commas (100,200,500), got {sizes!r}")
    out_dir = getattr(a, "out_dir", None)
    if out_dir is not None:
        _check_folder(out_dir, "--out-dir")
    if a.trainer == "crs" and getattr(a, "out", None):
        from core.outputs import check_output
        check_output(a.out, flag="--out")


def _check_folder(path: str, flag: str) -> None:
    """``path`` is a folder a file can be written into: made if missing, then tried with a temporary file."""
    import tempfile
    from pathlib import Path
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"{flag} {path}: is a file, not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as e:
        raise ValueError(f"{flag} {path}: cannot be written ({e.strerror or e})") from None


@register_command("train", "train a checkpoint: " + ", ".join(name for name, _ in TRAINERS.items()), _arguments)
def train(a: argparse.Namespace) -> int:
    check_trainer_settings(a)
    from core.settings import use_float32_encodings
    use_float32_encodings("dialeval train")
    if getattr(a, "out_dir", None) is None:
        from core.settings import writable_checkpoint_dir
        writable_checkpoint_dir()  # nowhere to write is said before training, not after it
    return a.train(a)
