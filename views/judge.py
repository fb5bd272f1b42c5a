"""A/B judge: which reply a person would prefer, for every pair; win rate (also at equal reply length);
agreement with humans; your own votes given in place (A / tie / B per row), kept and downloadable, and the
judge re-fitted on them once there are enough."""
import pandas as pd
import plotly.express as px
import streamlit as st

from core.data import Comparison
from core.judges.pairs import MIN_VOTE_CONTEXTS, MIN_VOTES, context_key, votes_for_pairs, votes_matched
from core.report import as_sentence
from core.verdict import summarize_judge
from dashboard import exports, judging, loading, state, tables, vote_store, words

st.session_state["_page"] = "judge"
st.title("A/B judge")
st.caption("A learned pairwise judge (Wu & Chien): given the context and two replies, the probability that people "
           "prefer reply A. Both orders (A|B and B|A) are scored and averaged against position bias.")

ok, message = judging.judge_status()
if not ok:
    st.warning(message)


BLIND_NOTE = "The judges' results are hidden while \"Vote blind\" is on (at the top of the page); turn it off to see them."


def flip_share(x: float) -> str:
    """The order disagreement as a percentage; '-' when every pair's two replies were identical."""
    return "-" if x != x else f"{x:.1%}"


def win_rate_text(s) -> str:
    return f"{s.win.rate:.1%} [{s.win.low:.1%}, {s.win.high:.1%}]"


data = state.require_data()
blind = False  # "Vote blind": the judge's results on this page hidden while its user votes
if data is not None and ok:
    state.kept("vote_blind", False)
    blind = st.toggle("Vote blind: hide the judges' results on this page while I vote", key="vote_blind",
                      on_change=state.keep, args=("vote_blind",),
                      help="The win rate, the counts and the P(A) of every pair tell which reply the judge prefers; "
                           "with this on, the learned judge's, an LLM judge's and a re-fitted judge's results are "
                           "hidden, and a pair's P(A) shows only after your vote on it (in the vote panel).")
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
    if res is not None and not state.judge_by_default():
        st.info("The Home page's verdict and report leave the judge out while \"Judge every pair\" is off in the "
                "sidebar (as `dialeval compare --no-judge`); turn it on to use this reading there.")
    if res is not None and blind:
        st.info(BLIND_NOTE)
    elif res is not None:
        dims = data.dimensions
        dim = None
        if dims:
            state.kept("judge_dim", dims[judging.default_vote_dimension(dims)], dims)
            dim = st.selectbox("Human dimension for agreement", dims, key="judge_dim", on_change=state.keep,
                               args=("judge_dim",))
        summ = summarize_judge(comp, res, dim)
        tuned = state.refit(data)
        c1, c2, c3 = st.columns(3)
        # a short label (a long one was cut at 800 px, hiding which system is A); the system named below it
        c1.metric("Win rate of A", f"{summ.win.rate:.1%}",
                  help=f"the judge: wins of A / (wins of A + wins of B), ties excluded; {summ.win.interval} 95% "
                       "interval below")
        c1.text(f"A = {comp.system_a}; between {summ.win.low:.1%} and {summ.win.high:.1%} (95%); ties counted "
                f"half: {summ.win.ties_split:.1%}")
        lc = summ.length_controlled
        if lc is not None and lc.n:
            c1.text(f"at equal reply length{summ.at_length_words()}: {tables.rate_interval(lc)}")
            if summ.length_check_words():
                c1.caption(as_sentence(summ.length_check_words()))
        c2.metric("A / tie / B", f"{summ.win.wins} / {summ.win.ties} / {summ.win.losses}")
        if tuned is not None:
            c2.metric(f"Re-fit on your {state.counted(tuned['n_votes'], 'vote')}: win rate of A",
                      f"{tuned['summary'].win.rate:.1%}",
                      help="the judge re-fitted on your votes (below), over every loaded pair")
            c2.text(f"95% interval [{tuned['summary'].win.low:.1%}, {tuned['summary'].win.high:.1%}]")
        c3.metric("Order disagreement", flip_share(summ.order_disagreement),
                  help="share of pairs where scoring A|B and B|A gave different preferences (pairs of identical "
                       "replies left out: they have no winner to flip)")
        jdf = tables.judge_frame(comp, res.p_a, res.verdict)
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
        # folded: the judge's P(A) on every pair would bias a vote below (votes are blind, as Chatbot Arena's)
        with st.expander("The judge's P(A) on every pair (vote below first to stay blind)"):
            # pairs counted from 1, as the votes below ("Pair 1 of 60"); "pair" stays the 0-based index elsewhere
            st.dataframe(jdf.assign(pair=jdf["pair"] + 1), hide_index=True, width="stretch", height=380,
                         column_config={"P(A preferred)": st.column_config.ProgressColumn(min_value=0.0, max_value=1.0,
                                                                                         format="%.2f")})
        # bins of 0.05 from 0 to 1 and a little room either side, so the bars near 1.0 and the tick at 1.0 show
        hist = px.histogram(jdf, x="P(A preferred)", title="P(A preferred) over pairs")
        hist.update_traces(xbins={"start": 0.0, "end": 1.0 + 1e-9, "size": 0.05})
        hist.update_xaxes(range=[-0.02, 1.02], dtick=0.2)
        state.chart(hist, "judge_hist")

