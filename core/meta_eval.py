"""Meta-evaluation: how well each metric agrees with human ratings, per dataset and quality dimension.

For every dataset (the ``dataset`` field of the rows, else the file name), every human-score dimension
and every metric: Spearman, Pearson and Kendall (tau-b) correlations with p-values, percentile bootstrap
intervals and n (``core.stats.correlate``). When several rows share a context (multi-system sets such
as USR, where 5-6 systems answer each context) the bootstrap resamples **contexts**, not rows, and the
p-value comes from that bootstrap (rows of one context are not independent), never below the bootstrap's spread
read with the small-sample t or Fisher's z on the rows as if independent, nor the interval narrower than theirs
(``{method}_p_by`` says which gave p; ``core.stats.correlate``). Rows where the metric is
NaN (it cannot apply, e.g. BLEU without references) or the dimension is missing are excluded and
counted in ``n_excluded``. Rows whose response is a copy of one of its own references (the "ground
truth" system of USR and Zhao et al.) are excluded for every metric by default and counted in
``n_reference_copies``: a reference-based metric scores them perfectly by construction, which inflates
its correlation, and excluding them for all metrics keeps every metric on the same rows
(``keep_reference_copies=True`` / ``--keep-reference-copies`` keeps them). System-level rows (correlation of per-system means) are added for datasets
with at least three systems, with the fragility warning of ``core.stats.system_correlation``.

Learned metrics trained on these human-rated sets are evaluated **leave-one-dataset-out** through the
metric interface's ``held_out_for(dataset_name)``, which returns an instance that never saw
``dataset_name`` (ADEM, or the MME-CRS weights refit without it), or ``None`` when the shipped instance never
saw it either. Metrics whose weights depend on the human dimension give per-dimension scores through
``scores_for_dimension``. Rows say which protocol produced them (``protocol`` = "leave-one-dataset-out" or
"as shipped"). Every metric runs through ``core.engine``.

Command line: ``dialeval meta-eval FILE... --metrics bleu,ubleu [--dimension X] [--format ...]``
(``core/cli/meta_eval.py``).
"""
from __future__ import annotations

import math
import os
import time
import traceback
from collections import OrderedDict
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from core import stats
from core.data import CsvMapping, DataError, Example, Problem, dimensions, load_file, systems_in
from core.engine import as_scored, blank_responses, blank_rows_null, blank_text_notes, is_reference_copy, run_metric
from core.rated_sets import Overlap, overlaps, rated_set_of
from core.scoring import Metric, Options, get_metric
from core.verdict import context_groups

LODO = "leave-one-dataset-out"
AS_SHIPPED = "as shipped"


CLUSTER_P_BOUNDS = ("bootstrap", "bootstrap t", "fisher z")  # ``Correlation.p_method`` where contexts were resampled
CLUSTER_CI_METHOD = "percentile bootstrap over contexts, widened to the bootstrap t and Fisher z intervals"


def group_datasets(data: Iterable[str | os.PathLike | Example] | dict[str, Sequence[Example]],
                   csv_mapping: CsvMapping | None = None) -> "OrderedDict[str, list[Example]]":
    """Paths and/or examples -> {dataset name: examples}; a row's ``dataset`` field names its dataset,
    else the stem of the file it came from. ``csv_mapping`` reads CSV files (``core.data.CsvMapping``). A row of
    one system whose id another input file of the same data set already gave (the same file named twice too) is
    refused (a ``DataError`` naming both), as one file's repeated id is: it was counted twice."""
    if isinstance(data, dict):
        return OrderedDict((k, list(v)) for k, v in data.items())
    data = list(data)
    paths = [os.path.realpath(p) for p in data if isinstance(p, (str, os.PathLike))]
    twice = sorted({p for p in paths if paths.count(p) > 1})
    if twice:  # one line, not a problem per row (360 of them for usr-topical named twice)
        raise DataError([Problem(p, None, None, f"named {paths.count(p)} times: each input file once (its rows "
                                                "would count more than once)") for p in twice])
    out: OrderedDict[str, list[Example]] = OrderedDict()
    seen: dict[tuple[str, str, str], tuple[int, Example]] = {}  # (data set, system, id) -> (input, first row)
    repeated: list[Problem] = []
    for index, item in enumerate(data):
        from_file = isinstance(item, (str, os.PathLike))
        exs = load_file(item, csv_mapping=csv_mapping) if from_file else [item]
        for ex in exs:
            name = ex.dataset or (Path(ex.source).stem if ex.source else "data")
            if from_file and ex.has_id:  # one file's repeated id is its own check's (core.data.row_checks)
                first_index, first = seen.setdefault((name, ex.system, ex.id), (index, ex))
                if first_index != index:
                    where = (first.location if os.path.basename(first.source) != os.path.basename(ex.source)
                             else f"{first.source} row {first.row}")
                    repeated.append(Problem(ex.source, ex.row or None, "id", f"id {ex.id!r} of system {ex.system!r} "
                                            f"in data set {name!r} is also {where}: two inputs of one data set give "
                                            "the same id (the same file twice would count its rows twice)"))
            out.setdefault(name, []).append(ex)
    if repeated:
        raise DataError(repeated)
    return out


