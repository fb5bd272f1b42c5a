"""A/B judge: which reply a person would prefer, for every pair; win rate; agreement with humans."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import plotly.express as px  # noqa: E402
import streamlit as st  # noqa: E402

import app  # noqa: E402
from core import app_state  # noqa: E402

st.set_page_config(page_title="dialeval · A/B judge", layout="wide")
st.session_state["_page"] = "judge"
app.sidebar()
st.title("A/B judge")
st.caption("A learned pairwise judge (Wu & Chien): given the context and two replies, the probability that people "
           "prefer reply A. Both orders (A|B and B|A) are scored and averaged against position bias.")

ok, message = app_state.judge_status()
if not ok:
    st.warning(message)


@st.cache_resource(show_spinner=False)
def load_judge():
    from core.judge import load_judge as _load
    return _load()


@st.cache_resource(show_spinner=False)
def _judge_store() -> dict:
    return {}


data = app.require_data()
if data is not None and ok:
    comp = data.comparison
    store = _judge_store()
    if data.key not in store:
        st.text(f"{data.n} pairs: {comp.system_a} (A) vs {comp.system_b} (B)")
        if st.button(f"Run the judge over all {data.n} pairs", type="primary", key="run_judge"):
            bar = st.progress(0.0, text="loading the judge")

            def progress(done, total, desc):
                bar.progress(min(1.0, done / total if total else 1.0), text=f"{desc} {done}/{total}")
            try:
                judge = load_judge()
                store[data.key] = judge.predict([a.context for a in comp.a], [a.response for a in comp.a],
                                                [b.response for b in comp.b], progress=progress)
            except Exception as e:  # a missing or incompatible checkpoint must not take the page down
                st.error(f"The judge could not run: {type(e).__name__}: {e}")
            bar.empty()
    res = store.get(data.key)
    if res is not None:
        verdict = list(res.verdict)
        summ = app_state.judge_summary(verdict)
        c1, c2, c3 = st.columns(3)
        c1.metric("Judge win rate of A (" + app.plain(comp.system_a) + ")", f"{summ['win rate A']:.1%}",
                  help="wins of A / (wins of A + wins of B), ties excluded; Wilson 95% interval below")
        c1.text(f"95% interval [{summ['low']:.1%}, {summ['high']:.1%}]")
        c2.metric("A / tie / B", f"{summ['wins A']} / {summ['ties']} / {summ['wins B']}")
        c3.metric("Order disagreement", f"{float(getattr(res, 'order_disagreement', float('nan'))):.1%}",
                  help="share of pairs where scoring A|B and B|A gave different preferences")
        jdf = app_state.judge_frame(comp, res.p_a, verdict)
        dims = data.dimensions
        if dims:
            st.subheader("Agreement with human scores")
            d1, d2 = st.columns(2)
            dim = d1.selectbox("Human dimension", dims, key="judge_dim")
            margin = d2.number_input("Human tie margin (|score A - score B| <= margin is a tie)", 0.0, 10.0, 0.0,
                                     0.25, key="judge_margin")
            human = app_state.human_preferences(comp, dim, margin)
            agr = app_state.judge_agreement(verdict, human)
            if agr["n"]:
                st.metric("Agreement with humans", f"{agr['agreement']:.1%}",
                          help="over pairs where humans preferred one reply")
                st.text(f"{agr['agree']} of {agr['n']} pairs, 95% interval [{agr['low']:.1%}, {agr['high']:.1%}]; "
                        "chance is 50%")
            else:
                st.info("No pair where humans clearly preferred one reply on this dimension.")
            jdf["humans"] = [h or "-" for h in human]
        else:
            st.info("The upload has no human scores, so agreement with humans cannot be measured.")
        st.subheader("Per-example preference")
        st.dataframe(jdf, hide_index=True, width="stretch", height=380,
                     column_config={"P(A preferred)": st.column_config.ProgressColumn(min_value=0.0, max_value=1.0,
                                                                                     format="%.2f")})
        st.plotly_chart(px.histogram(jdf, x="P(A preferred)", nbins=20, range_x=[0, 1],
                                     title="P(A preferred) over pairs"), width="stretch", key="judge_hist")
