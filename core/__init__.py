"""dialeval's scoring engine: which of two dialogue systems is better, and why.

One-call API (like ``bert_score.score``), the same engine the CLI and the dashboard use::

    import core
    out = core.score(["sure, see you then"], contexts=[["lunch tomorrow?"]], references=[["ok, see you"]],
                     metrics="bleu,ubleu")
    out["ubleu"]                        # numpy array, one value per response
    p = core.judge([["lunch tomorrow?"]], ["sure, see you then"], ["no."]).p_a
    verdict = core.compare("v1.jsonl", "v2.jsonl", metrics="bleu,mme")   # the judge runs unless judge=False
    verdict = core.compare_replies(contexts, replies_v1, replies_v2, metrics="bleu")   # in memory
    board = core.rank("v1.jsonl", "v2.jsonl", "v3.jsonl", metrics="bleu")             # dialeval leaderboard
    rows = core.meta_evaluate("rated.jsonl", metrics="bleu,bert_ruber")               # dialeval meta-eval

Models load once per process; for repeated use keep metric instances (``core.scoring.get_metric``).
"""
from __future__ import annotations

import functools
import inspect
import math
from typing import TYPE_CHECKING, Any, Callable, Sequence, TypeVar

from core.models.blas import request_reproducible_products
from core.models.openmp import request_short_spins
from core.version import __version__

request_reproducible_products()  # before any model runs: scores independent of the thread count (core.models.blas)
request_short_spins()  # before torch loads: SmolLM2 keeps its speed on a busy machine (core.models.openmp)

if TYPE_CHECKING:
    from core.cache import ScoreCache
    from core.leaderboard import Leaderboard
    from core.progress import Progress
    from core.data import Comparison, CsvMapping
    from core.engine import ComparisonScores
    from core.gating import GateResult
    from core.scoring import Judge, JudgeOutput, Options
    from core.verdict import JudgeSummary, Verdict

__all__ = ["score", "judge", "compare", "compare_replies", "rank", "gate", "meta_evaluate", "__version__"]


class _Column:
    """One argument of the API as a list, with the pandas index it came with (None for anything else)."""

    def __init__(self, values: Any, name: str):
        self.name = name
        self.index = None  # a pandas Index, to compare with the other arguments'
        self.labels: list = []  # its labels as plain Python values, for messages
        if isinstance(values, (str, bytes)):
            raise TypeError(f"{name} must be a sequence (one item per example), got a single string")
        if isinstance(values, (dict, set, frozenset)):
            raise TypeError(f"{name} must be an ordered sequence (one item per example), got a "
                            f"{type(values).__name__}")
        if hasattr(values, "columns"):
            raise TypeError(f"{name} must be one column (e.g. df['{name}']), got a {type(values).__name__}")
        if hasattr(values, "iloc") and hasattr(values, "index"):  # a pandas Series: keep its index to compare
            self.index = values.index
            self.labels = values.index.tolist()
        if getattr(values, "ndim", 1) == 0:
            raise TypeError(f"{name} must be a sequence (one item per example), got a scalar array")
        if hasattr(values, "tolist") and callable(values.tolist):  # numpy arrays, pandas Series: by position
            values = values.tolist()
        try:
            self.items = list(values)
        except TypeError:
            raise TypeError(f"{name} must be a sequence (one item per example), got {type(values).__name__}") from None

    def where(self, i: int) -> str:
        """``name[i]``, with the pandas index label when it is not the position."""
        label = f" (index label {self.labels[i]!r})" if self.index is not None and self.labels[i] != i else ""
        return f"{self.name}[{i}]{label}"


def _aligned(*columns: "_Column | None") -> None:
    """Arguments are read by position. Pandas Series must share one index (then position = label); Series
    with different indexes (e.g. one filtered, one not) are refused rather than silently mis-paired."""
    given = [c for c in columns if c is not None]
    lengths = {c.name: len(c.items) for c in given}
    if len(set(lengths.values())) > 1:
        raise ValueError(" and ".join(f"{k} ({n})" for k, n in lengths.items()) + " must have the same length")
    series = [c for c in given if c.index is not None]
    for other in series[1:]:
        if not series[0].index.equals(other.index):
            diff = next((i for i, (x, y) in enumerate(zip(series[0].labels, other.labels)) if x != y), 0)
            raise ValueError(f"{series[0].name} and {other.name} are pandas Series with different indexes (at "
                             f"position {diff}: {series[0].labels[diff]!r} vs {other.labels[diff]!r}); rows are "
                             "paired by position, so align them first (e.g. .reset_index(drop=True) on both "
                             "after the same filtering, or .loc[...] with one index)")


def _is_missing(value: Any) -> bool:
    """None, NaN and pandas' NA (a missing cell of a ``string`` Series) are no value."""
    return value is None or (isinstance(value, float) and value != value) or type(value).__name__ == "NAType"