# ------------------------------------------------------------------------------------------------
# another judge: any OpenAI-compatible LLM (core.judges.llm), asked in both orders


def llm_judge_section(data, blind: bool = False) -> None:
    """Pick the judge: an LLM endpoint and model (a key typed here lives in this session's memory only: a
    password field whose value no address, file or log receives), asked in both orders through the engine; its
    summary beside the learned judge's."""
    import os

    from core.engine import judge_comparison
    from core.judges.llm import LLMJudge, LLMSettings
    comp = data.comparison
    st.divider()
    st.subheader("An LLM as the judge")
    st.caption("Any OpenAI-compatible endpoint (a hosted API, or vLLM, llama.cpp, Ollama, `transformers serve` on "
               "your machine) judges the same pairs as the learned judge: both orders asked, orders that disagree "
               "make a tie, every answer kept in the score cache (asking again sends nothing). The learned judge "
               "stays the one the home page's verdict uses.")
    with st.form("llm_judge_form"):
        url = st.text_input("Endpoint base URL", value=os.environ.get("OPENAI_BASE_URL", ""),
                            placeholder="e.g. http://127.0.0.1:8000/v1")
        model = st.text_input("Model", value=os.environ.get("DIALEVAL_LLM_MODEL", ""))
        key = st.text_input("API key (kept in this browser session's memory only; empty: $OPENAI_API_KEY on the "
                            "server)", type="password", key="llm_api_key")
        criteria = st.text_area("Criteria (empty: the default rubric: which reply a person would rather receive "
                                "next; appropriate, on topic, consistent, fluent)", height=80)
        concurrency = st.number_input("Requests at once", min_value=1, max_value=64, value=4, step=1)
        asked = st.form_submit_button(f"Ask the LLM judge over {state.counted(data.n, 'pair')} "
                                      f"({2 * data.n} requests at most, fewer when cached)")
    store = st.session_state.setdefault("llm_judge_results", {})
    if asked and not (url.strip() and model.strip()):  # nothing sent: the engine's message names CLI flags
        st.error("Enter the endpoint URL (for example http://127.0.0.1:8000/v1) and the model name first.")
    elif asked:
        try:
            # typed text, never a file's name: a served page must not read the server's files into a prompt
            judge = LLMJudge(LLMSettings(url=url.strip(), model=model.strip(), criteria=criteria.strip() or None,
                                         concurrency=int(concurrency)), api_key=key or None)
            judge.check_ready()
            bar, progress = state.progress_bar("asking the LLM judge (stay on this page while it runs)")
            try:
                out = judge_comparison(comp, judge, progress=progress)
            finally:
                bar.empty()
            store[data.key] = {"summary": summarize_judge(comp, out), "usage": judge.usage_line(),
                               "signature": judge.signature()}
        except ValueError as e:  # a missing URL or model, an endpoint that refused: one line, never the key
            st.error(f"The LLM judge could not run: {state.plain(words.llm_form_words(str(e)))}")
    got = store.get(data.key)
    if got is None:
        return
    if blind:
        st.info(BLIND_NOTE)
        return
    summ = got["summary"]
    c1, c2, c3 = st.columns(3)
    c1.metric(f"LLM judge: win rate of A ({state.plain(comp.system_a)})", f"{summ.win.rate:.1%}"
              if summ.win.wins + summ.win.losses else "-")
    c1.text(f"95% interval [{summ.win.low:.1%}, {summ.win.high:.1%}]")
    c2.metric("A / tie / B", f"{summ.win.wins} / {summ.win.ties} / {summ.win.losses}")
    c3.metric("Position flips", flip_share(summ.order_disagreement),
              help="share of pairs where asking A first and B first named different winners (a tie then; "
              "pairs of identical replies, and pairs not read in both orders, left out)")
    c3.text(f"first-shown reply preferred: {summ.first_shown:.1%}")
    unparsed = summ.unparsed
    if unparsed:
        st.warning(f"{state.counted(len(unparsed), 'pair')} got answers naming neither reply after a second ask "
                   f"(never guessed): pairs {', '.join(str(i + 1) for i in unparsed[:20])}")
    if summ.human is not None and summ.human.n:
        st.text(f"agreement with people: {summ.human.agreement:.1%} of {state.counted(summ.human.n, 'pair')} with a "
                f"clear human preference [{summ.human.low:.1%}, {summ.human.high:.1%}]")
    st.caption(f"{state.plain(got['usage'])}. {state.plain(got['signature'])}")


