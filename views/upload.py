"""Upload: two systems' responses (two files, or one multi-system file), or a built-in sample."""
from pathlib import Path

import streamlit as st

from core.data import FORMATS, CsvMapping, DataError, alignment_words, systems_in
from dashboard import csv_columns, loading, state, words

st.session_state["_page"] = "upload"
st.title("Upload two systems")
st.markdown(f"Files up to **{loading.MAX_UPLOAD_MB} MB** each. Formats: our JSONL (one object a line: `context`, "
            "`response`, optional `id`, `system`, `references`, `scores`; any other plain field is kept as metadata "
            "to slice by), DSTC10 Track 5 JSON, column-dictionary JSON, CSV or TSV (once one is loaded, its columns "
            "are mapped below: which is the response, the context, ...).")

c1, c2 = st.columns(2)
if c1.button("Load the built-in demo", type="primary", key="demo_upload"):
    state.load_demo()
    st.success("Demo loaded: 60 held-out chitchat contexts answered by C-BM25 (retrieval) and SmolLM2-135M "
               "(generation), with the true next turn as reference.")
if c2.button("Load the human-rated sample", key="rated_upload",
             help="40 queries answered by a generative model and by a person, each reply rated for engagement by "
                  "three people (engagement-dd, MIT license): the Correlation page has something to show."):
    state.load_rated_demo()
    st.success("Human-rated sample loaded: 40 queries, a generative model vs the human reply, engagement ratings.")

mode = st.radio("Input", ["One file with several systems", "Two files (system A, system B)"], horizontal=True,
                key="upload_mode")
fmt_choice = st.selectbox("Format", ["detect"] + list(FORMATS), key="upload_format",
                          help="detect: from the extension, then from the first character")
fmt = None if fmt_choice == "detect" else fmt_choice


def read_slot(label: str, pasted_label: str, slot: str) -> tuple[str, bytes] | None:
    """An uploaded file, or pasted text, for one input slot."""
    up = st.file_uploader(label, type=["jsonl", "json", "csv", "tsv", "txt", "gz"], key=f"file_{slot}")
    pasted = st.text_area(f"... or paste the content of {pasted_label}", key=f"paste_{slot}", height=100)
    if up is not None:
        if pasted.strip():  # both given: the file is read, and the pasted text is said to be left aside
            st.info(f"Both a file and pasted text are given for {pasted_label}: the file {state.plain(up.name)} is "
                    "read, the pasted text is not (remove the file to use the text).")
        return up.name, up.getvalue()
    if pasted.strip():
        ext = ".csv" if fmt == "csv" else ".txt"  # .txt: the format is detected from the content
        return f"pasted-{slot}{ext}", pasted.encode("utf-8")
    return None


def csv_mapping_widgets(name: str, data: bytes, slot: str) -> tuple[bool, CsvMapping | None]:
    """(is CSV, mapping): the mapping is None until the response and context columns are chosen."""
    is_csv = csv_columns.is_delimited(name, data, fmt)
    if not is_csv:
        return False, None
    rows = csv_columns.csv_rows(data, name=name)
    header = rows[0] if rows else []
    if not any(h.strip() for h in header):  # empty: nothing to map; the loader says what is wrong
        return False, None
    guess = csv_columns.guess_csv_mapping(header, rows)
    st.caption("CSV column mapping for " + state.plain(words.pasted_in_words(name)) + " (guessed from the column names and contents; "
               "change any choice)")
    cols = st.columns(5)
    none = "(none)"

    def pick(col, label, key, required=False):
        options = header if required else [none] + header
        default = guess.get(key) if guess.get(key) in header else (None if required else none)
        val = col.selectbox(label, options, index=None if default is None else options.index(default),
                            placeholder="choose a column", key=f"csv_{slot}_{key}")
        return None if val == none else val

    response = pick(cols[0], "response", "response", True)
    context = pick(cols[1], "context", "context", True)
    cid = pick(cols[2], "id", "id")
    system = pick(cols[3], "system", "system")
    refs = pick(cols[4], "reference", "references")
    used = {response, context, cid, system, refs}
    free = [h for h in header if h not in used]
    numeric = set(csv_columns.numeric_columns(rows))
    # the key follows the other choices, so a column chosen above never stays selected as a score
    scores = st.multiselect("human score columns (numbers only)", [h for h in free if h in numeric],
                            default=[c for c in guess["scores"] if c in free],
                            key=f"csv_{slot}_scores_{abs(hash(tuple(sorted(map(str, used))))) % 10**8}")
    k = header.index(context) if context in header else None
    sep_guess = csv_columns.guess_separator([r[k] for r in rows[1:] if k is not None and k < len(r)])
    names = list(csv_columns.SEPARATORS)
    guessed_name = next((n for n, v in csv_columns.SEPARATORS.items() if v == sep_guess), names[0])
    sep_name = st.selectbox("context turn separator", names + ["other"], index=(names + ["other"]).index(guessed_name),
                            key=f"csv_{slot}_sep_{context}", help="how the turns of one context are separated in its "
                            "cell; guessed from the cells (the preview below shows the turns it gives)")
    sep = csv_columns.SEPARATORS.get(sep_name)
    if sep is None:
        sep = st.text_input("separator", value="|||", key=f"csv_{slot}_sep_other") or "\n"
    if response is None or context is None:
        missing = " and ".join(f"the {what} ({why})" for what, col, why in (
            ("response", response, "the system's reply"),
            ("context", context, "what the reply answers: the user's turn, or the conversation so far"))
            if col is None)
        st.info(f"No column was recognised as {missing}: choose it above. Every row needs a context and a response; "
                "a file without the context cannot be compared (replies are paired and judged by what they answer), "
                "so add it to the file.")
        return True, None
    return True, CsvMapping(response=response, context=context, id=cid, system=system, references=refs,
                            scores=scores, context_sep=sep)


