"""The dashboard's Streamlit glue, in one module: session state, the engine's results cached per loaded
comparison, the judge's run, the sidebar, and the helpers that keep user text inert.

Pages import this and draw; every number comes from ``core`` (the engine scores, ``core.compare`` builds the
verdict, ``core.dashboard`` makes the tables). Metric instances load once per process (``core.scoring``);
each metric's result over one loaded comparison is kept in a process-wide store keyed by the content, so
switching pages, re-sorting or adding a metric never re-scores what was already scored.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Sequence

import streamlit as st

from core import dashboard
from core.compare import JudgeSummary, Verdict, build_verdict, summarize_judge
from core.dashboard import Loaded
from core.engine import ComparisonScores, comparison_scores, judge_comparison, score_examples
from core.scoring import JudgeOutput

APP_DIR = Path(__file__).resolve().parent.parent
DEMO_PATH = APP_DIR / "demo" / "demo.jsonl"
PAGES = {"home": "app.py", "upload": "pages/1_Upload.py", "scores": "pages/2_Scores.py",
         "judge": "pages/3_AB_Judge.py", "correlation": "pages/4_Correlation.py"}


# ------------------------------------------------------------------------------------------------
# what is loaded


def loaded() -> Loaded | None:
    return st.session_state.get("loaded")


def set_loaded(data: Loaded) -> None:
    st.session_state["loaded"] = data


def load_demo() -> None:
    set_loaded(_demo())


@st.cache_resource(show_spinner=False)
def _demo() -> Loaded:
    return dashboard.load_demo(DEMO_PATH)


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


# ------------------------------------------------------------------------------------------------
# metrics and scores


@st.cache_resource(show_spinner=False)
def available_metrics() -> dict[str, str]:
    from core.scoring import available_metrics as avail
    return avail()


@st.cache_resource(show_spinner=False)
def _result_store() -> dict:
    return {}


def selected_metrics() -> list[str]:
    avail = list(available_metrics())
    if "metrics" not in st.session_state:
        env = os.environ.get("DIALEVAL_APP_METRICS")  # e.g. "bleu" for a fast start (tests, benchmarks)
        st.session_state["metrics"] = ([m for m in env.split(",") if m in avail] if env
                                       else dashboard.default_metrics(avail))
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
            unmatched = data.comparison.describe_unmatched()
            if unmatched:  # on every page: rows without a partner are never dropped silently
                with st.expander(f"{len(unmatched)} unmatched row(s), not compared"):
                    st.text("\n".join(unmatched))
        avail = available_metrics()
        st.session_state["metrics_widget"] = selected_metrics()
        st.multiselect("Metrics", list(avail), key="metrics_widget", on_change=_sync_metrics,
                       help="Every registered metric of core.metrics; each is computed once per upload and cached.")
        with st.expander("About the metrics"):
            for k, v in avail.items():
                st.text(f"{k}: {v}")


def get_scores(data: Loaded, metrics: Sequence[str]) -> ComparisonScores:
    """``ComparisonScores`` for the chosen metrics, scoring the missing ones through the engine with a
    progress bar. A metric that fails (e.g. its checkpoint is missing) is reported and left out."""
    store = _result_store()
    comp = data.comparison
    key = data.key
    examples = comp.examples()
    errors = st.session_state.setdefault("metric_errors", {})
    todo = [m for m in metrics if (key, m) not in store and (key, m) not in errors]
    if todo:
        bar = st.progress(0.0, text="scoring ...")
        for j, m in enumerate(todo):
            def progress(done: int, total: int, desc: str, m=m, j=j) -> None:
                frac = (j + (done / total if total else 1.0)) / len(todo)
                bar.progress(min(1.0, frac), text=f"{m} ({j + 1}/{len(todo)}): {desc} {done}/{total}")
            bar.progress(j / len(todo), text=f"{m} ({j + 1}/{len(todo)}): loading")
            try:
                store[(key, m)] = score_examples(examples, [m], progress=progress).results[m]
            except Exception as e:  # a broken or untrained metric must not take the dashboard down
                errors[(key, m)] = f"{type(e).__name__}: {e}"
        bar.empty()
    for m in metrics:
        if (key, m) in errors:
            st.warning(f"{m} could not be computed: {plain(errors[(key, m)])}")
    results = {m: store[(key, m)] for m in metrics if (key, m) in store}
    return comparison_scores(comp, results)


def metric_results(key, metrics: Sequence[str], examples, progress=None) -> dict:
    """Each metric's result over ``examples`` (e.g. every system of a multi-system file), scored once through
    the engine and kept under ``key``."""
    store = _result_store()
    for m in metrics:
        if (key, m) not in store:
            store[(key, m)] = score_examples(examples, [m], progress=progress).results[m]
    return {m: store[(key, m)] for m in metrics}


@st.cache_data(show_spinner=False)
def cached_verdict(key: str, metrics: tuple[str, ...], judged: bool, _cs: ComparisonScores,
                   _judge: JudgeSummary | None) -> Verdict:
    """The verdict (``core.compare``, the same defaults as ``dialeval compare``) for one loaded comparison."""
    return build_verdict(_cs.comparison, _cs, _judge)


@st.cache_data(show_spinner=False)
def cached_frame(key: str, metrics: tuple[str, ...], _cs: ComparisonScores):
    return dashboard.per_example_frame(_cs)


# ------------------------------------------------------------------------------------------------
# the judge


@st.cache_resource(show_spinner=False)
def _judge_store() -> dict:
    return {}


def judge_output(data: Loaded) -> JudgeOutput | None:
    """The judge's output over the loaded pairs, if it has been run in this process."""
    return _judge_store().get(data.key)


def run_judge(data: Loaded) -> JudgeOutput | None:
    """Run the shipped judge over every loaded pair (through the engine) with a progress bar."""
    bar = st.progress(0.0, text="loading the judge")

    def progress(done, total, desc):
        bar.progress(min(1.0, done / total if total else 1.0), text=f"{desc} {done}/{total}")
    try:
        _judge_store()[data.key] = judge_comparison(data.comparison, progress=progress)
    except Exception as e:  # a missing or incompatible checkpoint must not take the page down
        st.error(f"The judge could not run: {type(e).__name__}: {plain(str(e))}")
    bar.empty()
    return judge_output(data)


def judge_summary(data: Loaded, dimension: str | None = None) -> JudgeSummary | None:
    out = judge_output(data)
    return None if out is None else summarize_judge(data.comparison, out, dimension)


# ------------------------------------------------------------------------------------------------
# user text stays inert


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