if data is not None:
    llm_judge_section(data, blind)

# ------------------------------------------------------------------------------------------------
# your votes, in place

# A clicked button keeps the focus, and the browser presses a focused button on Space and Enter: after a click on a
# vote, Space (to scroll) would cast the same vote on the next pair. Those keys do nothing on a panel button focused by a
# click (one reached with Tab still takes them); the toggle "Vote blind" lets the focus go once it has drawn its new
# state, so the vote keys work at once (Streamlit's shortcuts ignore keys while a form element has the focus).
VOTE_KEY_GUARD = """<script>
(() => {
  if (window.__dialevalVoteKeys) return;  // once per page load
  window.__dialevalVoteKeys = true;
  const inPanel = e => e && e.closest && e.closest('[class*="st-key-vote_"]');
  let clicked = false;  // the focus came to a panel button by a click (Tab to one: its Enter still presses it)
  document.addEventListener('pointerdown', e => { clicked = !!inPanel(e.target); }, true);
  document.addEventListener('keydown', e => {
    if (e.key === 'Tab') clicked = false;
    if ((e.key === ' ' || e.key === 'Enter') && clicked && inPanel(document.activeElement)) {
      e.preventDefault();
      e.stopPropagation();
    }
  }, true);
  document.addEventListener('click', e => {  // after the toggle has drawn its new state, the focus leaves it
    const toggle = e.target.closest && e.target.closest('.st-key-vote_blind');
    if (toggle) setTimeout(() => toggle.contains(document.activeElement) && document.activeElement.blur(), 300);
  }, true);
})();
</script>"""
VOTE_LABELS = {"A": "A is better", "tie": "Tie", "B": "B is better"}
VOTE_KEYS = {"A": "A", "tie": "T", "B": "B"}  # keyboard shortcuts (st.button's shortcut; C and R are reserved)


def _next_unvoted(n: int, given: dict, after: int) -> int:
    """The first pair after ``after`` (wrapping round) without a vote; ``after`` + 1 when every pair has one."""
    for k in range(1, n + 1):
        i = (after + k) % n
        if i not in given:
            return i
    return (after + 1) % n


def _cast(data, i: int, vote: str | None) -> None:
    """A click on a vote button (or its key): save the vote on pair ``i`` as shown (None clears it) as the systems'
    vote (``vote_store.as_kept``: the sides are shuffled per pair) and move on."""
    given = dict(state.votes(data))
    if vote is None:
        given.pop(i, None)
    else:
        given[i] = vote_store.as_kept(vote, vote_store.shown_swapped(data.key, i))
    state.set_votes(data, given)
    st.session_state["vote_last_" + data.key] = i
    if vote is not None:
        st.session_state["vote_at_" + data.key] = _next_unvoted(data.n, given, i)


def _go(data, step: int) -> None:
    st.session_state["vote_at_" + data.key] = (st.session_state["vote_at_" + data.key] + step) % data.n