def scored_rows(examples: Sequence[Example], max_rows: int | None = None, seed: int = 13,
                keep_reference_copies: bool = False) -> list[Example]:
    """The rows of one data set that meta-eval scores: whole contexts up to about ``max_rows``
    (:func:`subsample_contexts`), less the rows whose reply copies its reference unless
    ``keep_reference_copies``."""
    exs = subsample_contexts(examples, max_rows, seed)
    return exs if keep_reference_copies else [ex for ex in exs if not is_reference_copy(ex)]


def missing_dimensions(datasets: dict[str, Sequence[Example]], dims: Sequence[str]) -> str | None:
    """Why ``dims`` cannot all be read from ``datasets`` (the named ones no data set has, case ignored, and the
    dimensions there are), or None: what the command and ``core.meta_evaluate`` refuse before anything is scored."""
    have = sorted({d for exs in datasets.values() for d in dimensions(exs)})
    missing = [d for d in dims if d.casefold() not in {h.casefold() for h in have}]
    return f"{missing} not in the data; dimensions are {have}" if missing else None


def input_notes(datasets: dict[str, Sequence[Example]], metrics: Sequence[str], max_rows: int | None = None,
                seed: int = 13, keep_reference_copies: bool = False) -> list[str]:
    """The notes on the input (blank replies, rows without references) over the rows meta-eval scores
    (:func:`scored_rows`), as ``dialeval meta-eval`` and ``core.meta_evaluate`` say them."""
    return blank_text_notes([ex for exs in datasets.values() for ex in scored_rows(exs, max_rows, seed,
                                                                                 keep_reference_copies)], metrics)


def subsample_contexts(examples: Sequence[Example], max_rows: int | None, seed: int = 13) -> list[Example]:
    """Keep whole contexts, chosen at random (seeded), until about ``max_rows`` rows (for quick runs)."""
    if not max_rows or len(examples) <= max_rows:
        return list(examples)
    groups = context_groups(examples)
    keys = list(dict.fromkeys(groups))
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(keys))
    per = len(examples) / len(keys)
    chosen = {keys[i] for i in order[: max(1, int(round(max_rows / per)))]}
    return [ex for ex, g in zip(examples, groups) if g in chosen]


def _resolve_metric(spec: str | Metric, dataset: str, options: Options | None, held_out: bool) -> tuple[Metric, str]:
    metric = spec if isinstance(spec, Metric) else get_metric(spec, options)
    if held_out:
        alt = metric.held_out_for(dataset)
        if alt is not None:
            return alt, LODO
    return metric, AS_SHIPPED


def trains_on(metric: Metric, dataset: str) -> bool:
    """Whether ``metric`` learned from the ratings of the development set ``dataset``: it says so
    (``Metric.trained_on``), or it has a held-out instance for it that is another than itself."""
    if dataset in metric.trained_on():
        return True
    alt = metric.held_out_for(dataset)
    return alt is not None and alt is not metric


def trained_rows_note(metric: Metric, found: Sequence[Overlap]) -> tuple[int, str]:
    """The rows of development sets the instance ``metric`` (shipped, or held out from one set) learned from
    (``found``: ``core.rated_sets.overlaps`` of the rows), with the note that says so ('12 of 60 rows are rows of
    usr-topical, which it trained on: not held out for them'); (0, '') where there are none."""
    seen = [o for o in found if trains_on(metric, o.name)]
    if not seen:
        return 0, ""
    return sum(o.rows for o in seen), ("; ".join(f"{o.rows} of {o.of} rows are rows of {o.name}" for o in seen)
                                       + ", which it trained on: not held out for them")