def _encodable(text: str, where: str) -> str:
    """``text`` if it can be written as UTF-8 (the cache, every output); a lone surrogate (half of an emoji
    cut in two, e.g. by slicing UTF-16) is named with its argument and position, as the file loaders do."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError(f"{where} holds a lone surrogate {text[e.start]!r} at character {e.start} (half of a "
                         "character cut in two): fix the text before scoring") from None
    return text


def _texts(value: Any, column: _Column, i: int, what: str, allow_missing: bool = False) -> list[str]:
    """Item ``i`` of ``column`` as a list of strings: one string (a context is split at line ends) or a
    sequence of strings; missing (None/NaN), or a missing item of the sequence, is no text where
    ``allow_missing`` (references)."""
    from core.data import chat_turns, split_turns
    if allow_missing and _is_missing(value):
        return []
    if what == "turns":  # chat messages ({"role", "content"}) are turns, as a file's context reads them
        value = chat_turns(value)
    if isinstance(value, str):
        _encodable(value, column.where(i))
        return split_turns(value) if what == "turns" else [value]
    try:
        inner = _Column(value, column.where(i))
    except TypeError:
        raise TypeError(f"{column.where(i)} must be a string or a list of strings, got "
                        f"{type(value).__name__} {value!r:.40}") from None
    items = [(j, t) for j, t in enumerate(inner.items) if not (allow_missing and _is_missing(t))]
    bad = [(j, t) for j, t in items if not isinstance(t, str)]
    if bad:
        j, t = bad[0]
        raise TypeError(f"{column.where(i)}[{j}] must be a string, got {type(t).__name__} {t!r:.40}")
    return [_encodable(t, f"{column.where(i)}[{j}]") for j, t in items]


def _strings(column: _Column) -> list[str]:
    for i, value in enumerate(column.items):
        if not isinstance(value, str):
            blank = (" (a reply left blank is \"\": counted, and left out of every metric's n)"
                     if _is_missing(value) else "")
            raise TypeError(f"{column.where(i)} must be a string, got {type(value).__name__} {value!r:.40}{blank}")
        _encodable(value, column.where(i))
    return column.items


def _require_turns(turns: list[str], column: _Column, i: int) -> None:
    """A context must hold the input utterance (a non-blank turn), as the CLI's loaders require."""
    if not any(t.strip() for t in turns):
        raise ValueError(f"{column.where(i)} is empty: give at least the input utterance")


def _settings_object(value: Any, cls: type, what: str, where: str) -> Any:
    """``value`` as a ``cls`` (a dataclass of settings): one already, None, or a dict of its fields; anything else,
    or an unknown field, is a ``TypeError`` naming the fields (``what``: the argument, ``where``: where ``cls``
    lives)."""
    from dataclasses import fields
    if value is None or isinstance(value, cls):
        return value
    names = [f.name for f in fields(cls)]
    if isinstance(value, dict):
        unknown = [k for k in value if k not in names]
        if unknown:
            raise TypeError(f"{what}: unknown field(s) {', '.join(map(repr, unknown))}; fields: {', '.join(names)}")
        return cls(**value)
    raise TypeError(f"{what} must be a {where}.{cls.__name__} or a dict of its fields ({', '.join(names)}), got "
                    f"{type(value).__name__}")


def _options(options: Any, metrics: Sequence[str] | None = None) -> "Options | None":
    """``options`` as an :class:`~core.scoring.Options`: one already, None, or a dict of its fields
    (``{"pool": "my_logs.jsonl"}``); anything else, or an unknown field, is a ``TypeError`` naming the fields.
    A pool or retriever none of ``metrics`` (registry names) reads is said in a warning, as the command line
    says it of ``--pool`` and ``--retriever``."""
    from core.scoring import Options, metric_class, unused_options
    chosen = _settings_object(options, Options, "options", "core.scoring")
    if metrics is not None:
        _warn_notes([f"options {name}={value!r} has no effect: it reaches {takers}, and the metrics chosen include "
                     "none of them" for name, value, takers in unused_options(chosen, metrics)])
    if chosen is not None and chosen.dimension is not None and metrics is not None and any(
            "dimension" in metric_class(m).option_names for m in metrics):  # as --mme-dimension is said
        from core.metrics.crs import dimension_note
        said = dimension_note(chosen.dimension, "options dimension")
        _warn_notes([said] if said else [])
    return chosen


def _progress(progress: Any) -> "Progress | None":
    """``progress`` as a callback: None or False, silent; True, a bar on stderr (``core.progress.ProgressBar``,
    as the command line draws it); a callable ``progress(done, total, description)``, itself. Anything else is a
    ``TypeError`` saying what is taken."""
    if progress is None or progress is False:
        return None
    if progress is True:
        from core.progress import ProgressBar
        return ProgressBar()
    if callable(progress):
        return progress
    raise TypeError(f"progress must be True (a bar on stderr), False/None (silent) or a callable "
                    f"progress(done, total, description), got {type(progress).__name__}")


_Call = TypeVar("_Call", bound=Callable[..., Any])


def _library_bars_follow_progress(call: _Call) -> _Call:
    """Called without ``progress`` (None or False), the model libraries' own
    bars are off too while it runs (``core.progress.library_bars``), as the command line's ``--quiet`` does."""
    signature = inspect.signature(call)
    extra = next((p.name for p in signature.parameters.values() if p.kind is p.VAR_KEYWORD), None)

    @functools.wraps(call)
    def silent_unless_asked(*args: Any, **kwargs: Any) -> Any:
        from core.progress import library_bars
        try:
            given = signature.bind(*args, **kwargs).arguments
        except TypeError:  # the call itself says what is wrong
            given = {}
        progress = given.get("progress", given.get(extra, {}).get("progress") if extra else None)  # or in **settings
        with library_bars(progress is not None and progress is not False):
            return call(*args, **kwargs)
    return silent_unless_asked  # type: ignore[return-value]


