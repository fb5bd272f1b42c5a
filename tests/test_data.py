"""Loaders on real and broken files: every problem names file, row and field; nothing is dropped."""
import json

import pytest

from core.data import (CsvMapping, DataError, compare_systems, detect_format, load_columns, load_comparison,
                       load_csv, load_dstc10, load_file, load_jsonl, rows_of_files)


def write(tmp_path, name, text, mode="w"):
    p = tmp_path / name
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text, encoding="utf-8")
    return p


def problems(exc):
    return [str(p) for p in exc.value.problems]


def test_real_jsonl(shared):
    exs = load_jsonl(shared("eval/usr-topical.jsonl"))
    assert len(exs) == 360
    assert exs[0].id == "usr-topical-00000" and exs[0].context and exs[0].references
    assert set(exs[0].scores) >= {"Overall", "Natural"}


def test_real_dstc10(shared):
    exs = load_dstc10(shared("raw/dstc10-format_dailydialog-zhao_eval.json"))
    assert len(exs) == 900
    first = exs[0]
    assert first.id == "dailydialog-zhao-000" and first.system == "ground-truth"
    assert first.context == ["well , how does it look ?", "it 's a perfect fit .", "let me pay for it now ."]
    assert first.scores["content"] == pytest.approx((4 + 5 + 4 + 4) / 4)
    assert detect_format(shared("raw/dstc10-format_dailydialog-zhao_eval.json")) == "dstc10"


def test_real_columns(shared):
    path = shared("raw/column-format_convai2-grade-bert_ranker.json")
    exs = load_columns(path)
    assert len(exs) == 150
    assert exs[0].scores["Overall"] == pytest.approx(3.2) and "id" not in exs[0].scores
    assert exs[0].system == "bert_ranker" and len(exs[0].context) == 2
    assert detect_format(path) == "columns"


def test_malformed_json_line_and_missing_response(tmp_path):
    p = write(tmp_path, "bad.jsonl", '{"context": ["hi"], "response": "hello"}\n{not json}\n'
              '{"context": ["hi"]}\n{"context": ["hi"], "response": 5}\n')
    with pytest.raises(DataError) as e:
        load_jsonl(p)
    msgs = problems(e)
    assert any("bad.jsonl, row 2" in m and "malformed JSON" in m for m in msgs)
    assert any("row 3, field 'response': is missing" in m for m in msgs)
    assert any("row 4, field 'response': must be a string" in m for m in msgs)
    assert len(msgs) == 3


def test_empty_file_and_non_utf8(tmp_path):
    with pytest.raises(DataError, match="is empty"):
        load_jsonl(write(tmp_path, "empty.jsonl", "\n  \n"))
    with pytest.raises(DataError) as e:
        load_jsonl(write(tmp_path, "latin.jsonl", '{"context": ["a"], "response": "ok"}\n'.encode() +
                         '{"context": ["caf\xe9"], "response": "x"}\n'.encode("latin-1")))
    assert "row 2" in str(e.value) and "not valid UTF-8" in str(e.value)


def test_scores_nan_non_numeric_and_duplicate_ids(tmp_path):
    rows = [{"id": "a", "context": ["hi"], "response": "yo", "scores": {"overall": 3}},
            {"id": "b", "context": ["hi"], "response": "yo", "scores": {"overall": "good"}},
            {"id": "c", "context": ["hi"], "response": "yo", "scores": {"overall": float("nan")}},
            {"id": "a", "context": ["hi"], "response": "yo", "scores": {"overall": 2}}]
    p = write(tmp_path, "s.jsonl", "\n".join(json.dumps(r) for r in rows))
    with pytest.raises(DataError) as e:
        load_jsonl(p)
    msgs = problems(e)
    assert any("row 2, field 'scores.overall': is not numeric" in m for m in msgs)
    assert any("row 3, field 'scores.overall': is NaN" in m for m in msgs)  # refused, not read as "not rated"
    assert any("row 4, field 'id': duplicate id 'a'" in m for m in msgs)


def test_columns_unequal_lengths(tmp_path):
    p = write(tmp_path, "c.json", json.dumps({"contexts": [["a"], ["b"]], "responses": ["x"], "models": ["m", "m"]}))
    with pytest.raises(DataError, match="unequal lengths"):
        load_columns(p)


def test_csv_mapping_and_errors(tmp_path):
    p = write(tmp_path, "t.csv", 'uid,model,ctx,reply,gold,q\n1,A,"hi|||how are you",fine,good|||great,4\n'
              '2,A,"yo",sup,,x\n')
    m = CsvMapping(id="uid", system="model", context="ctx", response="reply", references="gold", scores=["q"],
                   context_sep="|||")
    with pytest.raises(DataError) as e:
        load_csv(p, mapping=m)
    assert any("t.csv, row 3, field 'scores.q': is not numeric" in s for s in problems(e))
    p2 = write(tmp_path, "ok.csv", 'uid,model,ctx,reply,gold,q\n1,A,"hi|||how are you",fine,good|||great,4\n')
    ex = load_csv(p2, mapping=m)[0]
    assert ex.context == ["hi", "how are you"] and ex.references == ["good", "great"] and ex.scores == {"q": 4.0}
    with pytest.raises(DataError, match="column for response not found"):
        load_csv(p2, mapping=CsvMapping(response="nope", context="ctx"))


