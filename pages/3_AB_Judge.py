"""A/B judge: which reply a person would prefer, for every pair; win rate; agreement with humans."""
import plotly.express as px
import streamlit as st

from core import dashboard
from core.compare import summarize_judge
from core.data import Comparison
from core.judges.pairs import votes_for_pairs
from pages import state

st.session_state["_page"] = "judge"
state.sidebar()
st.title("A/B judge")
st.caption("A learned pairwise judge (Wu & Chien): given the context and two replies, the probability that people "
           "prefer reply A. Both orders (A|B and B|A) are scored and averaged against position bias.")

ok, message = dashboard.judge_status()
if not ok:
    st.warning(message)


data = state.require_data()
if data is not None and ok:
    comp = data.comparison
    if state.judge_output(data) is None:
        st.text(f"{data.n} pairs: {comp.system_a} (A) vs {comp.system_b} (B)")
        if st.button(f"Run the judge over all {data.n} pairs", type="primary", key="run_judge"):
            state.run_judge(data)
    res = state.judge_output(data)
    if res is not None:
        dims = data.dimensions
        dim = None
        if dims:
            dim = st.selectbox("Human dimension for agreement", dims, key="judge_dim",
                               index=dashboard.default_vote_dimension(dims))
        summ = summarize_judge(comp, res, dim)
        c1, c2, c3 = st.columns(3)
        c1.metric("Judge win rate of A (" + state.plain(comp.system_a) + ")", f"{summ.win.rate:.1%}",
                  help="wins of A / (wins of A + wins of B), ties excluded; Wilson 95% interval below")
        c1.text(f"95% interval [{summ.win.low:.1%}, {summ.win.high:.1%}]; ties counted half: "
                f"{summ.win.ties_split:.1%}")
        c2.metric("A / tie / B", f"{summ.win.wins} / {summ.win.ties} / {summ.win.losses}")
        c3.metric("Order disagreement", f"{summ.order_disagreement:.1%}",
                  help="share of pairs where scoring A|B and B|A gave different preferences")
        jdf = dashboard.judge_frame(comp, res.p_a, res.verdict)
        if dims:
            st.subheader("Agreement with human scores")
            h = summ.human
            st.caption(f"People prefer one reply when their mean {state.plain(dim)} ratings differ by at least "
                       f"{h.margin:g} (a quarter of the rating scale; the same rule as `dialeval judge`).")
            if h.n:
                st.metric("Agreement with humans", f"{h.agreement:.1%}",
                          help="share of the pairs people clearly preferred one reply where the judge's P(A) points "
                               "the same way (P(A) = 0.5 counts half)")
                st.text(f"{h.n} pairs with a clear human preference, 95% interval [{h.low:.1%}, {h.high:.1%}]; "
                        f"chance is 50%; on the {h.n_decided} pairs the judge did not call a tie: "
                        f"{h.agreement_decided:.1%}")
            else:
                st.info("No pair where humans clearly preferred one reply on this dimension.")
            jdf["humans"] = [x or "-" for x in h.human]
        else:
            st.info("The upload has no human scores, so agreement with humans cannot be measured.")
        st.subheader("Per-example preference")
        st.dataframe(jdf, hide_index=True, width="stretch", height=380,
                     column_config={"P(A preferred)": st.column_config.ProgressColumn(min_value=0.0, max_value=1.0,
                                                                                     format="%.2f")})
        st.plotly_chart(px.histogram(jdf, x="P(A preferred)", nbins=20, range_x=[0, 1],
                                     title="P(A preferred) over pairs"), width="stretch", key="judge_hist")

# ------------------------------------------------------------------------------------------------
# train on your own votes (Wu & Chien's use case): fine-tune from the shipped judge, learning curve,
# predict the pairs without a vote