def _labelled(notes: list[str], *columns: "_Column | None") -> list[str]:
    """``notes`` with each 'item 3' (a position) followed by its pandas index label where the arguments carry
    labels that are not their positions ("item 3 [index label 40]"), so a warning points at the row the caller
    knows."""
    import re
    labels = next((c.labels for c in columns if c is not None and c.index is not None), None)
    if labels is None or all(label == i for i, label in enumerate(labels)):
        return notes

    def label(m: "re.Match[str]") -> str:
        i = int(m.group(1))
        return f"{m.group()} [index label {labels[i]!r}]" if i < len(labels) else m.group()
    return [re.sub(r"\bitem (\d+)\b(?! \[index label)", label, n) for n in notes]  # a row's location says it


def _warn_notes(notes: list[str]) -> None:
    """The notes on the input as one ``UserWarning`` that names the caller's line: the first frame outside this
    package, however deep in it the note was made."""
    if notes:
        import os
        import sys
        import warnings
        package, frame, level = os.path.dirname(os.path.abspath(__file__)) + os.sep, sys._getframe(1), 2
        while frame.f_back is not None and os.path.abspath(frame.f_code.co_filename).startswith(package):
            frame, level = frame.f_back, level + 1
        warnings.warn("; ".join(notes), stacklevel=level)


@_library_bars_follow_progress
def score(responses: Sequence[str], contexts: Sequence[Sequence[str] | str],
          references: Sequence[Sequence[str] | str] | None = None, metrics: str | Sequence[str] | None = None,
          system: str = "system", options: "Options | None" = None, progress: "Progress | bool | None" = None,
          cache: "ScoreCache | bool | None" = None) -> dict:
    """Score responses; returns ``{metric: np.ndarray}`` plus ``"_signatures"``, ``"_details"`` and
    ``"_flags"`` (per row, why a score is null: ``core.engine.row_flags``).

    ``contexts[i]`` is a list of turns (oldest first) or one string with turns separated by newlines;
    ``references[i]`` a list of references (None/NaN items skipped), one string, or None/NaN for none.
    ``metrics`` None: the default metrics; ``options`` an :class:`~core.scoring.Options` or a dict of its
    fields. Every argument may be a list, tuple, numpy array or pandas Series, read by position; Series must
    share one index (Series with different indexes are refused, never mis-paired). A wrong item is named
    with its argument and position (and index label; a warning's 'item 3' too). A blank response scores NaN on every metric, with a
    warning that counts them (never a silent 0)."""
    from core.engine import blank_text_notes, parse_metrics, score_examples
    if not isinstance(system, str):  # a number would fail deep in the engine, its argument unnamed
        raise TypeError(f"system must be a string (the name the rows are scored under), got "
                        f"{type(system).__name__} {system!r}")
    resp, ctx = _Column(responses, "responses"), _Column(contexts, "contexts")
    refs = None if references is None else _Column(references, "references")
    _aligned(resp, ctx, refs)
    names = parse_metrics(metrics)
    exs = _examples(resp, ctx, refs, system)
    _warn_notes(_labelled(blank_text_notes(exs, names), resp, ctx, refs))
    table = score_examples(exs, names, _options(options, names), progress=_progress(progress), cache=cache)
    out: dict = {m: table.column(m) for m in table.metrics}
    out["_signatures"] = table.signatures()
    out["_details"] = {m: table.results[m].details for m in table.metrics}
    out["_flags"] = table.flags
    return out


def _examples(resp: _Column, ctx: _Column, refs: "_Column | None", system: str) -> list:
    """One ``core.data.Example`` per response, every item checked as :func:`score` says. Its id is its position,
    or the arguments' pandas index label where they carry labels that are not their positions (the verdict's
    drivers then name the row ``df.loc`` finds; repeated labels keep positions as ids), and its location says
    both ('item 2 [index label 12]')."""
    from core.data import Example
    labels = next((c.labels for c in (resp, ctx, refs) if c is not None and c.index is not None), None)
    if labels is not None and all(label == i for i, label in enumerate(labels)):
        labels = None
    unique = labels is not None and len({str(label) for label in labels}) == len(labels)
    exs = []
    for i, response in enumerate(_strings(resp)):
        turns = _texts(ctx.items[i], ctx, i, "turns")
        _require_turns(turns, ctx, i)
        r = [] if refs is None else _texts(refs.items[i], refs, i, "references", allow_missing=True)
        exs.append(Example(id=str(labels[i]) if unique else str(i), system=system, context=turns, response=response,
                           references=r, row=i, label=None if labels is None else labels[i]))
    return exs