def test_rows_without_a_system_are_kept_by_number_up_to_a_hundred(tmp_path):
    """A file of one system names none in every row: the check of rows naming none beside named ones keeps the
    first hundred rows' numbers and counts the rest, not every row of a large file."""
    rows = [json.dumps({"context": ["hi"], "response": f"r{i}", **({"system": "s"} if i == 0 else {})})
            for i in range(103)]
    with pytest.raises(DataError) as e:
        load_jsonl(write(tmp_path, "mixed.jsonl", "\n".join(rows)))
    said = [p.message for p in e.value.problems]
    assert len(said) == 101 and said[-1] == "is missing or blank in 2 more rows"
    assert len(load_jsonl(write(tmp_path, "none.jsonl", "\n".join(rows[1:])))) == 102  # none named: the file's name


def test_alignment_by_id_and_context_lists_unmatched(tmp_path):
    a = write(tmp_path, "a.jsonl", "\n".join(json.dumps({"id": i, "context": [c], "response": "r"})
                                             for i, c in [("1", "x"), ("2", "y"), ("3", "z")]))
    b = write(tmp_path, "b.jsonl", "\n".join(json.dumps({"id": i, "context": [c], "response": "s"})
                                             for i, c in [("3", "z"), ("1", "x"), ("9", "q")]))
    comp = load_comparison(str(a), str(b))
    assert comp.aligned_by == "id" and [(p[0].id, p[1].id) for p in comp.pairs] == [("1", "1"), ("3", "3")]
    assert [e.id for e in comp.unmatched_a] == ["2"] and [e.id for e in comp.unmatched_b] == ["9"]
    assert any("row 2" in line and "'2'" in line for line in comp.describe_unmatched())
    # without ids: aligned by context
    a2 = write(tmp_path, "a2.jsonl", '{"context": ["x"], "response": "r"}\n{"context": ["y"], "response": "r"}\n')
    b2 = write(tmp_path, "b2.jsonl", '{"context": ["Y"], "response": "s"}\n')
    comp2 = load_comparison(str(a2), str(b2))
    assert comp2.aligned_by == "context" and len(comp2.pairs) == 1 and comp2.unmatched_a[0].row == 1
    # 'café' composed (NFC) on one side and decomposed (NFD, as macOS writes it) on the other is one context
    import unicodedata
    nfc = write(tmp_path, "nfc.jsonl", json.dumps({"context": [unicodedata.normalize("NFC", "Café déjà vu?")],
                                                   "response": "r"}) + "\n")
    nfd = write(tmp_path, "nfd.jsonl", json.dumps({"context": [unicodedata.normalize("NFD", "Café déjà vu?")],
                                                   "response": "s"}) + "\n")
    assert len(load_comparison(str(nfc), str(nfd)).pairs) == 1  # 'these share neither'
    # one row without an id: paired by context, and why (the whole comparison switched in silence)
    a4 = write(tmp_path, "a4.jsonl", '{"id": "1", "context": ["x"], "response": "r"}\n{"context": ["y"], "response": "r"}\n')
    b4 = write(tmp_path, "b4.jsonl", '{"id": "1", "context": ["x"], "response": "s"}\n{"id": "2", "context": ["y"], '
                                     '"response": "s"}\n')
    comp4 = load_comparison(str(a4), str(b4))
    assert comp4.aligned_by == "context" and len(comp4.pairs) == 2
    assert comp4.alignment_note == "1 of 4 rows has no id (a4.jsonl row 2); give every row its id to pair by id"
    # paired by context, an unmatched row is named by its row and why, not by an id it may not have
    assert comp2.describe_unmatched() == ["system A (a2): a2.jsonl row 1: its context is not answered by the other "
                                          "system"]
    b3 = write(tmp_path, "b3.jsonl", '{"context": ["y"], "response": "s"}\n{"context": ["y"], "response": "t"}\n')
    comp3 = load_comparison(str(a2), str(b3))
    assert any("b3.jsonl row 2: its context is answered more often here than by the other system" in line
               for line in comp3.describe_unmatched()), comp3.describe_unmatched()
    assert comp3.alignment_note == "1 context appears more than once on a side, so their rows are paired in file order"
    assert comp2.alignment_note == ""  # every context once: nothing to say
    # the leaderboard's grid of several systems says it too
    from core.data import Example
    from core.leaderboard import shared_contexts
    rows = [Example(f"r{i}{s}", s, ["hi"] if i < 2 else [f"c{i}"], f"reply {i} {s}", has_id=False)
            for s in ("a", "b", "c") for i in range(4)]
    assert shared_contexts(rows).alignment_note == ("1 context appears more than once on a system's side, so their "
                                                    "rows are paired in file order")


