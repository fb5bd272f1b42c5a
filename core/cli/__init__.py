"""The command line: ``dialeval COMMAND ...`` (the same as ``python -m core COMMAND ...``).

Each command is a module of this package that registers itself with :func:`register_command`; ``train``'s
subcommands come from the trainer registry (``core.training``). The parser is built from both registries, so
adding a command or a trainer is adding one module.

Exit codes (as sacrebleu's and most Unix tools'):

- 0: done.
- 2: anything the tool can foresee, with one message naming the file, row, field or flag and no traceback:
  bad input, a bad flag value, an output location that cannot be used, a missing checkpoint or model
  package, an unusable environment variable, a disk that fills up. Every flag, path and output location is
  checked before anything is loaded or scored (:func:`check_paths`); argparse's usage errors exit 2 as well.
- 130: interrupted (Ctrl-C, SIGINT); 143: terminated (SIGTERM). One line on stderr; an output file is only
  ever replaced once complete (``core.outputs``), so the previous one survives.
- 141: the reader of standard output went away (``dialeval score ... | head``): the command ends quietly,
  as a Unix tool killed by SIGPIPE would.
"""
from __future__ import annotations

import argparse
import difflib
import math
import os
import re
import shlex
import signal
import sys
import threading
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Sequence

from core.formatting import terminal_safe
from core.outputs import note_interrupt, was_interrupted
from core.registry import Registry, Subcommand, UnknownName
from core.version import __version__

if TYPE_CHECKING:
    from core.scoring import Judge
    from core.time_estimates import WorkEstimate

COMMANDS: Registry[Subcommand] = Registry("command", "core.cli")
# listed in this order in --help
ORDER = ("score", "compare", "judge", "report", "leaderboard", "gate", "plan", "meta-eval", "metrics", "train", "cache")
register_command = COMMANDS.subcommand
"""``@register_command(name, help, add_arguments)``: ``run(args) -> exit code`` becomes ``dialeval NAME``."""

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT
EXIT_PIPE_CLOSED = 141  # 128 + SIGPIPE
EXIT_TERMINATED = 143  # 128 + SIGTERM
EXIT_INTERNAL = 3  # an error no check foresaw (a bug): not 1, which the gate gives a candidate that fails


# ------------------------------------------------------------------------------------------------
# flag values, checked by argparse (the message names the flag)


def whole_number(minimum: int, maximum: int | None = None):
    """An argparse type: an integer >= ``minimum`` (and <= ``maximum`` when given), refused while the command
    line is read, before anything is loaded or scored."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be {minimum} or more, got {value}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"must be at most {maximum:,}, got {value:,}")
        return value
    parse.__name__ = "whole number"
    return parse


def number_above(minimum: float, inclusive: bool = False, maximum: float | None = None):
    """An argparse type: a finite number above ``minimum`` (or equal to it when ``inclusive``; below ``maximum``
    when given), refused while the command line is read."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
        low_ok = value >= minimum if inclusive else value > minimum
        if not math.isfinite(value) or not low_ok or (maximum is not None and not value < maximum):
            bound = f"{'>=' if inclusive else 'above'} {minimum:g}" + (f" and below {maximum:g}" if maximum else "")
            raise argparse.ArgumentTypeError(f"must be a number {bound}, got {text!r}")
        return value
    parse.__name__ = "number"
    return parse


