"""dialeval dashboard, home page: what is loaded and which system is better.

    streamlit run app.py

The functions above the ``__main__`` block are the dashboard's shared Streamlit glue (session state,
cached models and scores, the sidebar); pages import them from here. All computing lives in ``core``
(``core.app_state`` builds every table shown). User text is only ever shown with ``st.text`` or inside
data frames, never as markdown or HTML.
"""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Sequence

ROOT = Path(__file__).resolve().parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import streamlit as st  # noqa: E402

from core import app_state  # noqa: E402
from core.app_state import Loaded  # noqa: E402

PAGES = {"home": "app.py", "upload": "pages/1_Upload.py", "scores": "pages/2_Scores.py",
         "judge": "pages/3_AB_Judge.py", "correlation": "pages/4_Correlation.py"}


# ------------------------------------------------------------------------------------------------
# state


def loaded() -> Loaded | None:
    return st.session_state.get("loaded")


def set_loaded(data: Loaded) -> None:
    st.session_state["loaded"] = data


def load_demo() -> None:
    set_loaded(_demo())


@st.cache_resource(show_spinner=False)
def _demo() -> Loaded:
    return app_state.load_demo()


# ------------------------------------------------------------------------------------------------
# models and scores: metric instances load once per process; each metric's result over one loaded
# comparison is kept in a process-wide store keyed by content, so switching pages, re-sorting or
# adding a metric never re-scores what was already scored.


@st.cache_resource(show_spinner=False)
def available_metrics() -> dict[str, str]:
    from core.metrics import available_metrics as avail
    return avail()


@st.cache_resource(show_spinner=False)
def metric_instance(name: str):
    from core.metrics import get_metric
    return get_metric(name)


@st.cache_resource(show_spinner=False)
def _result_store() -> dict:
    return {}


def selected_metrics() -> list[str]:
    avail = list(available_metrics())
    if "metrics" not in st.session_state:
        env = os.environ.get("DIALEVAL_APP_METRICS")  # e.g. "bleu" for a fast start (tests, benchmarks)
        st.session_state["metrics"] = ([m for m in env.split(",") if m in avail] if env
                                       else app_state.default_metrics(avail))
    return [m for m in st.session_state["metrics"] if m in avail]


def _sync_metrics() -> None:
    st.session_state["metrics"] = list(st.session_state["metrics_widget"])


def sidebar() -> None:
    """What is loaded and which metrics to compute (the choice is kept across pages)."""
    data = loaded()
    with st.sidebar:
        if data is None:
            st.caption("Nothing loaded yet.")
        else:
            st.caption("Loaded")
            st.text(f"{data.name}\nA: {data.comparison.system_a}\nB: {data.comparison.system_b}\n{data.n} pairs")
        avail = available_metrics()
        st.session_state["metrics_widget"] = selected_metrics()
        st.multiselect("Metrics", list(avail), key="metrics_widget", on_change=_sync_metrics,
                       help="Every registered metric of core.metrics; each is computed once per upload and cached.")
        with st.expander("About the metrics"):
            for k, v in avail.items():
                st.text(f"{k}: {v}")


def get_scores(data: Loaded, metrics: Sequence[str]):
    """``ComparisonScores`` for the chosen metrics, computing the missing ones with a progress bar.
    A metric that fails (e.g. its checkpoint is missing) is reported and left out."""
    store = _result_store()
    comp = data.comparison
    examples = comp.examples()
    errors = st.session_state.setdefault("metric_errors", {})
    todo = [m for m in metrics if (data.key, m) not in store and (data.key, m) not in errors]
    if todo:
        bar = st.progress(0.0, text="scoring ...")
        for j, m in enumerate(todo):
            def progress(done: int, total: int, desc: str, m=m, j=j) -> None:
                frac = (j + (done / total if total else 1.0)) / len(todo)
                bar.progress(min(1.0, frac), text=f"{m} ({j + 1}/{len(todo)}): {desc} {done}/{total}")
            bar.progress(j / len(todo), text=f"{m} ({j + 1}/{len(todo)}): loading")
            try:
                store[(data.key, m)] = metric_instance(m)(examples, progress)
            except Exception as e:  # a broken or untrained metric must not take the dashboard down
                errors[(data.key, m)] = f"{type(e).__name__}: {e}"
        bar.empty()
    for m in metrics:
        if (data.key, m) in errors:
            st.warning(f"{m} could not be computed: {plain(errors[(data.key, m)])}")
    results = {m: store[(data.key, m)] for m in metrics if (data.key, m) in store}
    return app_state.assemble(comp, results)


@st.cache_data(show_spinner=False)
def cached_headline(key: str, metrics: tuple[str, ...], _cs) -> list[dict]:
    return app_state.headline(_cs)


@st.cache_data(show_spinner=False)
def cached_frame(key: str, metrics: tuple[str, ...], _cs):
    return app_state.per_example_frame(_cs)


