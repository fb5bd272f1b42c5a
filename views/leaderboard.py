"""Leaderboard: two or more systems (made for three or more) on their shared contexts (``core.leaderboard``, the
same as ``dialeval leaderboard``): per-metric means with intervals, Bradley-Terry ratings from the judge, every
pair of systems with Holm-adjusted p-values."""
import itertools
from typing import Sequence

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from core.data import DataError, alignment_words
from core.leaderboard import (build_leaderboard, human_dimensions, judge_grid, judged_in_cache, leaderboard_rows,
                              mismatch_note, pairs_family_note, pairwise_cells, pairwise_columns, rank_jump_note,
                              ranking_label, ratings_without_interval, render_leaderboard, shared_contexts,
                              unscored_note)
from core.report import as_sentence, to_json
from core.verdict_policy import COMBINED_TEST
from dashboard import judging, loading, state, tables, words
from dashboard.words import PROMINENT_NOTES

UNASKED_JUDGE_SECONDS = 60  # the judge runs unasked on a grid it should judge faster than this
PAIRS_IN_VIEW = 30  # rows of the pairs table shown without scrolling inside it

st.session_state["_page"] = "leaderboard"
st.title("Leaderboard")
st.caption("Two or more systems (made for three or more) that answered the same contexts, ranked: each metric's "
           "mean with a 95% interval "
           "(contexts resampled), every pair of systems compared with Holm-adjusted p-values, and with the judge "
           "Bradley-Terry ratings (Elo scale) with bootstrap intervals. The same as `dialeval leaderboard`.")


def by_words(ranked_by: str, signals: Sequence[str] = ()) -> str:
    """:func:`core.leaderboard.ranking_label` with a metric's display name ('mean BERT-RUBER', not 'mean
    bert_ruber'; the combined test's signals too); the command line keeps the id."""
    label = ranking_label(ranked_by, [words.name(s) for s in signals])
    return f"mean {words.name(ranked_by)}" if label == f"mean {ranked_by}" else label


def criterion(metric: str) -> str:
    """An every-pair row's metric as a person reads it ('BLEU', 'the judge', 'people: Overall', 'the combined
    test')."""
    if metric == COMBINED_TEST:
        return "the combined test"
    return f"people: {metric[len('human:'):]}" if metric.startswith("human:") else words.name(metric)


@st.cache_resource(show_spinner=False)
def _judged_store() -> dict:
    return {}


@st.cache_data(show_spinner=False, max_entries=16)
def cached_board(key: str, systems: tuple[str, ...], metrics: tuple[str, ...], judged: bool, people: bool, _grid,
                 _table, _judged):
    return build_leaderboard(_grid, _table, _judged, human=people)


up = st.file_uploader("A file with three or more systems (JSONL, DSTC10 JSON, column JSON, or CSV/TSV with the JSONL "
                      "field names); or load one on the Upload page (which maps other CSV columns)",
                      type=["jsonl", "json", "csv", "tsv", "gz"], key="lb_file")
source, examples, key = None, None, None
board = (up.name, up.getvalue()) if up is not None else None
if board is None and state.kept_board():  # a refresh, or a link: the file uploaded here before, kept on the server
    board = loading.reopen_board(state.kept_board())
    if board is None:
        st.warning("The file this page's address names is no longer kept on this server; upload it again.")
        state.forget_board()
    else:
        r1, r2 = st.columns([3, 1], vertical_alignment="center")
        r1.caption(f"Reopened from this page's address: {state.plain(board[0])} (uploaded here before).")
        if r2.button("Close this file", key="lb_close"):
            state.forget_board()
            st.rerun()
if board is not None:
    try:
        examples = loading.parse_upload(*board)
        source, key = board[0], loading.content_key(board[1])
        if up is not None and state.kept_board() != loading.content_key(b"board", board[1]):
            state.keep_board(*board)  # the address names it before anything is scored
    except DataError as e:
        st.error(f"{state.counted(len(e.problems), 'problem')} in the file:")
        st.dataframe([{"row": where, "field": p.field or "", "problem": p.message} for p, where in e.grouped()],
                     hide_index=True, width="stretch")