def interval_level(text: str) -> float:
    """An argparse type: a confidence level strictly between 0 and 1 (0.95, not 95)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number between 0 and 1 such as 0.95, got {text!r}") from None
    if not (math.isfinite(value) and 0 < value < 1):
        raise argparse.ArgumentTypeError(f"must lie strictly between 0 and 1 (e.g. 0.95 for 95%), got {text}")
    return value


def metric_names(text: str) -> list[str]:
    """An argparse type: comma-separated registered metric names, or 'all' (``core.engine.parse_metrics``)."""
    from core.engine import parse_metrics
    try:
        return parse_metrics(text)
    except KeyError as e:
        raise argparse.ArgumentTypeError(e.args[0]) from None
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def metric_names_or_none(text: str) -> list[str]:
    """An argparse type: as :func:`metric_names`, or 'none' (no metric: people's ratings and/or the judge)."""
    return [] if text.strip().lower() == "none" else metric_names(text)


def separator(text: str) -> str:
    r"""An argparse type: a non-empty separator; ``\n``, ``\t`` and ``\\`` may be typed as escapes."""
    value = text.replace("\\\\", "\0").replace("\\n", "\n").replace("\\t", "\t").replace("\0", "\\")
    if value == "":
        raise argparse.ArgumentTypeError("must not be empty")
    return value


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
    add_csv_arguments(p)


CSV_FIELDS = ("response", "context", "id", "system", "references", "dataset")


def add_csv_arguments(p: argparse.ArgumentParser) -> None:
    """Which CSV/TSV column is which (``core.data.CsvMapping``); the defaults are the JSONL field names."""
    g = p.add_argument_group("CSV and TSV input (default columns: the JSONL field names; scores.DIM columns are "
                             "human scores)")
    g.add_argument("--columns", metavar="FIELD=COLUMN,...",
                   help=f"the column of each field, e.g. response=reply,context=history (fields: "
                        f"{', '.join(CSV_FIELDS)}; FIELD= for none)")
    g.add_argument("--score-columns", metavar="COLUMN,...",
                   help="human-score columns, comma-separated (default: every column named scores.DIMENSION); "
                        "`score` copies them into each output row's \"human\"")
    g.add_argument("--context-sep", type=separator, metavar="SEP",
                   help=r"separator of the turns in a context cell (default: a line end, \n)")
    g.add_argument("--reference-sep", type=separator, metavar="SEP",
                   help="separator of several references in one cell (default: |||)")


def csv_mapping_from(args: argparse.Namespace):
    """The ``CsvMapping`` the CSV flags ask for, or ``None`` when none was given (the loader's defaults)."""
    from core.data import FIELD_ALIASES, CsvMapping
    given = [getattr(args, k, None) for k in ("columns", "score_columns", "context_sep", "reference_sep")]
    if all(v is None for v in given):
        return None
    m = CsvMapping()
    if args.columns is not None:
        seen: dict[str, str] = {}
        for item in args.columns.split(","):
            if not item.strip():
                continue
            fld, eq, col = item.partition("=")
            fld = FIELD_ALIASES.get(fld.strip(), fld.strip())  # the header's other accepted name
            if not eq or fld not in CSV_FIELDS:
                raise ValueError(f"--columns: {item.strip()!r} is not FIELD=COLUMN with FIELD one of "
                                 f"{', '.join(CSV_FIELDS)}")
            if fld in seen:
                raise ValueError(f"--columns names the {fld} column twice ({seen[fld]!r} and {item.strip()!r}); "
                                 "name each field once")
            seen[fld] = item.strip()
            if fld in ("response", "context") and not col.strip():
                raise ValueError(f"--columns: the {fld} column cannot be none")
            setattr(m, fld, col.strip() or None)
    if args.score_columns is not None:
        cols = [c.strip() for c in args.score_columns.split(",") if c.strip()]
        if not cols:
            raise ValueError("--score-columns: name one or more columns")
        m.scores = cols
    if args.context_sep is not None:
        m.context_sep = args.context_sep
    if args.reference_sep is not None:
        m.reference_sep = args.reference_sep
    return m


class _OneValue(argparse.Action):
    """Stores an option's value, refusing a second different one (``--mme-dimension`` and its older name
    ``--dimension`` both given: the last would otherwise win silently)."""

    def __call__(self, parser, namespace, values, option_string=None):
        before = getattr(namespace, self.dest, None)
        if before is not None and before != values:
            parser.error(f"{'/'.join(self.option_strings)} given twice with different values "
                         f"({before!r}, then {values!r} in {option_string}); give one")
        setattr(namespace, self.dest, values)


def add_judge_arguments(p: argparse.ArgumentParser, what: str = "over every pair", optional: bool = True) -> None:
    """``--judge [NAME]`` / ``--no-judge``: the A/B judge runs by default wherever a verdict is given; ``--judge``
    alone is the learned judge, ``--judge NAME`` another registered one (``--judge llm``), whose own flags
    (``--llm-url``...) are added here too. ``optional=False`` (``dialeval judge``): no ``--no-judge``."""
    from core.scoring import JUDGES
    names = ", ".join(name for name, _ in JUDGES.items())
    group = p.add_mutually_exclusive_group()
    group.add_argument("--judge", dest="judge", nargs="?", const="pairwise", default="pairwise", metavar="NAME",
                       type=judge_name,
                       help=f"run an A/B judge {what}: alone the learned judge (the default), or a judge's name "
                            f"({names})")
    if optional:
        group.add_argument("--no-judge", dest="judge", action="store_const", const=None,
                           help="leave the judge out: the verdict then rests on the metrics (and people's ratings)")
    settings = p.add_argument_group("judge settings")
    if optional:  # `dialeval judge` has its own
        settings.add_argument("--checkpoint", default=None,
                              help="the learned judge's checkpoint (default: the shipped judge), e.g. one re-fitted "
                                   "on your votes by `dialeval train judge --votes`; a judge other than the shipped "
                                   "one has no measured record, so it is shown beside the verdict, not deciding it")
    for _, cls in JUDGES.items():
        cls.add_arguments(settings)


OTHER_ENDINGS = (".csv", ".tsv", ".md", ".txt", ".html", ".json")
"""File endings that promise another format than the JSON Lines ``score`` and ``judge`` write to ``--out``."""


def note_jsonl_out(path: str | None, what: str, hint: str = "") -> None:
    """Said before anything runs: ``--out PATH`` whose ending promises another format gets JSON Lines anyway."""
    if path and path.lower().endswith(OTHER_ENDINGS):
        note([f"--out {path}: {what} are written as JSON Lines (one JSON object per line, not one JSON document) "
              f"whatever the file's name{hint}"])


def criterion_name(by: str, a: argparse.Namespace) -> str:
    """One ``--by`` criterion as ``gate`` and ``plan`` read it: ``judge``, ``combined`` and ``human:DIM`` as given
    (``judge`` refused with ``--no-judge``, ``human:DIM`` with ``--no-human``); a metric's name as ``--metrics``
    reads it ('BLEU' is bleu; an unknown one the registry's error, listing the known). 'all', or several names
    where one is asked for, is refused."""
    from core.gating import criterion_name as read_criterion
    from core.verdict_policy import JUDGE
    if by.casefold() == JUDGE and a.judge is None:
        raise ValueError("--by judge with --no-judge: the judge is the criterion; drop --no-judge")
    if by.startswith("human:") and getattr(a, "no_human", False):
        raise ValueError(f"--by {by} with --no-human: people's ratings are the criterion; drop --no-human")
    try:
        return read_criterion(by, a.judge is not None)
    except UnknownName as e:  # an unknown name (a ValueError too, so first): said with the flag
        raise ValueError(f"--by {by}: {e}") from None
    except ValueError as e:
        if str(e).startswith("name criteria"):
            raise ValueError(f"--by {by}: {e}, comma-separated for gate") from None
        raise


def judge_name(text: str) -> str:
    """An argparse type: a registered judge's name (an unknown one is a usage error listing the known)."""
    from core.scoring import judge_class
    try:
        judge_class(text)
    except UnknownName as e:
        hint = ("; --judge takes an optional judge name, so a file right after it is read as one: put the input files "
                "first, or write --judge=pairwise" if ("." in text or "/" in text or os.path.exists(text)) else "")
        raise argparse.ArgumentTypeError(f"{e}{hint}") from None
    return text


def judge_from(a: argparse.Namespace) -> "str | Judge | None":
    """The judge the parsed command line asks for: ``None`` (``--no-judge``), the learned judge's name, or a
    judge built from its own flags (``--judge llm --llm-url ...``)."""
    from core.scoring import JUDGES, Judge, judge_class
    stray = [flag for name, cls in JUDGES.items() if name != a.judge for flag in cls.flags_given(a)]
    if stray:
        raise ValueError(f"{', '.join(stray)} set{'s' * (len(stray) == 1)} another judge than the one that runs "
                         f"({'none: --no-judge' if a.judge is None else a.judge}); add --judge NAME for that judge, "
                         "or drop the flag")
    if a.judge is None:
        if getattr(a, "checkpoint", None) is not None:
            raise ValueError("--checkpoint names the learned judge's checkpoint, and --no-judge leaves the judge out: "
                             "drop one of them")
        return None
    if a.judge == "pairwise":  # by name: its checkpoint (``--checkpoint``) goes to the engine beside it
        return "pairwise"
    if getattr(a, "checkpoint", None) is not None:
        raise ValueError(f"--checkpoint names a learned judge's checkpoint; the {a.judge} judge has none")
    cls = judge_class(a.judge)
    if cls.from_arguments.__func__ is Judge.from_arguments.__func__:  # type: ignore[attr-defined]
        return a.judge  # no flags of its own: by name, as the API passes it, so its calls are kept in the cache
    return cls.from_arguments(a)


ESTIMATE_SAID_FROM = 10.0  # seconds: a shorter run starts without a word about its length


def _stderr_is_terminal() -> bool:
    """Whether standard error is a terminal (not a CI log, a file or a pipe)."""
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced by an object without it, or closed
        return False


def _stdout_is_terminal() -> bool:
    """Whether standard output is a terminal (not a file or a pipe)."""
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def note_estimate(estimate: "WorkEstimate") -> None:
    """On stderr, before a long run starts: about how long it should take and what it computes
    (``core.engine.estimate_work``, the estimate the dashboard shows)."""
    unknown = estimate.judge_pairs > 0 and estimate.judge_seconds is None  # a judge whose pace is not known yet
    if (estimate.seconds >= ESTIMATE_SAID_FROM or unknown) and estimate.sentence():
        tell(estimate.sentence(), routine=True)


def judge_usage_note(judge: "str | Judge | None") -> None:
    """On stderr: what the judge's last run cost, when it says (the llm judge: requests, tokens, dollars)."""
    from core.scoring import Judge, loaded_judge
    if isinstance(judge, str):  # by name: the instance the engine ran, if it ran one
        judge = loaded_judge(judge)
    if isinstance(judge, Judge):
        line = judge.usage_line()
        if line:
            tell(line)


def add_option_arguments(p: argparse.ArgumentParser) -> None:
    """The run options every metric that declares them receives (``core.scoring.Options``)."""
    p.add_argument("--pool", default=None, help="υBLEU reference pool: JSONL of {utterance, response} or DailyDialog "
                                                "__eou__ text (default: chitchat-dataset); reaches RUBER+υBLEU too")
    p.add_argument("--retriever", default=None, choices=("emb-u", "emb-ur", "bm25-u", "bm25-ur"),
                   help="υBLEU reference retriever (default emb-u)")
    p.add_argument("--mme-dimension", "--dimension", dest="dimension", default=None, action=_OneValue,
                   help="the quality dimension MME-CRS's weights target (default overall; unknown names fall back "
                        "to the overall weights); --dimension is its older name (elsewhere --dimension names a "
                        "human rating dimension)")
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda", "mps", "auto"),
                   help="where models run (auto: CUDA, then MPS, then CPU)")
    add_cache_argument(p)