def show_problems(err: DataError) -> None:
    """Every problem with file, row and field; the previously loaded data stays loaded."""
    rows = [{"file": words.pasted_in_words(Path(p.file).name) if p.file else "", "row": where,
             "field": p.field or "", "problem": words.pasted_in_words(p.message)} for p, where in err.grouped()]
    n = len(err.problems)
    st.error(f"{state.counted(n, 'problem')} in the upload; nothing new was loaded. Fix "
             f"{'it' if n == 1 else 'them'} and upload again.")
    st.dataframe(rows, hide_index=True, width="stretch", column_config={"problem": st.column_config.TextColumn(
        width="large")})  # the hint ends the text: the column wide enough to read it
    if state.loaded() is not None:
        prev = state.loaded()
        pair = f"{prev.comparison.system_a} vs {prev.comparison.system_b}"
        st.info("The previously loaded data is kept: " + state.plain(
            f"{prev.name}." if pair in prev.name else f"{prev.name} ({pair})."))


slots = ([("File", "the file", "one")] if mode.startswith("One")
         else [("System A's file", "system A's file", "a"), ("System B's file", "system B's file", "b")])
inputs = {}
waiting = False
for label, pasted_label, slot in slots:
    got = read_slot(label, pasted_label, slot)
    if got:
        is_csv, mapping = csv_mapping_widgets(got[0], got[1], slot)
        waiting |= is_csv and mapping is None
        inputs[slot] = (got[0], got[1], mapping)

parsed = {}
if len(inputs) == len(slots) and not waiting:
    try:
        for slot, (name, data, mapping) in inputs.items():
            parsed[slot] = loading.parse_upload(name, data, fmt, mapping)
    except DataError as e:
        parsed = {}
        show_problems(e)
    for slot, (name, data, mapping) in inputs.items():
        if mapping is not None and slot in parsed:
            st.caption(f"How {state.plain(words.pasted_in_words(name))} reads (first rows): check that the contexts split into turns")
            st.dataframe(csv_columns.csv_preview(parsed[slot]), hide_index=True, width="stretch")


def use(name: str, slots_used: list[str], sa: str, sb: str) -> None:
    uploads = [(inputs[s][0], inputs[s][1]) for s in slots_used]
    try:
        data = loading.load_uploads(name, uploads, fmt, [inputs[s][2] for s in slots_used], sa, sb,
                                    [parsed[s] for s in slots_used])
    except DataError as e:
        show_problems(e)
        return
    state.set_loaded(data, uploads)
    st.switch_page(state.PAGES["home"])  # on to the verdict; the address already names the comparison


if parsed:
    if mode.startswith("One"):
        exs = parsed["one"]
        systems = systems_in(exs)
        counts = {s: sum(e.system == s for e in exs) for s in systems}
        st.text(f"{len(exs)} row{'s' * (len(exs) != 1)}, {len(systems)} system{'s' * (len(systems) != 1)}: "
                + ", ".join(f"{s} ({n})" for s, n in counts.items()))
        if len(systems) < 2:
            st.error("This file holds one system; upload a multi-system file or switch to two files.")
        else:
            if len(systems) >= 3:
                st.caption(f"{len(systems)} systems: pick two to compare here, or rank them all on the Leaderboard "
                           "page after loading.")
            c1, c2 = st.columns(2)
            sa = c1.selectbox("System A", systems, index=0, key="pick_a")
            sb = c2.selectbox("System B", systems, index=1, key="pick_b")
            if sa == sb:
                st.warning("System A and system B are the same system: choose two different ones.")
            elif st.button("Compare these two systems", type="primary", key="use_one"):
                use(words.pasted_in_words(inputs["one"][0]), ["one"], sa, sb)
    else:
        ea, eb = parsed["a"], parsed["b"]
        c1, c2 = st.columns(2)
        sa = c1.selectbox("System in file A", systems_in(ea), key="pick_fa")
        sb = c2.selectbox("System in file B", systems_in(eb), key="pick_fb")
        if inputs["a"][1] == inputs["b"][1] and sa == sb:  # the same file twice is fine with two of its systems
            st.warning("The two files are identical and the same system is chosen in both: comparing a system with "
                       "itself finds no difference.")
        if st.button("Compare these two systems", type="primary", key="use_two"):
            use(words.pasted_in_words(f"{inputs['a'][0]} + {inputs['b'][0]}"), ["a", "b"], sa, sb)

data = state.loaded()
if data is not None:
    st.divider()
    st.subheader("Loaded")
    st.text(f"{data.name}\nA = {data.comparison.system_a}, B = {data.comparison.system_b}, "
            f"{state.counted(data.n, 'pair')} "
            f"(aligned by {alignment_words(data.comparison.aligned_by, data.comparison.alignment_note)}); "
            f"human dimensions: {', '.join(data.dimensions) or 'none'}")
    if data.comparison.unmatched_a or data.comparison.unmatched_b:
        st.warning("Rows without a partner (not scored):")
        st.text(words.pasted_in_words("\n".join(data.comparison.describe_unmatched()[:100])))
    st.page_link(state.PAGES["home"], label="See the verdict")
    st.page_link(state.PAGES["scores"], label="See the scores")