@st.fragment
def vote_panel(data) -> None:
    """One pair at a time, blind: the whole context and both replies (long ones folded, their sides shuffled per
    pair: ``vote_store.shown_swapped``), then A / tie / B as one click (or key) each. The panel speaks of the
    replies as shown (its "A" is the reply shown as A); the votes are kept as the systems'. The judge's P(A) for a
    pair is shown only once you have voted on it. A vote reruns this panel only (st.fragment), not the page; the
    page is drawn again when the count crosses what a re-fit needs."""
    comp, n = data.comparison, data.n
    kept = state.votes(data)  # the systems' votes; `given`: the same as the panel shows them
    given = {k: vote_store.as_kept(v, vote_store.shown_swapped(data.key, k)) for k, v in kept.items()}
    at_key = "vote_at_" + data.key
    if at_key not in st.session_state or not 0 <= st.session_state[at_key] < n:
        st.session_state[at_key] = _next_unvoted(n, given, -1)
    i = st.session_state[at_key]
    a, b = comp.pairs[i]
    context = a.context  # system A's, whichever side it is shown on (the other file's spelling could tell them apart)
    if vote_store.shown_swapped(data.key, i):
        a, b = b, a
    mine = vote_store.pair_votes(comp, kept)
    enough, where = judging.vote_count(mine)
    st.markdown(f"**Pair {i + 1} of {n}** · {state.counted(len(given), 'pair')} voted"
                + (f" · your vote here: **{VOTE_LABELS[given[i]]}**" if i in given else ""))
    with st.container(border=True):
        st.caption("Context (oldest first)")
        for k, turn in enumerate(context):
            state.folded_text(f"[{k + 1 - len(context)}] {turn}", f"vote_fold_ctx_{k}")
        r1, r2 = st.columns(2)
        state.show_text("Reply A", a.response, key="vote_fold_a", where=r1)
        state.show_text("Reply B", b.response, key="vote_fold_b", where=r2)
    # the three votes wide, on one row; moving and clearing on the row below, each button as wide as its label
    # (six buttons on one row cut "Previous (P)" even at 1400 px)
    for col, vote in zip(st.columns([2, 1, 2]), ("A", "tie", "B")):
        col.button(f"{VOTE_LABELS[vote]} ({VOTE_KEYS[vote]})", key=f"vote_{vote}", width="stretch",
                   type="primary" if given.get(i) == vote else "secondary", shortcut=VOTE_KEYS[vote],
                   on_click=_cast, args=(data, i, vote))
    with st.container(horizontal=True):
        st.button("Previous (P)", key="vote_prev", shortcut="P", on_click=_go, args=(data, -1))
        st.button("Next (N)", key="vote_next", shortcut="N", on_click=_go, args=(data, 1))
        st.button("Clear", key="vote_clear", disabled=i not in given, on_click=_cast, args=(data, i, None))
    # "Vote blind": the judge's P(A) is not shown after a vote either (it anchored the votes that followed)
    res = None if st.session_state.get("vote_blind") else state.judge_output(data)
    last = st.session_state.get("vote_last_" + data.key)
    if last is not None and last in given:
        said = f"Pair {last + 1}: you said {VOTE_LABELS[given[last]] if given[last] != 'tie' else 'tie'}"
        if res is not None:
            swapped = vote_store.shown_swapped(data.key, last)
            p = 1 - float(res.p_a[last]) if swapped else float(res.p_a[last])
            call = vote_store.as_kept(res.verdict[last], swapped)
            said += (f"; the judge gives A a {p:.0%} chance of being preferred "
                     f"(its call: {'A' if call == 'A' else 'B' if call == 'B' else 'a tie'}).")
        st.caption(said)
    shown = [given[k] for k in kept if kept[k] in VOTE_LABELS and all(x.response.strip() for x in comp.pairs[k])]
    st.text(f"{state.counted(len(mine), 'vote')} (A {shown.count('A')}, tie {shown.count('tie')}, "
            f"B {shown.count('B')}). {where}.")
    on_blank = len([k for k, v in kept.items() if v in VOTE_LABELS]) - len(mine)
    if on_blank:
        st.caption(f"{state.counted(on_blank, 'vote')} on pairs with a blank reply: kept, but not counted here, used "
                   "to re-fit the judge or downloaded (a vote to train on needs both replies).")
    if mine:
        with st.expander("Your votes so far" + (", with the judge's P(A) on each" if res is not None else "")):
            voted = sorted(given)
            rows = {"pair": [k + 1 for k in voted], "your vote": [VOTE_LABELS[given[k]] for k in voted],
                    "id": [comp.pairs[k][0].id for k in voted]}
            if res is not None:  # of the reply shown as A
                rows["judge P(A as shown)"] = [round(1 - float(res.p_a[k]) if vote_store.shown_swapped(data.key, k)
                                            else float(res.p_a[k]), 3) for k in voted]
            st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    st.download_button("Download your votes (JSONL)", vote_store.votes_jsonl(mine), file_name="dialeval_votes.jsonl",
                       mime="application/jsonl", key="votes_download_mine", on_click="ignore", disabled=not mine)
    was = st.session_state.get("vote_enough_" + data.key)
    st.session_state["vote_enough_" + data.key] = enough
    if was is not None and was != enough:  # the re-fit section below reads the count: draw the page again
        st.rerun(scope="app")


