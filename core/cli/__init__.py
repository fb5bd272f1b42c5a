"""The command line: ``dialeval COMMAND ...`` (the same as ``python -m core COMMAND ...``).

Each command is a module of this package that registers itself with :func:`register_command`; ``train``'s
subcommands come from the trainer registry (``core.training``). The parser is built from both registries, so
adding a command or a trainer is adding one module. Every failure the tool can foresee (bad input, a missing
checkpoint or model package, an unusable setting) ends with exit code 2 and one message; argparse's own usage
errors exit 2 as well.
"""
from __future__ import annotations

import argparse
import shlex
import sys
from typing import Sequence

from core.registry import Registry, Subcommand
from core.version import __version__

COMMANDS: Registry[Subcommand] = Registry("command", "core.cli")
# listed in this order in --help
ORDER = ("score", "compare", "judge", "report", "leaderboard", "meta-eval", "metrics", "train")
register_command = COMMANDS.subcommand
"""``@register_command(name, help, add_arguments)``: ``run(args) -> exit code`` becomes ``dialeval NAME``."""


# ------------------------------------------------------------------------------------------------
# argument groups several commands share


def add_input_arguments(p: argparse.ArgumentParser) -> None:
    """Two systems: one multi-system file (``--system-a``/``--system-b`` choose), or one file per system."""
    p.add_argument("input", help="a file with both systems (JSONL, DSTC10 JSON, column JSON or CSV), or system A's file")
    p.add_argument("input_b", nargs="?", help="system B's file (rows aligned by id, else by context)")
    p.add_argument("--system-a", help="system A's name (required when the file holds more than two systems)")
    p.add_argument("--system-b", help="system B's name")
    p.add_argument("--input-format", default=None, choices=("jsonl", "dstc10", "columns", "csv"),
                   help="input format (default: detect from the name and content)")


def add_option_arguments(p: argparse.ArgumentParser) -> None:
    """The run options every metric that declares them receives (``core.scoring.Options``)."""
    p.add_argument("--pool", default=None, help="υBLEU reference pool: JSONL of {utterance, response} or DailyDialog "
                                                "__eou__ text (default: chitchat-dataset); reaches RUBER+υBLEU too")
    p.add_argument("--retriever", default=None, choices=("emb-u", "emb-ur", "bm25-u", "bm25-ur"),
                   help="υBLEU reference retriever (default emb-u)")
    p.add_argument("--dimension", default=None, help="MME-CRS target dimension (default overall; unknown names "
                                                     "fall back to the overall weights)")
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda", "mps", "auto"),
                   help="where models run (auto: CUDA, then MPS, then CPU)")


def emit(text: str, out: str | None) -> None:
    """A command's output: to ``out`` (one trailing newline; 'wrote PATH' on stderr) or to stdout."""
    if out:
        with open(out, "w", encoding="utf-8") as f:
            f.write(text + "\n")
        print(f"wrote {out}", file=sys.stderr)
    else:
        print(text)


def options_from(args: argparse.Namespace):
    from core.scoring import Options
    return Options(pool=args.pool, retriever=args.retriever, dimension=args.dimension, device=args.device)


# ------------------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dialeval", description="Which of two dialogue systems is better, and why: "
                                     "metrics validated against human ratings and a learned A/B judge.")
    parser.add_argument("--version", action="version", version=f"dialeval {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands = dict(COMMANDS.items())
    for name in sorted(commands, key=lambda n: (ORDER.index(n) if n in ORDER else len(ORDER), n)):
        cmd = commands[name]
        p = sub.add_parser(name, help=cmd.help, description=cmd.help)
        cmd.add_arguments(p)
        p.set_defaults(run=cmd.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from core.data import DataError
    from core.models.checkpoints import CheckpointError
    from core.models.encoders import MissingModelError
    from core.settings import SettingError

    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if not argv:
        parser.print_help(sys.stderr)
        return 2
    args = parser.parse_args(argv)
    args.command_line = "dialeval " + " ".join(shlex.quote(a) for a in argv)
    try:
        return int(args.run(args) or 0)
    except DataError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except (CheckpointError, MissingModelError, SettingError, KeyError, ValueError, FileNotFoundError) as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else e
        print(f"error: {msg}", file=sys.stderr)
        return 2
