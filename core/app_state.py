"""What the dashboard shows, computed without Streamlit (so the CLI and tests can reuse it).

The pages in ``pages/`` only draw; everything they display comes from here: loading an upload into a
``Comparison``, the per-example table (both systems side by side, every metric, the difference A - B),
the headline comparison (means with 95% bootstrap intervals and a paired verdict, ``core.stats``),
υBLEU's extended references as rows, metric-vs-human correlations, the judge's agreement with human
preferences, and CSV / JSONL exports.

Conventions: the comparison is scored as one batch, A's rows then B's (``core.engine``); pair ``i`` is
row ``i`` of the per-example table; a "context id" groups the two responses to one input.
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

from core.data import Comparison, CsvMapping, DataError, Example, Problem, align, compare_systems, dimensions, \
    load_file, systems_in
from core.engine import ComparisonScores, ScoreTable
from core.metrics import MetricResult

ROOT = Path(__file__).resolve().parent.parent
DEMO_PATH = ROOT / "demo" / "demo.jsonl"
DEMO_NAME = "built-in demo (chitchat: C-BM25 vs SmolLM2-135M)"
MAX_UPLOAD_MB = 50  # must match server.maxUploadSize in .streamlit/config.toml (a test checks)
CHEAP_METRICS = ("bleu",)  # no model to load: the fast default when nothing else is chosen
PREFERRED_DEFAULT = ("bleu", "ubleu", "bert_ruber", "mme")  # the best-correlated metrics in benchmarks/RESULTS.md


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


def load_demo() -> Loaded:
    """The built-in demo (``demo/demo.jsonl``, made by ``scripts/make_demo.py``)."""
    data = DEMO_PATH.read_bytes()
    exs = parse_upload(str(DEMO_PATH), data)
    return make_loaded(DEMO_NAME, exs, None, None, None, [data])


def default_metrics(available: Sequence[str]) -> list[str]:
    return [m for m in PREFERRED_DEFAULT if m in available] or list(available)[:1]


# ------------------------------------------------------------------------------------------------
# scores


def assemble(comp: Comparison, results: dict[str, MetricResult]) -> ComparisonScores:
    """A ``ComparisonScores`` from per-metric results computed separately (each cached on its own, so
    adding a metric never re-scores the others)."""
    table = ScoreTable(comp.examples(), dict(results))
    return ComparisonScores(comp, table)


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


def headline(cs: ComparisonScores, n_boot: int = 1000, seed: int = 13) -> list[dict[str, Any]]:
    """Per metric (and per human dimension when present): mean of A and of B with 95% bootstrap
    intervals, the paired difference A - B with its interval, the randomization p-value, win/tie/loss
    and the verdict of ``core.stats.paired_comparison``."""
    from core.metrics import metric_class
    from core.stats import mean_ci, paired_comparison
    rows = []
    series: list[tuple[str, str, np.ndarray, np.ndarray, bool]] = []
    for m in cs.metrics:
        try:
            hib = metric_class(m).higher_is_better
        except KeyError:
            hib = True
        series.append((m, "metric", cs.a(m), cs.b(m), hib))
    comp = cs.comparison
    for d in dimensions(comp.examples()):
        ha = np.array([a.scores.get(d, math.nan) for a in comp.a], dtype=float)
        hb = np.array([b.scores.get(d, math.nan) for b in comp.b], dtype=float)
        series.append((f"human: {d}", "human", ha, hb, True))
    for name, kind, a, b, hib in series:
        ma, la, ua = mean_ci(a, n_boot=n_boot, seed=seed)
        mb, lb, ub = mean_ci(b, n_boot=n_boot, seed=seed)
        pr = paired_comparison(a, b, n_boot=n_boot, n_perm=n_boot, seed=seed, higher_is_better=hib)
        better = {"A better": comp.system_a, "B better": comp.system_b}.get(pr.verdict, "no significant difference")
        rows.append({"metric": name, "kind": kind, "n": pr.n, "mean A": ma, "A low": la, "A high": ua,
                     "mean B": mb, "B low": lb, "B high": ub, "A-B": pr.diff, "A-B low": pr.low,
                     "A-B high": pr.high, "p (randomization)": pr.p_randomization, "wins A": pr.wins,
                     "ties": pr.ties, "wins B": pr.losses, "better": better, "verdict": pr.verdict,
                     "higher is better": hib})
    return rows


def headline_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Display form of ``headline``: 'mean [low, high]' cells."""
    def ci(m, lo, hi):
        return "-" if m is None or not np.isfinite(m) else f"{m:.3f} [{lo:.3f}, {hi:.3f}]"
    out = []
    for r in rows:
        out.append({"metric": r["metric"], "n": r["n"], "A mean [95% CI]": ci(r["mean A"], r["A low"], r["A high"]),
                    "B mean [95% CI]": ci(r["mean B"], r["B low"], r["B high"]),
                    "A-B [95% CI]": ci(r["A-B"], r["A-B low"], r["A-B high"]),
                    "p": r["p (randomization)"], "A/tie/B": f"{r['wins A']}/{r['ties']}/{r['wins B']}",
                    "better": r["better"]})
    return pd.DataFrame(out)


