"""What the dashboard shows, computed without Streamlit (so the CLI and tests can reuse it).

The pages in ``pages/`` only draw; everything they display comes from here or from ``core.compare``'s
verdict: loading an upload into a ``Comparison``, the per-example table (both systems side by side, every
metric, the difference A - B), the verdict as a display table, υBLEU's extended references and MME's
sub-metrics as rows, metric-vs-human correlations, votes for the judge, and CSV / JSONL exports.

Conventions: the comparison is scored as one list, A's rows then B's (``core.engine``); pair ``i`` is
row ``i`` of the per-example table; the two responses to one context form one resampling cluster.
"""
from __future__ import annotations

import hashlib
import io
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from core.compare import Verdict, human_tie_margin
from core.data import (Comparison, CsvMapping, DataError, Example, Problem, align, compare_systems, dimensions,
                       load_file, systems_in)
from core.engine import DEFAULT_METRICS, ComparisonScores, ScoreTable
from core.judges.pairs import Pair
from core.scoring import metric_class

DEMO_NAME = "built-in demo (chitchat: C-BM25 vs SmolLM2-135M)"
MAX_UPLOAD_MB = 50  # must match server.maxUploadSize in .streamlit/config.toml (a test checks)


# ------------------------------------------------------------------------------------------------
# loading


@dataclass
class Loaded:
    """What the user loaded: all examples of the file(s), the chosen comparison, and a key that
    identifies the content (file bytes + chosen systems) for caching scores."""

    name: str
    examples: list[Example]
    comparison: Comparison
    key: str
    files: list[str] = field(default_factory=list)

    @property
    def n(self) -> int:
        return len(self.comparison.pairs)

    @property
    def dimensions(self) -> list[str]:
        return dimensions(self.comparison.examples())

    @property
    def has_human_scores(self) -> bool:
        return bool(self.dimensions)


def content_key(*parts: bytes | str) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else p.encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()[:16]


def parse_upload(name: str, data: bytes, fmt: str | None = None, csv_mapping: CsvMapping | None = None) -> list[Example]:
    """Examples from uploaded bytes (``fmt`` None = detect from name and content). Raises ``DataError``
    naming file, row and field of every problem; an upload above the size limit is refused too."""
    if len(data) > MAX_UPLOAD_MB * 1024 * 1024:
        raise DataError([Problem(name, None, None, f"is {len(data) / 2**20:.1f} MB; the limit is {MAX_UPLOAD_MB} MB")])
    return load_file(name, fmt=fmt or None, data=data, csv_mapping=csv_mapping)


def csv_header(data: bytes) -> list[str]:
    """Column names of an uploaded CSV (for the column-mapping widgets)."""
    import csv
    text = data.decode("utf-8-sig", errors="replace")
    try:
        return next(csv.reader(io.StringIO(text)))
    except StopIteration:
        return []


def guess_csv_mapping(header: Sequence[str]) -> dict[str, Any]:
    """A first guess of which column is which (the user can change every choice)."""
    low = {h.lower(): h for h in header}

    def pick(*names: str) -> str | None:
        for n in names:
            if n in low:
                return low[n]
        return None

    known = {pick("response", "reply", "hypothesis", "output"), pick("context", "history", "input", "utterance", "post"),
             pick("id", "dialogue_id", "example_id"), pick("system", "model"), pick("reference", "references", "gold")}
    return {"response": pick("response", "reply", "hypothesis", "output"),
            "context": pick("context", "history", "input", "utterance", "post"),
            "id": pick("id", "dialogue_id", "example_id"), "system": pick("system", "model"),
            "references": pick("reference", "references", "gold"),
            "scores": [h for h in header if h not in known and h]}


