"""Scores: per-example table (A and B side by side, every metric, A - B; click a row to open it), drill-down
with matched n-grams and υBLEU's extended references, slices with their own intervals, distribution charts,
CSV / JSONL export of exactly the rows shown."""
import html

import numpy as np
import plotly.express as px
import plotly.graph_objects as go
import streamlit as st

from core.html_report import highlight_html
from core.slices import SLICE_KINDS, metadata_columns, slice_comparison
from core.stats import MIN_RESAMPLED
from core.verdict_policy import shipped_policy
from dashboard import exports, state, tables, words

# the text columns' widths in pixels: narrow enough that a laptop (1400 px, sidebar open) sees the first metric's
# columns beside them (the full text is in the drill-down below and on hover)
TEXT_WIDTH = {"context": 150, "response A": 140, "response B": 140, "reference": 120}

st.session_state["_page"] = "scores"
st.title("Per-example scores")
data = state.require_data()
metrics = state.selected_metrics()
if data is not None and not metrics:
    st.info("Choose at least one metric in the sidebar.")


def score_column(column: str) -> bool:
    """Whether a per-example table column holds a metric's scores ('bleu A', 'bleu B', 'bleu A-B')."""
    head, _, side = column.rpartition(" ")
    return side in ("A", "B", "A-B") and bool(head) and column not in ("response A", "response B")


def column_label(column: str) -> str:
    """A per-example table column as a person reads it: a metric's display name over its id ('BLEU A-B' for
    'bleu A-B'); the table, the address and the exports keep the ids."""
    if score_column(column):
        head, _, side = column.rpartition(" ")
        return f"{words.name(head)} {side}"
    return column


def on_table_select() -> None:
    """A click in the table: a row opens that pair below; a column header sorts by that column (clicking the
    sorted column again flips the order), so the header and the 'Sort by' control never disagree."""
    sel = st.session_state.get("scores_table", {}).get("selection", {})
    rows, cols = list(sel.get("rows", [])), list(sel.get("columns", []))
    rows += [c[0] for c in sel.get("cells", [])]  # a click on any cell opens its row
    view_pairs = st.session_state.get("_view_pairs", [])
    if rows and rows[0] < len(view_pairs):
        st.session_state["drill"] = int(view_pairs[rows[0]])
        state.keep("drill")
    before = st.session_state.get("_sorted_column")
    if cols and cols[0] != before:
        st.session_state["sort_by"] = cols[0]
        st.session_state["sort_desc"] = True
    elif not cols and before:
        st.session_state["sort_desc"] = not st.session_state.get("sort_desc", True)
    state.keep("sort_by")
    state.keep("sort_desc")
    st.session_state["_sorted_column"] = cols[0] if cols else None


@st.cache_data(show_spinner=False, max_entries=64)
def cached_slices(key: str, metrics: tuple[str, ...], metric: str, by: str, column: str | None, _cs):
    return slice_comparison(_cs, metric, by, column)


