"""Generated input files in every format, valid and broken (``hypothesis``): ``dialeval score`` either exits 2
naming the broken rows, or writes exactly one output row per input row, in order; never a traceback.

The files vary what a user's files vary: any Unicode text (quotes, separators, U+2028, U+0085, emoji), blank
responses, missing references, UTF-8 with or without a byte-order mark or UTF-16, ``\\n``/``\\r\\n``/``\\r``
line ends, blank lines, tab-separated CSV. Into some rows one fault is planted (a missing or mistyped field,
an empty context, a non-numeric or NaN score, a duplicate id, a lone surrogate, a malformed line, a wrong
number of cells); the run must then fail with exit 2 and name the row of every planted fault. Runs in-process
through ``core.cli.main`` with the bleu metric (no model): 4 formats x 45 examples in seconds.
"""
from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from core.cli import main
from core.data import split_lines
from core.engine import is_blank

# 45 examples per format in the test run; DIALEVAL_PROPERTY_EXAMPLES=2000 for a longer hunt (same seeds)
PROPERTY = settings(max_examples=int(os.environ.get("DIALEVAL_PROPERTY_EXAMPLES", "45")), deadline=None,
                    derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# text a user's file may hold: anything but lone surrogates, with the troublesome characters made likely
TRICKY = st.sampled_from(["\u2028", "\u2029", "\u0085", "\ufeff", '"', ",", "\t", ";", "|", "\\", "é", "👍", "中", "\x0c"])
TEXT = st.lists(st.one_of(st.characters(exclude_categories=("Cs",)), TRICKY), min_size=1, max_size=12).map("".join)
LINE_BREAKS = "\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
TURN = TEXT.filter(lambda t: t.strip() and not any(c in t for c in "\r\n"))  # one line of a context
FAULTS = ("response missing", "response a number", "context empty", "context a number", "reference a number",
          "score not numeric", "score NaN", "id a boolean", "duplicate id", "lone surrogate", "not an object",
          "malformed line", "cells")
JSON_FAULTS = FAULTS[:-1]
CSV_FAULTS = ("context empty", "score not numeric", "score NaN", "duplicate id", "cells")


@st.composite
def rows(draw, turn=TURN, text=TEXT):
    """Valid records: unique ids, one or two systems, 1-3 turns, a response that may be blank, 0-2 references."""
    n = draw(st.integers(1, 6))
    out = []
    for i in range(n):
        out.append({"id": f"id{i}", "system": draw(st.sampled_from(["sys-a", "sys b"])),
                    "context": draw(st.lists(turn, min_size=1, max_size=3)),
                    "response": draw(st.one_of(text, st.sampled_from(["", "  "]))),
                    "references": draw(st.lists(turn, max_size=2)),
                    "scores": {"overall": draw(st.floats(1, 5, allow_nan=False))}})
    return out


def plant(record: dict, fault: str, first_id: str) -> dict | str:
    r = dict(record)
    if fault == "response missing":
        r.pop("response")
    elif fault == "response a number":
        r["response"] = 5
    elif fault == "context empty":
        r["context"] = []
    elif fault == "context a number":
        r["context"] = 3
    elif fault == "reference a number":
        r["references"] = 7
    elif fault == "score not numeric":
        r["scores"] = {"overall": "good"}
    elif fault == "score NaN":  # json.dumps writes the literal NaN; refused, never read as "not rated" (issue 52)
        r["scores"] = {"overall": float("nan")}
    elif fault == "id a boolean":
        r["id"] = True
    elif fault == "duplicate id":
        r["id"], r["system"] = first_id, None  # the system is set to the first row's by the caller
    elif fault == "lone surrogate":
        r["response"] = "x\ud800y"
    elif fault == "not an object":
        return [r["response"]]  # type: ignore[return-value]
    elif fault == "malformed line":
        return "{" + json.dumps(r)[1:-1]  # a record cut short
    return r


@st.composite
def faulty(draw, records, faults):
    """Which rows (0-based, never the first for a duplicate id) get which fault: none, or a few."""
    if not draw(st.booleans()):
        return {}
    out = {}
    for i in draw(st.sets(st.integers(0, len(records) - 1), min_size=1, max_size=3)):
        fault = draw(st.sampled_from(faults))
        if fault == "duplicate id" and i == 0:
            continue
        out[i] = fault
    if out.get(0) in ("id a boolean", "not an object", "malformed line", "cells"):  # row 0 claims no id to repeat
        out = {i: f for i, f in out.items() if f != "duplicate id"}
    return out


def encode(text: str, encoding: str) -> bytes:
    """A lone surrogate (only ever inside a JSON string here) is written as its JSON escape, as producers do."""
    return text.encode(encoding, "backslashreplace")


ENCODINGS = st.sampled_from(["utf-8", "utf-8-sig", "utf-16"])
ENDS = st.sampled_from(["\n", "\r\n", "\r"])


def run_score(name: str, data: bytes) -> tuple[int, str, list[dict]]:
    with tempfile.TemporaryDirectory() as d:
        path, out = Path(d) / name, Path(d) / "out.jsonl"
        path.write_bytes(data)
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = main(["score", str(path), "--metrics", "bleu", "--out", str(out), "--quiet"])
        written = [json.loads(ln) for ln in split_lines(out.read_text(encoding="utf-8")) if ln] if out.exists() else []
    return code, err.getvalue(), written


def check(name: str, data: bytes, records: list[dict], faults: dict[int, str], row_of: list[int]) -> None:
    code, err, written = run_score(name, data)
    event("broken file" if faults else "valid file")  # pytest --hypothesis-show-statistics shows the mix
    assert "Traceback" not in err
    if faults:
        assert code == 2, (code, err)
        assert name in err
        for i in faults:
            assert f"row {row_of[i]}" in err, (faults, row_of, err)
        assert not written
    else:
        assert code == 0, err
        assert [w["id"] for w in written] == [r["id"] for r in records]
        for w, r in zip(written, records):
            blank = is_blank(r["response"])  # white space or zero-width characters only (U+FEFF, U+200B)
            no_ref = not [x for x in r["references"] if not is_blank(x)]
            assert (w["metrics"]["bleu"] is None) == (blank or no_ref)


def with_faults(records: list[dict], faults: dict[int, str]) -> list:
    out = []
    for i, r in enumerate(records):
        if i in faults:
            planted = plant(r, faults[i], records[0]["id"])
            if isinstance(planted, dict) and planted.get("system", "") is None:
                planted["system"] = records[0]["system"]
            out.append(planted)
        else:
            out.append(r)
    return out


@PROPERTY
@given(st.data(), ENCODINGS, ENDS, st.booleans())
def test_generated_jsonl(data, encoding, end, blank_lines):
    records = data.draw(rows())
    faults = data.draw(faulty(records, JSON_FAULTS))
    lines, row_of = [], []
    for item in with_faults(records, faults):
        if blank_lines:
            lines.append("")
        lines.append(item if isinstance(item, str) else json.dumps(item, ensure_ascii=data.draw(st.booleans())))
        row_of.append(len(lines))
    check("in.jsonl", encode(end.join(lines) + end, encoding), records, faults, row_of)


@PROPERTY
@given(st.data(), ENCODINGS, ENDS)
def test_generated_dstc10_json(data, encoding, end):
    records = data.draw(rows())
    faults = {i: f for i, f in data.draw(faulty(records, JSON_FAULTS)).items() if f != "malformed line"}
    items = []
    for item in with_faults(records, faults):
        if isinstance(item, dict):
            item = {"dialogue_id" if k == "id" else "model" if k == "system" else "reference" if k == "references"
                    else "annotations" if k == "scores" else k: v for k, v in item.items()}
            if isinstance(item.get("context"), list) and data.draw(st.booleans()):
                item["context"] = "\n".join(item["context"])  # DSTC10 joins the turns with newlines
        items.append(item)
    text = json.dumps(items, indent=data.draw(st.sampled_from([None, 1])), ensure_ascii=False).replace("\n", end)
    check("in.json", encode(text, encoding), records, faults, list(range(1, len(records) + 1)))


@PROPERTY
@given(st.data(), ENCODINGS)
def test_generated_column_json(data, encoding):
    records = data.draw(rows())
    faults = {i: f for i, f in data.draw(faulty(records, JSON_FAULTS)).items()
              if f not in ("malformed line", "not an object", "response missing")}
    planted = with_faults(records, faults)
    obj = {"ids": [r["id"] for r in planted], "models": [r["system"] for r in planted],
           "contexts": [r["context"] for r in planted], "responses": [r["response"] for r in planted],
           "references": [r["references"] for r in planted], "scores": [r["scores"] for r in planted]}
    check("in.json", encode(json.dumps(obj, ensure_ascii=False), encoding), records, faults,
          list(range(1, len(records) + 1)))


def csv_file(data, encoding: str, end: str, ext: str) -> tuple[bytes, list[dict], dict[int, str], list[int]]:
    """A generated CSV/TSV file: (bytes, records, planted faults, each record's spreadsheet row)."""
    cell_text = TEXT.filter(lambda t: "|||" not in t)
    records = data.draw(rows(turn=TURN.filter(lambda t: "|||" not in t), text=cell_text))
    faults = data.draw(faulty(records, CSV_FAULTS))
    buf = io.StringIO(newline="")
    # with \r line ends Python's writer leaves a \n inside a cell unquoted (a file no reader can split): quote all
    quoting = csv.QUOTE_ALL if end == "\r" else data.draw(st.sampled_from([csv.QUOTE_MINIMAL, csv.QUOTE_ALL]))
    writer = csv.writer(buf, delimiter="\t" if ext == ".tsv" else ",", lineterminator=end, quoting=quoting)
    writer.writerow(["id", "system", "context", "response", "references", "scores.overall"])
    row_of = []
    for i, r in enumerate(records):
        cells = [r["id"], r["system"], "\n".join(r["context"]), r["response"], "|||".join(r["references"]),
                 repr(r["scores"]["overall"])]
        fault = faults.get(i)
        if fault == "context empty":
            cells[2] = ""
        elif fault == "score not numeric":
            cells[5] = "good"
        elif fault == "score NaN":
            cells[5] = "nan"
        elif fault == "duplicate id":
            cells[0], cells[1] = records[0]["id"], records[0]["system"]
        elif fault == "cells":
            cells.append("extra")
        writer.writerow(cells)
        row_of.append(i + 2)  # the spreadsheet row: the header is row 1, each record one row
    return encode(buf.getvalue(), encoding), records, faults, row_of


@PROPERTY
@given(st.data(), st.sampled_from(["utf-8", "utf-8-sig"]), ENDS, st.sampled_from([".csv", ".tsv"]))
def test_generated_csv(data, encoding, end, ext):
    check("in" + ext, *csv_file(data, encoding, end, ext))

def load_or_error(load, path: Path):
    """What a loader gives: its rows, or its DataError's message."""
    from core.data import DataError
    try:
        return list(load(path))
    except DataError as e:
        return str(e)


@PROPERTY
@given(st.data(), ENCODINGS, ENDS, st.booleans())
def test_jsonl_read_in_place_gives_load_files_rows_or_error(data, encoding, end, blank_lines):
    """``dialeval score`` reads JSON Lines in place (``core.data.open_examples``: checked, then parsed block by
    block): the same rows as ``load_file`` (whole, sliced, and one call of ``each`` per row in order), or the
    same error, word for word (planted faults, bytes that are not UTF-8)."""
    records = data.draw(rows())
    faults = data.draw(faulty(records, JSON_FAULTS))
    lines = []
    for item in with_faults(records, faults):
        if blank_lines:
            lines.append(data.draw(st.sampled_from(["", "  ", "\ufeff"])))
        lines.append(item if isinstance(item, str) else json.dumps(item, ensure_ascii=data.draw(st.booleans())))
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "in.jsonl"
        raw = encode(end.join(lines) + data.draw(st.sampled_from([end, ""])), encoding)
        if encoding != "utf-16" and data.draw(st.booleans()):  # bytes that are not UTF-8, anywhere
            at = data.draw(st.integers(0, len(raw)))
            raw = raw[:at] + data.draw(st.sampled_from([b"\xff", b"\xe2\x82", b"\xc3", b"\x80x"])) + raw[at:]
        path.write_bytes(raw)
        same_as_load_file(data, path)


def same_as_load_file(data, path: Path) -> None:
    """``open_examples(path)`` gives ``load_file(path)``'s rows (whole, in slices read in any order, and one
    ``each`` call per row) or its error, word for word."""
    from core.data import load_file, open_examples
    seen: list = []
    in_place = load_or_error(lambda p: open_examples(p, each=seen.append), path)
    whole = load_or_error(load_file, path)
    assert in_place == whole
    if isinstance(whole, list):
        assert seen == whole
        rows_read = open_examples(path)
        for _ in range(2):  # the second slice may start before the first one's end (read again from the top)
            start = data.draw(st.integers(0, len(whole)))
            stop = data.draw(st.integers(start, len(whole)))
            assert list(rows_read[start:stop]) == whole[start:stop]
        assert rows_read[-1] == whole[-1]


@PROPERTY
@given(st.data(), ENCODINGS, ENDS, st.sampled_from([".csv", ".tsv"]))
def test_csv_read_in_place_gives_load_files_rows_or_error(data, encoding, end, ext):
    """CSV/TSV read in place (checked, then parsed again in order) against ``load_file``, UTF-16 included
    (loaded whole)."""
    raw, *_ = csv_file(data, "utf-8", end, ext)
    if data.draw(st.booleans()):
        raw = b"\n" * data.draw(st.integers(1, 2)) + raw  # blank lines before the header
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / f"in{ext}"
        path.write_bytes(raw.decode("utf-8").encode(encoding) if encoding != "utf-8" else raw)
        same_as_load_file(data, path)


@PROPERTY
@given(st.lists(st.sampled_from(["a", "é", "\r", "\n", "\r\n", "\u2028", " "]), max_size=30).map("".join),
       st.lists(st.integers(1, 5), min_size=1, max_size=8))
def test_byte_lines_cut_anywhere_are_split_lines(text, cuts):
    """JSON Lines read in place are cut into lines from byte chunks of any size, \\r\\n split across two chunks
    included: the same lines, numbers and byte offsets as ``split_lines`` on the whole text."""
    from core.data import byte_lines
    data = text.encode("utf-8")
    chunks, pos = [], 0
    for i in range(len(data) + 1):
        size = cuts[i % len(cuts)]
        chunks.append(data[pos:pos + size])
        pos += size
        if pos >= len(data):
            break
    got = list(byte_lines(chunks))
    expected = split_lines(text)
    assert [raw.decode("utf-8") for _, _, raw in got] == expected
    assert [n for n, _, _ in got] == list(range(1, len(expected) + 1))
    assert all(data[off:off + len(raw)] == raw for _, off, raw in got)