def add_cache_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-cache", action="store_true",
                   help="score every row afresh and keep nothing (default: rows scored before, with the same "
                        "metric signatures, are read from the score cache; see `dialeval cache info`)")


def write_stdout(text: str) -> None:
    """Write ``text`` to standard output whole, or raise ``BrokenPipeError`` (exit 141) when the reader went
    away. ``sys.stdout.write`` of a text larger than the pipe's buffer returned quietly after a partial write
    once ``head`` had closed the pipe, so ``dialeval score FILE | head`` exited 0 with its output cut short;
    ``os.write`` returns each partial count and raises on the next write."""
    if _stdout_is_terminal():  # a terminal shows control characters' escapes, never obeys them
        text = terminal_safe(text)
    try:
        sys.stdout.flush()
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # a stream with no descriptor (captured output): its own write
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    data = memoryview(_stdout_encoder(fd).encode(text))
    while data:
        data = data[os.write(fd, data):]


_encoders: dict = {}


def _stdout_encoder(fd: int):
    """One incremental encoder per descriptor and encoding, so that an encoding with a byte-order mark
    (PYTHONIOENCODING=utf-8-sig, utf-16) writes it once, not before every block."""
    import codecs
    key = (fd, sys.stdout.encoding or "utf-8", sys.stdout.errors or "strict")
    if key not in _encoders:
        _encoders[key] = codecs.getincrementalencoder(key[1])(key[2])
    return _encoders[key]


