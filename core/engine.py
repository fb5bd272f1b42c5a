"""The only code that runs metrics and judges: every surface (CLI, Python API, dashboard, meta-evaluation,
training of CRS weights) scores through :func:`score_examples` and judges through :func:`judge_pairs`.

- Metrics come from the registry (``core.scoring.get_metric``) built with one :class:`~core.scoring.Options`
  object; each metric receives exactly the options it declares, nested parts included.
- A metric built from other metrics (:class:`~core.scoring.CompositeMetric`) has its parts scored once per
  run and shared: asking for ``ubleu`` and ``ruber_ubleu`` together runs υBLEU once.
- A comparison is scored as one list (system A's rows, then system B's); no metric's score depends on what
  else is in the list (fixed normalization constants, fixed-shape batches), so scoring a file alone or
  beside any partner gives the same per-row numbers.
- **Blank text never scores 0.** A blank (empty or whitespace-only) reference is not a reference: metrics
  never see it. A row whose response is blank scores null (NaN) on every metric, and a row left without a
  reference scores null on the metrics that need one; :attr:`ScoreTable.flags` says why per row and
  :func:`blank_text_notes` gives the counts the CLI prints on stderr. The judge still compares a blank reply
  (saying nothing is a reply a person can prefer or not).
- **How long.** Every run teaches this process's paces (``core.time_estimates``), and :func:`estimate_work` says
  what a comparison still has to compute (rows the score cache lacks, pairs not judged) and about how long it
  should take; every surface asks it rather than reading a model's memory.
"""
from __future__ import annotations

import hashlib
import math
import re
from time import perf_counter
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from core.cache import ScoreCache, judge_namespace, pair_key, resolve_cache, row_key
from core.data import NO_RATING_TEXTS, Comparison, Example, look_alike
from core.formatting import fmt_list
from core.models.device import active_device, device_key, use_device
from core.models.encoders import MissingModelError, check_models
from core.progress import Progress
from core.registry import UnknownName
from core import time_estimates
from core.scoring import (JUDGES, METRICS, CompositeMetric, Judge, JudgeOutput, Metric, MetricResult, Options,
                          available_metrics, get_metric, judge_class, judge_instance, metric_class)
from core.version import __version__

DEFAULT_METRICS = ("bleu", "ubleu", "bert_ruber", "mme")
"""The default metrics on every surface: the best-correlated ones of benchmarks/RESULTS.md (plus plain BLEU)."""

RENAMED_METRICS = {"mme_pm_mean": ("mme_pm_evidence", "on 2026-11-26, another statistic: docs/mme.md, \"PM-evidence\"")}
"""Metric names that existed and were replaced, old name -> (new name, when and why): asking for the old name
(in any case) is refused with the new one named; the dashboard reads an old address with the new name."""


def renamed_metric(name: str) -> str | None:
    """The metric that replaced ``name`` (case ignored), or None if ``name`` was never renamed."""
    new = RENAMED_METRICS.get(name.casefold())
    return new[0] if new else None


def parse_metrics(spec: str | Sequence[str] | None) -> list[str]:
    """'bleu,ubleu' or ['bleu', 'ubleu'] -> names, validated against the registry (case ignored: 'BLEU' is
    bleu); ``None`` -> the defaults, 'all' -> every metric. An empty list is an error, not a run with nothing
    to score; an unknown name is named with the closest known ones."""
    import difflib
    if spec is None:
        return list(DEFAULT_METRICS)
    if not isinstance(spec, str) and (not isinstance(spec, (list, tuple)) or
                                      not all(isinstance(s, str) for s in spec)):
        raise TypeError(f"metrics must be a string such as 'bleu,ubleu' or a list of names, got "
                        f"{type(spec).__name__} {spec!r:.40}")
    names = [s.strip() for s in (spec.split(",") if isinstance(spec, str) else spec) if s and s.strip()]
    if not names:
        raise ValueError("no metric named; give one or more of: " + ", ".join(available_metrics()))
    known = available_metrics()
    by_fold = {k.casefold(): k for k in known}
    names = [by_fold.get(n.casefold(), n) if n.casefold() != "all" else "all" for n in names]
    if "all" in names:
        return list(known)
    bad = [n for n in names if n not in known]
    if bad:
        hints = [f"{n!r} (renamed {' '.join(RENAMED_METRICS[n.casefold()])})" if renamed_metric(n) else
                 f"{n!r} (did you mean {' or '.join(close)}?)" if (close := difflib.get_close_matches(n, known, 2, 0.6))
                 else repr(n) for n in bad]
        raise UnknownName(f"unknown metric(s) {', '.join(hints)}; available: {', '.join(known)}")
    return list(dict.fromkeys(names))


BLANK_RESPONSE = "blank response"
NO_REFERENCE = "no reference"
BLANK_REFERENCE = "blank reference ignored"


def needs_references(metric: str) -> bool:
    """Whether the registered metric ``metric`` scores only rows with a reference (False for unknown names)."""
    return metric in METRICS and metric_class(metric).needs_references


def reads_references(metric: str) -> bool:
    """Whether a row's reference moves the registered metric's score (it needs one, or uses one when there)."""
    return metric in METRICS and (metric_class(metric).needs_references or metric_class(metric).reads_references)


INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff"))  # zero-width characters


def is_blank(text: str) -> bool:
    """Nothing to read: empty, white space, or only zero-width characters (a reply of one U+200B was scored)."""
    return not text.translate(INVISIBLE).strip()


def usable_references(ex: Example) -> list[str]:
    """The references a metric sees: every non-blank one."""
    return [r for r in ex.references if not is_blank(r)]