@_library_bars_follow_progress
def judge(contexts: Sequence[Sequence[str] | str], replies_a: Sequence[str], replies_b: Sequence[str],
          checkpoint: str | None = None, progress: "Progress | bool | None" = None,
          cache: "ScoreCache | bool | None" = None, judge: "str | Judge" = "pairwise") -> "JudgeOutput":
    """P(a person prefers reply A) for each (context, A, B), both orders combined; ``judge``: the shipped A/B
    judge ('pairwise'), 'llm' (its endpoint from ``$OPENAI_BASE_URL`` and ``$DIALEVAL_LLM_MODEL``) or a judge
    object (``core.judges.llm.LLMJudge(LLMSettings(url=..., model=...))``); ``cache`` as in :func:`score`."""
    from core.engine import check_judge_models, judge_pairs
    from core.scoring import judge_choice
    ctx, a, b = _Column(contexts, "contexts"), _Column(replies_a, "replies_a"), _Column(replies_b, "replies_b")
    _aligned(ctx, a, b)
    turns = [_texts(c, ctx, i, "turns") for i, c in enumerate(ctx.items)]
    for i, t in enumerate(turns):
        _require_turns(t, ctx, i)
    chosen = judge_choice(judge) or "pairwise"
    from core.engine import input_notes
    _warn_notes(_labelled([f"{side}: {note}" for side, replies in (("replies_a", a), ("replies_b", b))
                           for note in input_notes(_examples(replies, ctx, None, side), (), chosen).values()],
                          ctx, a, b))  # blank and long replies, as `dialeval judge` says them
    check_judge_models(list(zip(turns, _strings(a), _strings(b))), chosen, checkpoint)
    return judge_pairs(turns, _strings(a), _strings(b), chosen, checkpoint, _progress(progress), cache)


def _meta_level(level: Any, settings: dict[str, Any]) -> str:
    """``meta_evaluate``'s ``level``: 'turn' or 'system', a number (the intervals' level, put in ``settings``) or a
    pair of one of each, as the command line's repeated ``--level`` takes them; anything else is refused."""
    values = list(level) if isinstance(level, (list, tuple)) else [level]
    words = [v.strip().lower() for v in values if isinstance(v, str)]
    numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if len(words) + len(numbers) != len(values) or len(words) > 1 or len(numbers) > 1 or not values:
        raise ValueError(f"level={level!r}: 'turn' or 'system', an interval level in (0, 1), or one of each "
                         "(level=('system', 0.9))")
    if numbers:
        settings["level"] = float(numbers[0])
    return words[0] if words else "turn"


def _meta_settings(settings: dict[str, Any], call: Callable[..., Any], taken: Sequence[str]) -> None:
    """Refuse a setting ``meta_evaluate`` passes on to ``call`` that ``call`` does not take (``TypeError`` naming
    the ones it does), before anything is scored; ``taken``: ``call``'s parameters that meta_evaluate fills."""
    allowed = [p for p in inspect.signature(call).parameters if p not in taken]
    unknown = [k for k in settings if k not in allowed]
    if unknown:
        dims = " (the human dimension is dims=)" if {"dimension", "dimensions", "dim"} & set(unknown) else ""
        raise TypeError(f"meta_evaluate() got unexpected keyword argument(s) {', '.join(map(repr, unknown))}{dims}; "
                        f"its settings are {', '.join(allowed)}")


def _checked_settings(settings: dict[str, Any], allowed: Sequence[str], what: str) -> None:
    """Refuse, before anything is scored, a setting ``what`` does not take (``TypeError``) and values that give
    no usable interval or p (``core.stats.check_settings``), as the command line refuses them."""
    from core import stats
    from core.settings import SEED
    from core.verdict import LEVEL, N_BOOT, N_PERM
    unknown = [k for k in settings if k not in allowed]
    if unknown:
        raise TypeError(f"{what}() got unexpected keyword argument(s) {', '.join(map(repr, unknown))}; its settings "
                        f"are {', '.join(allowed)}")
    stats.check_settings(settings.get("n_boot", N_BOOT), settings.get("n_perm", N_PERM), settings.get("level", LEVEL),
                         settings.get("seed", SEED))
    if "human" in settings and not isinstance(settings["human"], bool):  # "no" would read as True
        raise TypeError(f"human must be True or False, got {settings['human']!r}")


VERDICT_SETTINGS = ("n_boot", "n_perm", "level", "seed", "human")


def _judge_settings(settings: dict[str, Any]) -> dict[str, Any]:
    """The verdict settings the judge's summary takes too (its intervals' level, the length-controlled rate's
    resamples and seed), so a verdict asked at level 0.9 states the judge at 0.9 as the command line does."""
    return {k: settings[k] for k in ("level", "n_boot", "seed") if k in settings}


def _judge_summary(comp: "Comparison", judge: "str | Judge | None", progress: "Progress | None",
                   cache: "ScoreCache | bool | None", settings: dict[str, Any],
                   checkpoint: str | None = None) -> "JudgeSummary | None":
    """The judge's summary over ``comp`` (``None`` without a judge), its intervals at the verdict's settings."""
    from core.engine import judge_comparison
    from core.verdict import summarize_judge
    if judge is None:
        return None
    return summarize_judge(comp, judge_comparison(comp, judge, checkpoint, progress=progress, cache=cache),
                           people=settings.get("human", True), **_judge_settings(settings))


def _checkpoint_for(judge: "str | Judge | None", checkpoint: str | None) -> str | None:
    """``checkpoint`` checked against the judge it goes with: the learned judge's only, as ``--checkpoint`` is."""
    if checkpoint is not None and judge != "pairwise":
        raise ValueError(f"checkpoint={checkpoint!r} names the learned judge's checkpoint; the judge asked for is "
                         f"{'none' if judge is None else getattr(judge, 'name', judge)}")
    return checkpoint


