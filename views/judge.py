"""A/B judge: which reply a person would prefer, for every pair; win rate (also at equal reply length);
agreement with humans; your own votes given in place (A / tie / B per row), kept and downloadable, and the
judge re-fitted on them once there are enough."""
import pandas as pd
import plotly.express as px
import streamlit as st

from core import dashboard
from core.data import Comparison
from core.judges.pairs import votes_for_pairs, votes_matched
from core.report import as_sentence
from core.verdict import summarize_judge
from views import state

st.session_state["_page"] = "judge"
st.title("A/B judge")
st.caption("A learned pairwise judge (Wu & Chien): given the context and two replies, the probability that people "
           "prefer reply A. Both orders (A|B and B|A) are scored and averaged against position bias.")

ok, message = dashboard.judge_status()
if not ok:
    st.warning(message)


def win_rate_text(s) -> str:
    return f"{s.win.rate:.1%} [{s.win.low:.1%}, {s.win.high:.1%}]"


data = state.require_data()
judge_run_slot = None  # where the judge's run shows its progress; the run itself starts once the page is drawn
# the page's two long runs (the judge's, the re-fit's): while one goes on the other's button is disabled
judge_clicked, refit_clicked = state.clicked("run_judge"), state.clicked("tune_votes")
if data is not None and ok:
    comp = data.comparison
    if state.judge_output(data) is None:
        st.text(f"{state.counted(data.n, 'pair')}: {comp.system_a} (A) vs {comp.system_b} (B)")
        over = f"{'the' if data.n == 1 else 'all'} {state.counted(data.n, 'pair')}"
        if state.run_button(f"Run the judge over {over} (about {state.judge_seconds(data.n, comp):.0f} s)", "run_judge",
                            busy=refit_clicked, type="primary"):
            judge_run_slot = st.container()
    res = state.judge_output(data)
    if res is not None:
        dims = data.dimensions
        dim = None
        if dims:
            state.kept("judge_dim", dims[dashboard.default_vote_dimension(dims)], dims)
            dim = st.selectbox("Human dimension for agreement", dims, key="judge_dim", on_change=state.keep,
                               args=("judge_dim",))
        summ = summarize_judge(comp, res, dim)
        tuned = state.refit(data)
        c1, c2, c3 = st.columns(3)
        c1.metric("Judge win rate of A (" + state.plain(comp.system_a) + ")", f"{summ.win.rate:.1%}",
                  help="wins of A / (wins of A + wins of B), ties excluded; Wilson 95% interval below")
        c1.text(f"95% interval [{summ.win.low:.1%}, {summ.win.high:.1%}]; ties counted half: "
                f"{summ.win.ties_split:.1%}")
        lc = summ.length_controlled
        if lc is not None and lc.n:
            c1.text(f"at equal reply length: {dashboard.rate_interval(lc)}")
        c2.metric("A / tie / B", f"{summ.win.wins} / {summ.win.ties} / {summ.win.losses}")
        if tuned is not None:
            c2.metric(f"Re-fit on your {state.counted(tuned['n_votes'], 'vote')}: win rate of A",
                      f"{tuned['summary'].win.rate:.1%}",
                      help="the judge re-fitted on your votes (below), over every loaded pair")
            c2.text(f"95% interval [{tuned['summary'].win.low:.1%}, {tuned['summary'].win.high:.1%}]")
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
                st.text(f"{state.counted(h.n, 'pair')} with a clear human preference, 95% interval "
                        f"[{h.low:.1%}, {h.high:.1%}]; "
                        f"chance is 50%; on the {h.n_decided} pairs the judge did not call a tie: "
                        f"{h.agreement_decided:.1%}")
            else:
                st.info("No pair where humans clearly preferred one reply on this dimension.")
            jdf["humans"] = [x or "-" for x in h.human]
        else:
            st.info("This comparison has no human scores, so agreement with people cannot be measured.")
        st.subheader("Per-example preference")
        st.dataframe(jdf, hide_index=True, width="stretch", height=380,
                     column_config={"P(A preferred)": st.column_config.ProgressColumn(min_value=0.0, max_value=1.0,
                                                                                     format="%.2f")})
        state.chart(px.histogram(jdf, x="P(A preferred)", nbins=20, range_x=[0, 1], title="P(A preferred) over pairs"),
                    "judge_hist")

# ------------------------------------------------------------------------------------------------
# your votes, in place

