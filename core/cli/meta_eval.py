"""``dialeval meta-eval FILE...``: how well each metric agrees with human ratings, per dataset and dimension
(``core.meta_eval``)."""
from __future__ import annotations

import argparse

from core.cli import (add_csv_arguments, add_quiet_argument, check_paths, csv_mapping_from, emit, interval_level,
                      metric_names, note, note_estimate, register_command, tell, whole_number)
from core.data import dimensions
from core.engine import DEFAULT_METRICS, estimate_work, is_reference_copy
from core.meta_eval import (NO_HUMAN_SCORES, format_rows, group_datasets, input_notes, meta_evaluate, missing_dimensions,
                            scored_rows)
from core.progress import progress_bar
from core.scoring import Options
from core.settings import SEED
from core.system_eval import (MIN_SHARED_CONTEXTS, format_system_rows, policy_combinations, summarize, system_level,
                              system_pairs, undecidable_verdict_note, with_settings, with_verdict,
                              without_undecided_verdict)
from core.verdict_policy import shipped_policy
from core.stats import MAX_RESAMPLES, MIN_BOOT, N_BOOT, N_PERM

TURN_N_BOOT = 1000  # the turn level's bootstrap resamples unless --n-boot says


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("files", nargs="+", help="rated data files (JSONL, DSTC10 JSON, column JSON or CSV)")
    p.add_argument("--metrics", type=metric_names, default=list(DEFAULT_METRICS),
                   help=f"comma-separated metric names, or 'all' (default: {','.join(DEFAULT_METRICS)}, the "
                        "default metrics everywhere)")
    p.add_argument("--dimension", action="append", help="only these human dimensions (repeat or comma-separate; "
                                                        "--level system: the one people's side is read on)")
    p.add_argument("--format", default="text", choices=("text", "markdown", "csv", "json"))
    p.add_argument("-o", "--out", help="write the table here instead of stdout (written whole or not at all)")
    p.add_argument("--n-boot", type=whole_number(MIN_BOOT, MAX_RESAMPLES), default=None,
                   help=f"bootstrap resamples, at least {MIN_BOOT} (default 1000; with --level system the verdict's, "
                        f"{N_BOOT})")
    p.add_argument("--seed", type=whole_number(0), default=SEED)
    p.add_argument("--level", type=level_or_granularity, action="append", default=[],
                   help="'turn' (default): correlations with people's ratings per row and of system means; 'system': "
                        "for every pair of systems that answered shared contexts, how often each metric, the judge "
                        "and the one-line verdict name the system people prefer; a number: the intervals' level "
                        "(default 0.95). Both may be given: --level system --level 0.9")
    p.add_argument("--max-rows", type=whole_number(1),
                   help="subsample whole contexts to about this many rows per dataset (turn level only)")
    p.add_argument("--no-system-level", action="store_true",
                   help="skip the correlations of per-system means (turn level only)")
    p.add_argument("--no-judge", action="store_true", help="system level: leave the judge (and so the verdict's "
                   "judge) out")
    p.add_argument("--no-held-out", action="store_true",
                   help="score learned metrics as shipped even on sets they were trained on (not a fair test)")
    p.add_argument("--keep-reference-copies", action="store_true",
                   help="keep rows whose response is a copy of its reference (dropped by default)")
    p.add_argument("--pool", default=None, help="υBLEU reference pool (default: chitchat-dataset)")
    p.add_argument("--retriever", default=None, choices=("emb-u", "emb-ur", "bm25-u", "bm25-ur"))
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda", "mps", "auto"))
    add_csv_arguments(p)
    add_quiet_argument(p)


def level_or_granularity(text: str) -> str | float:
    """``--level``: 'turn' / 'system', or an interval level in (0, 1)."""
    if text.strip().lower() in ("turn", "system"):
        return text.strip().lower()
    try:
        return interval_level(text)
    except (argparse.ArgumentTypeError, ValueError) as e:
        raise argparse.ArgumentTypeError(f"{e}; or 'turn' / 'system'") from None


def _levels(values: list) -> tuple[str, float]:
    kinds = [v for v in values if isinstance(v, str)]
    numbers = [v for v in values if not isinstance(v, str)]
    if len(set(kinds)) > 1 or len(numbers) > 1:
        raise ValueError("--level: give at most one of turn/system and at most one interval level")
    return (kinds[0] if kinds else "turn"), (numbers[0] if numbers else 0.95)