def require_data() -> Loaded | None:
    """The loaded comparison, or a note with a one-click demo button."""
    data = loaded()
    if data is None and os.environ.get("DIALEVAL_DEMO") == "1" and not st.session_state.get("_demo_autoloaded"):
        # `make run` starts on the built-in demo; once per session, so "clear" on the Upload page sticks
        st.session_state["_demo_autoloaded"] = True
        load_demo()
        data = loaded()
    if data is None:
        st.info("No data loaded yet. Upload two systems' responses on the Upload page, or try the built-in demo.")
        if st.button("Load the built-in demo", key="demo_from_" + st.session_state.get("_page", "page")):
            load_demo()
            st.rerun()
        st.page_link(PAGES["upload"], label="Go to Upload")
    return data


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:])")


def plain(text: str) -> str:
    """User text made inert for Streamlit's markdown (labels, captions, alerts): every markdown
    character is backslash-escaped, so a system called ``[x](http://...)`` stays that text."""
    return _MD_SPECIAL.sub(r"\\\1", str(text))


def plotly_plain(text) -> str:
    """User text made inert for plotly, which renders a subset of HTML (<a>, <b>, <br>) in labels."""
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def show_text(label: str, text: str) -> None:
    st.caption(plain(label))
    st.text(text if text else "(empty)")


# ------------------------------------------------------------------------------------------------
# home


def home() -> None:
    st.set_page_config(page_title="dialeval", layout="wide")
    st.session_state["_page"] = "home"
    sidebar()
    st.title("dialeval: which of two dialogue systems is better?")
    st.caption("Metrics validated against human ratings: BLEU, υBLEU, RUBER, ADEM, MME-CRS, a learned A/B judge.")
    data = require_data()
    if data is None:
        return
    comp = data.comparison
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("System A", plain(comp.system_a))
    c2.metric("System B", plain(comp.system_b))
    c3.metric("Pairs", data.n)
    c4.metric("Human dimensions", len(data.dimensions))
    st.text(f"Source: {data.name}   aligned by: {comp.aligned_by}")
    if comp.unmatched_a or comp.unmatched_b:
        with st.expander(f"{len(comp.unmatched_a) + len(comp.unmatched_b)} rows without a partner (not scored)"):
            st.text("\n".join(comp.describe_unmatched()[:200]))
    metrics = selected_metrics()
    if not metrics:
        st.info("Choose at least one metric in the sidebar.")
        return
    cs = get_scores(data, metrics)
    if not cs.metrics:
        return
    st.subheader("Headline comparison")
    rows = cached_headline(data.key, tuple(cs.metrics), cs)
    st.dataframe(app_state.headline_frame(rows), hide_index=True, width="stretch",
                 column_config={"p": st.column_config.NumberColumn(format="%.4f")})
    st.caption("Means with 95% bootstrap intervals (1,000 resamples, seed 13); A-B is the paired mean difference; "
               "p from approximate randomization; 'better' only when p < 0.05 and the interval of A-B excludes 0 "
               "(core.stats.paired_comparison).")
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots
    mrows = [r for r in rows if r["kind"] == "metric"]
    fig = make_subplots(rows=len(mrows), cols=1, subplot_titles=[r["metric"] for r in mrows], vertical_spacing=0.12
                        if len(mrows) < 6 else 0.5 / len(mrows))
    for k, r in enumerate(mrows, start=1):  # one axis per metric: their scales differ (BLEU 0-100, RUBER 0-1)
        fig.add_trace(go.Scatter(x=[r["A-B"]], y=[""], mode="markers", showlegend=False, name=r["metric"],
                                 error_x=dict(type="data", symmetric=False, array=[r["A-B high"] - r["A-B"]],
                                              arrayminus=[r["A-B"] - r["A-B low"]])), row=k, col=1)
        fig.add_vline(x=0, line_dash="dash", line_color="grey", row=k, col=1)
        lo, hi = min(r["A-B low"], 0.0), max(r["A-B high"], 0.0)
        if lo == lo and hi == hi and hi > lo:  # finite interval: keep 0 visible with a margin
            pad = 0.08 * (hi - lo)
            fig.update_xaxes(range=[lo - pad, hi + pad], row=k, col=1)
    fig.update_layout(title=f"A - B per metric with 95% interval (right of 0: {plotly_plain(comp.system_a)} higher)",
                      height=110 + 90 * len(mrows), margin=dict(l=10, r=10, t=70, b=10))
    st.plotly_chart(fig, width="stretch")
    with st.expander("Signatures (metric, variant, checkpoint, pool, version)"):
        st.dataframe([{"metric": k, "signature": v} for k, v in cs.table.signatures().items()],
                     hide_index=True, width="stretch")
    st.subheader("Next")
    st.page_link(PAGES["scores"], label="Per-example scores and υBLEU references")
    st.page_link(PAGES["judge"], label="A/B judge")
    st.page_link(PAGES["correlation"], label="Correlation with human scores")
    st.page_link(PAGES["upload"], label="Upload other systems")


if __name__ == "__main__":
    # run through the importable module so the home page and the pages share one set of caches
    import app as _app
    _app.home()