if data is not None and ok:
    st.divider()
    st.subheader("Train on your own votes")
    st.caption("Give human A/B votes for part of the pairs: the judge is fine-tuned from the shipped checkpoint on "
               "them (its output layers are re-fitted, pulled toward the shipped judge as strongly as a "
               "cross-validation on your votes says; the encoders stay as shipped), predicts the pairs without a "
               "vote, and a learning curve shows agreement with held-out votes against the number of training "
               "votes (cross-validation by context).")
    sources = ["Upload a votes file"] + (["Use this upload's human scores as votes"] if data.dimensions else [])
    source = st.radio("Votes", sources, horizontal=True, key="votes_source")
    votes, votes_key = None, None
    if source == sources[0]:
        up = st.file_uploader("Votes (JSONL, one per line: context, response_a, response_b, vote = A / B / tie)",
                              type=["jsonl", "json"], key="votes_file")
        st.caption('Example line: `{"context": ["hi , how are you ?"], "response_a": "fine , and you ?", '
                   '"response_b": "the sky .", "vote": "A"}`')
        if up is not None:
            from core.data import DataError
            from core.judges.pairs import load_votes
            raw = up.getvalue()
            try:
                votes = load_votes(up.name, data=raw)
                votes_key = dashboard.content_key(raw)
            except DataError as e:
                st.error(f"The votes file could not be read: {e}")
    else:
        vdim = st.selectbox("Human dimension to derive votes from", data.dimensions, key="votes_dim",
                            index=dashboard.default_vote_dimension(data.dimensions))
        votes = dashboard.votes_from_comparison(comp, vdim)
        votes_key = dashboard.content_key("scores", vdim)
        st.caption(f"A vote is cast where the two replies' scores differ by at least a quarter of the scale "
                   f"({dashboard.vote_margin(comp, vdim):g} on {state.plain(vdim)}); the other pairs have no vote.")
    if votes is not None:
        on_pairs = votes_for_pairs(comp, votes)
        decided = [v for v in votes if v.vote in ("A", "B")]
        n_on = sum(v is not None for v in on_pairs)
        st.text(f"{len(votes)} votes (A {sum(v.vote == 'A' for v in votes)}, B {sum(v.vote == 'B' for v in votes)}, "
                f"tie {sum(v.vote == 'tie' for v in votes)}); {n_on} of them are on the {data.n} loaded pairs, "
                f"{data.n - n_on} loaded pairs have no vote and get the fine-tuned judge's prediction.")
        folds = int(st.number_input("Cross-validation folds", 2, 10, 5, key="votes_folds"))
        n_contexts = len({tuple(v.context) for v in decided})
        if len(decided) < 20 or n_contexts < folds:
            st.warning(f"At least 20 A/B votes on {folds} or more different contexts are needed "
                       f"(have {len(decided)} on {n_contexts}).")
        elif st.button(f"Fine-tune on {len(votes)} votes and draw the learning curve", type="primary",
                       key="tune_votes"):
            from core.judges import votes as V
            from core.judges.pairwise import load_judge
            bar = st.progress(0.0, text="loading the judge")

            def vprogress(done, total, desc):
                bar.progress(min(1.0, done / total if total else 1.0), text=f"{desc} {done}/{total}")
            try:
                judge = load_judge()
                feats = V.vote_features(votes, judge, vprogress)
                curve = V.learning_curve(votes, dashboard.curve_sizes(len(decided), folds), folds, judge,
                                         features=feats, progress=vprogress)
                tuned = V.fine_tune_on_votes(votes, judge, features=feats)
                rest = [i for i, v in enumerate(on_pairs) if v is None]
                before, after = None, None
                if rest:
                    pa, pb = [comp.pairs[i][0] for i in rest], [comp.pairs[i][1] for i in rest]
                    # encoded once: the tuned judge shares the shipped judge's encoder layers and reader
                    enc = judge.encode([a.context for a in pa], [a.response for a in pa], [b.response for b in pb],
                                       vprogress)
                    after = tuned.predict_encoded(enc)
                    shipped = state.judge_output(data)  # the run above, when there was one
                    before = shipped.subset(rest) if shipped is not None else judge.predict_encoded(enc)
                st.session_state["votes_result"] = (data.key, votes_key, folds, (curve, rest, before, after))
            except Exception as e:  # shown, not fatal: the rest of the page keeps working
                st.error(f"Fine-tuning on the votes failed: {type(e).__name__}: {e}")
            bar.empty()
        got = st.session_state.get("votes_result")
        done = got[3] if got and got[:3] == (data.key, votes_key, folds) else None
        if done is not None:
            curve, rest, before, after = done
            st.plotly_chart(dashboard.learning_curve_figure(curve), width="stretch", key="votes_curve")
            shown = curve.assign(ridge=[f"{v:.2g}" if v == v else "—" for v in curve["ridge"]])  # NaN at 0 votes
            st.dataframe(shown.rename(columns={"n_train": "training votes", "n_test": "held-out votes per fold",
                                               "ridge": "pull toward shipped (ridge, median)"}),
                         hide_index=True, width="stretch")
            if rest:
                rest_comp = Comparison(comp.system_a, comp.system_b, [comp.pairs[i] for i in rest])
                summ, summ_before = summarize_judge(rest_comp, after), summarize_judge(rest_comp, before)
                r1, r2 = st.columns(2)
                r1.metric(f"Fine-tuned judge: win rate of A on the {len(rest)} pairs without a vote",
                          f"{summ.win.rate:.1%}")
                r1.text(f"95% interval [{summ.win.low:.1%}, {summ.win.high:.1%}]")
                r2.metric("Shipped judge on the same pairs", f"{summ_before.win.rate:.1%}")
                pred = dashboard.rest_frame(comp, rest, before.p_a, after.p_a, after.verdict)
                st.dataframe(pred, hide_index=True, width="stretch", height=320,
                             column_config={"P(A preferred)": st.column_config.ProgressColumn(
                                 min_value=0.0, max_value=1.0, format="%.2f")})
                st.download_button("Download these predictions (CSV)", dashboard.export_csv(pred),
                                   "judge_votes_predictions.csv", "text/csv", key="votes_download")
            else:
                st.info("Every loaded pair has a vote, so there is nothing left to predict.")