def make_loaded(name: str, examples_a: list[Example], examples_b: list[Example] | None, system_a: str | None,
                system_b: str | None, key_parts: Sequence[bytes | str]) -> Loaded:
    """One multi-system file (``examples_b`` None; pick two of its systems) or two files."""
    if examples_b is None:
        systems = systems_in(examples_a)
        if system_a is None or system_b is None:
            if len(systems) < 2:
                raise DataError([Problem(name, None, "system", f"the file holds only {systems}; a comparison "
                                         "needs two systems (a 'system' field, or upload a second file)")])
            system_a, system_b = systems[0], systems[1]
        comp = compare_systems(examples_a, system_a, system_b)
        everything = list(examples_a)
    else:
        if system_a:
            examples_a = [e for e in examples_a if e.system == system_a]
        if system_b:
            examples_b = [e for e in examples_b if e.system == system_b]
        comp = align(examples_a, examples_b, system_a, system_b)
        if comp.system_a == comp.system_b:  # two files that both lack a system name
            comp.system_b = comp.system_b + " (B)"
        everything = list(examples_a) + list(examples_b)
    if not comp.pairs:
        raise DataError([Problem(name, None, None, f"no row of {comp.system_a!r} could be paired with a row of "
                                 f"{comp.system_b!r} (by id or by identical context)")])
    return Loaded(name, everything, comp, content_key(*key_parts, comp.system_a, comp.system_b),
                  files=sorted({e.source for e in everything}))


def load_demo(path: str | Path) -> Loaded:
    """The built-in demo (``demo/demo.jsonl`` beside the app, made by ``scripts/make_demo.py``)."""
    data = Path(path).read_bytes()
    exs = parse_upload(str(path), data)
    return make_loaded(DEMO_NAME, exs, None, None, None, [data])


def default_metrics(available: Sequence[str]) -> list[str]:
    """``core.engine.DEFAULT_METRICS`` that are registered (the same defaults as the CLI)."""
    return [m for m in DEFAULT_METRICS if m in available] or list(available)[:1]


# ------------------------------------------------------------------------------------------------
# scores


def _short(texts: Sequence[str]) -> str:
    return " ⏎ ".join(texts)


def per_example_frame(cs: ComparisonScores) -> pd.DataFrame:
    """One row per pair: id, context (turns joined with ⏎), both responses, the reference, each
    metric for A and B and the difference A - B, and human scores when present."""
    comp = cs.comparison
    rows = []
    dims = dimensions(comp.examples())
    for i, (a, b) in enumerate(comp.pairs):
        row: dict[str, Any] = {"pair": i, "id": a.id, "context": _short(a.context), "response A": a.response,
                               "response B": b.response, "reference": a.reference or b.reference}
        for m in cs.metrics:
            va, vb = float(cs.a(m)[i]), float(cs.b(m)[i])
            row[f"{m} A"], row[f"{m} B"] = va, vb
            row[f"{m} A-B"] = va - vb
        for d in dims:
            ha, hb = a.scores.get(d, math.nan), b.scores.get(d, math.nan)
            row[f"human {d} A"], row[f"human {d} B"] = ha, hb
        rows.append(row)
    return pd.DataFrame(rows)


def filter_frame(df: pd.DataFrame, text: str = "", winner: str = "all", metric: str | None = None) -> pd.DataFrame:
    """Rows whose context/responses/reference contain ``text`` (case-insensitive) and, for ``metric``,
    where ``winner`` is "A", "B" or "tie"."""
    out = df
    if text:
        t = text.lower()
        cols = ["id", "context", "response A", "response B", "reference"]
        mask = np.zeros(len(out), dtype=bool)
        for c in cols:
            mask |= out[c].astype(str).str.lower().str.contains(t, regex=False).to_numpy()
        out = out[mask]
    if metric and winner != "all" and f"{metric} A-B" in out:
        d = out[f"{metric} A-B"]
        out = out[d > 0] if winner == "A" else out[d < 0] if winner == "B" else out[d == 0]
    return out


def long_scores(cs: ComparisonScores) -> pd.DataFrame:
    """Tidy frame (metric, system, value) for distribution plots."""
    rows = []
    for m in cs.metrics:
        for side, name in (("a", cs.comparison.system_a), ("b", cs.comparison.system_b)):
            vals = cs.a(m) if side == "a" else cs.b(m)
            rows += [{"metric": m, "system": name, "value": float(v)} for v in vals if np.isfinite(v)]
    return pd.DataFrame(rows, columns=["metric", "system", "value"])