@register_command("meta-eval", "correlation of metrics with human scores per dataset and dimension", _arguments)
def meta_eval(args: argparse.Namespace) -> int:
    granularity, args.level = _levels(args.level)
    metrics = args.metrics
    dims = None
    if args.dimension:
        dims = [d.strip() for spec in args.dimension for d in spec.split(",") if d.strip()]
        if not dims:
            raise ValueError("--dimension: name one or more human dimensions")
    mapping = csv_mapping_from(args)
    out_path = args.out if args.out != "-" else None
    check_paths(args, args.files, out_path)
    data = group_datasets(args.files, csv_mapping=mapping)
    note(input_notes(data, metrics, args.max_rows, args.seed, args.keep_reference_copies))  # on the rows it scores
    if not any(dimensions(exs) for exs in data.values()):
        raise ValueError(NO_HUMAN_SCORES)
    why = missing_dimensions(data, dims) if dims else None
    if why:
        raise ValueError(f"dimension(s) {why}")
    log = None if args.quiet else tell
    if granularity == "system":
        return _system_level(args, data, metrics, dims, log, out_path)
    options = Options(pool=args.pool, retriever=args.retriever, device=args.device)
    if not args.quiet:  # about how long, before it starts: each set's rows that meta-eval scores, every metric
        scored = [ex for exs in data.values() for ex in scored_rows(exs, args.max_rows, args.seed,
                                                                    args.keep_reference_copies)]
        note_estimate(estimate_work(scored, metrics, options))
    rows = meta_evaluate(data, metrics, dims, n_boot=args.n_boot or TURN_N_BOOT, seed=args.seed, level=args.level,
                         options=options,
                         system_level=not args.no_system_level, held_out=not args.no_held_out,
                         max_rows=args.max_rows, keep_reference_copies=args.keep_reference_copies,
                         progress=progress_bar(args.quiet), log=log,
                         warn=lambda s: note([s]))
    if not rows:
        rated = [ex for exs in data.values() for ex in exs if ex.scores]
        if rated and not args.keep_reference_copies and all(is_reference_copy(ex) for ex in rated):
            raise ValueError(f"every rated row ({len(rated)}) repeats its reference, and meta-eval drops such "
                             "reference copies (a metric with a reference would score them perfectly); "
                             "--keep-reference-copies keeps them")
        raise ValueError(NO_HUMAN_SCORES)
    _write(format_rows(rows, args.format), out_path)
    return 0


def _write(text: str, out_path: str | None) -> None:
    """The table to ``out_path`` (written whole or not at all; 'wrote PATH' on stderr), else to stdout."""
    emit(text, out_path)


NO_SYSTEM_PAIRS = (f"no data set holds two or more systems that answered at least {MIN_SHARED_CONTEXTS} shared "
                   "contexts: system-level meta-evaluation compares systems on the contexts they share")


def _system_level(args: argparse.Namespace, data, metrics, dims: list[str] | None, log,
                  out_path: str | None) -> int:
    """``--level system``: per data set and signal, how often it names the system people prefer (people's side
    on the one ``--dimension`` given, else each set's overall-like one)."""
    for flag, given in (("--max-rows", args.max_rows is not None), ("--no-system-level", args.no_system_level)):
        if given:
            raise ValueError(f"{flag} is for the turn level (correlations per row); --level system compares every "
                             "pair of systems on all the contexts they share")
    if dims and len(dims) > 1:
        raise ValueError(f"--dimension: --level system reads people's side on one dimension; got {dims}")
    judge = not args.no_judge
    comps = [c for exs in data.values() for c in system_pairs(exs, keep_reference_copies=args.keep_reference_copies)[0]]
    if not comps:  # before anything is scored, with each set's reason (too few shared contexts, reference copies)
        why: list[str] = []
        system_level(data, [], False, keep_reference_copies=args.keep_reference_copies, log=why.append)
        raise ValueError(NO_SYSTEM_PAIRS + "".join(f"\n  {line}" for line in why))
    policy = shipped_policy().policy
    signals = [*metrics, *(["judge"] if judge else [])]
    undecided = undecidable_verdict_note(signals, policy)
    if undecided:
        note([undecided])
    options = Options(pool=args.pool, retriever=args.retriever, device=args.device)
    if not args.quiet:  # about how long: every system pair's rows scored once, and its pairs judged
        rows = list({id(ex): ex for c in comps for ex in c.examples()}.values())  # each row once, as it is read
        note_estimate(estimate_work(rows, metrics, options,
                                    [(a.context, a.response, b.response) for c in comps for a, b in c.pairs],
                                    "pairwise" if judge else None, rows_read=rows))
    pairs = system_level(data, metrics, judge, held_out=not args.no_held_out,
                         n_boot=args.n_boot or N_BOOT,  # the verdict's resamples unless told
                         dimension=dims[0] if dims else None,
                         level=args.level, seed=args.seed, keep_reference_copies=args.keep_reference_copies,
                         options=options, progress=progress_bar(args.quiet), log=log,
                         warn=lambda s: note([s]), combine=policy_combinations(shipped_policy().policy))
    if not pairs:
        raise ValueError(NO_SYSTEM_PAIRS)
    rows = summarize(with_verdict(pairs, shipped_policy().policy, args.level))
    rows = with_settings(without_undecided_verdict(rows) if undecided else rows, args.level, args.n_boot or N_BOOT,
                         N_PERM, args.seed)
    _write(format_system_rows(rows, args.format), out_path)
    return 0