def emit(text: str, out: str | None) -> None:
    """A command's output: to ``out`` (one trailing newline, written whole or not at all by
    ``core.outputs.write_text``; 'wrote PATH' on stderr) or, without ``out`` or with ``-``, to stdout."""
    if out and out != "-":
        from core.outputs import write_text
        write_text(out, text + "\n")
        tell(f"wrote {out}", routine=True)
    else:
        write_stdout(text + "\n")


def options_from(args: argparse.Namespace):
    """The run's ``Options``; an ``--mme-dimension`` MME-CRS does not know, or one without MME-CRS among the
    metrics, and a ``--pool`` or ``--retriever`` without a metric that takes it, are said on stderr (they fall
    back to the overall weights, or do nothing)."""
    from core.scoring import Options, metric_class, unused_options
    chosen = getattr(args, "metrics", None) or []
    for name, value, takers in unused_options(Options(pool=args.pool, retriever=args.retriever), chosen):
        note([f"--{name} {value} has no effect: it reaches {takers}, and the metrics chosen include none of them"])
    if args.dimension and not any("dimension" in metric_class(m).option_names
                                  for m in getattr(args, "metrics", None) or []):
        note([f"--mme-dimension {args.dimension!r} has no effect: it chooses MME-CRS's weights, and the metrics "
              "chosen do not include mme"])
    elif args.dimension:
        from core.metrics.crs import dimension_note
        said = dimension_note(args.dimension, "--mme-dimension")
        if said:
            note([said])
    pooled = [m for m in chosen if "pool" in metric_class(m).option_names]
    if args.pool not in (None, "", "chitchat") and pooled:  # read now: its problems before any scoring
        from core.models.retrieval import get_pool
        pairs = len(get_pool(args.pool))
        k = max(getattr(metric_class(m), "retrieves", 0) for m in pooled)  # how many each retrieves for a row
        if pairs < k:
            note([f"--pool {args.pool} holds {pairs} (utterance, response) pair{'s' * (pairs != 1)}, fewer than the "
                  f"{k} references υBLEU retrieves for each row: every row gets the same few (the default pool "
                  f"holds {len(get_pool(None)):,})"])
    return Options(pool=args.pool, retriever=args.retriever, dimension=args.dimension, device=args.device)