elif state.loaded() is not None:
    data = state.loaded()
    source, examples, key = data.name, data.examples, data.key
all_systems = list(dict.fromkeys(e.system for e in examples)) if examples else []
if examples is not None and len(all_systems) < 2:
    st.info(f"{state.plain(source)} holds {state.counted(len(all_systems), 'system')}; a leaderboard needs two or "
            "more (it is made for three or more) that answered the same contexts. Upload such a file above (for "
            "example a multi-system rated set).")
elif examples is None:
    st.info("Upload a file with three or more systems above, or load one on the Upload page.")
else:
    chosen = st.multiselect("Systems", all_systems, default=all_systems, key=f"lb_systems_{key}")
    metrics = state.selected_metrics()
    if len(chosen) < 2:
        st.warning("Choose at least two systems.")
        st.stop()
    if len(chosen) == 2:
        st.caption("Two systems: the Home and Scores pages give their full verdict (per-metric tests, what "
                   "drives the difference, slices); the leaderboard ranks them too.")
    try:
        grid = shared_contexts(examples, chosen)
    except DataError as e:
        st.error(str(e))
        st.stop()
    on = (f"{grid.n_contexts} shared contexts" if grid.n_groups == grid.n_contexts else
          f"{grid.n_groups} shared contexts, {grid.n_contexts} answers each")
    st.text(f"{source}: {len(chosen)} systems on {on} (aligned by "
            f"{alignment_words(grid.aligned_by, grid.alignment_note)})"
            + (f"; {len(grid.dropped)} rows left out (not on a context every system answered)" if grid.dropped else ""))
    mismatched = grid.context_mismatches()
    if mismatched:
        st.warning(state.plain(words.pasted_in_words(as_sentence(mismatch_note(mismatched, grid.n_contexts))
                                                     + " First: " + "; ".join(mismatched[:3]))))
    if board is not None:
        st.caption("This page ranks the file uploaded here; the comparison loaded in the sidebar (the other "
                   "pages') stays as it was.")
    table = None
    if metrics:
        bar, progress = state.progress_bar("scoring every system")
        from core.engine import ScoreTable
        results = state.metric_results(("leaderboard", key, tuple(chosen)), metrics, grid.examples(), progress)
        bar.empty()
        table = ScoreTable(grid.examples(), results)
    jkey = state.per_device((key, tuple(chosen)))
    # with "Judge every pair" off the board leaves the judge out, even judged before, as Home's verdict does and
    # as `dialeval leaderboard --no-judge` does: the pages give one answer
    judge_on = state.judge_by_default()
    judged = _judged_store().get(jkey) if judge_on else None
    if judge_on and judged is None and judged_in_cache(grid):  # judged before (or the demo's precomputed pairs)
        judged = _judged_store()[jkey] = judge_grid(grid)
    ok, message = judging.judge_status()
    n_pairs = len(list(itertools.combinations(chosen, 2))) * grid.n_contexts
    at_hand = judged is None and (_judged_store().get(jkey) is not None or judged_in_cache(grid))  # judge off
    seconds = state.judge_seconds(n_pairs, examples=grid.examples()) if judged is None and ok and not at_hand else 0.0
    # with "Judge every pair" on (the sidebar), run as the Home page runs it: unasked, once, where it should take
    # under UNASKED_JUDGE_SECONDS (a larger grid, or a run that failed, waits for the button, which says how long
    # or why)
    unasked_failed = st.session_state.setdefault("lb_judge_unasked_failed", set())
    unasked = (judged is None and ok and state.judge_by_default() and jkey not in unasked_failed
               and seconds < UNASKED_JUDGE_SECONDS)
    label = (f"Add the judge to the ranking ({n_pairs} judged pairs, already computed)" if at_hand else
             f"Run the judge on every pair of systems ({n_pairs} judged pairs, about {seconds:.0f} s)")
    if judged is None and ok and (unasked or state.run_button(label, "lb_judge")):
        with state.running("lb_judge", "The judge could not run"):  # then drawn again with the judge's ratings
            state.use_chosen_device()
            bar, progress = state.progress_bar(f"judging every pair of systems ({n_pairs} judged pairs)",
                                               estimate=seconds)
            try:
                if _judged_store().get(jkey) is None and not judged_in_cache(grid):
                    with state.first_run("judge"):  # models load one session at a time
                        _judged_store()[jkey] = judge_grid(grid, progress=progress)
                else:
                    _judged_store()[jkey] = _judged_store().get(jkey) or judge_grid(grid)
            except Exception:  # not tried unasked again (a rerun or a page left mid-run is no failure)
                unasked_failed.add(jkey)
                raise
            state.turn_judge_on()  # pressed: "Judge every pair" on, as Home's judge button does
    rated = bool(human_dimensions(grid))
    people = not (rated and st.toggle("Leave people's ratings out (the metrics' and the judge's view)",
                                      key=f"lb_no_human_{key}", help="As `dialeval leaderboard --no-human`: the "
                                      "ratings in the file neither shown nor ranking the systems."))
    if table is None and judged is None and not (rated and people):
        st.info("Choose metrics in the sidebar or run the judge (" + (
            "people's ratings are left out" if rated else "the file has no human ratings to rank by") + ").")
        st.stop()
    lb = cached_board(key, tuple(chosen), tuple(metrics), judged is not None, people, grid, table, judged)
    st.session_state["leaderboard"] = lb  # the tests read it
    rows, cols = leaderboard_rows(lb)
    st.subheader("Ranking")
    jump = rank_jump_note(lb)
    st.caption(f"Ranked by {state.plain(by_words(lb.ranked_by, lb.combined_signals))}; rank = 1 + the number of "
               "systems significantly better (Holm-adjusted p < 0.05), so systems that cannot be told apart share a "
               "rank." + (f" Note: {state.plain(lb.rank_note)}." if lb.rank_note else "")
               + (f" Note: {state.plain(jump)}." if jump else ""))
    if lb.coverage_note:
        st.warning(state.plain(as_sentence(lb.coverage_note)))
    notes = dict(lb.input_notes)  # as the command line says them; those that change how to read a number first
    for kind in PROMINENT_NOTES:
        if kind in notes:
            st.warning(state.plain(as_sentence(words.in_words(notes.pop(kind)))))
    if lb.reference_note:
        st.warning(state.plain(as_sentence(words.in_words(lb.reference_note))))
    if lb.shared_references_note:
        st.info(state.plain(as_sentence(lb.shared_references_note)))
    if notes:
        with st.expander(f"{state.counted(len(notes), 'note')} on the input"):
            for text in notes.values():
                st.text(as_sentence(words.in_words(text)))
    unscored = unscored_note(lb, words.name)  # the metrics named as the table's headers name them
    if unscored:
        st.caption(state.plain(as_sentence(unscored)))
    # a metric's display name heads its column ("BLEU mean [95% CI]"); the downloads keep the ids
    headers = {k: words.name(k) + h[len(k):] if k in lb.metrics and h.startswith(k + " ") else h for k, h in cols}
    st.dataframe(pd.DataFrame(rows, columns=[k for k, _ in cols]).rename(columns=headers), hide_index=True,
                 width="stretch")  # in the columns' order: the ranking criterion first
    for e in lb.systems:
        if e.unranked:
            st.warning(state.plain(f"{e.system} is not ranked (rank -): {words.in_words(e.unranked)}."))
    fig = go.Figure()
    m = lb.ranked_by
    if m == "judge":
        x = [e.judge["rating"] for e in lb.systems]
        # a rating no upset ties to the others has no interval (core.leaderboard.ratings_without_interval): no bar
        unbounded = ratings_without_interval(lb)
        lo = [0.0 if e.system in unbounded else e.judge["rating"] - e.judge["rating_low"] for e in lb.systems]
        hi = [0.0 if e.system in unbounded else e.judge["rating_high"] - e.judge["rating"] for e in lb.systems]
        title = ("Bradley-Terry rating (Elo scale): no interval, only the order means something (the table says "
                 "why)" if len(unbounded) == len(lb.systems) else "Bradley-Terry rating (Elo scale) with 95% interval")
    elif m == COMBINED_TEST:  # a combined value exists only for a pair: each system's mean against the others
        x = [e.combined for e in lb.systems]
        lo = hi = [0.0] * len(lb.systems)
        title = ("Combined test: each system's mean difference against the others (no interval of its own: "
                 "the pairs below test them)")
        fig.add_vline(x=0, line_width=1, line_dash="dot", line_color="gray")  # no preference either way
        fig.update_xaxes(title_text="standard deviations of the signals' differences (above 0: preferred)")
    else:
        x = [e.metrics[m]["mean"] for e in lb.systems]
        lo = [e.metrics[m]["mean"] - e.metrics[m]["low"] for e in lb.systems]
        hi = [e.metrics[m]["high"] - e.metrics[m]["mean"] for e in lb.systems]
        title = f"{by_words(m)} with 95% interval"
    fig.add_trace(go.Scatter(x=x, y=[state.plotly_plain(e.system) for e in lb.systems], mode="markers",
                             name=state.plotly_plain(criterion(m)),
                             error_x=dict(type="data", symmetric=False, array=hi, arrayminus=lo)))
    fig.update_layout(title=state.plotly_plain(title))
    fig.update_yaxes(autorange="reversed")
    fig.update_layout(height=120 + 45 * len(lb.systems), margin=dict(l=10, r=10, t=60, b=10))
    state.chart(fig, "lb_chart")
    st.subheader("Every pair")
    criteria = list(dict.fromkeys(r.metric for r in lb.pairwise))
    many = len(criteria) > 3 and lb.ranked_by in criteria  # open on the ranking criterion's pairs
    pick = st.selectbox("Show the pairs on", ["every criterion", *criteria], key=f"lb_pairs_on_{key}",
                        index=1 + criteria.index(lb.ranked_by) if many else 0,
                        format_func=lambda c: c if c == "every criterion" else criterion(c))
    cells = [{**c, "metric": criterion(c["metric"])} for c in pairwise_cells(lb)
             if pick == "every criterion" or c["metric"] == pick]
    headers = dict(pairwise_columns(lb.level))
    ordered = ["metric", "first", "second", "better", *(k for k in headers if k not in ("metric", "first", "second",
                                                                                        "better"))]
    # the answer ('better') beside the two systems, before the numbers, so a narrow window shows it
    # every row in view up to a screenful (the ranking criterion's rows came last, behind the table's own scroll)
    st.dataframe(pd.DataFrame(cells, columns=ordered).rename(columns=headers), hide_index=True, width="stretch",
                 height=tables.full_height(min(len(cells), PAIRS_IN_VIEW)))
    st.caption(state.plain(pairs_family_note("the Home page's comparison") + "."))
    if lb.dropped:
        with st.expander(f"{len(lb.dropped)} rows left out"):
            st.text("\n".join(lb.dropped))
    d1, d2 = st.columns(2)
    d1.download_button("Download (JSON)", to_json(lb.to_dict()), file_name="dialeval_leaderboard.json",
                       mime="application/json", key="lb_json", on_click="ignore")
    d2.download_button("Download (Markdown)", render_leaderboard(lb, "markdown") + "\n",
                       file_name="dialeval_leaderboard.md",
                       mime="text/markdown", key="lb_md", on_click="ignore")