NO_HUMAN_SCORES = ("no human scores in the input: meta-eval needs rows with a 'scores' object (dimension -> "
                   "rating); in a CSV file, name the score columns with --score-columns or call them "
                   "scores.DIMENSION")


SYSTEM_N_BOOT = 500  # resamples of a system-level correlation's interval at most (each refits every system's mean)


def meta_evaluate(data, metrics: Sequence[Any], dims: Sequence[str] | None = None,
                  methods: Sequence[str] = stats.METHODS, n_boot: int = 1000, seed: int = 13,
                  level: float = 0.95, options: Options | None = None,
                  system_level: bool = True, held_out: bool = True, on_error: str = "raise",
                  max_rows: int | None = None, keep_reference_copies: bool = False, progress: Callable[[int, int, str], None] | None = None,
                  log: Callable[[str], None] | None = None,
                  warn: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """Correlate every metric with every human dimension of every dataset; one row dict per
    (metric, dataset, dimension, level). ``metrics`` holds registry names or ``Metric`` instances.
    ``on_error="record"`` turns a failing metric into a row with
    ``error`` set instead of raising (the benchmark uses it). ``n_boot``, ``level`` and ``seed`` as ``stats.check_settings`` allows. See
    the module docstring for the protocol."""
    stats.check_settings(n_boot, level=level, seed=seed)
    datasets = group_datasets(data)
    wanted = {d.casefold() for d in dims or ()}  # a dimension is named case-insensitively ('overall', 'Overall')
    rows: list[dict[str, Any]] = []
    for ds, exs in datasets.items():
        exs = subsample_contexts(exs, max_rows, seed)
        n_rows = len(exs)
        exs = scored_rows(exs, keep_reference_copies=keep_reference_copies)
        n_copies = n_rows - len(exs)
        if not exs:
            continue
        if system_level and len(systems_in(exs)) < 3 and (warn or log) is not None:
            (warn or log)(f"{ds}: {len(systems_in(exs))} system(s), so no system-level correlation (it needs 3 or "
                          "more; with 3-9 it is fragile)")
        ds_dims = [d for d in dimensions(exs) if dims is None or d.casefold() in wanted]
        if not ds_dims:
            if dims and (warn or log) is not None:  # a warning, not progress: --quiet does not hide it
                (warn or log)(f"{ds}: none of the dimensions {list(dims)} (its dimensions: {dimensions(exs)}); "
                              "skipped")
            continue
        found = overlaps(exs)  # the development sets these rows are, by content, whatever the set's name
        source = rated_set_of(exs, found=found)
        trained_as = source.name if source else ds
        if source and source.name != ds and log and held_out:
            log(f"{ds}: {source.rows} of {source.of} rows are rows of the development set {source.name}: the "
                "learned metrics are held out from it")
        groups = context_groups(exs)
        n_ctx = len(set(groups))
        systems = [ex.system for ex in exs]
        n_sys = len(systems_in(exs))
        answered: dict[Any, set[str]] = {}  # context -> the systems that answered it
        for g, s in zip(groups, systems):
            answered.setdefault(g, set()).add(s)
        n_shared = sum(len(v) > 1 for v in answered.values())
        for spec in metrics:
            name = spec if isinstance(spec, str) else spec.name
            t0 = time.perf_counter()
            base = {"metric": name, "dataset": ds, "rows": n_rows, "contexts": n_ctx, "systems": n_sys,
                    "n_reference_copies": n_copies, "ci_level": level, "ci_method": "percentile bootstrap",
                    "n_boot": n_boot, "seed": seed}
            if trained_as != ds:
                base["rated_set"] = trained_as  # the development set the rows are, known by their content
            try:
                metric, protocol = _resolve_metric(spec, trained_as, options, held_out)
                n_trained, trained_note = trained_rows_note(metric, found)
                if n_trained:  # scored by a model that saw these rows (--no-held-out, or another set's rows)
                    base = {**base, "trained_rows": n_trained, "trained_note": trained_note}
                # as every surface scores: blank references left out, a blank reply null (never a 0)
                res = blank_rows_null(run_metric(metric, as_scored(exs), progress), blank_responses(exs))
                scores = np.asarray(res.scores, dtype=np.float64)
                signature = str(res.signature)
            except Exception as e:  # noqa: BLE001 - reported, not fatal, when asked
                if on_error != "record":
                    raise
                msg = f"{type(e).__name__}: {e}"
                if log:
                    log(f"{name} on {ds} failed: {msg}\n{traceback.format_exc(limit=3)}")
                rows.append({**base, "dimension": "*", "level": "turn", "n": 0, "error": msg})
                continue
            seconds = time.perf_counter() - t0
            if log:
                log(f"{name} on {ds}: {len(exs)} rows scored in {seconds:.1f}s")
            hib = metric.higher_is_better
            for dim in ds_dims:
                scores = np.asarray(metric.scores_for_dimension(res, dim), dtype=np.float64)
                human = np.array([ex.scores.get(dim, math.nan) for ex in exs], dtype=np.float64)
                keep = np.isfinite(human) & np.isfinite(scores)
                row = {**base, "dimension": dim, "level": "turn", "protocol": protocol, "n": int(keep.sum()),
                       "n_excluded": int((~keep).sum()), "higher_is_better": hib, "signature": signature}
                g = [k for k, ok in zip(groups, keep) if ok]
                for mth in methods:
                    c = stats.correlate(scores[keep], human[keep], mth, groups=g, n_boot=n_boot, seed=seed,
                                        level=level)
                    row.update({mth: c.r, f"{mth}_p": c.p, f"{mth}_low": c.low, f"{mth}_high": c.high})
                    if c.p_floor:  # no resample crossed zero: p is at most the resampling's floor
                        row[f"{mth}_p_floor"] = True
                    row["resampled"], row["n_contexts"], row["p_method"] = c.resampled, c.n_groups, c.p_method
                    if c.p_method in CLUSTER_P_BOUNDS:  # which of the clustered p's three bounds gave it
                        row[f"{mth}_p_by"], row["p_method"], row["ci_method"] = (c.p_method, "bootstrap",
                                                                                 CLUSTER_CI_METHOD)
                why = no_correlation_reason(scores[keep], human[keep])
                if why:
                    row["no_correlation"] = why
                rows.append(row)
                if system_level and n_sys >= 3 and row["n"] > 0:
                    srow = {**base, "dimension": dim, "level": "system", "protocol": protocol,
                            "n": int(len(set(s for s, ok in zip(systems, keep) if ok))),
                            "n_excluded": int((~keep).sum()), "higher_is_better": hib, "signature": signature,
                            "resampled": "contexts", "n_boot": min(n_boot, SYSTEM_N_BOOT),
                            "shared_contexts": n_shared}
                    for mth in methods:
                        sc = stats.system_correlation(scores, human, systems, mth, items=groups,
                                                      n_boot=srow["n_boot"], seed=seed, level=level)
                        srow.update({mth: sc.r, f"{mth}_p": sc.p, f"{mth}_low": sc.low, f"{mth}_high": sc.high})
                        srow["warning"] = sc.warning
                    rows.append(srow)
    return rows


def no_correlation_reason(metric: np.ndarray, human: np.ndarray) -> str | None:
    """Why no correlation can be computed from these paired rows (both finite), or None when one can."""
    if len(metric) < 3:
        return f"{len(metric)} row{'s' * (len(metric) != 1)} with both a score and a rating: a correlation needs 3"
    if np.ptp(human) == 0:
        return "every rating is the same: nothing to correlate with"
    if np.ptp(metric) == 0:
        return "the metric gives every row the same score"
    return None


def summarize(rows: Sequence[dict[str, Any]], method: str = "spearman", level: str = "turn") -> list[dict[str, Any]]:
    """Per metric: mean correlation over the (dataset, dimension) cells it could score, how many cells,
    and how many of them are significantly positive (interval above 0)."""
    out: OrderedDict[str, dict[str, Any]] = OrderedDict()
    for r in rows:
        if r.get("level") != level:
            continue
        s = out.setdefault(r["metric"], {"metric": r["metric"], "cells": 0, "values": [], "positive": 0,
                                         "failed": 0, "datasets": set()})
        if r.get("error"):
            s["failed"] += 1
            continue
        v = r.get(method)
        if v is None or not np.isfinite(v):
            continue
        s["cells"] += 1
        s["values"].append(v)
        s["datasets"].add(r["dataset"])
        s["positive"] += int(r.get(f"{method}_low", math.nan) > 0)
    res = []
    for s in out.values():
        vals = s.pop("values")
        s["mean"] = float(np.mean(vals)) if vals else math.nan
        s["datasets"] = len(s["datasets"])
        res.append(s)
    return res


_TABLE = [("metric", "metric"), ("dataset", "dataset"), ("dimension", "dimension"), ("level", "level"),
          ("n", "n"), ("spearman", "Spearman [{level} CI]"), ("spearman_p", "p"), ("pearson", "Pearson [{level} CI]"),
          ("pearson_p", "p"), ("kendall", "Kendall [{level} CI]"), ("kendall_p", "p"), ("note", "note")]


def interval_p_disagreements(row: dict[str, Any], methods: Sequence[str] = stats.METHODS) -> str:
    """'Kendall: the interval excludes 0 but p 0.075 >= 0.05, so neither shows a correlation alone' for each method
    of ``row`` whose interval and p read differently at the row's level (where rows share no context, p is the
    test's on the rows and the interval a bootstrap's, and near the threshold they can split); '' where none."""
    from core.formatting import alpha_label, fmt_num
    level = row.get("ci_level") or stats.LEVEL
    said = []
    for m in methods:
        low, high, p = (row.get(k) for k in (f"{m}_low", f"{m}_high", f"{m}_p"))
        if not all(isinstance(x, (int, float)) and math.isfinite(x) for x in (low, high, p)):
            continue
        excludes, below = low > 0 or high < 0, p < 1 - level
        if excludes != below:
            said.append(f"{m.capitalize()}: the interval {'excludes' if excludes else 'holds'} 0 but p "
                        f"{fmt_num(p, p=True)} {'>=' if excludes else '<'} {alpha_label(level)}")
    return "; ".join(said) + (", so neither shows a correlation alone" if said else "")


def format_rows(rows: Sequence[dict[str, Any]], fmt: str = "text", methods: Sequence[str] = stats.METHODS) -> str:
    from core.formatting import fmt_num, level_label
    from core.report import render, to_json
    if fmt == "json":
        return to_json(rows)
    if fmt == "csv":
        keys: list[str] = []
        for r in rows:
            keys += [k for k in r if k not in keys]
        return render(rows, [(k, k) for k in keys], "csv")
    cells = []
    for r in rows:
        c = {k: r.get(k, "") for k in ("metric", "dataset", "dimension", "level")}
        c["n"] = str(r.get("n", ""))
        for m in methods:
            if r.get(m) is None or not np.isfinite(r.get(m, math.nan)):
                c[m], c[f"{m}_p"] = "-", "-"
            else:
                c[m] = f"{fmt_num(r[m])} [{fmt_num(r[f'{m}_low'])}, {fmt_num(r[f'{m}_high'])}]"
                p = fmt_num(r[f"{m}_p"], p=True)  # '<0.001' says the floor already
                c[f"{m}_p"] = f"<={p}" if r.get(f"{m}_p_floor") and not p.startswith("<") else p
        notes = []
        if r.get("error"):
            notes.append("FAILED: " + r["error"][:120])
        if r.get("no_correlation"):
            notes.append(r["no_correlation"])
        if r.get("protocol") == LODO:
            notes.append(f"held out from {r['rated_set']}" if r.get("rated_set") else "held out")
        if r.get("trained_note"):
            notes.append(r["trained_note"])
        if r.get("n_excluded"):
            notes.append(f"{r['n_excluded']} excluded")
        if r.get("n_reference_copies"):
            k = r["n_reference_copies"]
            notes.append(f"{k} reference cop{'ies' if k != 1 else 'y'} dropped")
        if r.get("level") == "turn" and r.get("p_method") == "too few contexts":
            k = r.get("n_contexts")
            notes.append(f"{k} context{'s' * (k != 1)}: too few to resample, no interval or p")
        elif r.get("level") == "turn" and r.get("resampled") == "contexts":
            notes.append(f"{r.get('n_contexts')} contexts resampled")
        split = interval_p_disagreements(r, methods)
        if split:
            notes.append(split)
        if r.get("level") == "system" and r.get("warning"):
            notes.append("few systems: fragile")
        if r.get("level") == "system" and r.get("shared_contexts") == 0:
            notes.append("no context answered by two systems: the means are of different dialogues")
        c["note"] = "; ".join(notes)
        cells.append(c)
    ci = level_label(next((r["ci_level"] for r in rows if r.get("ci_level")), stats.LEVEL))
    cols = [(k, head.format(level=ci)) for k, head in _TABLE if k in ("metric", "dataset", "dimension", "level", "n",
                                                                      "note") or k.split("_")[0] in methods]
    return render(cells, cols, fmt)