def check_paths(args: argparse.Namespace, inputs: Sequence[str | None], output: str | None = None) -> None:
    """Before anything is loaded or scored: every file the command reads exists and is a readable file
    (the inputs, ``--pool``, ``--votes``), and ``--out`` can receive a new file without overwriting any of
    them (``core.outputs.check_output``)."""
    from core.data import DataError, Problem
    from core.outputs import check_output
    read = [(p, None) for p in inputs if p is not None]
    pool = getattr(args, "pool", None)
    if pool not in (None, "", "chitchat"):
        read.append((pool, "--pool"))
    if getattr(args, "votes", None):
        read.append((args.votes, "--votes"))
    problems = []
    for path, flag in read:
        p = Path(path)
        why = ("is a symbolic link that leads nowhere (broken or a loop)" if p.is_symlink() and not p.exists()
               else f"file not found (looked for {p.absolute()})" if not p.exists()
               else "is a folder, not a file" if p.is_dir()
               else "cannot be read: permission denied" if not os.access(p, os.R_OK) else None)
        if why:
            problems.append(Problem(path, None, None, f"{why} ({flag})" if flag else why))
    if problems:
        raise DataError(problems)
    check_output(output, [path for path, _ in read])


def note(lines: Sequence[str]) -> None:
    """Warnings the user must see (blank text, rows left out) on stderr, even with --quiet."""
    for line in lines:
        print(_for_stderr(f"warning: {line}"), file=sys.stderr)


# ------------------------------------------------------------------------------------------------


SECRET_FLAG = re.compile(r"(^|[-_])(api[-_]?key|key|token|secret|password|passwd|auth|bearer)($|[-_])",
                         re.IGNORECASE)  # a flag name that would carry a secret
SECRET_VALUE = re.compile(r"\b(sk|pk|rk|gsk|xai|hf)[-_][A-Za-z0-9_-]{8,}")  # shaped like an API key


def is_secret_flag(flag: str) -> bool:
    """Whether an option's name says it carries a secret ('--api-key', '--llm-token', '--openai_api_key')."""
    return flag.startswith("-") and bool(SECRET_FLAG.search(flag.lstrip("-")))