def headline_frame(verdict: Verdict) -> pd.DataFrame:
    """Display form of the verdict's rows: 'mean [low, high]' cells, direction in words."""
    def ci(m, lo, hi):
        return "-" if m is None or not np.isfinite(m) else f"{m:.3f} [{lo:.3f}, {hi:.3f}]"
    out = []
    for r in verdict.metrics:
        name = f"human: {r.metric[len('human:'):]}" if r.kind == "human" else r.metric
        out.append({"metric": name, "n": r.n, "A mean [95% CI]": ci(r.mean_a, r.mean_a_low, r.mean_a_high),
                    "B mean [95% CI]": ci(r.mean_b, r.mean_b_low, r.mean_b_high),
                    "A-B [95% CI]": ci(r.diff, r.low, r.high), "p": r.p_randomization,
                    "A/tie/B": f"{r.wins}/{r.ties}/{r.losses}",
                    "better": r.better(verdict.system_a, verdict.system_b)})
    return pd.DataFrame(out)


def ubleu_reference_rows(details: dict[str, Any] | None) -> list[dict[str, Any]]:
    """υBLEU's extended references of one example as table rows (kind, text, source utterance,
    similarity, the rater's weight, sign) — sorted as the metric stored them."""
    if not details:
        return []
    rows = []
    for r in details.get("references", []):
        w = r.get("weight")
        rows.append({"kind": r.get("kind", ""), "weight": w, "sign": "+" if w is not None and w > 0 else
                     "-" if w is not None and w < 0 else "0", "reference": r.get("text", ""),
                     "source utterance": r.get("source_utterance") or "", "similarity": r.get("similarity")})
    return rows


def example_metric_values(cs: ComparisonScores, i: int) -> pd.DataFrame:
    """Each metric's value for pair ``i``: A, B, A - B."""
    rows = []
    for m in cs.metrics:
        a, b = float(cs.a(m)[i]), float(cs.b(m)[i])
        rows.append({"metric": m, "A": a, "B": b, "A-B": a - b})
    return pd.DataFrame(rows, columns=["metric", "A", "B", "A-B"])


# ------------------------------------------------------------------------------------------------
# correlations with human scores


def correlation_rows(cs: ComparisonScores, methods: Sequence[str] = ("spearman", "pearson"),
                     n_boot: int = 1000, seed: int = 13) -> list[dict[str, Any]]:
    """Turn-level correlation of each metric with each human dimension over both systems' rows. The
    two responses to one context form a cluster (``groups``), so intervals resample contexts."""
    from core.compare import context_groups
    from core.stats import correlate
    comp = cs.comparison
    exs = comp.examples()
    groups = context_groups(exs)
    rows = []
    for d in dimensions(exs):
        h = np.array([e.scores.get(d, math.nan) for e in exs], dtype=float)
        for m in cs.metrics:
            x = cs.table.column(m)
            row: dict[str, Any] = {"metric": m, "dimension": d}
            for meth in methods:
                c = correlate(x, h, method=meth, groups=groups, n_boot=n_boot, seed=seed)
                row.update({f"{meth}": c.r, f"{meth} low": c.low, f"{meth} high": c.high, f"{meth} p": c.p,
                            "n": c.n})
            rows.append(row)
    return rows


def scatter_frame(cs: ComparisonScores, metric: str, dimension: str) -> pd.DataFrame:
    comp = cs.comparison
    rows = []
    for side, exs, vals in (("A", comp.a, cs.a(metric)), ("B", comp.b, cs.b(metric))):
        name = comp.system_a if side == "A" else comp.system_b
        for e, v in zip(exs, vals):
            h = e.scores.get(dimension, math.nan)
            if np.isfinite(v) and np.isfinite(h):
                rows.append({"id": e.id, "system": name, metric: float(v), dimension: float(h)})
    return pd.DataFrame(rows, columns=["id", "system", metric, dimension])