if data is not None and metrics:
    comp = data.comparison
    cs = state.get_scores(data, metrics)
    if cs.metrics:
        st.text(f"A = {comp.system_a}    B = {comp.system_b}    {state.counted(cs.n, 'pair')}")
        df = state.cached_frame(data.key, tuple(cs.metrics), cs)

        # -- table ------------------------------------------------------------------------------
        c1, c2, c3 = st.columns([3, 2, 2])
        state.kept("flt_text", "")
        text = c1.text_input("Filter: text in id, context, responses or reference", key="flt_text",
                             on_change=state.keep, args=("flt_text",))
        # by default the first metric the verdict trusts (BLEU, first in the sidebar, is a diagnostic)
        state.kept("flt_metric", next((m for m in cs.metrics if shipped_policy().policy.trusts(m)), cs.metrics[0]),
                   cs.metrics)
        fmetric = c2.selectbox("Winner by metric", cs.metrics, key="flt_metric", on_change=state.keep,
                               args=("flt_metric",), format_func=words.name)
        state.kept("flt_winner", "all", ["all", "A", "B", "tie"])
        winner = c3.radio("Winner", ["all", "A", "B", "tie"], horizontal=True, key="flt_winner", on_change=state.keep,
                          args=("flt_winner",), help="which reply the metric prefers on the pair (lower is better "
                                                      "where the metric says so); a tie is |A - B| <= 1e-9")
        c4, c5 = st.columns([3, 2])
        sort_cols = list(df.columns)
        state.kept("sort_by", f"{fmetric} A-B", sort_cols)
        sort_by = c4.selectbox("Sort by (or click a column header)", sort_cols, key="sort_by", on_change=state.keep,
                               args=("sort_by",), format_func=column_label)
        state.kept("sort_desc", True)
        desc = c5.toggle("Descending", key="sort_desc", on_change=state.keep, args=("sort_desc",))
        view = tables.filter_frame(df, text, winner, fmetric).sort_values(sort_by, ascending=not desc,
                                                                            na_position="last", kind="stable")
        st.session_state["_view_pairs"] = [int(p) for p in view["pair"]]
        if view.empty:
            st.info(f"No pair matches the filter (of {len(df)} pairs). Clear the text or choose 'all'.")
        else:
            st.caption(f"{len(view)} of {state.counted(len(df), 'pair')}, sorted by {column_label(sort_by)} "
                       f"({'descending' if desc else 'ascending'}). Click a row to open it below; click a column "
                       "header to sort by it (the ⋮ column menu's sort reorders only the view; exports follow the "
                       "order stated here). Differences are A - B. Pairs count from 1 here; the exports' `pair`, as the "
                       "command line's, counts from 0 (`id` is the same everywhere).")
            num_cfg = {c: st.column_config.NumberColumn(column_label(c), format="%.3f")  # the exports keep ids
                       for c in df.columns if score_column(c)}
            text_cfg = {c: st.column_config.TextColumn(width=TEXT_WIDTH[c]) for c in TEXT_WIDTH if c in df.columns}
            # pairs counted from 1 as the judge page's "Pair 1 of 60"; "pair" stays the 0-based index elsewhere
            st.dataframe(view.assign(pair=view["pair"] + 1), hide_index=True, width="stretch", height=420,
                         column_config={**num_cfg, **text_cfg}, key="scores_table", on_select=on_table_select,
                         selection_mode=["single-row", "single-column", "single-cell"])
            shown = "all" if len(view) == len(df) else "the"
            exports_row = st.container(horizontal=True)  # each button as wide as its label, never cut
            exports_row.download_button(f"Export {shown} {state.counted(len(view), 'shown pair')} (CSV)",
                                        exports.export_csv(view, cs.comparison), file_name="dialeval_scores.csv",
                                        mime="text/csv", key="dl_csv", on_click="ignore")
            exports_row.download_button(f"Export {shown} {state.counted(len(view), 'shown pair')} with details "
                                        "(JSONL)", exports.export_jsonl(cs, view["pair"].tolist()),
                                        file_name="dialeval_scores.jsonl", mime="application/jsonl", key="dl_jsonl",
                                        on_click="ignore")

            # -- drill-down -------------------------------------------------------------------------
            st.subheader("One pair")
            options = view["pair"].tolist()
            labels = {int(r.pair): f"{r.id}" for r in df[["pair", "id"]].itertuples()}
            state.kept("drill", options[0], options)
            i = int(st.selectbox("Pair (click a row above, or choose here)", options, key="drill",
                                 format_func=lambda p: labels.get(int(p), str(p)), on_change=state.keep,
                                 args=("drill",)))
            a, b = comp.pairs[i]
            refs = a.references or b.references
            left, right = st.columns([2, 3])
            with left:
                st.caption("Context (oldest first)")
                for k, turn in enumerate(a.context):
                    state.folded_text(f"[{k + 1 - len(a.context)}] {turn}", f"fold_turn_{k}")
                for side, name, ex in (("A", comp.system_a, a), ("B", comp.system_b, b)):
                    reply, box = ex.response, st.container()
                    if len(reply) > state.FOLD_CHARS:  # folded: a 500,000-character reply is not drawn whole
                        if st.toggle(f"Show all of response {side} ({len(reply):,} characters)", key=f"fold_{side}"):
                            box = box.container(height=320)
                        else:
                            reply = reply[:state.FOLD_CHARS].rstrip() + " …"
                    box.html(f'<div style="margin:.4em 0"><div style="color:#666;font-size:.85em">Response {side} '
                             f'({html.escape(name)})</div><div style="white-space:pre-wrap;overflow-wrap:anywhere">'
                             f'{highlight_html(reply, refs, inline_style=True) or "(empty)"}</div></div>')
                for k, ref in enumerate(refs):
                    state.show_text(f"Reference {k + 1}", ref, key=f"fold_ref_{k}")
                if refs:
                    st.html('<div style="color:#666;font-size:.8em">Marked: words of the reply that also occur in a '
                            'reference (<mark style="background:#ffd54f">in a shared bigram</mark>, '
                            '<mark style="background:#fff3b0">word only</mark>).</div>')
            with right:
                st.caption("Metric values")
                st.dataframe(tables.example_metric_values(cs, i).pipe(lambda t: t.assign(metric=t["metric"].map(
                                 words.name))), hide_index=True, width="stretch",
                             column_config={c: st.column_config.NumberColumn(format="%.3f") for c in ("A", "B", "A-B")})
                if "ubleu" in cs.metrics:
                    det = cs.table.details("ubleu", i) or cs.table.details("ubleu", cs.n + i)
                    urefs = tables.ubleu_reference_rows(det)
                    st.caption(f"υBLEU extended references (retriever {det.get('retriever', '?') if det else '?'}, "
                               f"pool {det.get('pool', '?') if det else '?'}): weight > 0 green, < 0 red")
                    if urefs:
                        import pandas as pd
                        rdf = pd.DataFrame(urefs)

                        def colour(row):
                            w = row["weight"]
                            c = "" if w is None or w == 0 else ("background-color: rgba(0,160,60,0.25)" if w > 0
                                                                else "background-color: rgba(220,0,0,0.25)")
                            return [c] * len(row)
                        styled = rdf.style.apply(colour, axis=1).format({"weight": "{:+.3f}", "similarity": "{:.3f}"},
                                                                         na_rep="-")
                        st.dataframe(styled, hide_index=True, width="stretch")
                    else:
                        st.text("(no extended references: the example has no reference)")
                else:
                    st.caption("Add 'ubleu' in the sidebar to see its retrieved references and their weights.")
                mme_name = next((m for m in ("mme", "mme_avg") if m in cs.metrics), None)
                if mme_name:
                    for side, idx in (("A", i), ("B", cs.n + i)):
                        det = cs.table.details(mme_name, idx)
                        rows = tables.mme_drilldown_rows(det)
                        if rows:
                            st.caption(f"{words.name(mme_name)} sub-metrics for {side} (dimension "
                                       f"{det.get('dimension', '?') if det else '?'}): normalized score x CRS weight")
                            st.dataframe([{"sub-metric": words.name(r["sub_metric"]),
                                           **{k: v for k, v in r.items() if k != "sub_metric"}} for r in rows],
                                         hide_index=True, width="stretch",
                                         column_config={k: st.column_config.NumberColumn(format="%.3f")
                                                        for k in ("score", "weight", "contribution")})

        scored = [m for m in cs.metrics if np.isfinite(cs.a(m)).any() or np.isfinite(cs.b(m)).any()]
        for m in cs.metrics:
            if m not in scored:
                st.caption(f"{words.name(m)} could not score: {tables.unscored_reason(m, comp)} (no chart for it).")
        if scored:
            # -- slices -----------------------------------------------------------------------------
            st.subheader("Slices")
            st.caption("The same comparison within parts of the pairs: each slice's A - B with its own 95% interval "
                       "(contexts resampled, as for the whole); a small slice has a wide interval, and one of fewer "
                       f"than {MIN_RESAMPLED} contexts none ('[-]'). Reply length is the mean of the pair's two "
                       "replies, in words.")
            meta = metadata_columns(comp)
            kinds = [k for k in SLICE_KINDS if k != "metadata" or meta]
            s1, s2, s3 = st.columns(3)
            state.kept("slice_by", kinds[0], kinds)
            by = s1.selectbox("Slice by", kinds, key="slice_by", on_change=state.keep, args=("slice_by",))
            state.kept("slice_metric", scored[0], scored)
            smetric = s2.selectbox("Metric", scored, key="slice_metric", on_change=state.keep, args=("slice_metric",),
                                   format_func=words.name)
            column = None
            if by == "metadata":
                state.kept("slice_column", meta[0], meta)
                column = s3.selectbox("Metadata column", meta, key="slice_column", on_change=state.keep,
                                      args=("slice_column",))
            srows = cached_slices(data.key, tuple(cs.metrics), smetric, by, column, cs)
            st.dataframe(tables.slice_frame(srows, comp.system_a, comp.system_b), hide_index=True, width="stretch",
                         column_config={c: st.column_config.NumberColumn(format="%.3f") for c in ("mean A", "mean B")})
            sfig = state.interval_figure(srows, f"{words.name(smetric)}: A - B per slice ({by})", shared_axis=True)
            sfig.update_yaxes(autorange="reversed")  # the first slice on top, as in the table (plotly draws it lowest)
            state.chart(sfig, "slice_chart")
            st.caption(f"Right of the dashed line: {state.plain(comp.system_a)} higher.")

            # -- charts -----------------------------------------------------------------------------
            st.subheader("Distributions")
            state.kept("chart_metric", scored[0], scored)
            cm = st.selectbox("Metric", scored, key="chart_metric", on_change=state.keep, args=("chart_metric",),
                              format_func=words.name)
            long = tables.long_scores(cs)
            long = long[long["metric"].isin(scored)]  # a metric that could not score gets no empty axes
            long["system"] = long["system"].map(state.plotly_plain)
            long["metric"] = long["metric"].map(words.name)
            sub = long[long["metric"] == words.name(cm)]
            g1, g2 = st.columns(2)
            fig = px.histogram(sub, x="value", color="system", barmode="overlay", opacity=0.6, nbins=30,
                               marginal="box", title=f"{words.name(cm)} per system")
            # the legend above the plot, never over the box plot (it covered it at 800 px)
            fig.update_layout(legend=dict(orientation="h", y=1.0, yanchor="bottom", x=1, xanchor="right", title=None),
                              margin=dict(t=90))
            state.chart(fig, "hist_metric", g1)
            diff = cs.a(cm) - cs.b(cm)
            diff = diff[np.isfinite(diff)]
            fig2 = go.Figure(go.Histogram(x=diff, nbinsx=30, name="A - B"))
            fig2.add_vline(x=0, line_dash="dash", line_color="grey")
            # which side is which on a second, smaller line, so a phone's width holds the title
            fig2.update_layout(title=f"per-example {words.name(cm)}: A - B<br><sup>right of 0: "
                                     f"{state.plotly_plain(comp.system_a)} higher</sup>",
                               xaxis_title="A - B", yaxis_title="pairs")
            state.chart(fig2, "hist_diff", g2)
            if len(scored) > 1:
                per_row = 3
                rows_of_boxes = -(-len(scored) // per_row)
                fig3 = px.box(long, x="system", y="value", color="system", facet_col="metric", facet_col_wrap=per_row,
                              title="every metric per system", facet_col_spacing=0.09,
                              facet_row_spacing=min(0.12, 0.5 / rows_of_boxes))
                fig3.update_yaxes(matches=None, showticklabels=True)
                # the legend (below the boxes) names the systems: no system names under each small box, so a phone's
                # width holds three boxes with their own axes
                fig3.update_xaxes(showticklabels=False, title=None)
                fig3.for_each_annotation(lambda a: a.update(text=a.text.split("=")[-1]))
                fig3.update_layout(margin=dict(t=80, b=10), height=110 + 200 * rows_of_boxes,
                                   legend=dict(orientation="h", y=0, yanchor="top", x=0, xanchor="left", title=None))
                state.chart(fig3, "box_all")