def _columns(columns: Any) -> "CsvMapping | None":
    """``columns`` as the loader takes them: a ``core.data.CsvMapping``, a dict of its fields (``{"system": "bot",
    "response": "reply", "context": "history"}``, read as ``--columns`` and ``--score-columns`` read them), or None
    (the standard names)."""
    from core.data import FIELD_ALIASES, CsvMapping
    if isinstance(columns, dict):
        columns = {FIELD_ALIASES.get(k, k): v for k, v in columns.items()}  # as --columns reads it
        if isinstance(columns.get("scores"), str):  # 'a,b' as --score-columns takes it: never its letters
            columns["scores"] = [c.strip() for c in columns["scores"].split(",") if c.strip()]
        for required in ("response", "context"):
            if required in columns and not isinstance(columns[required], str):
                raise TypeError(f"columns: {required!r} names the column that holds it (a string), got "
                                f"{columns[required]!r}")
    return _settings_object(columns, CsvMapping, "columns", "core.data")


def _metric_names(metrics: Any) -> Any:
    """``metrics`` as the engine takes them; ``"none"`` (the command line's word) is no metric."""
    return [] if isinstance(metrics, str) and metrics.strip().lower() == "none" else metrics


def _registry_names(metrics: Any) -> list[str]:
    """The registry names :func:`_metric_names`' result stands for: none for an empty list, else the engine's
    parsing (None: the defaults)."""
    from core.engine import parse_metrics
    return [] if isinstance(metrics, (list, tuple)) and not metrics else parse_metrics(metrics)


@_library_bars_follow_progress
def compare_replies(contexts: Sequence[Sequence[str] | str], replies_a: Sequence[str], replies_b: Sequence[str],
                    references: Sequence[Sequence[str] | str] | None = None,
                    metrics: str | Sequence[str] | None = None, judge: "bool | str | Judge" = True,
                    system_a: str = "A", system_b: str = "B", options: "Options | dict | None" = None,
                    progress: "Progress | bool | None" = None, cache: "ScoreCache | bool | None" = None,
                    checkpoint: str | None = None, **settings: Any) -> "Verdict":
    """The verdict on two systems' replies held in memory (no files): ``replies_a[i]`` and ``replies_b[i]``
    answer ``contexts[i]``; arguments as :func:`score` takes them, ``judge``, ``checkpoint`` and ``settings`` as
    :func:`compare`. The same verdict ``compare`` gives for the two files holding these rows without people's
    ratings (replies in memory carry none: for a verdict that reads them, write the rows to files with their
    ``scores`` and use :func:`compare`)."""
    from core.data import align
    from core.engine import check_judge_models, input_notes, score_comparison
    from core.scoring import judge_choice
    from core.verdict import build_verdict, check_something_to_compare
    _checked_settings(settings, VERDICT_SETTINGS, "compare_replies")
    judge = judge_choice(judge)
    checkpoint = _checkpoint_for(judge, checkpoint)
    metrics = _metric_names(metrics)
    for arg, name in (("system_a", system_a), ("system_b", system_b)):
        if not isinstance(name, str) or not name.strip():
            raise (ValueError if isinstance(name, str) else TypeError)(
                f"{arg} is the system's name, a non-blank string; got {name!r}")
    if system_a == system_b:
        raise ValueError(f"system_a and system_b are both {system_a!r}: give the two systems different names")
    ctx, a, b = _Column(contexts, "contexts"), _Column(replies_a, "replies_a"), _Column(replies_b, "replies_b")
    refs = None if references is None else _Column(references, "references")
    _aligned(ctx, a, b, refs)
    if not ctx.items:  # as the command line refuses an empty file
        raise ValueError("contexts, replies_a and replies_b are empty: there is nothing to compare")
    names = _registry_names(metrics)
    comp = align(_examples(a, ctx, refs, system_a), _examples(b, ctx, refs, system_b), system_a, system_b)
    check_something_to_compare(comp, names, judge is not None, settings.get("human", True))
    by_side = {side: input_notes(rows, names, judged=judge or False) for side, rows in (("replies_a", comp.a),
                                                                                           ("replies_b", comp.b))}
    shared = ("no reference", "blank reference")  # of the references both sides share: said once
    _warn_notes(_labelled([f"{side}: {note}" for side, notes in by_side.items() for kind, note in notes.items()
                           if kind not in shared]
                          + [f"references: {note}" for kind, note in by_side["replies_a"].items() if kind in shared],
                          ctx, a, b, refs))
    if judge is not None:
        check_judge_models(comp, judge, checkpoint)
    progress = _progress(progress)
    cs = score_comparison(comp, names, _options(options, names), progress, cache)
    return build_verdict(comp, cs, _judge_summary(comp, judge, progress, cache, settings, checkpoint), **settings)


@_library_bars_follow_progress
def compare(input_a: str, input_b: str | None = None, system_a: str | None = None, system_b: str | None = None,
            metrics: str | Sequence[str] | None = None, judge: "bool | str | Judge" = True,
            options: "Options | None" = None, progress: "Progress | bool | None" = None,
            cache: "ScoreCache | bool | None" = None, checkpoint: str | None = None,
            columns: "CsvMapping | dict | None" = None, **settings: Any) -> "Verdict":
    """The verdict on two systems: two files (one system each) or one multi-system file with two chosen;
    ``judge``: ``True`` the learned judge, ``False`` none, a judge's name ('llm') or a judge object;
    ``checkpoint``: the learned judge's (a judge re-fitted on votes; shown beside the verdict, not deciding it);
    ``settings`` go to ``core.verdict.build_verdict`` (``n_boot``, ``n_perm``, ``level``, ``seed``, ``human``);
    ``cache`` as in :func:`score`; ``columns``: a CSV's column mapping (``--columns``: ``{"system": "bot",
    "response": "reply", "context": "history"}`` or a ``core.data.CsvMapping``)."""
    return _compared(input_a, input_b, system_a, system_b, metrics, judge, options, progress, cache, checkpoint,
                     settings, "compare", columns)[2]


