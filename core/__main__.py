"""Command line: ``python -m core {score,compare,judge,meta-eval,train,metrics} ...``.

Each subcommand lives beside the code it drives and exposes ``main(argv) -> int``; this file only
dispatches, so adding a command never touches another command's code. Bad input exits with code 2 and a
readable message (no traceback).
"""
from __future__ import annotations

import importlib
import sys

COMMANDS = {
    "score": ("core.cli_score", "score every row of a file with chosen metrics -> JSONL"),
    "compare": ("core.stats", "paired comparison of two systems per metric (intervals, p-values, verdict)"),
    "judge": ("core.judge", "learned A/B judge: which of two replies a person would prefer"),
    "meta-eval": ("core.meta_eval", "correlation of metrics with human scores per dataset and dimension"),
    "metrics": ("core.cli_score", "list the registered metrics"),
}
TRAINERS = {
    "rater": ("core.rater", "NN-rater of υBLEU (Bi-GRU + FFNN) on the chitchat pool"),
    "ruber": ("core.metrics.ruber", "RUBER unreferenced scorer (negative sampling, hinge loss)"),
    "adem": ("core.metrics.adem", "ADEM on rated data (--data FILE...)"),
    "judge": ("core.judge", "pairwise A/B judge (--votes FILE to fine-tune on your own votes)"),
    "judge-lm": ("core.lm_judge", "the A/B judge's SmolLM2 reader (scorer + mix, written into the judge)"),
    "crs": ("core.metrics.mme", "MME-CRS correlation re-scaling weights (--data FILE...)"),
    "mme": ("core.metrics.mme", "MME-CRS sub-metric classifiers (fm, rm, tcm, em)"),
}


def _usage() -> str:
    lines = ["usage: python -m core COMMAND [options]", "", "commands:"]
    lines += [f"  {k:<10} {v[1]}" for k, v in COMMANDS.items()]
    lines += [f"  {'train':<10} train WHAT: " + ", ".join(TRAINERS)]
    lines += ["", "python -m core COMMAND --help for a command's options"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage())
        return 0 if argv else 2
    cmd, rest = argv[0], argv[1:]
    if cmd == "train":
        if not rest or rest[0] in ("-h", "--help") or rest[0] not in TRAINERS:
            print("usage: python -m core train {" + ",".join(TRAINERS) + "} [options]", file=sys.stderr)
            for k, v in TRAINERS.items():
                print(f"  {k:<9} {v[1]}", file=sys.stderr)
            return 0 if rest and rest[0] in ("-h", "--help") else 2
        module, _ = TRAINERS[rest[0]]
        return _run(module, "train_main", rest[1:] if rest[0] not in ("mme",) else rest)
    if cmd not in COMMANDS:
        print(f"unknown command {cmd!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    module, _ = COMMANDS[cmd]
    return _run(module, "list_main" if cmd == "metrics" else "main", rest)


def _run(module: str, func: str, argv: list[str]) -> int:
    from core.checkpoints import CheckpointError
    from core.data import DataError
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name == module:
            print(f"this command is not available yet ({module} is missing)", file=sys.stderr)
            return 2
        raise
    try:
        return int(getattr(mod, func)(argv) or 0)
    except DataError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except (CheckpointError, KeyError, ValueError, FileNotFoundError) as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else e
        print(f"error: {msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