def fit_line(x: Sequence[float], y: Sequence[float]) -> tuple[float, float] | None:
    """Least-squares slope and intercept (None when x is constant or fewer than 2 points)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if len(x) < 2 or np.ptp(x) == 0:
        return None
    slope, intercept = np.polyfit(x, y, 1)
    return float(slope), float(intercept)


def system_level_rows(cs: ComparisonScores) -> list[dict[str, Any]]:
    """Per metric and dimension: which system the metric prefers (higher mean, or lower when lower is
    better) and which the humans prefer (higher mean), and whether they agree. With two systems this is
    the only honest system-level view; a system-level correlation needs more systems."""
    comp = cs.comparison
    rows = []
    for d in dimensions(comp.examples()):
        ha = np.nanmean([a.scores.get(d, math.nan) for a in comp.a])
        hb = np.nanmean([b.scores.get(d, math.nan) for b in comp.b])
        human = comp.system_a if ha > hb else comp.system_b if hb > ha else "tie"
        for m in cs.metrics:
            hib = metric_class(m).higher_is_better
            ma, mb = np.nanmean(cs.a(m)), np.nanmean(cs.b(m))
            if not (np.isfinite(ma) and np.isfinite(mb)) or ma == mb:
                pref = "tie"
            else:
                pref = comp.system_a if (ma > mb) == hib else comp.system_b
            rows.append({"dimension": d, "metric": m, "metric mean A": ma, "metric mean B": mb,
                         "human mean A": ha, "human mean B": hb, "metric prefers": pref,
                         "humans prefer": human, "agree": pref == human})
    return rows


def system_correlations(table: ScoreTable, metrics: Sequence[str], method: str = "spearman",
                        n_boot: int = 500, seed: int = 13) -> list[dict[str, Any]]:
    """System-level correlation over every system of a multi-system file (``table`` scored all its rows):
    mean metric vs mean human score per system (``core.stats.system_correlation``), items = example ids."""
    from core.stats import system_correlation
    exs = table.examples
    systems = [e.system for e in exs]
    items = [e.id for e in exs]
    rows = []
    for d in dimensions(exs):
        h = np.array([e.scores.get(d, math.nan) for e in exs], dtype=float)
        for m in metrics:
            sc = system_correlation(table.column(m), h, systems, method=method, items=items, n_boot=n_boot, seed=seed)
            rows.append({"metric": m, "dimension": d, "r": sc.r, "low": sc.low, "high": sc.high, "p": sc.p,
                         "systems": sc.n_systems, "warning": sc.warning or ""})
    return rows


# ------------------------------------------------------------------------------------------------
# A/B judge


def judge_status() -> tuple[bool, str]:
    """(available, message): whether the shipped judge's weights are where the engine looks for them."""
    from core.judges.pairwise import CHECKPOINT
    from core.models.checkpoints import paths
    weights, _ = paths(CHECKPOINT)
    if not weights.exists():
        return False, (f"The A/B judge's trained weights ({weights.name}) are not in {weights.parent}; train them "
                       "with `dialeval train judge` (this page runs the judge as soon as they exist).")
    return True, "ok"


def judge_frame(comp: Comparison, p_a: Sequence[float], verdict: Sequence[str]) -> pd.DataFrame:
    rows = []
    for i, ((a, b), p, v) in enumerate(zip(comp.pairs, p_a, verdict)):
        rows.append({"pair": i, "id": a.id, "context": _short(a.context), "response A": a.response,
                     "response B": b.response, "P(A preferred)": float(p), "judge": v})
    return pd.DataFrame(rows)


def votes_from_comparison(comp: Comparison, dimension: str) -> list[Pair]:
    """Votes for the loaded pairs whose human scores on ``dimension`` differ by the human tie margin (a quarter
    of the scale, ``core.compare``); the other pairs get no vote (they are "the rest")."""
    from core.compare import human_preferences
    votes = []
    for (a, b), h in zip(comp.pairs, human_preferences(comp, dimension)[0]):
        if h in ("A", "B"):
            votes.append(Pair(list(a.context), a.response, b.response, 1.0 if h == "A" else 0.0, a.dataset,
                              a.id, a.scores.get(dimension), b.scores.get(dimension)))
    return votes


def vote_margin(comp: Comparison, dimension: str) -> float:
    """The human tie margin for ``dimension`` (a quarter of its scale, known or observed)."""
    return human_tie_margin(dimension, [e.scores.get(dimension, math.nan) for e in comp.examples()])


def default_vote_dimension(dims: Sequence[str]) -> int:
    """Index of the dimension that stands for overall preference (``core.compare``), else 0."""
    from core.compare import PREFERENCE_DIMENSIONS
    for d in PREFERENCE_DIMENSIONS:
        if d in dims:
            return list(dims).index(d)
    return 0