def _compared(input_a: Any, input_b: Any, system_a: str | None, system_b: str | None, metrics: Any, judge: Any,
              options: Any, progress: Any, cache: Any, checkpoint: str | None, settings: dict[str, Any],
              what: str, columns: Any = None, check_loaded: "Callable[[Comparison], None] | None" = None
              ) -> "tuple[Comparison, ComparisonScores, Verdict]":
    """:func:`compare`'s work: the comparison loaded, scored and judged, and its verdict (``what``: the API
    function asked, for its messages; ``check_loaded``: a check of the loaded comparison before it is scored)."""
    import os
    from core.data import load_comparison
    from core.engine import blank_text_notes, check_judge_models, score_comparison
    from core.scoring import judge_choice
    from core.verdict import alignment_warning, build_verdict, check_something_to_compare, mismatch_words
    for name, path in (("input_a", input_a), ("input_b", input_b)):
        if path is not None and not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"{name} is a file's path, got {type(path).__name__}; for replies held in memory use "
                            "core.compare_replies(contexts, replies_a, replies_b, ...)"
                            + (", and core.gating.gate_verdict(that verdict, ...) to gate it" if what == "gate" else ""))
    _checked_settings(settings, VERDICT_SETTINGS, what)
    judge = judge_choice(judge)
    checkpoint = _checkpoint_for(judge, checkpoint)
    metrics = _metric_names(metrics)
    comp = load_comparison(str(input_a), None if input_b is None else str(input_b), system_a, system_b,
                           csv_mapping=_columns(columns))
    comp.require_pairs()  # no row of one side pairs with a row of the other: said, as the command says it
    if check_loaded is not None:
        check_loaded(comp)
    _warn_notes([mismatch_words(comp)] if comp.context_mismatches() else [])
    _warn_notes([alignment_warning(comp)] if comp.alignment_note else [])  # rows not paired as their ids say
    if isinstance(metrics, (list, tuple)):  # None: the default metrics
        check_something_to_compare(comp, metrics, judge is not None, settings.get("human", True))
    _warn_notes(blank_text_notes(comp.examples(), _registry_names(metrics), judged=judge or False))
    if judge is not None:
        check_judge_models(comp, judge, checkpoint)
    progress = _progress(progress)
    cs = score_comparison(comp, metrics, _options(options, _registry_names(metrics)), progress, cache)
    verdict = build_verdict(comp, cs, _judge_summary(comp, judge, progress, cache, settings, checkpoint), **settings)
    if verdict.unmatched:  # as the command's head says it: a side that skipped inputs is not only in an attribute
        from core.report import unmatched_words
        _warn_notes([unmatched_words(verdict, "the verdict's unmatched lists them")])
    return comp, cs, verdict


@_library_bars_follow_progress
def gate(input_a: str, input_b: str | None = None, system_a: str | None = None, system_b: str | None = None,
         by: str | Sequence[str] | None = None, require: str = "not-worse", margin: float | None = None,
         metrics: str | Sequence[str] | None = None, judge: "bool | str | Judge" = True,
         options: "Options | None" = None, progress: "Progress | bool | None" = None,
         cache: "ScoreCache | bool | None" = None, checkpoint: str | None = None,
         columns: "CsvMapping | dict | None" = None, **settings: Any) -> "GateResult":
    """``dialeval gate`` in Python: is the candidate (``input_b``, or ``system_b`` of one file) not worse than the
    baseline? A ``core.gating.GateResult``: ``passed`` (the result is truthy when it passed, so ``assert
    core.gate(...)`` gates a test), its checks and the verdict; ``render()`` gives what the command prints,
    ``to_dict()`` its JSON. ``by``: criteria ('judge', 'combined', a metric among ``metrics``, 'human:DIM'; a string
    may list several, comma-separated; default: what the verdict decides on); ``require``: 'not-worse',
    'non-inferior' (with ``margin``) or 'better'; the rest as :func:`compare` takes them."""
    from core.gating import (REQUIREMENTS, check_one_margin, criterion_name, file_order_note, gate_comparison,
                             human_criterion, is_combined, missing_dimension, unchanged_candidate_note,
                             unreadable_criterion, untrusted_criteria_notes)
    from core.registry import UnknownName
    from core.scoring import judge_choice
    if require not in REQUIREMENTS:
        raise ValueError(f"require={require!r}: choose one of {', '.join(REQUIREMENTS)}")
    if margin is not None and not (isinstance(margin, (int, float)) and not isinstance(margin, bool)
                                   and 0 <= margin < math.inf):
        raise ValueError(f"margin={margin!r}: a finite number >= 0 in the criterion's units, or None for its default")
    if margin is not None and require != "non-inferior":  # as the command says of --margin
        _warn_notes([f"margin={margin:g} has no effect: it is the non-inferiority margin, read only with "
                     f"require='non-inferior' (this gate requires {require})"])
    if by is not None and not isinstance(by, str) and not (isinstance(by, (list, tuple))
                                                           and all(isinstance(b, str) for b in by)):
        raise TypeError(f"by={by!r}: a criterion's name ('judge', 'combined', a metric, 'human:DIM'), several "
                        "comma-separated, or a list of them")
    chosen = judge_choice(judge)
    measured = chosen == "pairwise" and checkpoint is None
    scored = _registry_names(_metric_names(metrics))
    names = []
    for name in ([b.strip() for b in by.split(",") if b.strip()] if isinstance(by, str) else list(by or [])):
        try:  # a criterion nothing here computes is said before anything is scored, as the command says it
            name = criterion_name(name, chosen is not None, settings.get("human", True))
            why = unreadable_criterion(name, scored, measured)
        except (UnknownName, ValueError) as e:
            raise ValueError(f"by={name!r}: {e}") from None
        if why is not None:
            raise ValueError(f"by={name!r}: {why}" + ("" if is_combined(name) else "; add it to metrics="))
        names.append(name)
    check_one_margin(names, require, margin, "margin=")
    _warn_notes(untrusted_criteria_notes(names, measured, "by="))

    def dimensions_there(comp: "Comparison") -> None:
        for name in names:
            why = missing_dimension(name, comp)
            if why:
                raise ValueError(f"by={name!r}: {why}")
        names[:] = dict.fromkeys(human_criterion(name, comp) for name in names)  # human:overall as spelt there
        if input_b is None and not system_a and not system_b:  # which is which decides PASS or FAIL
            _warn_notes([file_order_note(comp, "system_a= and system_b=")])
    comp, cs, verdict = _compared(input_a, input_b, system_a, system_b, metrics, judge, options, progress, cache,
                                  checkpoint, settings, "gate", columns, dimensions_there)
    result = gate_comparison(comp, {m: list(cs.a(m)) for m in cs.metrics}, verdict,
                             list(dict.fromkeys(names)) or None, require, margin)
    unchanged = unchanged_candidate_note(verdict, require, result.passed, "require='better'")
    if unchanged:
        _warn_notes([unchanged])
    return result