def as_scored(examples: Sequence[Example]) -> list[Example]:
    """The examples as metrics see them: blank references removed (the same object where none is blank)."""
    out = []
    for ex in examples:
        refs = usable_references(ex)
        out.append(ex if len(refs) == len(ex.references) else replace(ex, references=refs))
    return out


def row_flags(ex: Example, reference_needed: bool) -> list[str]:
    """Why a row's scores are null or its input was changed: ``BLANK_RESPONSE`` (every metric null),
    ``NO_REFERENCE`` (``reference_needed``: a chosen metric needs one), ``BLANK_REFERENCE``."""
    flags = [BLANK_RESPONSE] if is_blank(ex.response) else []
    refs = usable_references(ex)
    if reference_needed and not refs:
        flags.append(NO_REFERENCE)
    if len(refs) != len(ex.references) and refs:
        flags.append(BLANK_REFERENCE)
    return flags


def is_reference_copy(ex: Example) -> bool:
    """The response equals one of the example's references (case, punctuation and spacing ignored): a
    referenced metric scores it as a perfect match whatever people think of it (``dialeval meta-eval`` leaves
    such rows out)."""
    from core.models.retrieval import normalize
    r = normalize(ex.response)
    return bool(r) and any(normalize(ref) == r for ref in ex.references)