def learning_curve_figure(df, title: str = "Learning curve of the A/B judge"):
    """Agreement with held-out votes vs number of training votes (min-max band over folds), chance at 50 %,
    the shipped judge (0 votes) as the first point."""
    import plotly.graph_objects as go
    x = list(df["n_train"])
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=x + x[::-1], y=list(df["high"] * 100) + list(df["low"] * 100)[::-1],
                             fill="toself", line={"width": 0}, fillcolor="rgba(31,119,180,0.15)",
                             name="fold min-max", hoverinfo="skip"))
    fig.add_trace(go.Scatter(x=x, y=list(df["agreement"] * 100), mode="lines+markers", name="judge",
                             line={"color": "rgb(31,119,180)"}))
    fig.add_hline(y=50, line_dash="dot", annotation_text="chance")
    fig.update_layout(title=title, xaxis_title="training votes (0 = shipped judge)",
                      yaxis_title="agreement with held-out votes (%)", yaxis_range=[40, 100])
    return fig


def rest_frame(comp: Comparison, rest: Sequence[int], p_shipped: Sequence[float], p_tuned: Sequence[float],
               verdict: Sequence[str]) -> pd.DataFrame:
    """The loaded pairs ``rest`` (those without a vote) with the shipped and the vote-tuned judge's P(A)."""
    sub = Comparison(comp.system_a, comp.system_b, [comp.pairs[i] for i in rest])
    df = judge_frame(sub, p_tuned, verdict)
    df["pair"] = list(rest)
    df.insert(df.columns.get_loc("P(A preferred)"), "P(A) shipped", [float(p) for p in p_shipped])
    return df


def curve_sizes(n_votes: int, folds: int) -> list[int]:
    """Learning-curve sizes: 100, 200, ... 900 votes, clipped to what the training folds hold;
    for fewer than 200 trainable votes, five even steps instead."""
    max_train = int(n_votes * (folds - 1) / folds)
    if max_train >= 200:
        return sorted({s for s in range(100, 1000, 100) if s < max_train} | {min(max_train, 900)})
    return sorted({max(2, round(max_train * k / 5)) for k in range(1, 6)})


# ------------------------------------------------------------------------------------------------
# export


def export_csv(df: pd.DataFrame) -> bytes:
    return df.to_csv(index=False).encode("utf-8")


def export_jsonl(cs: ComparisonScores) -> bytes:
    """One JSON object per pair: both examples (core.data fields), each metric for A and B, details."""
    from core.report import clean_json
    comp = cs.comparison
    lines = []
    for i, (a, b) in enumerate(comp.pairs):
        rec = {"pair": i, "id": a.id, "system_a": comp.system_a, "system_b": comp.system_b,
               "context": a.context, "references": a.references or b.references,
               "response_a": a.response, "response_b": b.response,
               "scores_a": {m: float(cs.a(m)[i]) for m in cs.metrics},
               "scores_b": {m: float(cs.b(m)[i]) for m in cs.metrics},
               "human_a": a.scores, "human_b": b.scores,
               "signatures": cs.table.signatures()}
        det = {}
        for m in cs.metrics:
            da, db = cs.table.details(m, i), cs.table.details(m, cs.n + i)
            if da is not None or db is not None:
                det[m] = {"a": da, "b": db}
        if det:
            rec["details"] = det
        lines.append(json.dumps(clean_json(rec), ensure_ascii=False))
    return ("\n".join(lines) + "\n").encode("utf-8")


def mme_drilldown_rows(details: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Rows for a drill-down of one ``mme`` (or ``mme_avg``) score: each sub-metric, its group, its normalized
    score, its CRS weight for the chosen dimension and its share of the final score."""
    from core.metrics.mme import GROUPS
    if not details:
        return []
    subs = details.get("sub_scores", {})
    w = details.get("weights") or {k: 1.0 / max(len(subs), 1) for k in subs}
    group = {s: g for g, ss in GROUPS.items() if "+" not in g for s in ss}
    tot = sum(w.get(k, 0.0) for k, v in subs.items() if v is not None) or 1.0
    return [{"sub_metric": f"mme_{k}", "group": group.get(k, ""), "score": v, "weight": round(w.get(k, 0.0), 4),
             "contribution": None if v is None else round(w.get(k, 0.0) * v / tot, 4)} for k, v in subs.items()]