def _paths(inputs: Sequence[Any], what: str) -> list[str]:
    import os
    if not inputs:
        raise TypeError(f"{what} needs one or more files' paths")
    for i, path in enumerate(inputs):
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"{what}: input {i} is a file's path, got {type(path).__name__}")
    return [str(p) for p in inputs]


@_library_bars_follow_progress
def rank(*inputs: str, systems: Sequence[str] | None = None, metrics: str | Sequence[str] | None = None,
         judge: "bool | str | Judge" = True, options: "Options | dict | None" = None,
         progress: "Progress | bool | None" = None, cache: "ScoreCache | bool | None" = None,
         checkpoint: str | None = None, columns: "CsvMapping | dict | None" = None, **settings: Any) -> "Leaderboard":
    """``dialeval leaderboard`` in Python: the systems of one multi-system file, or of several files, ranked on
    the contexts they all answered (``core.leaderboard``: people's ratings, metrics, the judge's Bradley-Terry
    ratings, every pair Holm-adjusted). ``metrics=[]``: people's ratings and/or the judge alone; ``settings``:
    ``n_boot``, ``n_perm``, ``level``, ``seed``, ``rank_by`` (``auto``, ``combined``, ``judge``, a metric,
    ``human:DIM``), ``human`` (False: people's ratings left out, as ``--no-human``); ``cache``, ``checkpoint`` and
    ``columns`` as in :func:`compare`.
    ``board.render("markdown")`` prints it as the command line does."""
    from core.data import load_file, rows_of_files
    from core.engine import blank_text_notes
    from core.leaderboard import leaderboard
    from core.scoring import judge_choice
    paths = _paths(inputs, "rank")
    _checked_settings(settings, ("n_boot", "n_perm", "level", "seed", "rank_by", "human"), "rank")
    checkpoint = _checkpoint_for(judge_choice(judge), checkpoint)
    if isinstance(systems, str):
        raise TypeError(f"systems is a list of names, got the string {systems!r} (for one name: [{systems!r}])")
    metrics = _metric_names(metrics)
    mapping = _columns(columns)
    examples = rows_of_files([(path, load_file(path, csv_mapping=mapping)) for path in paths])
    _warn_notes(blank_text_notes([e for e in examples if systems is None or e.system in systems],
                                 _registry_names(metrics), judged=judge_choice(judge) or False))
    board = leaderboard(examples, metrics, judge, systems, _options(options, _registry_names(metrics)),
                        _progress(progress), cache, checkpoint, **settings)
    _warn_notes([board.holm_floor()] if board.holm_floor() else [])  # every pair ties whatever the data: said
    return board