if data is not None:
    st.divider()
    st.subheader("Your votes")
    st.caption(f"Which reply is better? One pair at a time: the judge's opinion on a pair shows here only after you "
               "vote on it (turn on \"Vote blind\" at the top to hide the judges' results on the page as well). "
               "Keys: A, T (tie), B, N (next), P (previous). Which system wrote \"Reply A\" changes from pair to pair "
               "(the sides are shuffled, as Chatbot Arena shuffles them), so the side tells nothing; your votes are "
               "kept as the systems'. Every vote is saved as you go (and kept "
               f"for this comparison after a refresh). Once there are **{MIN_VOTES} votes for A or B on "
               f"{MIN_VOTE_CONTEXTS} or more different contexts** (ties do not count), the judge can be re-fitted on "
               "them below.")
    n_contexts = len({context_key(a.context) for a, _ in data.comparison.pairs})  # as the re-fit counts them
    if data.n < MIN_VOTES or n_contexts < MIN_VOTE_CONTEXTS:  # voting here can never reach a re-fit: said here
        st.info(f"These {state.counted(data.n, 'pair')} on {state.counted(n_contexts, 'context')} cannot give the "
                f"{MIN_VOTES} A/B votes on {MIN_VOTE_CONTEXTS} contexts a re-fit needs: your votes here are kept and "
                "downloadable; to re-fit, upload a votes file or use the upload's human scores below.")
    st.html(VOTE_KEY_GUARD, unsafe_allow_javascript=True)
    vote_panel(data)

# ------------------------------------------------------------------------------------------------
# re-fit the judge on votes (Wu & Chien's use case): from the shipped judge, learning curve, predictions