def hidden_secrets(args: Sequence[str]) -> list[str]:
    """``args`` as an error may show them: the value of a flag whose name says it holds a secret
    (``--api-key VALUE``, ``--llm-key=VALUE``) and anything shaped like an API key ('sk-...', anywhere in an
    argument) as '[hidden]' (a mistyped key flag put the key itself into a CI log)."""
    shown: list[str] = []
    after_secret = False
    for arg in args:
        flag, eq, _ = arg.partition("=")
        if is_secret_flag(flag):
            shown.append(f"{flag}=[hidden]" if eq else arg)
            after_secret = not eq
        else:
            shown.append("[hidden]" if after_secret else hide_keys(arg))
            after_secret = False
    return shown


def hide_keys(text: str) -> str:
    """``text`` with anything shaped like an API key written '[hidden]'."""
    return SECRET_VALUE.sub("[hidden]", text)


class Parser(argparse.ArgumentParser):
    """argparse with a usage error in one line (the flag, what is wrong, where help is), exit code 2, and no
    flag abbreviations: ``--metric`` is an error that names ``--metrics``, not silently ``--metrics`` (a script
    written with a prefix would change meaning when a flag sharing it is added)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)
        self.command_parsers: dict[str, Parser] = {}  # filled by build_parser: each command's own parser

    def flags(self) -> list[str]:
        """Every option string this parser and the parsers of its sub-commands accept."""
        found: list[str] = []
        for action in self._actions:
            found.extend(action.option_strings)
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    found.extend(sub.flags() if isinstance(sub, Parser) else [])
        return found

    def error(self, message: str):  # type: ignore[override]
        # argparse quotes a bad value ('invalid choice: ...'): a key typed into the wrong flag is not shown
        self.exit(EXIT_USAGE, f"{self.prog}: error: {hide_keys(message)} (see {self.prog} --help)\n")

    def parse_args(self, args=None, namespace=None):  # type: ignore[override]
        """As argparse's, but arguments no option takes are named with the command they were given to (argparse
        blames the top level: ``dialeval: error``), with the flag a misspelt one is close to."""
        ns, extra = self.parse_known_args(args, namespace)
        if extra:
            command = getattr(ns, "command", None)
            prog = f"{self.prog} {command}" if command else self.prog
            hint = ""
            command_parser = self.command_parsers.get(command) if command else None
            known = (command_parser or self).flags()
            secret = False
            for arg in extra:
                flag = arg.split("=", 1)[0]
                secret = secret or (is_secret_flag(flag) and "key" in flag.lower())
                if flag.startswith("--") and (close := difflib.get_close_matches(flag, known, 1, 0.6)):
                    hint += f"; did you mean {close[0]}?"
            if secret:
                hint += "; an API key is read from $OPENAI_API_KEY, never from a flag"
            self.exit(EXIT_USAGE, f"{prog}: error: unrecognized arguments: {' '.join(hidden_secrets(extra))}{hint} "
                                  f"(see {prog} --help)\n")
        return ns


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="dialeval", description="Which of two dialogue systems is better, and why: "
                                     "metrics validated against human ratings and a learned A/B judge.")
    parser.add_argument("--version", action="version", version=f"dialeval {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands = dict(COMMANDS.items())
    for name in sorted(commands, key=lambda n: (ORDER.index(n) if n in ORDER else len(ORDER), n)):
        cmd = commands[name]
        p = sub.add_parser(name, help=cmd.help, description=cmd.help)
        cmd.add_arguments(p)
        p.set_defaults(run=cmd.run)
        parser.command_parsers[name] = p
    return parser


class Terminated(BaseException):
    """SIGTERM, raised where the program is so that half-written outputs are cleaned up on the way out."""


@contextmanager
def _sigterm_raises() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_sigterm(signum, frame):
        raise Terminated()

    def on_sigint(signum, frame):
        note_interrupt()
        raise KeyboardInterrupt
    previous = signal.signal(signal.SIGTERM, on_sigterm)
    previous_int = signal.signal(signal.SIGINT, on_sigint)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)


def _stdout_gone() -> None:
    """After a broken pipe: point stdout at /dev/null so that the interpreter's final flush stays quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def _fail(message: object) -> int:
    from core.progress import end_progress_line
    end_progress_line()
    print(_for_stderr(f"error: {message}"), file=sys.stderr)
    return EXIT_USAGE