@_library_bars_follow_progress
def meta_evaluate(*inputs: str, metrics: str | Sequence[str] | None = None, dims: Sequence[str] | None = None,
                  options: "Options | dict | None" = None, level: "str | float" = "turn", judge: bool = True,
                  columns: "CsvMapping | dict | None" = None, **settings: Any) -> list[dict[str, Any]]:
    """``dialeval meta-eval`` in Python: each metric's correlation with every human dimension of every rated
    file (one row dict per metric, data set, dimension and level; ``core.meta_eval.meta_evaluate``, whose
    keyword arguments ``settings`` takes: ``n_boot``, ``level``, ``seed``, ``methods``, ``max_rows``,
    ``held_out``, ``keep_reference_copies``, ...). ``metrics`` defaults to the default metrics, as everywhere. It
    scores every row afresh, as ``dialeval meta-eval`` does: the score cache is not used (so it takes no
    ``cache``).

    ``level="system"`` (``dialeval meta-eval --level system``): for every pair of systems of a file that answered
    shared contexts, how often each metric, the judge (``judge=False`` leaves it out) and the one-line verdict
    name the system people prefer: one row dict per data set and signal, and per signal over all files
    (``core.system_eval.summarize``); ``dims``: the one human dimension people's side is read on (default: each
    set's overall-like one; a file without it is skipped); ``settings`` as ``core.system_eval.evaluate_dataset``
    takes them (``dimension`` excepted: ``dims`` names it). A string for ``dims`` or ``methods`` is read as
    the command line reads it ('overall' or 'overall,fluency'). Unlike
    the turn level it reads the score cache. A number for ``level`` is the intervals' level (as on the command
    line, where ``--level`` takes either); both at once as a pair, ``level=("system", 0.9)``, as ``--level system
    --level 0.9``. ``columns``: a CSV's column mapping, as :func:`compare` takes it (``--columns``,
    ``--score-columns``). Rows are plain JSON data, as ``--format json`` writes them: a number that does not exist is
    None."""
    from core.formatting import clean_json
    level = _meta_level(level, settings)
    if not isinstance(judge, bool):  # 'no' is truthy: it ran the judge
        raise TypeError(f"judge={judge!r}: True (the learned judge, as measured) or False")
    if "progress" in settings:  # True: a bar on stderr, as everywhere
        settings["progress"] = _progress(settings["progress"])
    if isinstance(dims, str):  # 'overall' or 'overall,fluency', as --dimension takes them: never its letters
        dims = [d.strip() for d in dims.split(",") if d.strip()]
    if isinstance(settings.get("methods"), str):
        settings["methods"] = [m.strip() for m in settings["methods"].split(",") if m.strip()]
    from core.engine import DEFAULT_METRICS, parse_metrics
    from core.meta_eval import group_datasets, meta_evaluate as evaluate
    if level == "system":
        from core.data import dimensions
        from core.system_eval import (policy_combinations, summarize, system_level, undecidable_verdict_note,
                                      with_verdict, without_undecided_verdict)
        from core.verdict_policy import shipped_policy
        if dims is not None and len(dims) != 1:
            raise ValueError(f"dims={dims!r}: level='system' reads people's side on one dimension")
        data = group_datasets(_paths(inputs, "meta_evaluate"), csv_mapping=_columns(columns))
        have = {d.casefold() for exs in data.values() for d in dimensions(exs)}
        if dims and dims[0].casefold() not in have:
            raise ValueError(f"dims={dims!r}: no file has that human dimension; they have "
                             f"{sorted({d for exs in data.values() for d in dimensions(exs)})}")
        from core.system_eval import evaluate_dataset
        _meta_settings(settings, evaluate_dataset, ("name", "examples", "metrics", "judge", "options", "combine",
                                                    "dimension"))
        names = parse_metrics(DEFAULT_METRICS if metrics is None else metrics)
        undecided = undecidable_verdict_note([*names, *(["judge"] if judge else [])], shipped_policy().policy)
        _warn_notes([undecided] if undecided else [])
        said: list[str] = []  # what the command says on stderr (a set skipped, rows left out): warned
        pairs = system_level(data, names, judge, options=_options(options, names),
                             combine=policy_combinations(shipped_policy().policy),
                             dimension=dims[0] if dims else None, **{"warn": said.append, **settings})
        _warn_notes(said)
        from core.settings import SEED
        from core.stats import LEVEL, N_BOOT, N_PERM
        from core.system_eval import with_settings
        rows = summarize(with_verdict(pairs, shipped_policy().policy, settings.get("level", LEVEL)))
        return clean_json(with_settings(without_undecided_verdict(rows) if undecided else rows,
                                        settings.get("level", LEVEL), settings.get("n_boot", N_BOOT),
                                        settings.get("n_perm", N_PERM), settings.get("seed", SEED)))
    if level != "turn":
        raise ValueError(f"level={level!r}: 'turn' (correlations per row) or 'system' (system pairs)")
    from core.meta_eval import input_notes
    _meta_settings(settings, evaluate, ("data", "metrics", "dims", "options"))
    names = parse_metrics(DEFAULT_METRICS if metrics is None else metrics)
    data = group_datasets(_paths(inputs, "meta_evaluate"), csv_mapping=_columns(columns))
    from core.data import dimensions
    from core.meta_eval import missing_dimensions
    rated = any(dimensions(exs) for exs in data.values())  # none rated: the error below says so
    why = missing_dimensions(data, dims) if dims and rated else None
    if why:  # as the command refuses a --dimension the data lacks: a named one missing is refused, not skipped
        raise ValueError(f"dims={list(dims)!r}: {why}")
    _warn_notes(input_notes(data, names, **{k: settings[k] for k in ("max_rows", "seed", "keep_reference_copies")
                                            if k in settings}))
    said: list[str] = []  # what the command says on stderr (too few systems for a system-level row): warned
    rows = evaluate(data, names, dims, options=_options(options, names), **{"warn": said.append, **settings})
    _warn_notes(said)
    if not rows:  # as the command line says it, not an empty list (a dimension the data lacks is refused above)
        from core.meta_eval import NO_HUMAN_SCORES
        raise ValueError(f"nothing to correlate: {NO_HUMAN_SCORES}"
                         + "; or every rated row repeats its reference (keep_reference_copies=True keeps them)")
    return clean_json(rows)