if data is not None:
    comp = data.comparison
    st.divider()
    st.subheader("Your votes")
    st.caption(f"Which reply is better? Vote A, tie or B on any row; every vote is saved as you go (and kept for this "
               f"comparison after a refresh). Once there are **{dashboard.MIN_VOTES} votes for A or B on "
               f"{dashboard.MIN_VOTE_CONTEXTS} or more different contexts** (ties do not count), the judge can be "
               "re-fitted on them below.")
    given = state.votes(data)
    res = state.judge_output(data)
    label = {"A": "👍 A", "tie": "tie", "B": "👍 B"}
    vote_of = {v: k for k, v in label.items()}
    # a pair without a vote reads "–", and choosing "–" clears a vote (the browser's table draws a missing value,
    # and an empty string too, as a grey "None")
    no_vote = "–"
    vdf = pd.DataFrame({"pair": range(data.n), "your vote": [label.get(given.get(i), no_vote) for i in range(data.n)],
                        "context": [" ⏎ ".join(a.context) for a, _ in comp.pairs],
                        "response A": [a.response for a, _ in comp.pairs],
                        "response B": [b.response for _, b in comp.pairs], "id": [a.id for a, _ in comp.pairs]})
    if res is not None:
        vdf.insert(5, "judge P(A)", [float(p) for p in res.p_a])
    edited = st.data_editor(vdf, hide_index=True, width="stretch", height=360, key=f"votes_editor_{data.key}",
                            disabled=[c for c in vdf.columns if c != "your vote"],
                            column_config={"your vote": st.column_config.SelectboxColumn(
                                "your vote", options=[no_vote, *label.values()], width="medium",
                                help="which reply is better: A, B or tie (double-click to choose; – = no vote)"),
                                "context": st.column_config.TextColumn(width="medium"),
                                "response A": st.column_config.TextColumn(width="medium"),
                                "response B": st.column_config.TextColumn(width="medium")})
    now = {int(p): vote_of[v] for p, v in zip(edited["pair"], edited["your vote"]) if v in vote_of}
    if now != given:
        state.set_votes(data, now)
        given = now
    mine = dashboard.pair_votes(comp, given)
    enough, where = dashboard.enough_votes(mine)
    v1, v2 = st.columns([2, 1])
    v1.text(f"{state.counted(len(mine), 'vote')} (A {sum(v.vote == 'A' for v in mine)}, "
            f"tie {sum(v.vote == 'tie' for v in mine)}, "
            f"B {sum(v.vote == 'B' for v in mine)}): {where}")
    v2.download_button("Download your votes (JSONL)", dashboard.votes_jsonl(mine), file_name="dialeval_votes.jsonl",
                       mime="application/jsonl", key="votes_download_mine", on_click="ignore", disabled=not mine)

# ------------------------------------------------------------------------------------------------
# re-fit the judge on votes (Wu & Chien's use case): from the shipped judge, learning curve, predictions