def ubleu_reference_rows(details: dict[str, Any] | None) -> list[dict[str, Any]]:
    """υBLEU's extended references of one example as table rows (kind, text, source utterance,
    similarity, NN-rater weight, sign) — sorted as the metric stored them."""
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
    from core.stats import correlate
    comp = cs.comparison
    exs = comp.examples()
    groups = list(range(cs.n)) * 2
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
    from core.metrics import metric_class
    comp = cs.comparison
    rows = []
    for d in dimensions(comp.examples()):
        ha = np.nanmean([a.scores.get(d, math.nan) for a in comp.a])
        hb = np.nanmean([b.scores.get(d, math.nan) for b in comp.b])
        human = comp.system_a if ha > hb else comp.system_b if hb > ha else "tie"
        for m in cs.metrics:
            try:
                hib = metric_class(m).higher_is_better
            except KeyError:
                hib = True
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
    """(available, message): whether ``core.judge`` exists and exposes ``load_judge``."""
    try:
        import core.judge as judge  # noqa: F401
    except ModuleNotFoundError as e:
        if e.name == "core.judge":
            return False, ("The learned A/B judge (core/judge.py) is not part of this build yet; this page will "
                           "run it over every pair as soon as it lands.")
        raise
    if not hasattr(judge, "load_judge"):
        return False, "core.judge exists but has no load_judge() yet."
    from core.checkpoints import paths
    weights, manifest = paths(getattr(judge, "CHECKPOINT", "judge"))
    if not weights.exists():
        return False, (f"The A/B judge's trained weights ({weights.name}) are not in checkpoints/ yet; train them "
                       "with `python -m core train judge` (this page runs the judge as soon as they exist).")
    return True, "ok"


def human_preferences(comp: Comparison, dimension: str, margin: float = 0.0) -> list[str | None]:
    """Per pair, which reply humans preferred on ``dimension``: "A", "B", "tie" (|difference| <= margin)
    or None when a score is missing."""
    out: list[str | None] = []
    for a, b in comp.pairs:
        ha, hb = a.scores.get(dimension), b.scores.get(dimension)
        if ha is None or hb is None or not (math.isfinite(ha) and math.isfinite(hb)):
            out.append(None)
        elif abs(ha - hb) <= margin:
            out.append("tie")
        else:
            out.append("A" if ha > hb else "B")
    return out


def judge_frame(comp: Comparison, p_a: Sequence[float], verdict: Sequence[str]) -> pd.DataFrame:
    rows = []
    for i, ((a, b), p, v) in enumerate(zip(comp.pairs, p_a, verdict)):
        rows.append({"pair": i, "id": a.id, "context": _short(a.context), "response A": a.response,
                     "response B": b.response, "P(A preferred)": float(p), "judge": v})
    return pd.DataFrame(rows)


def judge_summary(verdict: Sequence[str]) -> dict[str, Any]:
    """Judge win rate of A over decided pairs (ties excluded) with its Wilson interval."""
    from core.stats import wilson_interval
    wa = sum(v == "A" for v in verdict)
    wb = sum(v == "B" for v in verdict)
    ties = len(verdict) - wa - wb
    lo, hi = wilson_interval(wa, wa + wb) if wa + wb else (math.nan, math.nan)
    return {"wins A": wa, "wins B": wb, "ties": ties, "win rate A": wa / (wa + wb) if wa + wb else math.nan,
            "low": lo, "high": hi}


def judge_agreement(verdict: Sequence[str], human: Sequence[str | None]) -> dict[str, Any]:
    """Agreement of judge verdicts with human preferences on the pairs where humans preferred one reply
    (human ties and missing scores excluded), with its Wilson interval."""
    from core.stats import wilson_interval
    decided = [(v, h) for v, h in zip(verdict, human) if h in ("A", "B")]
    k = sum(v == h for v, h in decided)
    n = len(decided)
    lo, hi = wilson_interval(k, n) if n else (math.nan, math.nan)
    return {"n": n, "agree": k, "agreement": k / n if n else math.nan, "low": lo, "high": hi}


def votes_from_comparison(comp: Comparison, dimension: str) -> list:
    """Votes (``core.judge.Pair``) for the loaded pairs whose human scores on ``dimension`` differ by the
    judge's clear margin (a quarter of the scale); the other pairs get no vote (they are "the rest")."""
    from core import judge as J
    margin = vote_margin(comp, dimension)
    votes = []
    for (a, b), h in zip(comp.pairs, human_preferences(comp, dimension, margin - 1e-9)):
        if h in ("A", "B"):
            votes.append(J.Pair(list(a.context), a.response, b.response, 1.0 if h == "A" else 0.0, a.dataset,
                                a.id, a.scores.get(dimension), b.scores.get(dimension)))
    return votes


def vote_margin(comp: Comparison, dimension: str) -> float:
    """The judge's clear margin for ``dimension`` (a quarter of its scale, known or observed)."""
    from core import judge as J
    values = [e.scores.get(dimension) for e in comp.examples()]
    return J.margin_for(dimension, [v for v in values if v is not None and math.isfinite(v)])


def default_vote_dimension(dimensions: Sequence[str]) -> int:
    """Index of the dimension the judge treats as "which reply is better" (overall first), else 0."""
    from core.judge import PREFERENCE_DIMENSIONS
    for d in PREFERENCE_DIMENSIONS:
        if d in dimensions:
            return list(dimensions).index(d)
    return 0


def vote_index(comp: Comparison, votes: Sequence) -> list[str | None]:
    """Per loaded pair, the vote on it in the comparison's orientation ("A", "B", "tie") or None. A vote
    matches a pair by its context and both replies (whitespace and case ignored), in either order; a vote in
    the swapped order is flipped."""
    from core import judge as J

    def key(ctx, x, y):
        return J.context_key(ctx), J._norm(x), J._norm(y)
    flip = {"A": "B", "B": "A", "tie": "tie"}
    table: dict[tuple, str] = {}
    for v in votes:
        table[key(v.context, v.response_a, v.response_b)] = v.vote
        table.setdefault(key(v.context, v.response_b, v.response_a), flip[v.vote])
    return [table.get(key(a.context, a.response, b.response)) for a, b in comp.pairs]


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
