"""Upload: two systems' responses (two files, or one multi-system file), or the built-in demo."""
from pathlib import Path

import streamlit as st

from core import dashboard
from core.data import FORMATS, CsvMapping, DataError, systems_in
from pages import state

st.session_state["_page"] = "upload"
state.sidebar()
st.title("Upload two systems")
st.markdown(f"Files up to **{dashboard.MAX_UPLOAD_MB} MB** each (`server.maxUploadSize` in `.streamlit/config.toml`). "
            "Formats: our JSONL (one object a line: `context`, `response`, optional `id`, `system`, `references`, "
            "`scores`), DSTC10 Track 5 JSON, column-dictionary JSON, CSV (map the columns below).")

if st.button("Load the built-in demo", type="primary", key="demo_upload"):
    state.load_demo()
    st.success("Demo loaded: 60 held-out chitchat contexts answered by C-BM25 (retrieval) and SmolLM2-135M "
               "(generation), with the true next turn as reference.")

mode = st.radio("Input", ["One file with several systems", "Two files (system A, system B)"], horizontal=True,
                key="upload_mode")
fmt_choice = st.selectbox("Format", ["detect"] + list(FORMATS), key="upload_format",
                          help="detect: from the extension, then from the first character")
fmt = None if fmt_choice == "detect" else fmt_choice


def read_slot(label: str, slot: str) -> tuple[str, bytes] | None:
    """An uploaded file, or pasted text, for one input slot."""
    up = st.file_uploader(label, type=["jsonl", "json", "csv", "tsv", "txt"], key=f"file_{slot}")
    pasted = st.text_area(f"... or paste the content of {label.lower()}", key=f"paste_{slot}", height=100)
    if up is not None:
        return up.name, up.getvalue()
    if pasted.strip():
        ext = ".csv" if fmt == "csv" else ".txt"  # .txt: the format is detected from the content
        return f"pasted-{slot}{ext}", pasted.encode("utf-8")
    return None


def csv_mapping_widgets(name: str, data: bytes, slot: str) -> CsvMapping | None:
    is_csv = (fmt == "csv") or (fmt is None and name.lower().endswith((".csv", ".tsv")))
    if not is_csv:
        return None
    header = dashboard.csv_header(data)
    guess = dashboard.guess_csv_mapping(header)
    st.caption("CSV column mapping for " + state.plain(name))
    cols = st.columns(5)
    none = "(none)"
    opts = [none] + header

    def pick(col, label, key, required=False):
        options = header if required else opts
        default = guess.get(key) or (options[0] if options else None)
        idx = options.index(default) if default in options else 0
        val = col.selectbox(label, options, index=idx, key=f"csv_{slot}_{key}")
        return None if val == none else val

    response = pick(cols[0], "response", "response", True)
    context = pick(cols[1], "context", "context", True)
    cid = pick(cols[2], "id", "id")
    system = pick(cols[3], "system", "system")
    refs = pick(cols[4], "reference", "references")
    scores = st.multiselect("human score columns", header, default=[c for c in guess["scores"] if c in header],
                            key=f"csv_{slot}_scores")
    sep = st.text_input("context turn separator", value="\\n", key=f"csv_{slot}_sep")
    return CsvMapping(response=response or "response", context=context or "context", id=cid, system=system,
                      references=refs, scores=scores, context_sep=sep.encode().decode("unicode_escape") or "\n")


def show_problems(err: DataError) -> None:
    """Every problem with file, row and field; the previously loaded data stays loaded."""
    rows = [{"file": Path(p.file).name if p.file else "", "row": p.row, "field": p.field or "", "problem": p.message}
            for p in err.problems]
    st.error(f"{len(rows)} problem(s) in the upload; nothing new was loaded. Fix them and upload again.")
    st.dataframe(rows, hide_index=True, width="stretch")
    if state.loaded() is not None:
        prev = state.loaded()
        st.info("The previously loaded data is kept: " + state.plain(
            f"{prev.name} ({prev.comparison.system_a} vs {prev.comparison.system_b})."))


slots = [("File", "one")] if mode.startswith("One") else [("System A file", "a"), ("System B file", "b")]
inputs = {}
for label, slot in slots:
    got = read_slot(label, slot)
    if got:
        inputs[slot] = (got[0], got[1], csv_mapping_widgets(got[0], got[1], slot))

parsed = {}
if len(inputs) == len(slots):
    try:
        for slot, (name, data, mapping) in inputs.items():
            parsed[slot] = dashboard.parse_upload(name, data, fmt, mapping)
    except DataError as e:
        parsed = {}
        show_problems(e)

if parsed:
    if mode.startswith("One"):
        exs = parsed["one"]
        systems = systems_in(exs)
        counts = {s: sum(e.system == s for e in exs) for s in systems}
        st.text(f"{len(exs)} rows, {len(systems)} systems: " + ", ".join(f"{s} ({n})" for s, n in counts.items()))
        if len(systems) < 2:
            st.error("This file holds one system; upload a multi-system file or switch to two files.")
        else:
            c1, c2 = st.columns(2)
            sa = c1.selectbox("System A", systems, index=0, key="pick_a")
            sb = c2.selectbox("System B", systems, index=1, key="pick_b")
            if st.button("Compare these two systems", type="primary", key="use_one"):
                try:
                    state.set_loaded(dashboard.make_loaded(inputs["one"][0], exs, None, sa, sb,
                                                         [inputs["one"][1], repr(inputs["one"][2])]))
                    st.success("Loaded.")
                except DataError as e:
                    show_problems(e)
    else:
        ea, eb = parsed["a"], parsed["b"]
        c1, c2 = st.columns(2)
        sys_a = systems_in(ea)
        sys_b = systems_in(eb)
        sa = c1.selectbox("System in file A", sys_a, key="pick_fa")
        sb = c2.selectbox("System in file B", sys_b, key="pick_fb")
        if st.button("Compare these two systems", type="primary", key="use_two"):
            try:
                state.set_loaded(dashboard.make_loaded(f"{inputs['a'][0]} + {inputs['b'][0]}", ea, eb, sa, sb,
                                                     [inputs["a"][1], inputs["b"][1], repr(inputs["a"][2]),
                                                      repr(inputs["b"][2])]))
                st.success("Loaded.")
            except DataError as e:
                show_problems(e)

data = state.loaded()
if data is not None:
    st.divider()
    st.subheader("Loaded")
    st.text(f"{data.name}\nA = {data.comparison.system_a}, B = {data.comparison.system_b}, {data.n} pairs "
            f"(aligned by {data.comparison.aligned_by}); human dimensions: {', '.join(data.dimensions) or 'none'}")
    if data.comparison.unmatched_a or data.comparison.unmatched_b:
        st.warning("Rows without a partner (not scored):")
        st.text("\n".join(data.comparison.describe_unmatched()[:100]))
    st.page_link(state.PAGES["scores"], label="See the scores")