def _for_stderr(line: str) -> str:
    """``line`` as stderr shows it: control characters escaped on a terminal (``core.formatting.terminal_safe``)."""
    return terminal_safe(line) if _stderr_is_terminal() else line


QUIET = {"on": False}  # --quiet: set by ``main`` for one command, reset after it
# the environment --quiet (core.progress.silence_library_progress) and --no-cache set for one command
FLAG_ENVIRONMENT = ("TQDM_DISABLE", "HF_HUB_DISABLE_PROGRESS_BARS", "TRANSFORMERS_VERBOSITY",
                    "TRANSFORMERS_NO_ADVISORY_WARNINGS", "DIALEVAL_NO_CACHE")


def add_quiet_argument(p: argparse.ArgumentParser) -> None:
    """``-q/--quiet``, as every command that scores takes it."""
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no progress bars (the model libraries' included) and no routine notes on stderr ('wrote "
                        "PATH', the time estimate); warnings, errors and the score cache's notes still show")


def tell(line: str, routine: bool = False) -> None:
    """One line for the user on stderr (what was written, a hint, a note that is not a warning), shown on a
    terminal with its control characters escaped, as :func:`note` and :func:`write_stdout` show theirs. A
    ``routine`` line ('wrote PATH', the time estimate, a hint) is left out under ``--quiet``."""
    if not (routine and QUIET["on"]):
        print(_for_stderr(line), file=sys.stderr)


INPUT_ARGUMENTS = ("input", "input_b", "inputs", "files")  # the positional input files of the commands


@contextmanager
def stdin_as_file(args: argparse.Namespace) -> Iterator[None]:
    """An input named ``-`` is standard input (as sacrebleu reads it): read once into a temporary file named
    ``stdin`` (so formats are detected from the content and rows are named ``stdin row N``), removed after the
    command. Only one input may be ``-``."""
    import shutil
    import tempfile
    slots = [(k, i) for k in INPUT_ARGUMENTS for i, v in enumerate(_as_list(getattr(args, k, None))) if v == "-"]
    if not slots:
        yield
        return
    if len(slots) > 1:
        raise ValueError("standard input (-) can be read only once: name at most one input as -")
    if sys.stdin is None or sys.stdin.isatty():
        raise ValueError("the input is - (standard input), but nothing is piped in: use `... | dialeval ... -` "
                         "or name a file")
    with tempfile.TemporaryDirectory(prefix="dialeval-stdin-") as d:
        path = os.path.join(d, "stdin")
        with open(path, "wb") as f:
            shutil.copyfileobj(sys.stdin.buffer, f)
        key, i = slots[0]
        value = getattr(args, key)
        setattr(args, key, [path if j == i else v for j, v in enumerate(value)] if isinstance(value, list) else path)
        yield


def _as_list(value: object) -> list:
    return value if isinstance(value, list) else [value]


def _cache_hint(filename: object) -> str:
    """When a failed path lies in the cache folder: which setting chose that folder, so the user can fix it."""
    from core.settings import cache_location
    if not filename:
        return ""
    folder, chosen = cache_location()
    path, folder = Path(os.fsdecode(filename)).absolute(), folder.absolute()
    if path != folder and folder not in path.parents:
        return ""
    return (f": the cache folder {folder}, chosen by {chosen}, cannot be used; point DIALEVAL_CACHE at a "
            "writable folder")


def check_statistics_arguments(args: argparse.Namespace) -> None:
    """``--n-perm`` against ``--level`` (too few randomizations for any p below ``1 - level``), before anything is
    read or scored: each flag alone is checked while the command line is parsed."""
    if getattr(args, "n_perm", None) is not None:
        from core.stats import check_settings
        try:
            check_settings(getattr(args, "n_boot", None) or 1000, args.n_perm, getattr(args, "level", None))
        except ValueError as e:
            raise ValueError(str(e).replace("n_perm=", "--n-perm ").replace("n_perm", "--n-perm")) from None


