"""Home: which system is better, in one line, and why (the verdict, the report, the headline table, what drives
each difference)."""
import re
from dataclasses import replace

import streamlit as st

from core.data import alignment_words
from core.report import as_sentence, left_out_note
from core.verdict import few_contexts_note, mismatch_warning, verdict_glance, verdict_notes, verdict_parts
from dashboard import judging, state, tables, words
from dashboard.words import PROMINENT_NOTES


def length_words(diff: float) -> str:
    """A's mean reply length against B's, in words ('A's replies are 8.4 words shorter on average')."""
    if abs(diff) < 0.05:
        return "A's and B's replies are about as long on average"
    return f"A's replies are {abs(diff):.1f} words {'longer' if diff > 0 else 'shorter'} on average"


def home() -> None:
    st.session_state["_page"] = "home"
    st.title("dialeval: which of two dialogue systems is better?")
    st.caption("Metrics measured against human ratings: BLEU, υBLEU, RUBER, BERT-RUBER, ADEM, MME-CRS, and a learned "
               "A/B judge (the judge); how often each named the system people prefer is under About the metrics.")
    data = state.require_data()
    if data is None:
        return
    comp = data.comparison
    metrics = state.selected_metrics()
    cs = state.get_scores(data, metrics) if metrics else None
    cs = cs if cs is not None and cs.metrics else None
    ok, _ = judging.judge_status()
    judge = state.verdict_judge(data, "home_run_judge")  # the sidebar's "Judge every pair" says whether
    if cs is None and judge is None and not data.dimensions:  # people's ratings make a verdict on their own
        st.info("Choose at least one metric in the sidebar (or run the judge on the A/B judge page)."
                if state.judge_by_default() or state.judge_output(data) is None else
                "Choose at least one metric in the sidebar, or turn on \"Judge every pair\" there: the judge's "
                "reading of these pairs is already computed.")
        return
    if cs is None and judge is None:
        st.caption("No metric chosen: the verdict comes from the people's ratings in the input (choose metrics in "
                   "the sidebar, or run the judge on the A/B judge page).")
    verdict = state.cached_verdict(data.key, tuple(cs.metrics) if cs else (), judge is not None, comp, cs, judge)
    st.session_state["verdict"] = verdict  # what this page shows: the tests read it
    with st.container(border=True, key="verdict"):
        # the command line's sentence said in words (display names, "between x and y"): its headline as a heading,
        # the verdict at a glance below it (core.verdict.verdict_glance: how strong the evidence is, how far such a
        # verdict is trusted), then the sentence's evidence, signal by signal
        head, rest = verdict_parts(verdict, words.name)
        glance = verdict_glance(verdict, words.name)
        if glance:
            st.markdown(f"#### {state.plain(head)}")
            st.markdown("  \n".join(f"**{label}:** {state.plain(text)}" for label, text in glance[1:]))
            st.caption(f"In full: {state.plain(rest[1:].lstrip())}")
        else:  # a short verdict (nothing measured, identical replies): one heading
            st.markdown(f"#### {state.plain(head + rest)}")
    if verdict.n_pairs and verdict.identical_pairs == verdict.n_pairs:
        st.warning("A and B give the same reply in every pair: the same file, or the same system, is compared with "
                   "itself. Load two different systems on the Upload page.")
    elif verdict.identical_pairs:
        st.caption(f"{verdict.identical_pairs} of {verdict.n_pairs} pairs have identical replies (they count as ties).")
    if verdict.context_mismatches:
        st.warning(state.plain(mismatch_warning(verdict) + ": " + "; ".join(verdict.context_mismatches[:5])
                               + ("; ..." if len(verdict.context_mismatches) > 5 else "")))
    st.markdown(f"**A**: {state.plain(comp.system_a)} · **B**: {state.plain(comp.system_b)} · "
                f"{state.counted(data.n, 'pair')} "
                f"(aligned by {state.plain(alignment_words(comp.aligned_by, comp.alignment_note))}) · "
                "human dimensions: "
                f"{state.plain(', '.join(data.dimensions)) if data.dimensions else 'none'} · source: "
                f"{state.plain(data.name)}")
    c1, c2 = st.container(), st.container()  # stacked: side by side the labels were cut at 800 px
    if cs is not None:
        name = re.sub(r"[^\w.-]+", "_", f"dialeval_{comp.system_a}_vs_{comp.system_b}")[:80]  # letters of any script
        c1.download_button("Download the report (HTML)", state.report_maker(data, verdict, cs),
            file_name=f"{name}.html", mime="text/html", key="dl_report", on_click="ignore", type="primary",
            help="One self-contained file (opens offline): the verdict, tables with intervals, charts, every "
                 "pair side by side, signatures and the input files' SHA-256. The same as `dialeval report`.")
    if judge is None and ok:
        label = (f"Add the A/B judge's reading of the {state.counted(data.n, 'pair')} (already computed)"
                 if state.judge_output(data) is not None else
                 f"Run the A/B judge over the {state.counted(data.n, 'pair')} "
                 f"(about {state.judge_seconds(data.n, data.comparison):.0f} s)")
        if state.run_button(label, "home_run_judge", where=c2):
            with state.running("home_run_judge", "The judge could not run"):
                state.ask_judge(data)
    st.caption("This page's address reopens this comparison with these choices: refresh, bookmark or share it "
               "(on this server).")
    shown = verdict_notes(verdict)
    for key in ("names", "one-sided-ratings", "rating-scales"):  # (the few-contexts note goes under the headline table)
        if key in shown:
            st.warning(state.plain(as_sentence(shown[key])))
    if "shared-references" in shown:
        st.info(state.plain(as_sentence(shown["shared-references"])))
    notes = dict(verdict.input_notes)  # as on stderr and in every output of compare
    for kind in ("reference copy", *PROMINENT_NOTES):  # they change what a verdict or a number means
        if kind in notes:
            st.warning(state.plain(as_sentence(words.in_words(notes.pop(kind)))))
    for kind in ("long response", "no reference"):  # a reader cuts replies short; metrics that need references
        if kind in notes:  # score nothing there and the verdict combines other signals: beside the verdict
            st.info(state.plain(as_sentence(words.in_words(notes.pop(kind)))))
    if notes:
        with st.expander(f"{state.counted(len(notes), 'note')} on the input"):
            for text in notes.values():
                st.text(as_sentence(words.in_words(text)))
    if verdict.unmatched:
        with st.expander(f"{state.counted(len(verdict.unmatched), 'unmatched row')}, not compared"):
            st.text(words.pasted_in_words("\n".join(verdict.unmatched)))
    if verdict.left_out:
        with st.expander("Pairs left out of a metric's n (no value for A or B)"):
            st.text("\n".join(f"{d['metric']}: {left_out_note(d)}" for d in verdict.left_out))
    if verdict.metrics:
        st.subheader("Headline comparison")
        head = tables.headline_frame(verdict)
        head["metric"] = [m if m.startswith("human: ") else words.name(m) for m in head["metric"]]
        # every row in view (Streamlit shows about ten, then scrolls inside the table: the combined test's row,
        # which decides, came last and was cut off on a file with six human dimensions)
        st.dataframe(head, hide_index=True, width="stretch", height=tables.full_height(len(head)))
        same_n = tables.shared_n(verdict)
        st.caption((f"Every row compares the same {state.counted(same_n, 'pair')}. " if same_n is not None else "")
                   + f"95% bootstrap intervals ({verdict.n_boot:,} resamples of the contexts, seed {verdict.seed}); "
                   "'better by' is the better system's mean minus the other's (A - B for every metric: the chart "
                   f"below); p from approximate randomization ({verdict.n_perm:,}); 'better' only when p < 0.05 and the "
                   "interval excludes 0 (core.verdict, the same numbers as `dialeval compare`; the means' own "
                   "intervals are in the report)."
                   + (f" {as_sentence(shown['human-ties'])}" if "human-ties" in shown else ""))
        few = few_contexts_note(verdict)
        if few:
            st.info(as_sentence(few))
    if verdict.judge is not None:
        j = verdict.judge
        w = j.win
        lc = j.length_controlled
        st.text(f"Judge: prefers A in {w.wins}, B in {w.losses}, tie in {w.ties} of {state.counted(j.n, 'pair')}; "
                f"win rate of A "
                f"{w.rate:.1%} (ties excluded) [{w.low:.1%}, {w.high:.1%}] -> {j.better(comp.system_a, comp.system_b)}"
                + (f"\nLength-controlled win rate of A (at equal reply length{j.at_length_words()}): "
                   f"{tables.rate_interval(lc)}; {length_words(lc.mean_length_diff)}" if lc is not None and lc.n else "")
                + (f"\n{as_sentence(j.length_check_words())}" if j.length_check_words() else ""))
    tuned = state.refit(data)
    if tuned is not None:
        t = tuned["summary"]
        st.text(f"Judge re-fit on {state.counted(tuned['n_votes'], 'vote')}: win rate of A {t.win.rate:.1%} "
                f"[{t.win.low:.1%}, {t.win.high:.1%}] over all {state.counted(t.n, 'pair')} "
                f"(A/tie/B {t.win.wins}/{t.win.ties}/{t.win.losses})")
    rows = [r for r in verdict.rows("metric") if r.n > 0]  # a metric that could not score gets no empty axes
    if verdict.combined is not None and verdict.combined.n:  # first: what the verdict reads
        rows.insert(0, replace(verdict.combined, metric="combined: " + "+".join(verdict.combined_signals)))
    if rows:
        state.chart(state.interval_figure(rows, "A - B per metric with 95% interval", shared_axis=False),
                    "home_intervals")
        combined = (f" The first row is the combined test the verdict reads, of "
                    f"{words.names(verdict.combined_signals)} (its scale: standard deviations of their differences, "
                    "summed); each other row is one signal alone." if verdict.combined is not None
                    and verdict.combined.n else "")
        st.caption(f"Right of the dashed line: {state.plain(comp.system_a)} (A) higher; each row on its own scale. "
                   f"Blue: the row's own test names A; orange: B; grey: neither.{state.plain(combined)}")
    drivers = tables.drivers_frame(verdict)
    if len(drivers):
        st.subheader("What drives each difference")
        st.caption("Per metric, the pairs whose A - B pushes the mean furthest in its direction, and the comparison "
                   "redone without the most pushing 5 % of the pairs (at least one; only pairs that push that way): "
                   "a verdict that does not survive rests on a few pairs. "
                   "Open a pair on the Scores page.")
        drivers["metric"] = drivers["metric"].map(words.name)
        st.dataframe(drivers, hide_index=True, width="stretch")
    if cs is not None:
        with st.expander("Signatures (metric, variant, checkpoint, pool, version)"):
            st.dataframe([{"metric": k, "signature": v} for k, v in cs.table.signatures().items()],
                         hide_index=True, width="stretch")
    st.subheader("Next")
    st.page_link(state.PAGES["scores"], label="Per-example scores, slices and υBLEU references")
    st.page_link(state.PAGES["judge"], label="A/B judge and your own votes")
    st.page_link(state.PAGES["correlation"], label="Correlation with human scores")
    st.page_link(state.PAGES["leaderboard"], label="Leaderboard of three or more systems")
    st.page_link(state.PAGES["upload"], label="Upload other systems")


home()
