"""Correlation of each metric with the human scores in the upload: per dimension scatter with fitted
line, Spearman/Pearson with bootstrap intervals, metric x dimension heatmap, system-level view."""
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
import streamlit as st

from core.formatting import fmt_num
from core.report import as_sentence
from core.verdict import rating_scales_differ
from dashboard import correlations, loading, state, words

st.session_state["_page"] = "correlation"
st.title("Correlation with human scores")

EXAMPLE = ('{"id": "ctx-1", "system": "my-bot", "context": ["hi!", "how was your weekend?"], '
           '"response": "great, I went hiking", "references": ["it was fun, we went to the lake"], '
           '"scores": {"Overall": 4.3, "Engaging": 2.0}}')


@st.cache_data(show_spinner=False)
def cached_correlations(key: str, metrics: tuple[str, ...], _cs):
    return correlations.correlation_rows(_cs)


def named(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with its metric ids shown by their display names (``dashboard.words``)."""
    return frame.assign(metric=frame["metric"].map(words.name)) if "metric" in frame else frame


def decimals(numbers: list[str]) -> dict:
    """``st.dataframe``'s column settings that show the ``numbers`` columns with 3 decimals, kept as numbers so that
    a click on a header sorts them as such (as text, "-0.080" came before "-0.300"). Streamlit draws a missing
    number as "None", whatever a pandas Styler says (its display values apply to values only): the tables leave out
    what cannot have one and say what a remaining "None" means."""
    return {c: st.column_config.NumberColumn(format="%.3f") for c in numbers}


def choose_metric(data_key: str) -> None:
    """Keep the scatter's metric and the file it was chosen on."""
    state.keep("corr_metric")
    st.session_state["corr_metric_file"] = data_key


def load_rated_here() -> None:
    """A rated file loaded from this page: its first two systems (the Upload page picks others)."""
    up = st.file_uploader("A file with human scores (JSONL, DSTC10 JSON, column JSON, or CSV/TSV with the JSONL "
                          "field names and scores.DIMENSION columns; two or more systems)",
                          type=["jsonl", "json", "csv", "tsv", "gz"], key="corr_file")
    if up is None:
        return
    from core.data import DataError
    try:
        got = loading.load_uploads(up.name, [(up.name, up.getvalue())], None, [None], None, None)
    except DataError as e:
        csv = up.name.lower().rsplit(".", 1)[-1] in ("csv", "tsv")
        st.error(f"{state.counted(len(e.problems), 'problem')} in the file; nothing new was loaded."
                 + (" This page reads a CSV whose columns carry the JSONL field names; the Upload page maps any "
                    "other columns (it guesses them) and loads the file for every page." if csv else ""))
        st.dataframe([{"row": where, "field": p.field or "", "problem": p.message} for p, where in e.grouped()],
                     hide_index=True, width="stretch")
        return
    if got.key != getattr(state.loaded(), "key", None):
        state.set_loaded(got, [(up.name, up.getvalue())])
        st.rerun()


data = state.require_data()
metrics = state.selected_metrics()
if data is None:  # the demo (offered above) has no human scores: this page's own sample has
    if st.button("Load the human-rated sample (40 queries, engagement ratings)", type="primary", key="corr_rated"):
        state.load_rated_demo()
        st.rerun()
elif not data.has_human_scores:
    st.info("The loaded data has no human scores, so there is nothing to correlate with. Load the built-in "
            "human-rated sample, or a file whose rows carry human ratings: in JSONL a `scores` object of "
            "dimension -> number (mean rating), for example")
    st.code(EXAMPLE, language="json")
    st.markdown("DSTC10 JSON carries them as `annotations` ({dimension: [ratings]}); in CSV choose the score "
                "columns in the mapping (Upload page). Both systems' rows are rated on the same dimensions.")
    if st.button("Load the human-rated sample (40 queries, engagement ratings)", type="primary", key="corr_rated"):
        state.load_rated_demo()
        st.rerun()
    load_rated_here()
elif metrics:
    comp = data.comparison
    cs = state.get_scores(data, metrics)
    for why in rating_scales_differ(comp).values():  # as the verdict says it: means on two scales prefer nobody
        st.warning(state.plain(as_sentence(f"{why}: the system-level table names no system people prefer on it, "
                                           "and a correlation pooled over both systems' rows mixes the two scales")))
    if cs.metrics:
        rows = cached_correlations(data.key, tuple(cs.metrics), cs)
        copies = rows[0]["reference copies left out"] if rows else 0
        others = len({e.system for e in data.examples}) - 2
        st.caption(f"Turn level, over the {2 * cs.n} rows of {state.plain(comp.system_a)} and "
                   f"{state.plain(comp.system_b)}"
                   + (f" (the file holds {state.counted(others, 'other system')}: choose which two on the Upload "
                      "page; the system-level view below takes them all)" if others > 0 else "")
                   + (f", less {state.counted(copies, 'row')} whose reply copies its reference (a referenced metric "
                      "scores those perfectly whatever people said; `dialeval meta-eval` leaves them out too)"
                      if copies else "")
                   + "; the replies to one context form a cluster, so the 95% bootstrap intervals resample "
                   "contexts (core.stats.correlate, 1,000 resamples, seed 13), never narrower than the small-sample "
                   "t or Fisher's z gives them.")
        no_refs = [m for m in cs.metrics if not any(r["metric"] == m and r["n"] for r in rows)]
        if no_refs:
            st.caption(f"{words.names(no_refs)}: no score on these rows (the metric needs references and the file "
                       "has none); choose a metric without references (e.g. BERT-RUBER, MME-CRS) in the sidebar.")
        weighed = correlations.weighed_per_dimension(cs.metrics)
        if weighed:
            st.caption(f"{words.names(weighed)}: correlated with each dimension under that dimension's shipped "
                       "fitted weights of its sub-metrics, as `dialeval meta-eval` correlates a set they were not "
                       "fitted on (the scatter and the system-level table too); the Scores page shows its overall "
                       "score.")
        scored = [r for r in rows if r["n"]]  # a metric that scored no row is said above, not drawn empty
        if scored:
            table = pd.DataFrame(scored).pipe(named)
            st.dataframe(table.assign(**{c: table[c].map(lambda p: fmt_num(p, p=True)) for c in table.columns
                                         if c.endswith(" p")}), hide_index=True, width="stretch",
                         column_config=decimals([c for c in table.columns
                                                 if c not in ("metric", "dimension", "n", "reference copies left out")
                                                 and not c.endswith(" p")]))
            if table["spearman"].isna().any() or table["pearson"].isna().any():
                st.caption("None: no correlation to compute (the metric's scores or the ratings do not vary).")
            heat = table.pivot(index="metric", columns="dimension", values="spearman")
            fig = px.imshow(heat, color_continuous_scale="RdBu", zmin=-1, zmax=1, aspect="auto",
                            title="Spearman correlation: metric x human dimension")
            fig.update_traces(text=heat.map(lambda r: fmt_num(r, digits=2)).to_numpy(), texttemplate="%{text}")
            state.chart(fig, "corr_heat")

        st.subheader("Scatter")
        from core.verdict import preference_dimension
        c1, c2 = st.columns(2)
        dim = state.kept("corr_dim", preference_dimension(comp.examples()), data.dimensions)
        # the first metric with scores on these rows (not bleu on a file without references: an empty plot);
        # a metric chosen on another file that scores nothing here gives way to it, one chosen here stays
        if st.session_state.get("corr_metric_file") != data.key:
            state.forget("corr_metric", no_refs)
        state.kept("corr_metric", correlations.default_scatter_metric(cs, dim), cs.metrics)
        m = c1.selectbox("Metric", cs.metrics, key="corr_metric", on_change=choose_metric, args=(data.key,),
                         format_func=words.name, help="default: the first chosen metric that scores these rows")
        d = c2.selectbox("Human dimension", data.dimensions, key="corr_dim", on_change=state.keep, args=("corr_dim",),
                         help="default: the overall dimension (Overall, overall, coherence, ...)")
        sdf = correlations.scatter_frame(cs, m, d)
        sdf["system"] = sdf["system"].map(state.plotly_plain)
        sdf["id"] = sdf["id"].map(state.plotly_plain)
        fig2 = px.scatter(sdf, x=m, y=d, color="system", hover_data=["id"], opacity=0.7,
                          labels={m: words.name(m)}, title=f"{words.name(m)} vs human {d}")
        line = correlations.fit_line(sdf[m], sdf[d])
        if line is not None:
            xs = [float(sdf[m].min()), float(sdf[m].max())]
            fig2.add_trace(go.Scatter(x=xs, y=[line[0] * x + line[1] for x in xs], mode="lines",
                                      name="least-squares fit", line=dict(color="black", dash="dash")))
        state.chart(fig2, "corr_scatter")
        r = next(x for x in rows if x["metric"] == m and x["dimension"] == d)
        st.text(f"Spearman {fmt_num(r['spearman'])} [{fmt_num(r['spearman low'])}, {fmt_num(r['spearman high'])}]   "
                f"Pearson {fmt_num(r['pearson'])} [{fmt_num(r['pearson low'])}, {fmt_num(r['pearson high'])}]   "
                f"n = {r['n']}"
                + (f"   ({state.counted(r['reference copies left out'], 'row')} whose reply copies its reference "
                   "left out of the plot and the numbers)" if r["reference copies left out"] else ""))

        st.subheader("System level")
        st.caption("Which system each metric prefers (mean) and which the humans prefer (mean), per dimension, over "
                   "every pair as the headline counts them"
                   + (f": the {state.counted(copies, 'row')} whose reply copies its reference are in these means (a "
                      "referenced metric scores them perfectly whatever people said)" if copies else "") + ".")
        st.dataframe(named(pd.DataFrame(correlations.system_level_rows(cs))), hide_index=True, width="stretch")
        n_sys = len({e.system for e in data.examples})
        if n_sys >= 3:
            st.caption(f"The file holds {n_sys} systems: a system-level correlation over all of them needs every "
                       "system's rows scored (they are cached once scored). Computed as `dialeval meta-eval` "
                       "computes it: rows that copy their reference left out, contexts resampled.")
            if state.run_button(f"Score all {n_sys} systems and correlate system means", "sys_corr"):
                with state.running("sys_corr", "Scoring every system failed"):  # then drawn again with the table
                    bar, progress = state.progress_bar("scoring every system")
                    from core.engine import ScoreTable
                    results = state.metric_results(("all-systems", data.key), cs.metrics, list(data.examples),
                                                   progress)
                    table_all = ScoreTable(list(data.examples), results)
                    bar.empty()
                    st.session_state["sys_corr_rows"] = (data.key,
                                                         correlations.system_correlations(table_all, cs.metrics))
            got = st.session_state.get("sys_corr_rows")
            if got and got[0] == data.key:
                st.dataframe(named(pd.DataFrame(got[1])).assign(p=lambda t: t["p"].map(lambda p: fmt_num(p, p=True))),
                             hide_index=True, width="stretch", column_config=decimals(["r", "low", "high"]))
                st.caption(f"p tests the correlation over the {n_sys} system means (scipy); the interval resamples "
                           "contexts, so it shows how the means move with the contexts asked, not which systems "
                           "happened to be compared: with few systems an interval above 0 can go with a large p "
                           "(the warning column says when there are too few).")
        else:
            st.caption("A system-level correlation needs at least three systems; upload a file with more systems "
                       "to see one.")