def test_multi_system_file(shared):
    exs = load_file(shared("eval/usr-topical.jsonl"))
    comp = compare_systems(exs, "Original Ground Truth", "Argmax Decoding")
    assert len(comp.pairs) == 60 and not comp.unmatched_a and not comp.unmatched_b
    assert all(a.context == b.context for a, b in comp.pairs)
    with pytest.raises(DataError, match="not found"):
        compare_systems(exs, "Original Ground Truth", "GPT-9")
    dstc = load_file(shared("raw/dstc10-format_dailydialog-zhao_eval.json"))
    comp = compare_systems(dstc, "ground-truth", "negative-sample")
    # this release numbers every row, so ids do not overlap across systems: rows pair up by context
    assert comp.aligned_by == "context" and len(comp.pairs) == 100


def test_jsonl_read_in_place_is_the_same_rows_and_refuses_a_file_changed_after_the_check(tmp_path, shared):
    """``open_examples`` keeps JSON Lines as byte offsets (``JsonlRows``) and parses a slice when asked; a file
    changed between the check and a block's reading is refused, never mis-read."""
    from core.data import JsonlRows, open_examples
    real = shared("eval/usr-topical.jsonl")
    seen = []
    rows = open_examples(real, each=seen.append)
    whole = load_file(real)
    assert isinstance(rows, JsonlRows) and len(rows) == len(whole) == 360
    assert seen == whole and list(rows) == whole and rows[100:103] == whole[100:103] and rows[-1] == whole[-1]
    path = write(tmp_path, "log.jsonl", "".join(json.dumps({"id": i, "context": ["hi"], "response": f"r{i}"}) + "\n"
                                                for i in range(5)))
    rows = open_examples(path)
    assert [ex.response for ex in rows[1:3]] == ["r1", "r2"]
    path.write_text(path.read_text(encoding="utf-8").replace("r1", "a longer reply"), encoding="utf-8")
    with pytest.raises(DataError, match="changed while it was being scored"):
        rows[1:3]


def test_jsonl_from_a_pipe_is_loaded_whole_since_it_cannot_be_read_twice(tmp_path):
    import os
    import threading

    from core.data import open_examples
    fifo = tmp_path / "rows"
    os.mkfifo(fifo)
    text = "".join(json.dumps({"id": i, "context": ["hi"], "response": f"r{i}"}) + "\n" for i in range(3))
    writer = threading.Thread(target=lambda: fifo.write_text(text, encoding="utf-8"))
    writer.start()
    rows = open_examples(fifo, fmt="jsonl")
    writer.join()
    assert isinstance(rows, list) and [ex.response for ex in rows] == ["r0", "r1", "r2"]


def test_csv_read_in_place_reads_on_in_order_and_refuses_a_changed_file(tmp_path):
    """``CsvRows`` keeps only the count: slices are parsed again in order, a quoted cell over two lines
    included; a slice before the last one read starts again from the top."""
    from core.data import CsvRows, open_examples
    text = 'context,response\nhello,hi there\n"how\nare you",fine\nbye,"see\nyou"\n'
    path = write(tmp_path, "x.csv", text)
    seen = []
    rows = open_examples(path, each=seen.append)
    whole = load_file(path)
    assert isinstance(rows, CsvRows) and len(rows) == 3 and seen == whole
    assert rows[1:3] == whole[1:3] and rows[0:1] == whole[0:1] and list(rows) == whole
    assert [ex.row for ex in rows] == [2, 3, 4]  # spreadsheet rows: a record over two lines is one row
    path.write_text(text.replace("fine", "fine thanks"), encoding="utf-8")
    with pytest.raises(DataError, match="changed while it was being scored"):
        rows[0:2]


def test_a_bad_row_of_a_file_read_in_place_is_reported_without_loading_it_whole(tmp_path, monkeypatch):
    """The check itself words the problems as load_file does (every bad row, in order; an undecodable byte
    alone), so a large broken file is never loaded whole just to say what is wrong."""
    import core.data.reading as data_module  # open_examples calls load_file there
    from core.data import open_examples
    rows = [{"id": i, "context": ["hi"], "response": f"r{i}"} for i in range(6)]
    rows[2]["response"], rows[4]["scores"] = 7, {"overall": "good"}
    jsonl = write(tmp_path, "x.jsonl", "".join(json.dumps(r) + "\n" for r in rows) + "not json\n")
    csv_text = "id,context,response,scores.overall\na,hi,yo,3\nb,hi,yo,good\nc,,there,2\nd,hey,x,1,extra\n"
    csv_path = write(tmp_path, "x.csv", csv_text)
    latin = write(tmp_path, "l.jsonl", (json.dumps(rows[0]) + "\n" + json.dumps(rows[1]) + "\n").encode() + b'{"x": "caf\xe9"}\n')
    expected = {}
    for path in (jsonl, csv_path, latin):
        with pytest.raises(DataError) as e:
            load_file(path)
        expected[path] = str(e.value)
    assert "3 problem(s)" in expected[jsonl] and "3 problem(s)" in expected[csv_path] and "offset" in expected[latin]
    monkeypatch.setattr(data_module, "load_file", lambda *a, **k: pytest.fail("loaded whole"))
    for path in (jsonl, csv_path, latin):
        with pytest.raises(DataError) as e:
            open_examples(path)
        assert str(e.value) == expected[path]


