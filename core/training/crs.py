"""Fitting MME-CRS's correlation re-scaling weights (``dialeval train crs --data FILE...``).

For every rated set i and dimension j, S_ijk is the Spearman correlation of sub-metric k with the human
score (``core.metrics.crs.correlations``); the weights w_jk (``core.metrics.crs.fit_weights``, d = ``crs.POWER``) are
written to ``crs_weights.json`` with the correlations, so that leave-one-dataset-out weights can be refit
from the file without scoring again (``MMECRS.held_out_for``).
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Sequence

import numpy as np

from core.data import Example
from core.metrics import crs as crs_mod
from core.metrics.mme import CKPT, SUBMETRICS, WEIGHTS_NAME, checkpoint_hash
from core.outputs import write_text
from core.progress import Progress, progress_bar
from core.settings import SEED, writable_checkpoint_dir
from core.training import register_trainer, set_threads


def sub_metric_scores(examples: Sequence[Example], progress: Progress | None = None) -> dict[str, np.ndarray]:
    """sub-metric -> normalized scores of ``examples``, through the engine (the sub-metrics share one pass)."""
    from core.engine import score_examples
    table = score_examples(examples, [f"mme_{k}" for k in SUBMETRICS], progress=progress)
    return {k: table.column(f"mme_{k}") for k in SUBMETRICS}


def human_by_dimension(examples: Sequence[Example]) -> dict[str, np.ndarray]:
    dims: list[str] = []
    for e in examples:
        for d in e.scores:
            if d not in dims:
                dims.append(d)
    return {d: np.array([e.scores.get(d, np.nan) for e in examples], dtype=np.float64) for d in dims}


def crs_weights_file(table: dict[str, dict[str, dict[str, np.ndarray]]], sizes: dict[str, int],
                     checkpoints: dict[str, str] | None = None, command: str = "", notes: dict | None = None) -> dict:
    """The crs_weights.json content from ``table`` ({set: {"subs": {sub-metric: scores}, "human": {dimension:
    ratings}}}): S_ijk (``crs.correlations``) and the weights (``crs.fit_weights``), with what they were fitted
    on (``sizes``: rows per set; ``checkpoints``: the sub-metrics' checkpoint hashes, by default the shipped
    ones). The one place CRS weights are fitted: ``dialeval train crs`` and ``scripts/train_mme.py fit``."""
    corr = crs_mod.correlations(table, SUBMETRICS)
    weights = crs_mod.fit_weights(corr, SUBMETRICS)
    return {"power": crs_mod.POWER, "submetrics": list(SUBMETRICS), "fallback": crs_mod.FALLBACK,
            "dimension_map": {k: list(v) for k, v in crs_mod.DIMENSION_MAP.items()},
            "checkpoints": checkpoints if checkpoints is not None else {CKPT[s]: checkpoint_hash(s) for s in SUBMETRICS},
            "command": command, "notes": notes or {},
            "sets": dict(sizes),
            "weights": weights, "correlations": corr}


def fit_crs(sets: dict[str, list[Example]], progress: Progress | None = None,
            sub_scores: dict[str, dict[str, np.ndarray]] | None = None, command: str = "", notes: dict | None = None) -> dict:
    """Score every set with the sub-metrics (unless ``sub_scores`` is given) and fit the weights
    (:func:`crs_weights_file`); returns the crs_weights.json content."""
    table = {}
    for ds, exs in sets.items():
        subs = sub_scores[ds] if sub_scores is not None else sub_metric_scores(exs, progress)
        table[ds] = {"subs": subs, "human": human_by_dimension(exs)}
    return crs_weights_file(table, {ds: len(exs) for ds, exs in sets.items()}, command=command, notes=notes)


def load_sets(files: Sequence[str], max_rows: int | None = None, seed: int = SEED) -> dict[str, list[Example]]:
    """Rated files grouped by their ``dataset`` field (or the file name); optional fixed-seed subsample."""
    from core.data import load_file
    sets: dict[str, list[Example]] = {}
    for f in files:
        for e in load_file(f):
            sets.setdefault(e.dataset or Path(f).stem, []).append(e)
    if max_rows:
        for ds, exs in sets.items():
            if len(exs) > max_rows:
                idx = sorted(np.random.default_rng(seed).choice(len(exs), max_rows, replace=False))
                sets[ds] = [exs[i] for i in idx]
    return sets


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", nargs="+", required=True, help="rated files (JSONL/CSV/DSTC10 JSON); sets = 'dataset' field")
    p.add_argument("--out", default=None, help="where to write the weights (default: the shipped crs_weights.json)")
    p.add_argument("--max-rows", type=int, default=None, help="fixed-seed subsample per set")
    p.add_argument("--threads", type=int, default=1)


@register_trainer("crs", "MME-CRS correlation re-scaling weights (--data FILE...)", _arguments)
def train(a: argparse.Namespace) -> int:
    set_threads(a.threads)
    out = Path(a.out) if a.out else writable_checkpoint_dir() / WEIGHTS_NAME
    sets = load_sets(a.data, a.max_rows)
    if not sets:
        raise ValueError("no rated examples in --data")
    if not any(e.scores for exs in sets.values() for e in exs):
        raise ValueError("the --data files carry no human scores to correlate with")
    t0 = time.time()
    res = fit_crs(sets, progress=progress_bar(), command=a.command_line)
    write_text(out, json.dumps(res, indent=1) + "\n")
    print(f"fitted CRS weights for {', '.join(res['weights']) or 'no dimension'} from {len(sets)} set(s) "
          f"in {time.time() - t0:.0f}s -> {out}")
    for canon, w in res["weights"].items():
        print(f"  {canon:<11} " + "  ".join(f"{k}={v:.3f}" for k, v in w.items()))
    return 0