class BlankTextCount:
    """The blank text of rows seen one at a time (:meth:`add`): per kind, how many rows and where the first
    :attr:`SHOWN` are, without holding the rows (``dialeval score`` counts a file of any size while it is
    checked). :meth:`notes` gives :func:`blank_text_notes`' lines."""

    SHOWN = 8
    KINDS = ("blank response", "no reference", "blank reference", "reference copy", "missing-value text",
             "unspaced script", "not latin", "turn marker", "repeated row")
    # (and "longer than N" per reading limit)
    # a reply that stands for a missing value: a text pandas reads as NA (``core.data.NO_RATING_TEXTS``, which is
    # what spreadsheets and databases export for one) but the blank one (counted as a blank response), and the
    # "nan" pandas writes for a missing value (``astype(str)``)
    MISSING_TEXTS = (NO_RATING_TEXTS - {""}) | {"nan", "NaN"}
    # four or more letters running without a space in a script written so (Han, kana, Thai, Lao, Khmer, Burmese),
    # its full-width punctuation inside the run ("我很好，谢谢你！" is one token to 13a); Korean is written with
    # spaces, and a Japanese word inside an English sentence tokenizes fine
    UNSPACED_LETTER = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff"
    UNSPACED = re.compile(f"(?:[{UNSPACED_LETTER}][\u3001-\u303f\uff00-\uffef]*){{4,}}")
    TURN_MARKER = "__eou__"  # DailyDialog's end-of-utterance mark: turns joined by it are one turn here
    UNSPACED_ONE = re.compile(f"[{UNSPACED_LETTER}]")
    LONG_WORD = 8  # characters of a word without spaces that count as one more word against the reading limits
    LETTER = re.compile(r"[^\W\d_]")
    LATIN_LETTER = re.compile("[A-Za-z\u00c0-\u024f\u1e00-\u1eff]")

    @classmethod
    def not_latin(cls, text: str) -> bool:
        """A reply that is not blank and has neither a letter nor a digit (emoji alone; plain ASCII such as "?" or
        "42" is read as it is), or whose letters are mostly of a script other than Latin (Arabic, Cyrillic,
        Devanagari, Hangul, Han, ...): text the English-trained models here read as noise."""
        if text.isascii() or is_blank(text):  # (most replies: nothing to look at; a blank one is said as blank)
            return False
        letters = len(cls.LETTER.findall(text))
        if letters == 0:
            return not any(c.isdigit() for c in text)
        return 2 * len(cls.LATIN_LETTER.findall(text)) < letters

    def __init__(self) -> None:
        self.rows = 0
        self.limits = reading_limits()
        kinds = [*self.KINDS, *(f"longer than {words}" for words in self.limits)]
        self.counts = dict.fromkeys(kinds, 0)
        self.shown: dict[str, list[str]] = {kind: [] for kind in kinds}
        self.copies: dict[str, list[int]] = {}  # per system: [its rows that copy their reference, its rows]
        self.misnamed: dict[tuple[str, str], list[Any]] = {}  # (key, the field it likely means) -> [rows, first rows]
        self.seen_rows: set[int] = set()  # an 8-byte digest of each row without an id

    def add(self, ex: Example) -> None:
        """Count one row: a blank response, no usable reference, a blank reference beside usable ones, a
        response longer than a metric's or the judge's models read (each of :func:`reading_limits`), a
        response that copies its reference (:func:`is_reference_copy`, counted per system), a context turn holding
        DailyDialog's turn mark."""
        self.rows += 1
        usable = usable_references(ex)
        copy = is_reference_copy(ex)
        per = self.copies.setdefault(ex.system, [0, 0])
        per[0] += copy
        per[1] += 1
        for key, meant in ex.misnamed:
            seen = self.misnamed.setdefault((key, meant), [0, []])
            seen[0] += 1
            if len(seen[1]) < self.SHOWN:
                seen[1].append(ex.location)
        words = self.reading_words(ex.response)
        for kind, found in (("blank response", is_blank(ex.response)), ("no reference", not usable),
                            ("blank reference", bool(usable) and len(usable) != len(ex.references)),
                            ("reference copy", copy), ("missing-value text", ex.response.strip() in self.MISSING_TEXTS),
                            ("unspaced script", bool(self.UNSPACED.search(ex.response))),
                            ("not latin", self.not_latin(ex.response)),
                            ("repeated row", self.repeats(ex)),
                            ("turn marker", any(self.TURN_MARKER in t.strip().removesuffix(self.TURN_MARKER)
                                                for t in ex.context)),  # one that only ends a turn joins nothing
                            *((f"longer than {limit}", words > limit) for limit in self.limits)):
            if found:
                self.counts[kind] += 1
                if len(self.shown[kind]) < self.SHOWN:
                    self.shown[kind].append(ex.location)

    def repeats(self, ex: Example) -> bool:
        """Whether a row without an id repeats an earlier one of its system word for word (context, reply and
        references): a copy pasted twice, which counts twice where an id would have been refused as a duplicate.
        Rows with ids are left to that check (two ids may well hold the same text)."""
        if ex.has_id:
            return False
        text = "\x00".join([ex.system, "\x01".join(ex.context), ex.response, "\x01".join(ex.references)])
        key = int.from_bytes(hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little")
        if key in self.seen_rows:
            return True
        self.seen_rows.add(key)
        return False

    @classmethod
    def reading_words(cls, text: str) -> int:
        """A reply's length in words as the reading limits count it: words between spaces, a word of more than
        :attr:`LONG_WORD` characters as one per :attr:`LONG_WORD` of them, and each letter of a script written
        without spaces as one (a 300-character Chinese reply, or 'thanks,thanks,...' without a space, is not one
        word: a tokenizer makes a piece or more of each). On English replies nearly the same as splitting at spaces
        (a word of 16 characters or more, such as a URL, counts as two or more)."""
        n = 0
        for word in text.split():
            letters = len(cls.UNSPACED_ONE.findall(word))
            rest = len(word) - letters
            n += letters + (max(1, rest // cls.LONG_WORD) if rest else 0)
        return n

    def where(self, kind: str) -> str:
        """The first rows of ``kind`` by location, and how many more."""
        more = self.counts[kind] - len(self.shown[kind])
        return ", ".join(self.shown[kind]) + (f" and {more} more" if more > 0 else "")

    def notes(self, metrics: Sequence[str] = (), judged: "bool | str | Judge" = False) -> list[str]:
        """One line per kind found, with its count and rows, saying what it does to the scores of
        ``metrics`` (registry names) and the judge (``judged``: ``True`` the learned judge, or which judge)."""
        return list(self.notes_by_kind(metrics, judged).values())

    def notes_by_kind(self, metrics: Sequence[str] = (), judged: "bool | str | Judge" = False) -> dict[str, str]:
        """:meth:`notes` keyed by their kind (:attr:`KINDS`), for a page that shows some more prominently."""
        needing = [m for m in metrics if needs_references(m)]
        n = self.rows
        notes: dict[str, str] = {}
        if self.counts["blank response"]:
            what = []
            if metrics:
                what.append("every metric is null for them (not 0)")
            if judged:
                what.append("the judge still compares them")
            notes["blank response"] = (f"{self.counts['blank response']} of {n} rows have a blank response "
                                       f"({self.where('blank response')})" + (": " + "; ".join(what) if what else ""))
        if needing and self.counts["no reference"]:
            notes["no reference"] = (f"{self.counts['no reference']} of {n} rows have no reference "
                                     f"({self.where('no reference')}): {', '.join(needing)} "
                                     f"{'is' if len(needing) == 1 else 'are'} null for them")
        if self.counts["repeated row"]:
            notes["repeated row"] = (
                f"{self.counts['repeated row']} of {n} rows repeat an earlier row of their system word for word "
                f"(context, reply and references; {self.where('repeated row')}): each copy counts as a row of its "
                "own (a pair of its own, or an unmatched row); delete the copies if they are not meant (or give rows "
                "ids)")
        if self.counts["turn marker"]:
            notes["turn marker"] = (
                f"{self.counts['turn marker']} of {n} rows have '{self.TURN_MARKER}' inside a context turn "
                f"({self.where('turn marker')}): DailyDialog's turn mark is read as text, so the turns it joins are "
                "one turn to every metric and the judge; give the context as a list of turns (or one turn a line)")
        if self.counts["missing-value text"]:
            notes["missing-value text"] = (
                f"{self.counts['missing-value text']} of {n} rows reply with a text that stands for a missing value "
                f"in pandas or a spreadsheet ('nan', '<NA>', 'N/A', 'NULL', 'None', ...; "
                f"{self.where('missing-value text')}): it is scored as a reply; if it is a missing value, leave those "
                "cells empty (a blank reply is null on every metric)")
        splitters: dict[str, list[str]] = {}  # how a metric splits words -> the metrics that split so
        for m in metrics:
            how = metric_class(m).splits_words if m in METRICS else None
            if how:
                splitters.setdefault(how, []).append(m)
        if splitters and self.counts["unspaced script"]:
            notes["unspaced script"] = (
                f"{self.counts['unspaced script']} of {n} rows reply in a script written without spaces (Chinese, "
                f"Japanese, Thai, Lao, Khmer, Burmese; {self.where('unspaced script')}): "
                + "; ".join(f"{', '.join(ms)} split{'s' * (len(ms) == 1)} words {how}" for how, ms in splitters.items())
                + ", so a sentence there is one word and matches only whole")
        if (metrics or judged) and self.counts["not latin"]:
            notes["not latin"] = (
                f"{self.counts['not latin']} of {n} rows reply mostly in a script other than Latin, or with no letter "
                f"at all (emoji alone; {self.where('not latin')}): every model here (MiniLM, SmolLM2, and so "
                "the judge) was trained on English, so their scores of those replies say little")
        alike: dict[str, list[str]] = {}
        for system in self.copies:
            alike.setdefault(look_alike(system), []).append(system)
        if any(len(names) > 1 for names in alike.values()):
            notes["look-alike systems"] = "; ".join(
                f"systems {fmt_list([ascii(s) for s in names])} (as Python writes them, so the difference shows) "
                "differ only in case, spaces or how an accent is encoded: they are different systems here (give "
                "them one name if they are one)"
                for names in alike.values() if len(names) > 1)
        if self.misnamed:
            notes["misnamed field"] = "; ".join(
                f"{k} of {n} rows have a field {key!r} that dialeval does not read (did you mean {meant!r}?; "
                f"{', '.join(first)}{f' and {k - len(first)} more' if k > len(first) else ''}): it is not read as "
                "that field" for (key, meant), (k, first) in self.misnamed.items())
        if self.counts["blank reference"]:
            notes["blank reference"] = (f"{self.counts['blank reference']} of {n} rows have a blank reference beside "
                                        f"others ({self.where('blank reference')}): the blank one is ignored")
        readers: dict[tuple[int, str], list[str]] = {}  # (words, its units) -> the metrics (and judge) reading so much
        for m in metrics:
            limit = metric_class(m).reads_response if m in METRICS else None
            if limit is not None:
                readers.setdefault(limit, []).append(m)
        judge_reads = _judge_class("pairwise" if judged is True else judged).reads_response if judged else None
        if judge_reads is not None:
            readers.setdefault(judge_reads, []).append("the judge")
        long = []
        for words in sorted({w for w, _ in readers}):
            kind = f"longer than {words}"
            if self.counts.get(kind):
                who = [f"{', '.join(names)} read{'s' * (len(names) == 1)} a reply's first {units}"
                       for (w, units), names in sorted(readers.items()) if w == words]
                long.append(f"{self.counts[kind]} of {n} rows have a response of more than {words} words "
                            f"({self.where(kind)}): {', '.join(who)} (about {words} words), not the rest")
        if long:
            notes["long response"] = "; ".join(long)
        referenced = [m for m in metrics if reads_references(m)]
        if referenced and self.counts["reference copy"]:
            systems = ", ".join(f"{s}: {k} of {m}" for s, (k, m) in self.copies.items() if k)
            notes["reference copy"] = (
                f"{self.counts['reference copy']} of {n} rows reply with their own reference ({systems}; "
                f"{self.where('reference copy')}): {', '.join(referenced)} score{'s' * (len(referenced) == 1)} them "
                "as a (near) perfect match whatever people think of them, so a system of references wins on "
                f"referenced metrics by construction{META_EVAL_LEAVES_COPIES}")
        return notes


META_EVAL_LEAVES_COPIES = (" (meta-eval leaves such rows out unless --keep-reference-copies, "
                           "keep_reference_copies=True in Python)")  # the reference-copy note's end, for a page to reword


def reading_limits() -> list[int]:
    """The response lengths in words beyond which some registered metric or judge stops reading
    (``Metric.reads_response``, ``Judge.reads_response``), smallest first."""
    classes = [cls for _, cls in METRICS.items()] + [cls for _, cls in JUDGES.items()]
    return sorted({cls.reads_response[0] for cls in classes if cls.reads_response is not None})


def input_notes(examples: Iterable[Example], metrics: Sequence[str] = (),
                judged: "bool | str | Judge" = False) -> dict[str, str]:
    """:meth:`BlankTextCount.notes_by_kind` over every row of ``examples``: what the CLI prints on stderr, the
    home page, the report and the leaderboard show (the reference-copy note more prominently)."""
    count = BlankTextCount()
    for ex in examples:
        count.add(ex)
    return count.notes_by_kind(metrics, judged)


def blank_text_notes(examples: Iterable[Example], metrics: Sequence[str] = (),
                     judged: "bool | str | Judge" = False) -> list[str]:
    """One line per kind of blank text in ``examples``, with its count and rows, saying what it does to the
    scores of ``metrics`` (registry names) and the judge (:func:`input_notes` as a list)."""
    return list(input_notes(examples, metrics, judged).values())


@dataclass
class ScoreTable:
    """Per-example scores of several metrics over one list of examples (same order). ``flags[i]`` says why
    row ``i`` scores null on some metric or what was ignored in it (:func:`row_flags`)."""

    examples: list[Example]
    results: dict[str, MetricResult] = field(default_factory=dict)
    flags: list[list[str]] = field(default_factory=list)

    @property
    def metrics(self) -> list[str]:
        return list(self.results)

    def column(self, metric: str) -> np.ndarray:
        return self.results[metric].scores

    def details(self, metric: str, i: int) -> dict[str, Any] | None:
        d = self.results[metric].details
        return d[i] if d is not None else None

    def signatures(self) -> dict[str, str]:
        return {k: str(v.signature) for k, v in self.results.items()}

    def to_records(self, with_details: bool = True) -> list[dict[str, Any]]:
        """One dict per example, in input order: ``{id, system, metrics: {name: float|None}, human, details}``;
        ``human`` holds the row's own human scores (``{dimension: value}``, the input's ``scores`` or its
        ``--score-columns``), only when it has some, so a scored file can be correlated without the input."""
        out = []
        for i, ex in enumerate(self.examples):
            rec: dict[str, Any] = {"id": ex.id, "system": ex.system,
                                   "metrics": {m: _num(r.scores[i]) for m, r in self.results.items()}}
            if ex.scores:
                rec["human"] = dict(ex.scores)
            if with_details:  # keys sorted: a row read from the cache or the precomputed demo writes the same bytes
                rec["details"] = {m: keys_sorted(r.details[i]) for m, r in self.results.items()
                                  if r.details is not None}
            if self.flags and self.flags[i]:
                rec["flags"] = list(self.flags[i])
            out.append(rec)
        return out

    def why_null(self, metric: str, i: int) -> str:
        """Why ``metric`` has no score for row ``i``: a flag of the row, else 'no score'."""
        flags = self.flags[i] if self.flags else []
        if BLANK_RESPONSE in flags:
            return BLANK_RESPONSE
        if NO_REFERENCE in flags and needs_references(metric):
            return NO_REFERENCE
        return "no score"

    def subset(self, idx: Sequence[int]) -> "ScoreTable":
        idx = list(idx)
        return ScoreTable([self.examples[i] for i in idx], {m: r.subset(idx) for m, r in self.results.items()},
                          [self.flags[i] for i in idx] if self.flags else [])


def keys_sorted(value: Any) -> Any:
    """``value`` with every dict's keys in sorted order, at any depth (lists keep their order)."""
    if isinstance(value, dict):
        return {k: keys_sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [keys_sorted(v) for v in value]
    return value


def _num(x: float) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def metric_namespace(metric: Metric) -> str:
    """The score cache's namespace of ``metric``: its full signature and where the models run (the device, and
    for the CPU its kernel family: ``core.models.device.device_key``)."""
    return f"{metric.signature()}|device:{device_key(active_device())}"


def _cached_rows(metric: Metric, examples: Sequence[Example], cache: ScoreCache,
                 compute: Callable[[list[int]], MetricResult]) -> MetricResult:
    """``metric`` over ``examples``: rows found in ``cache`` are read back, the others computed by
    ``compute(indices)`` and kept. When every row is computed the metric's own result is returned as is;
    one put together from cached rows carries no ``extra`` (run-level values such as corpus BLEU would
    describe only the rows computed)."""
    ns = metric_namespace(metric)
    keys = [row_key(ex.context, ex.response, ex.references) for ex in examples]
    rows = cache.get_many(ns, keys)
    missing = [i for i, k in enumerate(keys) if k not in rows]
    fresh = compute(missing) if missing else None
    if fresh is not None:
        new = {keys[i]: {"s": _num(fresh.scores[j]), "d": None if fresh.details is None else fresh.details[j]}
               for j, i in enumerate(missing)}
        try:
            cache.put_many(ns, new)
        except (TypeError, ValueError):  # details JSON cannot hold: this metric's rows are not kept
            pass
        if len(missing) == len(examples):
            return fresh
        rows.update(new)
    scores = np.array([np.nan if rows[k]["s"] is None else rows[k]["s"] for k in keys], dtype=np.float64)
    details = [rows[k]["d"] for k in keys]
    sig = fresh.signature if fresh is not None else metric.signature()
    return MetricResult(metric.name, scores, sig, details if any(d is not None for d in details) else None)


def run_metric(metric: Metric, examples: Sequence[Example], progress: Progress | None = None,
               memo: dict[str, MetricResult] | None = None, cache: ScoreCache | None = None) -> MetricResult:
    """One metric over ``examples``. A composite metric's parts are scored first, each once per ``memo``
    (results keyed by signature, shared across the metrics of one run). With a ``cache``
    (``core.cache``), rows scored by an earlier run are read back and only the others are computed."""
    memo = {} if memo is None else memo
    key = str(metric.signature())
    if key not in memo:
        if isinstance(metric, CompositeMetric):
            parts = [run_metric(p, examples, progress, memo, cache) for p in metric.parts()]
            memo[key] = metric.combine(examples, parts)
        elif cache is None:
            memo[key] = _timed_score(metric, examples, progress)
        else:
            memo[key] = _cached_rows(metric, examples, cache,
                                     lambda idx: _timed_score(metric, [examples[i] for i in idx], progress))
    return memo[key]


def _timed_score(metric: Metric, examples: Sequence[Example], progress: Progress | None) -> MetricResult:
    """``metric`` over ``examples`` (rows to compute); the run teaches this process the metric's pace
    (``core.time_estimates.record_scoring``)."""
    started = perf_counter()
    result = metric(examples, progress)
    time_estimates.record_scoring(metric.name, len(examples), perf_counter() - started)
    return result


def fully_cached(metric: Metric, examples: Sequence[Example], cache: ScoreCache | None) -> bool:
    """Whether every row of ``examples`` can be read back for ``metric`` (a composite: for each of its parts)
    from ``cache`` or its precomputed layers, so scoring them loads no model."""
    return uncached_rows(metric, examples, cache) == 0


def uncached_rows(metric: Metric, examples: Sequence[Example], cache: ScoreCache | None) -> int:
    """How many distinct rows of ``examples`` ``metric`` would compute: those ``cache`` and its precomputed
    layers cannot give back (a composite: the most of any of its parts; no cache: all)."""
    keys = {row_key(ex.context, ex.response, ex.references) for ex in examples}
    if cache is None:
        return len(keys)
    if isinstance(metric, CompositeMetric):
        return max((uncached_rows(p, examples, cache) for p in metric.parts()), default=0)
    return len(keys) - len(cache.get_many(metric_namespace(metric), list(keys)))


def check_models_needed(metrics: Sequence[Metric], examples: Sequence[Example], cache: ScoreCache | None) -> None:
    """Before any metric runs: raise ``MissingModelError`` (naming each package and its install command) when
    a model package one of ``metrics`` needs (``Metric.models``) is not installed, unless that metric's rows
    all come from the cache (the precomputed demo shows without SmolLM2), so it is said before the others run,
    not minutes later when that metric's turn comes."""
    try:
        check_models(p for m in metrics for p in m.models)
    except MissingModelError:
        check_models(p for m in metrics if m.models and not fully_cached(m, examples, cache) for p in m.models)


def score_examples(examples: Sequence[Example], metrics: Sequence[str | Metric] | str | None = None,
                   options: Options | None = None, progress: Progress | None = None,
                   cache: ScoreCache | bool | None = None) -> ScoreTable:
    """Score ``examples`` with each metric: registry names (built with ``options``; models load once per
    process) or metric instances. ``cache``: ``None``/``True`` the user's score cache (``core.cache``; off
    when ``$DIALEVAL_NO_CACHE`` is set), ``False`` none, or a :class:`~core.cache.ScoreCache`. Cached rows
    are exactly the numbers a fresh run computes."""
    examples = list(examples)
    if isinstance(metrics, str) or metrics is None:
        metrics = parse_metrics(metrics)
    use_device(options.device if options is not None else "cpu")
    built = [m if isinstance(m, Metric) else get_metric(m, options) for m in metrics]
    reference_needed = any(m.needs_references for m in built)
    table = ScoreTable(examples, flags=[row_flags(ex, reference_needed) for ex in examples])
    blank = blank_responses(examples)
    scored = as_scored(examples)
    memo: dict[str, MetricResult] = {}
    store = resolve_cache(cache)
    check_models_needed(built, scored, store)
    for metric in built:
        table.results[metric.name] = blank_rows_null(run_metric(metric, scored, progress, memo, store), blank)
    return table


def blank_responses(examples: Sequence[Example]) -> np.ndarray:
    """Which of ``examples`` have a blank response (:func:`is_blank`), as a mask."""
    return np.array([is_blank(ex.response) for ex in examples], dtype=bool)


def blank_rows_null(result: MetricResult, blank: np.ndarray) -> MetricResult:
    """``result`` with the rows of a blank response (``blank``, a mask: :func:`blank_responses`) null, never a
    score of 0, their details saying so: every surface that scores (``score_examples``, meta-evaluation) reads a
    blank reply this way."""
    blank = np.asarray(blank, dtype=bool)
    if not blank.any():
        return result
    details = result.details if result.details is None else [
        {"skipped": f"{BLANK_RESPONSE}: no score"} if b else d for d, b in zip(result.details, blank)]
    return replace(result, scores=np.where(blank, np.nan, result.scores), details=details)


@dataclass
class ComparisonScores:
    comparison: Comparison
    table: ScoreTable  # A's rows then B's rows

    @property
    def n(self) -> int:
        return len(self.comparison.pairs)

    def a(self, metric: str) -> np.ndarray:
        return self.table.column(metric)[: self.n]

    def b(self, metric: str) -> np.ndarray:
        return self.table.column(metric)[self.n:]

    @property
    def metrics(self) -> list[str]:
        return self.table.metrics


def score_comparison(comp: Comparison, metrics: Sequence[str | Metric] | str | None = None,
                     options: Options | None = None, progress: Progress | None = None,
                     cache: ScoreCache | bool | None = None) -> ComparisonScores:
    return ComparisonScores(comp, score_examples(comp.examples(), metrics, options, progress, cache))


def comparison_scores(comp: Comparison, results: dict[str, MetricResult]) -> ComparisonScores:
    """A ``ComparisonScores`` from per-metric results already computed over ``comp.examples()`` (the dashboard
    keeps each metric's result on its own, so adding a metric never re-scores the others)."""
    examples = comp.examples()
    needed = any(needs_references(m) for m in results)
    return ComparisonScores(comp, ScoreTable(examples, dict(results), [row_flags(ex, needed) for ex in examples]))


def _judge_class(judge: "str | Judge") -> type[Judge]:
    return type(judge) if isinstance(judge, Judge) else judge_class(judge)


def judge_pairs(contexts: Sequence[Sequence[str]], replies_a: Sequence[str], replies_b: Sequence[str],
                judge: "str | Judge" = "pairwise", checkpoint: str | None = None,
                progress: Progress | None = None, cache: ScoreCache | bool | None = None) -> JudgeOutput:
    """P(A preferred) for each (context, A, B) from a judge: a registered name (default: the shipped A/B judge)
    or a :class:`~core.scoring.Judge` built with its settings (an ``llm`` judge). ``cache`` as in
    :func:`score_examples`: pairs judged by an earlier run are read back (the judge is not even loaded when
    every pair is), the others judged and kept; a judge that keeps its own answers
    (``Judge.caches_own_answers``: the llm judge, one entry per order asked) is handed the cache instead."""
    if not (len(contexts) == len(replies_a) == len(replies_b)):
        raise ValueError("contexts, replies_a and replies_b must have the same length")
    store = resolve_cache(cache)
    cls = _judge_class(judge)
    if cls.caches_own_answers:
        return judge_instance(judge, checkpoint).predict(contexts, replies_a, replies_b, progress, cache=store)
    # a judge handed over as an object (a re-fit, say) may not be the one its class's identity describes: not cached
    ident = cls.cache_identity(checkpoint) if store is not None and not isinstance(judge, Judge) else None
    ctxs = [[c] if isinstance(c, str) else list(c) for c in contexts]
    if ident is None or not ctxs:  # no pairs: the judge's own empty output (its signature and tie margin)
        return _timed_predict(cls, judge_instance(judge, checkpoint), ctxs, list(replies_a), list(replies_b), progress)
    ns = judge_namespace(cls.name, ident, __version__, device_key(active_device()))
    keys = [pair_key(c, a, b) for c, a, b in zip(ctxs, replies_a, replies_b)]
    found = cached_judgements(cls, store, ns, dict(zip(keys, zip(ctxs, replies_a, replies_b))))
    missing = [i for i, k in enumerate(keys) if k not in found]
    if missing:
        sub = _timed_predict(cls, judge_instance(judge, checkpoint), [ctxs[i] for i in missing],
                             [replies_a[i] for i in missing], [replies_b[i] for i in missing], progress)
        new = {keys[i]: {"p_a": float(sub.p_a[j]), "p_ab": float(sub.p_ab[j]), "p_ba": float(sub.p_ba_flipped[j]),
                         "tie": sub.tie_margin, "sig": sub.signature} for j, i in enumerate(missing)}
        store.put_many(ns, new)
        if len(missing) == len(keys):
            return sub
        found.update(new)
    rows = [found[k] for k in keys]
    return JudgeOutput.from_probabilities([r["p_a"] for r in rows], [r["p_ab"] for r in rows],
                                          [r["p_ba"] for r in rows], rows[0]["tie"], rows[0]["sig"])


def cached_judgements(cls: type[Judge], store: ScoreCache, ns: str,
                      pairs: dict[str, tuple[list[str], str, str]]) -> dict[str, dict[str, Any]]:
    """The cached outputs of a judge (namespace ``ns``) on ``pairs`` (pair key -> (context, A, B)): each pair's own
    entry, or, for a judge whose swap mirrors its output (``Judge.swaps_exactly``), the entry of the pair in the
    other order mirrored: ``p_a`` -> ``1 - p_a`` and the single orders exchanged (``p_ab`` -> ``1 - p_ba``,
    ``p_ba`` -> ``1 - p_ab``), what the judge computes for it but for the last bits of rounding."""
    found = store.get_many(ns, list(pairs))
    if not cls.swaps_exactly or len(found) == len(pairs):
        return found
    other = {pair_key(c, b, a): k for k, (c, a, b) in pairs.items() if k not in found}
    for key, r in store.get_many(ns, list(other)).items():
        found[other[key]] = {**r, "p_a": 1.0 - r["p_a"], "p_ab": 1.0 - r["p_ba"], "p_ba": 1.0 - r["p_ab"]}
    return found


def _timed_predict(cls: type[Judge], judge: Judge, contexts: list, replies_a: list, replies_b: list,
                   progress: Progress | None) -> JudgeOutput:
    """``judge.predict`` over the pairs; a run of the shipped judge teaches this process its pace
    (``core.time_estimates.record_judging``)."""
    if cls.name != time_estimates.JUDGE_TIMED:
        return judge.predict(contexts, replies_a, replies_b, progress)
    work = time_estimates.judge_work(len(contexts), contexts * 2, replies_a + replies_b)
    started = perf_counter()
    out = judge.predict(contexts, replies_a, replies_b, progress)
    time_estimates.record_judging(work, perf_counter() - started)
    return out


def judged_from_cache(contexts: Sequence[Sequence[str]], replies_a: Sequence[str], replies_b: Sequence[str],
                      judge: "str | Judge" = "pairwise", checkpoint: str | None = None) -> bool:
    """Whether the score cache (or a shipped precomputed layer) holds the judge's output on every pair, so
    :func:`judge_pairs` would not load the judge."""
    return len(contexts) > 0 and pairs_to_judge(contexts, replies_a, replies_b, judge, checkpoint) == 0


def pairs_to_judge(contexts: Sequence[Sequence[str]], replies_a: Sequence[str], replies_b: Sequence[str],
                   judge: "str | Judge" = "pairwise", checkpoint: str | None = None,
                   cache: ScoreCache | bool | None = None) -> int:
    """How many distinct pairs :func:`judge_pairs` would judge: those the score cache (``cache`` as in
    :func:`score_examples`, or a shipped precomputed layer) cannot give back."""
    store = resolve_cache(cache)
    cls = _judge_class(judge)
    if cls.caches_own_answers:
        return judge_instance(judge, checkpoint).pairs_to_ask(contexts, replies_a, replies_b, store)
    ctxs = [[c] if isinstance(c, str) else list(c) for c in contexts]
    keys = {pair_key(c, a, b): (c, a, b) for c, a, b in zip(ctxs, replies_a, replies_b)}
    ident = cls.cache_identity(checkpoint) if store is not None and not isinstance(judge, Judge) else None
    if ident is None:
        return len(keys)
    ns = judge_namespace(cls.name, ident, __version__, device_key(active_device()))
    return len(keys) - len(cached_judgements(cls, store, ns, keys))


def check_judge_models(pairs: "Comparison | Sequence[tuple[Sequence[str], str, str]]", judge: "str | Judge" = "pairwise",
                       checkpoint: str | None = None) -> None:
    """Before anything runs: ``MissingModelError`` when a model package the judge needs is not installed and
    the cache cannot answer every (context, A, B) of ``pairs`` (a comparison's pairs, or triples), as
    :func:`check_models_needed` does for metrics; a judge that asks an endpoint checks that it answers
    (``Judge.check_ready``) when some pair is not in the cache."""
    if isinstance(pairs, Comparison):
        pairs = [(a.context, a.response, b.response) for a, b in pairs.pairs]
    cls = _judge_class(judge)
    if cls.caches_own_answers:
        if pairs and not judged_from_cache([p[0] for p in pairs], [p[1] for p in pairs], [p[2] for p in pairs], judge,
                                           checkpoint):
            judge_instance(judge, checkpoint).check_ready()
        return
    try:
        check_models(cls.models)
    except MissingModelError:
        if not judged_from_cache([p[0] for p in pairs], [p[1] for p in pairs], [p[2] for p in pairs], judge,
                                 checkpoint):
            raise


def cached_judge_comparison(comp: Comparison, judge: "str | Judge" = "pairwise",
                            checkpoint: str | None = None) -> JudgeOutput | None:
    """The judge's output over every pair of ``comp`` if the score cache (or a shipped precomputed layer)
    holds all of it, else ``None``; never loads or runs the judge."""
    if not comp.pairs or not judged_from_cache([a.context for a in comp.a], [a.response for a in comp.a],
                                               [b.response for b in comp.b], judge, checkpoint):
        return None
    return judge_comparison(comp, judge, checkpoint)


def judge_comparison(comp: Comparison, judge: "str | Judge" = "pairwise", checkpoint: str | None = None,
                     progress: Progress | None = None, cache: ScoreCache | bool | None = None) -> JudgeOutput:
    """The judge over every aligned pair of ``comp`` (A = ``comp.system_a``)."""
    return judge_pairs([a.context for a in comp.a], [a.response for a in comp.a], [b.response for b in comp.b],
                       judge, checkpoint, progress, cache)


def estimate_work(examples: Sequence[Example] = (), metrics: Sequence[str] = (), options: Options | None = None,
                  pairs: Sequence[tuple[Sequence[str], str, str]] = (), judge: "str | Judge | None" = None,
                  rows_read: Sequence[Example] | None = None, n_pairs: int | None = None,
                  cache: ScoreCache | bool | None = None, checkpoint: str | None = None
                  ) -> time_estimates.WorkEstimate:
    """What scoring ``examples`` with ``metrics`` and judging ``pairs`` ((context, A, B) triples) with ``judge``
    still has to compute, and about how long it should take on this machine (``core.time_estimates``): per metric
    the distinct rows the score cache (``cache`` as in :func:`score_examples`) cannot give back, the pairs the
    judge has not judged, each timed at the pace this process has measured (the idle pace of this kind of CPU
    before it has measured one), loading included where its models are not loaded yet. ``rows_read``: the rows
    whose replies the shipped judge reads (default: both replies of ``pairs``; a leaderboard passes its rows);
    ``n_pairs``: the number of pairs to judge where the triples are not at hand (every one counted as new);
    ``checkpoint``: the learned judge's (its own cached calls are looked for).
    With ``mme`` among ``metrics`` computing every row the judge reads (:func:`after_mme_reads_all`), the judge,
    which runs after the metrics, has nothing left to read. A metric that cannot even be built counts every row (it
    fails with its error when it runs). A run that computes something with SmolLM2 while the cache folder keeps no
    copy of it yet counts its first read (``WorkEstimate.first_read_seconds``)."""
    store = resolve_cache(cache)
    scored = as_scored(examples)
    judge_name = judge.name if isinstance(judge, Judge) else judge
    out = time_estimates.WorkEstimate(judge=judge_name)
    loads_smollm = False  # whether the run computes something with SmolLM2 (its first read is then counted)
    for name in metrics:
        try:
            metric = get_metric(name, options)
            out.rows[name] = uncached_rows(metric, scored, store)
            loads_smollm |= bool(out.rows[name]) and "smollm2" in metric.models
        except Exception:  # noqa: BLE001 (any failure to build is the run's to report)
            out.rows[name] = len({row_key(ex.context, ex.response, ex.references) for ex in scored})
        out.metric_seconds[name] = time_estimates.score_time().estimate(name, out.rows[name])
    if judge is not None and (pairs or n_pairs):
        try:
            out.judge_pairs = n_pairs if n_pairs is not None else pairs_to_judge(
                [c for c, _, _ in pairs], [a for _, a, _ in pairs], [b for _, _, b in pairs], judge, checkpoint,
                cache=cache)
        except Exception:  # noqa: BLE001 (a judge that cannot be built says why when it runs): every pair is new
            out.judge_pairs = len({pair_key([c] if isinstance(c, str) else list(c), a, b) for c, a, b in pairs})
        if judge_name != time_estimates.JUDGE_TIMED:
            out.judge_seconds = _judge_seconds(judge, checkpoint, out.judge_pairs, store)
            out.pace_unkept = store is None
        else:
            rows = ([(ex.context, ex.response) for ex in rows_read] if rows_read is not None else
                    [(c, a) for c, a, _ in pairs] + [(c, b) for c, _, b in pairs] if pairs else None)
            work = (time_estimates.judge_work(out.judge_pairs) if rows is None else
                    time_estimates.judge_work(out.judge_pairs, [c for c, _ in rows], [r for _, r in rows]))
            if rows is not None and after_mme_reads_all(out.rows.get("mme", 0), rows):
                work = replace(work, mme_pairs=0, read_pairs=0)
            out.judge_seconds = work.seconds(time_estimates.judge_time())
            loads_smollm |= work.reads()  # replies the shared reading and MME hold already need no SmolLM2
    if loads_smollm:
        out.first_read_seconds = time_estimates.smollm_first_read_seconds()
    return out


def _judge_seconds(judge: "str | Judge", checkpoint: str | None, n_pairs: int, store: ScoreCache | None
                   ) -> float | None:
    """A judge other than the shipped one: its own estimate (``Judge.estimated_seconds``, such as the llm judge's
    measured pace), None where it has none or cannot be built (running it says why)."""
    try:
        return judge_instance(judge, checkpoint).estimated_seconds(n_pairs, store)
    except Exception:  # noqa: BLE001 (a judge that cannot be built says why when it runs)
        return None


def after_mme_reads_all(mme_rows: int, rows: Sequence[tuple[Sequence[str], str]]) -> bool:
    """Whether MME-CRS, scoring ``mme_rows`` rows first, reads every (context, reply) of ``rows`` that the judge
    then reads, so the judge reads nothing: MME computes all of them (none comes from the score cache) and the
    shared reading remembers them all (``core.models.smollm_reading.MEMO_ITEMS``)."""
    from core.models.smollm_reading import MEMO_ITEMS
    distinct = len({("\n".join([c] if isinstance(c, str) else c), r) for c, r in rows})
    return 0 < distinct <= mme_rows and distinct <= MEMO_ITEMS


def estimate_comparison(comp: Comparison, metrics: Sequence[str] = (), options: Options | None = None,
                        judge: "str | Judge | None" = None, checkpoint: str | None = None) -> time_estimates.WorkEstimate:
    """:func:`estimate_work` for scoring both systems of ``comp`` and judging its pairs."""
    return estimate_work(comp.examples(), metrics, options, [(a.context, a.response, b.response) for a, b in comp.pairs],
                         judge, checkpoint=checkpoint)