if data is not None and ok:
    st.divider()
    st.subheader("Re-fit the judge on votes")
    st.caption("The judge is re-fitted from the shipped checkpoint on the votes (its output layers, pulled toward the "
               "shipped judge as strongly as a cross-validation on the votes says; the encoders stay as shipped). "
               "It then judges every loaded pair (the win rate above updates), predicts the pairs without a vote, "
               "and a learning curve shows agreement with held-out votes against the number of training votes "
               f"(cross-validation by context). Enough votes: {dashboard.MIN_VOTES} for A or B on "
               f"{dashboard.MIN_VOTE_CONTEXTS}+ contexts.")
    sources = ["Your votes on this page", "Upload a votes file"] + (
        ["Use this upload's human scores as votes"] if data.dimensions else [])
    source = st.radio("Votes", sources, horizontal=True, key="votes_source")
    votes, votes_key = None, None
    if source == sources[0]:
        votes = dashboard.pair_votes(comp, state.votes(data))
        votes_key = dashboard.content_key("mine", dashboard.votes_jsonl(votes))
    elif source == sources[1]:
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
        state.kept("votes_dim", data.dimensions[dashboard.default_vote_dimension(data.dimensions)], data.dimensions)
        vdim = st.selectbox("Human dimension to derive votes from", data.dimensions, key="votes_dim",
                            on_change=state.keep, args=("votes_dim",))
        votes = dashboard.votes_from_comparison(comp, vdim)
        votes_key = dashboard.content_key("scores", vdim)
        st.caption(f"A vote is cast where the two replies' scores differ by at least a quarter of the scale "
                   f"({dashboard.vote_margin(comp, vdim):g} on {state.plain(vdim)}); the other pairs have no vote.")
    if votes is not None:
        on_pairs = votes_for_pairs(comp, votes)
        for line in votes_matched(comp, votes):
            st.warning(state.plain(as_sentence(line)))
        n_on = sum(v is not None for v in on_pairs)
        st.text(f"{state.counted(len(votes), 'vote')} (A {sum(v.vote == 'A' for v in votes)}, "
                f"B {sum(v.vote == 'B' for v in votes)}, "
                f"tie {sum(v.vote == 'tie' for v in votes)}); {n_on} of them {'is' if n_on == 1 else 'are'} on the "
                f"{state.counted(data.n, 'loaded pair')}; {data.n - n_on} of those "
                f"ha{'s' if data.n - n_on == 1 else 've'} no vote "
                "and get the re-fitted judge's prediction.")
        folds = dashboard.MIN_VOTE_CONTEXTS
        enough, where = dashboard.enough_votes(votes)
        if not enough:
            st.info(f"Not enough votes yet: {where}.")
        elif state.run_button(f"Re-fit the judge on {state.counted(len(votes), 'vote')} and draw the learning curve",
                              "tune_votes", busy=judge_clicked, type="primary"):
            # then drawn again: the win rate at the top shows the re-fitted judge
            with state.running("tune_votes", "Re-fitting on the votes failed"):
                from core.judges import votes as V
                from core.judges.pairwise import load_judge
                state.use_chosen_device()
                bar, vprogress = state.progress_bar("loading the judge")
                judge = load_judge()
                feats = V.vote_features(votes, judge, vprogress)
                decided = [v for v in votes if v.vote in ("A", "B")]
                curve = V.learning_curve(votes, dashboard.curve_sizes(len(decided), folds), folds, judge,
                                         features=feats, progress=vprogress)
                tuned = V.fine_tune_on_votes(votes, judge, features=feats)
                # encoded once: the tuned judge shares the shipped judge's encoder layers and reader
                enc = judge.encode([a.context for a in comp.a], [a.response for a in comp.a],
                                   [b.response for b in comp.b], vprogress)
                after = tuned.predict_encoded(enc)
                shipped = state.judge_output(data)  # the run above, when there was one
                shipped = judge.predict_encoded(enc) if shipped is None else shipped
                rest = [i for i, v in enumerate(on_pairs) if v is None]
                state.set_refit(data, {"votes_key": votes_key, "n_votes": len(votes), "folds": folds, "curve": curve,
                                       "rest": rest, "output": after, "shipped": shipped,
                                       "summary": summarize_judge(comp, after)})
                bar.empty()
        done = state.refit(data)
        if done is not None and done["votes_key"] == votes_key:
            curve, rest, after, shipped = done["curve"], done["rest"], done["output"], done["shipped"]
            s_all, s_shipped = done["summary"], summarize_judge(comp, shipped)
            r1, r2 = st.columns(2)
            r1.metric(f"Re-fitted judge: win rate of A over all {state.counted(data.n, 'pair')}",
                      f"{s_all.win.rate:.1%}")
            r1.text(f"95% interval [{s_all.win.low:.1%}, {s_all.win.high:.1%}]")
            r2.metric("Shipped judge on the same pairs", f"{s_shipped.win.rate:.1%}")
            majority = dashboard.majority_share(votes)
            if majority >= 0.9:
                st.warning(f"{majority:.0%} of the A/B votes name the same side: agreement with them mostly measures "
                           "how often the judge names that side (a judge that always does would score "
                           f"{majority:.0%}); votes for both sides tell more.")
            state.chart(dashboard.learning_curve_figure(curve, majority=majority), "votes_curve")
            shown = curve.assign(ridge=[f"{v:.2g}" if v == v else "—" for v in curve["ridge"]])  # NaN at 0 votes
            st.dataframe(shown.rename(columns={"n_train": "training votes",
                                               "n_test": "held-out A/B votes (all folds)",
                                               "folds": "folds with A/B votes",
                                               "ridge": "pull toward shipped (ridge, median)"}),
                         hide_index=True, width="stretch",
                         column_config={c: st.column_config.NumberColumn(format="percent")  # as the chart
                                        for c in ("agreement", "low", "high", "sd")})
            if rest:
                rest_comp = Comparison(comp.system_a, comp.system_b, [comp.pairs[i] for i in rest])
                before_r, after_r = shipped.subset(rest), after.subset(rest)
                summ_r, summ_before_r = summarize_judge(rest_comp, after_r), summarize_judge(rest_comp, before_r)
                st.text(f"On the {state.counted(len(rest), 'pair')} without a vote: re-fitted judge "
                        f"{win_rate_text(summ_r)}, shipped "
                        f"judge {win_rate_text(summ_before_r)} (win rate of A)")
                pred = dashboard.rest_frame(comp, rest, before_r.p_a, after_r.p_a, after_r.verdict)
                st.dataframe(pred, hide_index=True, width="stretch", height=320,
                             column_config={"P(A preferred)": st.column_config.ProgressColumn(
                                 min_value=0.0, max_value=1.0, format="%.2f")})
                st.download_button("Download these predictions (CSV)", dashboard.export_csv(pred, comp),
                                   "judge_votes_predictions.csv", "text/csv", key="votes_download")
            else:
                st.info("Every loaded pair has a vote, so there is nothing left to predict.")

# ------------------------------------------------------------------------------------------------
# the judge's run, started by its button above: only now, so that the page below the button (the re-fit's button
# among it) is drawn as it is during the run, disabled, rather than left over from the last run and clickable

if judge_run_slot is not None:
    with judge_run_slot, state.running("run_judge", "The judge could not run"):  # then drawn again without the button
        state.run_judge(data)