def main(argv: Sequence[str] | None = None) -> int:
    """``dialeval``: the command's exit code (docs/inputs.md): 0 done (a gate that passed), 1 a gate that failed,
    2 a failure of a kind the checks raise (one line naming the input, flag or setting: a ``ValueError``, an
    unknown name, a missing model, ...), 3 any other error, a bug (its traceback, API keys scrubbed, and that it is
    a bug), 130/143 interrupted or terminated, 141 stdout's reader gone."""
    try:
        with warnings.catch_warnings():
            from core.cache import DamagedCacheWarning
            warnings.filterwarnings("ignore", category=DamagedCacheWarning)  # said at the run's end (cache_notes)
            return _main(argv)
    except Exception:  # noqa: BLE001 (whatever no check foresaw: a CI must tell it from a gate's FAIL)
        import traceback
        from core.progress import end_progress_line
        end_progress_line()
        told = traceback.format_exc()
        try:  # an exception's message could quote a request that held the key: never printed
            from core.judges.llm import scrubbed
            told = scrubbed(told)
        except Exception:  # noqa: BLE001 (the scrubber itself broken: the last line alone)
            told = told.rstrip().splitlines()[-1] + "\n"
        print(told, end="", file=sys.stderr)
        print(f"error: internal error (exit code {EXIT_INTERNAL}): a bug in dialeval, not a problem with the input; "
              "please report it with the lines above", file=sys.stderr)
        return EXIT_INTERNAL


def _main(argv: Sequence[str] | None) -> int:
    from core.cache import CacheError, cache_notes
    from core.data import DataError
    from core.models.checkpoints import CheckpointError
    from core.models.device import DeviceError
    from core.models.encoders import MissingModelError
    from core.outputs import OutputError
    from core.progress import end_progress_line, library_bars, silence_library_progress
    from core.settings import SettingError, minilm_precision, threads

    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    flags_env = {k: os.environ.get(k) for k in FLAG_ENVIRONMENT}  # what --quiet and --no-cache set, restored after
    if not argv:
        parser.print_usage(sys.stderr)
        print("dialeval: error: choose a command (see dialeval --help)", file=sys.stderr)
        return EXIT_USAGE
    with _sigterm_raises():
        try:
            try:
                args = parser.parse_args(argv)
            except SystemExit as e:  # --help, --version, or a usage error argparse already reported
                return e.code if isinstance(e.code, int) else EXIT_USAGE
            if args.command is None:
                parser.print_usage(sys.stderr)
                print("dialeval: error: choose a command (see dialeval --help)", file=sys.stderr)
                return EXIT_USAGE
            args.command_line = "dialeval " + " ".join(shlex.quote(a) for a in argv)
            QUIET["on"] = bool(getattr(args, "quiet", False))
            if QUIET["on"]:
                silence_library_progress()
            if getattr(args, "no_cache", False):  # nothing read from or written to the score cache
                os.environ["DIALEVAL_NO_CACHE"] = "1"
            threads()  # DIALEVAL_THREADS is checked before any work, whichever metrics run
            check_statistics_arguments(args)
            minilm_precision()  # and so is DIALEVAL_PRECISION
            # the model libraries' own bars redraw with carriage returns: in a CI log or a file they are noise
            with stdin_as_file(args), library_bars(_stderr_is_terminal()):
                code = int(args.run(args) or 0)
            for line in cache_notes():
                tell(line)
            if was_interrupted():  # a KeyboardInterrupt swallowed on its way up: still an interrupted run
                raise KeyboardInterrupt
            return code
        except DataError as e:
            return _fail(e)
        except (CacheError, CheckpointError, DeviceError, MissingModelError, SettingError, OutputError, UnknownName,
                    ValueError) as e:  # a plain KeyError is a bug (exit 3); an unknown name is the registry's
            return _fail(e.args[0] if isinstance(e, KeyError) and e.args else e)
        except KeyboardInterrupt:
            end_progress_line()
            print("interrupted", file=sys.stderr)
            return EXIT_INTERRUPTED
        except Terminated:
            end_progress_line()
            print("terminated", file=sys.stderr)
            return EXIT_TERMINATED
        except BrokenPipeError:
            _stdout_gone()
            return EXIT_PIPE_CLOSED
        except OSError as e:  # the environment: a cache folder that cannot be written, a full disk, ...
            where = f" ({e.filename})" if e.filename else ""
            return _fail(f"{e.strerror or e}{where}{_cache_hint(e.filename)}")
        finally:
            QUIET["on"] = False  # the next command run in this process (a test, a notebook) speaks again
            for k, v in flags_env.items():  # and reads the cache, with the libraries' bars, unless it asks otherwise
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