def test_other_formats_are_loaded_whole_by_open_examples(tmp_path):
    from core.data import open_examples
    path = write(tmp_path, "x.json", json.dumps({"contexts": [["hello"], ["how are you"]],
                                                 "responses": ["hi there", "fine"]}))
    seen = []
    rows = open_examples(path, each=seen.append)
    assert isinstance(rows, list) and rows == load_file(path) == seen
    with pytest.raises(ValueError, match="unknown format"):
        open_examples(path, fmt="xml")


def _rows(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def _row(i, system, context, response):
    return {"id": i, "system": system, "context": [context], "response": response}


def test_one_named_system_of_a_two_system_file_picks_the_other_and_a_wrong_name_is_refused(tmp_path):
    f = _rows(tmp_path / "two.jsonl", [_row(i, s, f"c{i}", f"{s} {i}") for s in ("x", "y") for i in range(3)])
    comp = load_comparison(f, system_a="y")
    assert (comp.system_a, comp.system_b) == ("y", "x")
    comp = load_comparison(f, system_b="x")
    assert (comp.system_a, comp.system_b) == ("y", "x")
    for kw in ({"system_a": "nope"}, {"system_b": "nope"}):
        with pytest.raises(DataError, match="system 'nope' not found"):
            load_comparison(f, **kw)


def test_a_multi_system_file_as_one_side_of_two_files_must_name_its_system(tmp_path):
    multi = _rows(tmp_path / "multi.jsonl", [_row(i, s, f"c{i}", f"{s} {i}") for s in ("x", "y") for i in range(3)])
    one = _rows(tmp_path / "one.jsonl", [_row(i, "z", f"c{i}", f"z {i}") for i in range(3)])
    with pytest.raises(DataError, match="holds 2 systems.*--system-a"):
        load_comparison(multi, one)
    with pytest.raises(DataError, match="holds 2 systems.*--system-b"):
        load_comparison(one, multi)
    with pytest.raises(DataError) as both:  # both sides' problems at once
        load_comparison(multi, multi)
    assert [p.message.split("name the one to compare with ")[1][:10] for p in both.value.problems] == \
        ["--system-a", "--system-b"]
    comp = load_comparison(multi, one, system_a="y")
    assert (comp.system_a, comp.system_b, len(comp.pairs)) == ("y", "z", 3)
    assert all(a.system == "y" for a in comp.a)


def test_two_files_of_one_system_name_are_told_apart_by_file(tmp_path):
    (tmp_path / "v1").mkdir()
    (tmp_path / "v2").mkdir()
    a = _rows(tmp_path / "v1" / "bot.jsonl", [_row(i, "bot", f"c{i}", f"old {i}") for i in range(3)])
    b = _rows(tmp_path / "v2" / "bot.jsonl", [_row(i, "bot", f"c{i}", f"new {i}") for i in range(3)])
    c = _rows(tmp_path / "v2" / "bot2.jsonl", [_row(i, "bot", f"c{i}", f"newer {i}") for i in range(3)])
    comp = load_comparison(b, c)
    assert (comp.system_a, comp.system_b) == ("bot (bot.jsonl)", "bot (bot2.jsonl)")
    comp = load_comparison(a, b)  # same file name: the paths tell them apart
    assert (comp.system_a, comp.system_b) == (f"bot ({a})", f"bot ({b})")
    rows = rows_of_files([(a, load_file(a)), (c, load_file(c)),
                          (str(tmp_path / "u.jsonl"), [e for e in load_file(c) if False])])
    assert sorted({e.system for e in rows}) == ["bot (bot.jsonl)", "bot (bot2.jsonl)"]
    assert len(rows) == 6


def test_pairs_aligned_by_id_whose_contexts_differ_are_named(tmp_path):
    a = _rows(tmp_path / "a.jsonl", [_row(i, "a", f"context {i}", "r") for i in range(4)])
    b = _rows(tmp_path / "b.jsonl", [_row(i, "b", f"context {3 - i}", "r") for i in range(4)])
    # ids that number the rows of a file in another order: pairing by context pairs every row, by id none
    comp = load_comparison(a, b)
    assert comp.aligned_by == "context" and comp.context_mismatches() == []
    assert comp.alignment_note == ("ids are shared, but pairing by id gives 4 pair(s) of which 0 have the same "
                                   "context, and pairing by context gives 4 whose context each side answered once")
    assert all(x.context == y.context for x, y in comp.pairs)
    other = _rows(tmp_path / "d.jsonl", [_row(i, "d", f"another context {i}", "r") for i in range(4)])
    comp = load_comparison(a, other)  # no context in common: by id, each pair named
    assert comp.aligned_by == "id" and comp.alignment_note == ""
    assert [m.split(":")[0] for m in comp.context_mismatches()] == ["id '0'", "id '1'", "id '2'", "id '3'"]
    same = _rows(tmp_path / "c.jsonl", [_row(i, "c", f"Context  {i} ", "r") for i in range(4)])
    assert load_comparison(a, same).context_mismatches() == []  # case and spacing do not count


def test_one_id_shared_by_accident_does_not_pair_by_id(tmp_path, capsys):
    """Eight identical contexts, ids 0-7 and 7-14: compare paired the one shared id (whose contexts differ) and
    left 14 rows unmatched; the leaderboard pairs by the same rule."""
    from core.leaderboard import shared_contexts
    a = _rows(tmp_path / "p.jsonl", [_row(i, "p", f"context {i}", f"reply {i}") for i in range(8)])
    b = _rows(tmp_path / "q.jsonl", [_row(i + 7, "q", f"context {i}", f"other {i}") for i in range(8)])
    comp = load_comparison(a, b)
    assert (comp.aligned_by, len(comp.pairs), comp.unmatched_a) == ("context", 8, [])
    assert "pairing by id gives 1 pair(s) of which 0 have the same context, and pairing by context gives 8" in \
        comp.alignment_note
    grid = shared_contexts(load_file(a) + load_file(b))
    assert (grid.aligned_by, grid.n_contexts, grid.alignment_note) == ("context", 8, comp.alignment_note)
    from core.engine import score_comparison  # said in every format: a csv note row too (text says it in its head)
    from core.report import render_verdict
    from core.verdict import build_verdict
    v = build_verdict(comp, score_comparison(comp, ["bleu"]), n_boot=200, n_perm=200)
    for fmt in ("text", "csv", "json", "markdown"):
        assert "ids are shared, but pairing by id gives 1 pair(s)" in render_verdict(v, fmt), fmt
    # and on stderr (a gate's JSON in CI says it only in a field) and as the API's warning, as docs/inputs.md says
    import warnings

    import core
    from core.cli import main
    said = "pairs aligned by context: ids are shared, but pairing by id gives 1 pair(s)"
    for command in ("compare", "gate"):
        main([command, a, b, "--metrics", "bleu", "--no-judge", "--quiet", "--format", "json", "-o",
              str(tmp_path / f"{command}.json")])
        assert said in capsys.readouterr().err, command
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        core.compare(a, b, metrics="bleu", judge=False, n_boot=200, n_perm=200)
    assert any(said in str(w.message) for w in caught)
    # ids that agree with the contexts still pair by id (a context answered twice, told apart by its ids)
    c = _rows(tmp_path / "c.jsonl", [_row(i, "c", "same context", f"c {i}") for i in range(3)])
    d = _rows(tmp_path / "d.jsonl", [_row(2 - i, "d", "same context", f"d {2 - i}") for i in range(3)])
    comp = load_comparison(c, d)
    assert comp.aligned_by == "id" and [(x.id, y.id) for x, y in comp.pairs] == [("0", "0"), ("1", "1"), ("2", "2")]
    # one mistyped id among repeated contexts: by order of appearance the contexts would pair other dialogues, so
    # the seven good ids still decide (the rule counted every context pair and swapped four rows)
    ctx = ["hi", "hello", "hi", "hello", "hey", "hey", "yo", "yo"]
    e = _rows(tmp_path / "e.jsonl", [_row(f"d{i}", "e", ctx[i], f"e {i}") for i in range(8)])
    f = _rows(tmp_path / "f.jsonl", [_row("d6x" if i == 6 else f"d{i}", "f", ctx[i], f"f {i}")
                                     for i in (1, 0, 3, 2, 5, 4, 7, 6)])
    comp = load_comparison(e, f)
    assert comp.aligned_by == "id" and all(x.id == y.id for x, y in comp.pairs) and len(comp.pairs) == 7


def test_a_chosen_score_column_named_scores_dim_is_the_dimension_dim(tmp_path):
    """The dashboard maps score columns explicitly; a column 'scores.Overall' was the dimension
    'scores.Overall' there and 'Overall' on the command line (found by default): two different verdicts."""
    from core.data import CsvMapping, load_csv
    p = write(tmp_path, "s.csv", "id,system,context,response,scores.Overall,fluency\n1,a,hi,yo,3,2\n")
    assert load_csv(p)[0].scores == {"Overall": 3.0}
    assert load_csv(p, mapping=CsvMapping(scores=["scores.Overall", "fluency"]))[0].scores == {"Overall": 3.0,
                                                                                                "fluency": 2.0}


def test_csv_headers_in_another_case_are_found_and_a_repeated_header_is_refused(tmp_path):
    """'Response' and 'Context' were refused (the error did not say how to name them); two CSV files joined with
    `cat` scored their second header as a row of a third system called 'system'."""
    from core.data import load_csv
    caps = write(tmp_path, "caps.csv", "ID,System,Context,Response,Reference\n1,a,hi,hello,hello there\n")
    ex, = load_csv(caps)
    assert (ex.id, ex.system, ex.context, ex.response, ex.references) == ("1", "a", ["hi"], "hello", ["hello there"])
    joined = write(tmp_path, "joined.csv", "id,system,context,response\n1,a,hi,hello\nid,system,context,response\n"
                                           "1,b,hi,hey\n")
    with pytest.raises(DataError, match=r"row 3: repeats the header row \(two files joined into one\?\)"):
        load_csv(joined)
    excel = "\ufeffid,system,context,response\n1,a,hi,hello\n"  # two Excel "CSV UTF-8" files joined: a BOM inside
    with pytest.raises(DataError, match="row 3: repeats the header row"):
        load_csv("j.csv", data=(excel + excel.replace("id,system", "Id,System").replace("1,a", "2,b")).encode())
    odd = write(tmp_path, "odd.csv", "id,ctx,reply\n1,hi,hello\n")
    with pytest.raises(DataError, match=r"--columns response=NAME names it"):
        load_csv(odd)


def test_pretty_printed_records_get_one_clear_error(tmp_path, capsys):
    """`jq .` output (records over several lines each) gave a 'malformed JSON' problem per line."""
    from core.data import load_jsonl
    p = write(tmp_path, "pretty.jsonl", '{\n  "id": 1,\n  "context": ["hi"],\n  "response": "yo"\n}\n'
                                        '{\n  "id": 2,\n  "context": ["hey"],\n  "response": "sup"\n}\n')
    with pytest.raises(DataError) as err:
        load_jsonl(p)
    assert len(err.value.problems) == 1
    assert "holds 2 JSON objects written over several lines each (as `jq .` prints them)" in str(err.value)
    text = open(p, encoding="utf-8").read()
    for name, data in (("pretty.json", text), ("stdin", text), ("mixed.jsonl", '{"id": 0, "context": ["a"], '
                                                                               '"response": "b"}\n' + text)):
        with pytest.raises(DataError) as err:  # named .json, piped in (`jq . f | dialeval score -`), appended
            load_file(name, data=data.encode())
        assert len(err.value.problems) == 1 and "JSON objects written over several lines" in str(err.value), name
    mixed = write(tmp_path, "mixed.jsonl", '{"id": 0, "context": ["a"], "response": "b"}\n' + text)
    from core.cli import main
    assert main(["score", str(mixed), "--metrics", "bleu", "--quiet"]) == 2  # `score` checks a file in place first
    err = capsys.readouterr().err
    assert "row 2: from here on holds 2 JSON objects written over several lines" in err and "row 3" not in err


def test_an_annotator_s_null_in_a_list_of_ratings_is_left_out():
    """DSTC10 annotations {"overall": [3, null, 5]} were refused ('must be a number, got None') while a null
    rating means 'not rated' everywhere else."""
    from core.data import load_dstc10
    recs = [{"dialogue_id": "d1", "model": "m", "context": "hi", "response": "yo", "reference": ["hey"],
             "annotations": {"overall": [3, None, 5], "fluency": [None, None], "grammar": [4, "NA"]}}]
    ex, = load_dstc10("d.json", data=json.dumps(recs).encode())
    assert ex.scores == {"overall": 4.0, "grammar": 4.0}


NAN_ROWS = {  # issue 52: each held a NaN rating that was dropped without a word (read as "not rated")
    "JSON Lines": ("r.jsonl", '{"context": ["hi"], "response": "yo", "scores": {"overall": 3}}\n'
                              '{"context": ["ho"], "response": "ya", "scores": {"overall": NaN}}\n',
                   "r.jsonl, row 2, field 'scores.overall': is NaN"),
    "JSON Lines, NaN as text": ("t.jsonl", '{"context": ["hi"], "response": "yo", "scores": {"overall": " nan "}}\n',
                                "t.jsonl, row 1, field 'scores.overall': is NaN"),
    "DSTC10 annotation list": ("d.json", json.dumps([
        {"dialogue_id": "d1", "model": "m", "context": "hi", "response": "yo", "annotations": {"overall": [3, 4]}},
        {"dialogue_id": "d2", "model": "m", "context": "ho", "response": "ya",
         "annotations": {"overall": [4, float("nan"), None]}}]),
        "d.json, row 2, field 'annotations.overall': holds NaN (not a number) as item 1"),
    "column JSON": ("c.json", json.dumps({"contexts": [["hi"], ["ho"]], "responses": ["yo", "ya"],
                                         "scores": [{"Overall": "NaN"}, {"Overall": "4"}]}),
                    "c.json, row 1, field 'scores.Overall': is NaN"),
    "CSV": ("r.csv", "context,response,scores.overall\nhi,yo,3\nho,ya,nan\nhe,ye,\n",
            "r.csv, row 3, field 'scores.overall': is NaN"),
    "TSV, a chosen score column, MSVC's NaN": ("r.tsv", "context\tresponse\tq\nhi\tyo\t-1.#IND\n",
                                               "r.tsv, row 2, field 'scores.q': is NaN"),
}


@pytest.mark.parametrize("case", list(NAN_ROWS))
def test_a_nan_rating_is_refused_with_its_file_row_and_field(tmp_path, case):
    """A NaN human rating was read as "not rated" and the row's rating silently dropped (issue 52): NaN is what
    a failed computation leaves, so it is refused like any bad rating, whole file and streamed alike, with what
    to write instead; null, a blank cell and "NA" still mean "not rated"."""
    from core.data import open_examples
    name, text, said = NAN_ROWS[case]
    path = write(tmp_path, name, text)
    mapping = CsvMapping(scores=["q"]) if name.endswith(".tsv") else None
    for read in (lambda: load_file(path, csv_mapping=mapping), lambda: open_examples(path, csv_mapping=mapping)):
        with pytest.raises(DataError) as e:
            read()
        assert len(e.value.problems) == 1 and said in str(e.value), str(e.value)
        assert "where this row was not rated, leave the rating out (null, or a blank CSV cell)" in str(e.value)


def test_null_blank_and_na_ratings_are_still_not_rated(tmp_path):
    rows = write(tmp_path, "ok.csv", "context,response,scores.a,scores.b\nhi,yo,,NA\nho,ya,null,3\n")
    assert [ex.scores for ex in load_file(rows)] == [{}, {"b": 3.0}]
    js = write(tmp_path, "ok.jsonl", '{"context": ["hi"], "response": "yo", "scores": {"a": null, "b": "N/A"}}\n')
    assert load_file(js)[0].scores == {}


def test_an_infinite_rating_is_refused_in_every_format(tmp_path):
    for name, text in (("i.jsonl", '{"context": ["hi"], "response": "yo", "scores": {"o": Infinity}}\n'),
                       ("i.csv", "context,response,scores.o\nhi,yo,-inf\n"),
                       ("i.json", json.dumps([{"context": "hi", "response": "yo", "annotations": {"o": [3, "inf"]}}]))):
        with pytest.raises(DataError, match="must be a finite number"):
            load_file(write(tmp_path, name, text))


PROSE = ("I went to the market this morning, and it was busy.\n"
         "The apples looked fresh.\n"
         "We talked about the weather, the news, and the price of bread, which keeps rising.\n"
         "Then I went home.\n")


@pytest.mark.parametrize("name, text, reason", [
    ("story.txt", PROSE, "the first line has 2, but only 0 of the next 3 rows do"),
    ("notes.txt", "Hello there.\nThis is a story.\nIt has no commas at all.\n",
     "its first line has no comma, tab or semicolon between column names"),
    ("stdin", PROSE, "the first line has 2"),
    ("story.json", PROSE, "the first line has 2")])
def test_prose_that_is_not_a_table_is_refused_as_such(name, text, reason):
    """A .txt of prose was read as CSV: its first sentence's fragments became the column names and one was
    offered as the context column (issue 52). It is refused: not a table, not JSON, and what is read."""
    with pytest.raises(DataError) as e:
        detect_format(name, text.encode())
    msg = str(e.value)
    assert len(e.value.problems) == 1 and "is not a table and not JSON" in msg and reason in msg, msg
    assert "JSON Lines" in msg and "CSV or TSV" in msg
    with pytest.raises(DataError, match="is not a table and not JSON"):
        load_file(name, data=text.encode())


def test_tables_named_txt_are_still_tables():
    """Whatever was read as a table by its content still is; a table with one broken row names that row."""
    tables = {"comma.txt": "context,response\nhi,yo\nho,ya\n", "tab.txt": "context\tresponse\nhi\tyo\n",
              "semicolon.txt": "context;response\nhi;yo\n",  # was read as broken JSON Lines
              "quoted.txt": 'context,response\n"hi, you\nthere",yo\n"ho",ya\n', "stdin": "context,response\nhi,yo\n",
              "blank-lines.txt": "context,response\n\nhi,yo\n\nho,ya\n"}
    for name, text in tables.items():
        assert detect_format(name, text.encode()) == "csv", name
        assert all(ex.response in ("yo", "ya") for ex in load_file(name, data=text.encode())), name
    with pytest.raises(DataError, match="row 3: has 3 cells but the header has 2"):
        load_file("one-bad.txt", data=b"context,response\nhi,yo\nho,ya,extra\nhe,ye\n")
    prose = PROSE.encode()
    with pytest.raises(DataError, match="column for response not found"):  # a table by choice: the name or format
        load_file("story.csv", data=prose)
    with pytest.raises(DataError, match="column for response not found"):
        load_file("story.txt", fmt="csv", data=prose)


def test_a_misspelt_or_renamed_required_field_is_named_with_the_key_the_row_has(tmp_path):
    """'responce' gave one "field 'response': is missing" a row with no hint (a misspelt optional field got one)."""
    path = tmp_path / "typo.jsonl"
    path.write_text(json.dumps({"id": "1", "contxt": ["hi"], "responce": "yo"}) + "\n"
                    + json.dumps({"id": "2", "context": ["ho"], "reply": "ya"}) + "\n"
                    + json.dumps({"id": "3", "context": ["he"], "text": "ye"}) + "\n")
    with pytest.raises(DataError) as e:
        load_file(str(path))
    said = str(e.value)
    assert "field 'response': is missing (the row has 'responce': did you mean 'response'?)" in said
    assert "field 'context': is missing (the row has 'contxt': did you mean 'context'?)" in said
    assert "field 'response': is missing (the row has 'reply': did you mean 'response'?)" in said
    assert "row 3, field 'response': is missing\n" in said + "\n"  # nothing close: no guess


def test_a_name_is_found_in_another_case_only_where_one_name_matches():
    from core.data import case_blind_name
    assert case_blind_name("overall", ["Overall", "Engaging"]) == "Overall"
    assert case_blind_name("Overall", ["overall", "Overall"]) == "Overall"  # the exact spelling first
    assert case_blind_name("OVERALL", ["overall", "Overall"]) is None  # two differ only in case: ambiguous
    assert case_blind_name("fluency", ["Overall"]) is None


def test_csv_cells_that_hold_a_list_are_read_as_its_items(tmp_path):
    """pandas' to_csv of list columns writes Python's repr (``['hi', 'how are you']``): the whole context was one
    turn and the one reference was the text with its brackets and quotes. A cell that parses whole as a list of
    strings (JSON or Python's way) is its items; anything else stays text ("[laughs]", a list of numbers)."""
    import csv
    import io
    out = io.StringIO()
    w = csv.writer(out)
    w.writerow(["id", "system", "context", "response", "references"])
    w.writerow(["1", "a", str(["hi there", "it's sunny, isn't it?"]), "yes", str(["it is", "bye now"])])
    w.writerow(["2", "a", json.dumps(["hi there", "how are you?"]), "fine", json.dumps(["good", "ok"])])
    w.writerow(["3", "a", "[laughs]\nso funny", "[1, 2]", "[laughs]"])
    w.writerow(["4", "a", "[]", "ok", "['x', 3]"])
    p = tmp_path / "lists.csv"
    p.write_text(out.getvalue(), encoding="utf-8")
    rows = load_csv(p)
    assert rows[0].context == ["hi there", "it's sunny, isn't it?"] and rows[0].references == ["it is", "bye now"]
    assert rows[1].context == ["hi there", "how are you?"] and rows[1].references == ["good", "ok"]
    assert rows[2].context == ["[laughs]", "so funny"] and rows[2].response == "[1, 2]"
    assert rows[2].references == ["[laughs]"]
    assert rows[3].context == ["[]"] and rows[3].references == ["['x', 3]"]


def test_a_context_of_chat_messages_is_read_as_their_texts(tmp_path):
    """OpenAI-style turns ({"role", "content"}) were refused row by row ("item 0 must be a string, got dict")."""
    p = tmp_path / "chat.jsonl"
    p.write_text(json.dumps({"system": "s", "context": [{"role": "user", "content": "hi"},
                                                        {"role": "assistant", "content": "hello, how are you?"}],
                             "response": "fine"}) + "\n" +
                 json.dumps({"system": "s", "context": [{"role": "user"}], "response": "fine"}) + "\n")
    with pytest.raises(DataError, match="row 2, field 'context': item 0 must be a string, got dict"):
        load_jsonl(p)  # a message without its text is still refused
    p.write_text(p.read_text().splitlines()[0] + "\n")
    assert load_jsonl(p)[0].context == ["hi", "hello, how are you?"]
    p.write_text(json.dumps({"system": "s", "context": [{"role": "system", "content": "You are helpful."},
                                                        {"role": "user", "content": "hi"}], "response": "hello"}))
    assert load_jsonl(p)[0].context == ["hi"]  # a system prompt is no turn of the conversation


def test_a_problem_on_many_rows_is_listed_once_with_its_rows():
    """A file in another shape gave 20 identical lines (and 20 table rows on the Upload page)."""
    from core.data import Problem
    probs = [Problem("f.jsonl", i, "context", "is missing") for i in range(1, 21)]
    probs.insert(3, Problem("f.jsonl", 4, "id", "duplicate id 'x'"))
    probs.append(Problem("f.jsonl", None, None, "contains no examples"))
    err = DataError(probs)
    assert [(p.field, rows) for p, rows in err.grouped()] == [("context", "1, 2, 3 and 17 more"), ("id", "4"),
                                                              (None, "")]
    assert err.lines() == ["f.jsonl, rows 1, 2, 3 and 17 more, field 'context': is missing",
                           "f.jsonl, row 4, field 'id': duplicate id 'x'", "f.jsonl: contains no examples"]
    assert str(err).startswith("22 problem(s) in the input:\n  - f.jsonl, rows 1, 2, 3 and 17 more")


def test_two_files_whose_ids_share_none_say_why_they_pair_by_context():
    """One file numbered its ids 0, 1, 2 (numbers), the other '000', '001': the files were paired by context
    without a word on why the ids were not used."""
    from core.data import Example, alignment_rule
    a = [Example("0", "a", ["q 0?"], "x"), Example("1", "a", ["q 1?"], "y")]
    b = [Example("000", "b", ["q 0?"], "x"), Example("001", "b", ["q 1?"], "y")]
    rule, why = alignment_rule([a, b])
    assert rule == "context" and "share none (first ids '0' and '000'" in why
