"""Scores: per-example table (A and B side by side, every metric, A - B), drill-down with υBLEU's
extended references, distribution charts, CSV / JSONL export."""
import numpy as np
import plotly.express as px
import plotly.graph_objects as go
import streamlit as st

from core import dashboard
from pages import state

st.session_state["_page"] = "scores"
state.sidebar()
st.title("Per-example scores")
data = state.require_data()
metrics = state.selected_metrics()
if data is not None and not metrics:
    st.info("Choose at least one metric in the sidebar.")
if data is not None and metrics:
    comp = data.comparison
    cs = state.get_scores(data, metrics)
    if cs.metrics:
        st.text(f"A = {comp.system_a}    B = {comp.system_b}    {cs.n} pairs")
        df = state.cached_frame(data.key, tuple(cs.metrics), cs)

        # -- table ------------------------------------------------------------------------------
        c1, c2, c3 = st.columns([3, 2, 2])
        text = c1.text_input("Filter: text in id, context, responses or reference", key="flt_text")
        fmetric = c2.selectbox("Winner by metric", cs.metrics, key="flt_metric")
        winner = c3.radio("Winner", ["all", "A", "B", "tie"], horizontal=True, key="flt_winner")
        c4, c5 = st.columns([3, 2])
        sort_cols = [c for c in df.columns if c not in ("context", "response A", "response B", "reference")]
        sort_by = c4.selectbox("Sort by", sort_cols, index=sort_cols.index(f"{fmetric} A-B"), key="sort_by")
        desc = c5.toggle("Descending", value=True, key="sort_desc")
        view = dashboard.filter_frame(df, text, winner, fmetric).sort_values(sort_by, ascending=not desc,
                                                                               na_position="last")
        st.caption(f"{len(view)} of {len(df)} pairs; click a column header to re-sort. Differences are A - B.")
        num_cfg = {c: st.column_config.NumberColumn(format="%.3f") for c in df.columns
                   if c.endswith((" A", " B", " A-B")) and c not in ("response A", "response B")}
        st.dataframe(view, hide_index=True, width="stretch", height=420, column_config=num_cfg)
        d1, d2 = st.columns(2)
        d1.download_button("Export table (CSV)", dashboard.export_csv(view), file_name="dialeval_scores.csv",
                           mime="text/csv", key="dl_csv", on_click="ignore")
        d2.download_button("Export with details (JSONL)", dashboard.export_jsonl(cs), file_name="dialeval_scores.jsonl",
                           mime="application/jsonl", key="dl_jsonl", on_click="ignore")

        # -- drill-down -------------------------------------------------------------------------
        st.subheader("One example")
        options = view["pair"].tolist() or df["pair"].tolist()
        labels = {int(r.pair): f"{r.id}" for r in df[["pair", "id"]].itertuples()}
        i = int(st.selectbox("Example", options, format_func=lambda p: labels.get(int(p), str(p)), key="drill"))
        a, b = comp.pairs[i]
        left, right = st.columns([2, 3])
        with left:
            st.caption("Context (oldest first)")
            for k, turn in enumerate(a.context):
                st.text(f"[{k + 1 - len(a.context)}] {turn}")
            state.show_text(f"Response A ({comp.system_a})", a.response)
            state.show_text(f"Response B ({comp.system_b})", b.response)
            for k, ref in enumerate(a.references or b.references):
                state.show_text(f"Reference {k + 1}", ref)
        with right:
            st.caption("Metric values")
            st.dataframe(dashboard.example_metric_values(cs, i), hide_index=True, width="stretch",
                         column_config={c: st.column_config.NumberColumn(format="%.3f") for c in ("A", "B", "A-B")})
            if "ubleu" in cs.metrics:
                det = cs.table.details("ubleu", i) or cs.table.details("ubleu", cs.n + i)
                refs = dashboard.ubleu_reference_rows(det)
                st.caption(f"υBLEU extended references (retriever {det.get('retriever', '?') if det else '?'}, "
                           f"pool {det.get('pool', '?') if det else '?'}): weight > 0 green, < 0 red")
                if refs:
                    import pandas as pd
                    rdf = pd.DataFrame(refs)

                    def colour(row):
                        w = row["weight"]
                        c = "" if w is None or w == 0 else (
                            "background-color: rgba(0,160,60,0.25)" if w > 0 else "background-color: rgba(220,0,0,0.25)")
                        return [c] * len(row)
                    st.dataframe(rdf.style.apply(colour, axis=1).format({"weight": "{:+.3f}", "similarity": "{:.3f}"},
                                                                         na_rep="-"),
                                 hide_index=True, width="stretch")
                else:
                    st.text("(no extended references: the example has no reference)")
            else:
                st.caption("Add 'ubleu' in the sidebar to see its retrieved references and NN-rater weights.")
            mme_name = next((m for m in ("mme", "mme_avg") if m in cs.metrics), None)
            if mme_name:
                for side, idx in (("A", i), ("B", cs.n + i)):
                    det = cs.table.details(mme_name, idx)
                    rows = dashboard.mme_drilldown_rows(det)
                    if rows:
                        st.caption(f"{mme_name} sub-metrics for {side} (dimension "
                                   f"{det.get('dimension', '?') if det else '?'}): normalized score x CRS weight")
                        st.dataframe(rows, hide_index=True, width="stretch")

        # -- charts -----------------------------------------------------------------------------
        st.subheader("Distributions")
        cm = st.selectbox("Metric", cs.metrics, key="chart_metric")
        long = dashboard.long_scores(cs)
        long["system"] = long["system"].map(state.plotly_plain)
        sub = long[long["metric"] == cm]
        g1, g2 = st.columns(2)
        fig = px.histogram(sub, x="value", color="system", barmode="overlay", opacity=0.6, nbins=30,
                           marginal="box", title=f"{cm} per system")
        g1.plotly_chart(fig, width="stretch", key="hist_metric")
        diff = cs.a(cm) - cs.b(cm)
        diff = diff[np.isfinite(diff)]
        fig2 = go.Figure(go.Histogram(x=diff, nbinsx=30, name="A - B"))
        fig2.add_vline(x=0, line_dash="dash", line_color="grey")
        fig2.update_layout(title=f"per-example {cm}: A - B (right of 0: {state.plotly_plain(comp.system_a)} higher)",
                           xaxis_title="A - B", yaxis_title="pairs")
        g2.plotly_chart(fig2, width="stretch", key="hist_diff")
        if len(cs.metrics) > 1:
            fig3 = px.box(long, x="system", y="value", color="system", facet_col="metric", facet_col_wrap=4,
                          title="every metric per system")
            fig3.update_yaxes(matches=None, showticklabels=True)
            st.plotly_chart(fig3, width="stretch", key="box_all")
