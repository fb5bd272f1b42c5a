"""dialeval dashboard: the router and the home page (what is loaded and which system is better).

    streamlit run app.py

Pages are plain scripts in ``pages/`` that draw; the Streamlit glue (session state, cached results, the
sidebar) is ``pages/state.py``; every number comes from ``core``. User text is only ever shown with
``st.text`` or inside data frames, never as markdown or HTML.
"""
from __future__ import annotations

import streamlit as st

from core import dashboard
from pages import state


def home() -> None:
    st.session_state["_page"] = "home"
    state.sidebar()
    st.title("dialeval: which of two dialogue systems is better?")
    st.caption("Metrics validated against human ratings: BLEU, υBLEU, RUBER, ADEM, MME-CRS, a learned A/B judge.")
    data = state.require_data()
    if data is None:
        return
    comp = data.comparison
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("System A", state.plain(comp.system_a))
    c2.metric("System B", state.plain(comp.system_b))
    c3.metric("Pairs", data.n)
    c4.metric("Human dimensions", len(data.dimensions))
    st.text(f"Source: {data.name}   aligned by: {comp.aligned_by}")
    if comp.unmatched_a or comp.unmatched_b:
        with st.expander(f"{len(comp.unmatched_a) + len(comp.unmatched_b)} rows without a partner (not scored)"):
            st.text("\n".join(comp.describe_unmatched()[:200]))
    metrics = state.selected_metrics()
    if not metrics:
        st.info("Choose at least one metric in the sidebar.")
        return
    cs = state.get_scores(data, metrics)
    if not cs.metrics:
        return
    judge = state.judge_summary(data)
    verdict = state.cached_verdict(data.key, tuple(cs.metrics), judge is not None, cs, judge)
    st.session_state["verdict"] = verdict  # what this page shows: the report and the tests read it
    st.subheader("Headline comparison")
    st.dataframe(dashboard.headline_frame(verdict), hide_index=True, width="stretch",
                 column_config={"p": st.column_config.NumberColumn(format="%.4f")})
    st.caption(f"Means with 95% bootstrap intervals ({verdict.n_boot:,} resamples of the contexts, seed "
               f"{verdict.seed}); A-B is the paired mean difference; p from approximate randomization "
               f"({verdict.n_perm:,}); 'better' only when p < 0.05 and the interval of A-B excludes 0 "
               "(core.compare, the same numbers as `dialeval compare`).")
    if verdict.judge is not None:
        j = verdict.judge
        w = j.win
        st.text(f"Judge: prefers A in {w.wins}, B in {w.losses}, tie in {w.ties} of {j.n} pairs; win rate of A "
                f"{w.rate:.1%} (ties excluded) [{w.low:.1%}, {w.high:.1%}] -> "
                f"{j.better(comp.system_a, comp.system_b)}")
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots
    mrows = verdict.rows("metric")
    fig = make_subplots(rows=len(mrows), cols=1, subplot_titles=[r.metric for r in mrows],
                        vertical_spacing=0.12 if len(mrows) < 6 else 0.5 / len(mrows))
    for k, r in enumerate(mrows, start=1):  # one axis per metric: their scales differ (BLEU 0-100, RUBER 0-1)
        fig.add_trace(go.Scatter(x=[r.diff], y=[""], mode="markers", showlegend=False, name=r.metric,
                                 error_x=dict(type="data", symmetric=False, array=[r.high - r.diff],
                                              arrayminus=[r.diff - r.low])), row=k, col=1)
        fig.add_vline(x=0, line_dash="dash", line_color="grey", row=k, col=1)
        lo, hi = min(r.low, 0.0), max(r.high, 0.0)
        if lo == lo and hi == hi and hi > lo:  # finite interval: keep 0 visible with a margin
            pad = 0.08 * (hi - lo)
            fig.update_xaxes(range=[lo - pad, hi + pad], row=k, col=1)
    fig.update_layout(title=f"A - B per metric with 95% interval (right of 0: {state.plotly_plain(comp.system_a)} "
                            "higher)", height=110 + 90 * len(mrows), margin=dict(l=10, r=10, t=70, b=10))
    st.plotly_chart(fig, width="stretch")
    with st.expander("Signatures (metric, variant, checkpoint, pool, version)"):
        st.dataframe([{"metric": k, "signature": v} for k, v in cs.table.signatures().items()],
                     hide_index=True, width="stretch")
    st.subheader("Next")
    st.page_link(state.PAGES["scores"], label="Per-example scores and υBLEU references")
    st.page_link(state.PAGES["judge"], label="A/B judge")
    st.page_link(state.PAGES["correlation"], label="Correlation with human scores")
    st.page_link(state.PAGES["upload"], label="Upload other systems")


st.set_page_config(page_title="dialeval", layout="wide")
st.navigation([st.Page(home, title="Home", icon=":material/home:", default=True),
               st.Page(state.PAGES["upload"], title="Upload", icon=":material/upload:"),
               st.Page(state.PAGES["scores"], title="Scores", icon=":material/table:"),
               st.Page(state.PAGES["judge"], title="A/B judge", icon=":material/balance:"),
               st.Page(state.PAGES["correlation"], title="Correlation", icon=":material/scatter_plot:")]).run()