if data is not None and ok:
    st.divider()
    st.subheader("Re-fit the judge on votes")
    st.caption("The judge is re-fitted from the shipped checkpoint on the votes (its output layers, pulled toward the "
               "shipped judge as strongly as a cross-validation on the votes says; the encoders stay as shipped). "
               "It then judges every loaded pair (the win rate above updates), predicts the pairs without a vote, "
               "and a learning curve shows agreement with held-out votes against the number of training votes "
               f"(cross-validation by context). Enough votes: {MIN_VOTES} for A or B on "
               f"{MIN_VOTE_CONTEXTS}+ contexts.")
    sources = ["Your votes on this page", "Upload a votes file"] + (
        ["Use this upload's human scores as votes"] if data.dimensions else [])
    source = st.radio("Votes", sources, horizontal=True, key="votes_source")
    votes, votes_key = None, None
    if source == sources[0]:
        votes = vote_store.pair_votes(comp, state.votes(data))
        votes_key = loading.content_key("mine", vote_store.votes_jsonl(votes))
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
                votes_key = loading.content_key(raw)
            except DataError as e:
                st.error(f"The votes file could not be read: {e}")
    else:
        state.kept("votes_dim", data.dimensions[judging.default_vote_dimension(data.dimensions)], data.dimensions)
        vdim = st.selectbox("Human dimension to derive votes from", data.dimensions, key="votes_dim",
                            on_change=state.keep, args=("votes_dim",))
        votes = judging.votes_from_comparison(comp, vdim)
        votes_key = loading.content_key("scores", vdim)
        st.caption(f"A vote is cast where the two replies' scores differ by at least a quarter of the scale "
                   f"({judging.vote_margin(comp, vdim):g} on {state.plain(vdim)}); the other pairs have no vote.")
    mine_here = source == sources[0]  # counted live in the vote panel: a vote reruns only the panel, not this
    if votes is not None:
        on_pairs = votes_for_pairs(comp, votes)
        for line in votes_matched(comp, votes):
            st.warning(state.plain(as_sentence(line)))
        n_on = sum(v is not None for v in on_pairs)
        if mine_here:
            st.text("Your votes are counted in the vote panel above; the pairs without a vote get the re-fitted "
                    "judge's prediction.")
        else:
            st.text(f"{state.counted(len(votes), 'vote')} (A {sum(v.vote == 'A' for v in votes)}, "
                    f"B {sum(v.vote == 'B' for v in votes)}, "
                    f"tie {sum(v.vote == 'tie' for v in votes)}); {n_on} of them {'is' if n_on == 1 else 'are'} on "
                    f"the {state.counted(data.n, 'loaded pair')}; {data.n - n_on} of those "
                    f"ha{'s' if data.n - n_on == 1 else 've'} no vote "
                    "and get the re-fitted judge's prediction.")
        folds = MIN_VOTE_CONTEXTS
        enough, where = judging.vote_count(votes)
        if not enough:
            st.info("Not enough votes yet: the button appears here once there are enough (the count is in the vote "
                    "panel above)." if mine_here else f"Not enough votes yet: {where}.")
        elif state.run_button("Re-fit the judge on your votes and draw the learning curve" if mine_here else
                              f"Re-fit the judge on {state.counted(len(votes), 'vote')} and draw the learning curve",
                              "tune_votes", busy=judge_clicked, type="primary"):
            # then drawn again: the win rate at the top shows the re-fitted judge
            with state.running("tune_votes", "Re-fitting on the votes failed"), state.first_run("refit"):
                from core.judges import votes as V
                from core.judges.pairwise import load_judge
                state.use_chosen_device()
                bar, vprogress = state.progress_bar("loading the judge")
                judge = load_judge()
                feats = V.vote_features(votes, judge, vprogress)
                decided = [v for v in votes if v.vote in ("A", "B")]
                curve = V.learning_curve(votes, judging.curve_sizes(len(decided), folds), folds, judge,
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
        if done is not None and done["votes_key"] == votes_key and blind:
            st.info(BLIND_NOTE)
        elif done is not None and done["votes_key"] == votes_key:
            curve, rest, after, shipped = done["curve"], done["rest"], done["output"], done["shipped"]
            s_all, s_shipped = done["summary"], summarize_judge(comp, shipped)
            r1, r2 = st.columns(2)
            r1.metric(f"Re-fitted judge: win rate of A over all {state.counted(data.n, 'pair')}",
                      f"{s_all.win.rate:.1%}")
            r1.text(f"95% interval [{s_all.win.low:.1%}, {s_all.win.high:.1%}]")
            r2.metric("Shipped judge on the same pairs", f"{s_shipped.win.rate:.1%}")
            majority = judging.majority_share(votes)
            if majority >= 0.9:
                st.warning(f"{majority:.0%} of the A/B votes name the same side: agreement with them mostly measures "
                           "how often the judge names that side (a judge that always does would score "
                           f"{majority:.0%}); votes for both sides tell more.")
            state.chart(judging.learning_curve_figure(curve, majority=majority), "votes_curve")
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
                pred = tables.rest_frame(comp, rest, before_r.p_a, after_r.p_a, after_r.verdict)
                st.dataframe(pred.assign(pair=pred["pair"] + 1), hide_index=True, width="stretch", height=320,
                             column_config={"P(A preferred)": st.column_config.ProgressColumn(
                                 min_value=0.0, max_value=1.0, format="%.2f")})
                st.download_button("Download these predictions (CSV)", exports.export_csv(pred, comp),
                                   "judge_votes_predictions.csv", "text/csv", key="votes_download")
            else:
                st.info("Every loaded pair has a vote, so there is nothing left to predict.")

# ------------------------------------------------------------------------------------------------
# the judge's run, started by its button above: only now, so that the page below the button (the re-fit's button
# among it) is drawn as it is during the run, disabled, rather than left over from the last run and clickable

if judge_run_slot is not None:
    with judge_run_slot, state.running("run_judge", "The judge could not run"):  # then drawn again without the button
        state.ask_judge(data)  # and "Judge every pair" on: the verdict reads it
