"""Outputs are written whole or not at all; rows that are not compared are listed in every format and on the
dashboard; ``--quiet`` silences the model libraries' bars too (issue 21)."""
import errno
import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from core.cli import main
from core.data import load_comparison
from core.outputs import OutputError, atomic_open, check_output
from core.scoring import JudgeOutput
from core.verdict import build_verdict, summarize_judge

PREVIOUS = "an earlier output\n"


def rec(i, system="a", response=None, context=None, references=None):
    return {"id": f"r{i}", "system": system, "context": context or [f"how was day {i}?"],
            "response": f"it was fine {i}" if response is None else response,
            "references": [f"a fine day {i}"] if references is None else references}


def write_jsonl(path: Path, records) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.endswith(".part")]


# ------------------------------------------------------------------------------------------------
# atomic outputs


def test_an_interrupted_write_leaves_the_previous_output(tmp_path, monkeypatch, capsys):
    """Ctrl-C after 100 of 300 rows were written: exit 130, the earlier file as it was, no partial file."""
    src = write_jsonl(tmp_path / "in.jsonl", [rec(i) for i in range(300)])
    out = tmp_path / "out.jsonl"
    out.write_text(PREVIOUS)
    import core.report
    real, calls = core.report.clean_json, []

    def interrupt_after_100(obj):
        calls.append(1)
        if len(calls) == 100:
            raise KeyboardInterrupt
        return real(obj)
    monkeypatch.setattr(core.report, "clean_json", interrupt_after_100)
    assert main(["score", str(src), "--metrics", "bleu", "--out", str(out), "--quiet"]) == 130
    assert out.read_text() == PREVIOUS and not leftovers(tmp_path)
    assert capsys.readouterr().err.strip().endswith("interrupted")


def test_a_full_disk_is_one_message_and_the_previous_output_survives(tmp_path, monkeypatch, capsys):
    src = write_jsonl(tmp_path / "in.jsonl", [rec(i) for i in range(5)])
    out = tmp_path / "out.jsonl"
    out.write_text(PREVIOUS)

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(os, "fsync", full)
    assert main(["score", str(src), "--metrics", "bleu", "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "out.jsonl" in err and "no space left" in err and "Traceback" not in err
    assert out.read_text() == PREVIOUS and not leftovers(tmp_path)


def test_atomic_open_keeps_the_mode_of_the_file_it_replaces(tmp_path):
    target = tmp_path / "t.txt"
    target.write_text("old")
    os.chmod(target, 0o640)
    with atomic_open(target) as f:
        f.write("new")
    assert target.read_text() == "new" and (target.stat().st_mode & 0o777) == 0o640 and not leftovers(tmp_path)
    with pytest.raises(RuntimeError), atomic_open(target) as f:
        f.write("half")
        raise RuntimeError("boom")
    assert target.read_text() == "new" and not leftovers(tmp_path)


def test_check_output_refuses_before_any_work(tmp_path):
    inp = tmp_path / "in.jsonl"
    inp.write_text("{}\n")
    for bad, why in [(inp, "input file"), (tmp_path, "folder"), (tmp_path / "no" / "x.jsonl", "does not exist")]:
        with pytest.raises(OutputError, match=why):
            check_output(bad, [inp])
    check_output(tmp_path / "new.jsonl", [inp])  # fine: a new file in a writable folder
    check_output("-", [inp])


def test_an_output_in_a_missing_folder_fails_before_loading(tmp_path, capsys):
    """The output location is checked first: a broken input is not even read."""
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{broken\n")
    assert main(["score", str(bad), "--metrics", "bleu", "--out", str(tmp_path / "no" / "o.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "does not exist" in err and "malformed" not in err


# ------------------------------------------------------------------------------------------------
# rows that are not compared: unmatched rows and pairs without a value


def _two_files(tmp_path):
    a = write_jsonl(tmp_path / "a.jsonl", [rec(1), rec(2, references=[]), rec(3, response="  "), rec(4), rec(5)])
    b = write_jsonl(tmp_path / "b.jsonl", [rec(1, "b", "sure"), rec(2, "b", "no", references=[""]),
                                           rec(3, "b", "maybe"), rec(4, "b", "ok"), rec(9, "b", "extra")])
    return a, b


@pytest.mark.parametrize("fmt", ["text", "markdown", "csv", "json"])
def test_compare_lists_unmatched_rows_and_left_out_pairs_in_every_format(fmt, tmp_path, capsys):
    a, b = _two_files(tmp_path)
    assert main(["compare", "--no-judge", str(a), str(b), "--metrics", "bleu", "--format", fmt, "--n-boot", "100", "--n-perm", "50",
                 "--quiet"]) == 0
    out, err = capsys.readouterr()
    assert "a.jsonl row 5, id 'r5'" in out and "b.jsonl row 5, id 'r9'" in out
    assert "a.jsonl row 3: blank response" in out and "b.jsonl row 2: no reference" in out
    if fmt == "json":
        v = json.loads(out)
        assert v["n_unmatched"] == 2 and len(v["unmatched"]) == 2 and v["unmatched_by_side"] == {"A": 1, "B": 1}
        bleu = next(m for m in v["metrics"] if m["metric"] == "bleu")
        assert (bleu["n"], bleu["n_dropped"]) == (2, 2) and v["left_out"][0]["n_left_out"] == 2
    elif fmt == "csv":
        import csv
        import io
        rows = list(csv.DictReader(io.StringIO(out)))
        assert [r["n"] for r in rows if r["kind"] == "unmatched_total"] == ["2"]
        assert sum(r["kind"] == "unmatched" for r in rows) == 2
        assert [r["n"] for r in rows if r["kind"] == "left_out"] == ["2"]
    else:
        assert "2 unmatched row(s), not compared" in out and "2 of 4 pairs left out" in out
        # said beside the count of pairs too: a side that skipped inputs is not only in a list at the end
        assert "4 pairs aligned by id; " in out and ("; not compared: 1 row of a without a partner in b, 1 row of b "
                                                      "without a partner in a (listed below)") in out
    assert "warning: 1 of 8 rows have a blank response" in err  # and the counts on stderr


def test_the_api_warns_of_rows_without_a_partner_as_the_command_says_them(tmp_path):
    """core.compare said nothing of the rows it could not pair (only ``v.unmatched`` held them)."""
    import warnings

    import core
    a, b = _two_files(tmp_path)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        v = core.compare(str(a), str(b), metrics="bleu", judge=False, n_boot=100, n_perm=50)
    assert len(v.unmatched) == 2
    assert any("not compared: 1 row of a without a partner in b, 1 row of b without a partner in a (the verdict's "
               "unmatched lists them)" in str(w.message) for w in said), [str(w.message) for w in said]


def test_pairs_left_out_for_one_reason_say_it_once(tmp_path, capsys):
    """A file without references listed "A row 1: no reference; B row 2: no reference; ..." for 20 pairs per
    reference metric; one reason is said once, with a few pairs as examples and the full count."""
    a = write_jsonl(tmp_path / "a.jsonl", [rec(i, references=[]) for i in range(1, 9)])
    b = write_jsonl(tmp_path / "b.jsonl", [rec(i, "b", f"maybe {i}", references=[]) for i in range(1, 9)])
    assert main(["compare", "--no-judge", str(a), str(b), "--metrics", "bleu", "--n-boot", "100", "--n-perm", "50",
                 "--quiet"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if "pairs left out (" in x)
    assert "8 of 8 pairs left out (all: no reference, e.g. A a.jsonl row 1; B b.jsonl row 1; " in line, line
    assert line.count("no reference") == 1 and line.endswith("and 5 more)"), line


def test_the_html_report_lists_unmatched_rows_and_left_out_pairs(tmp_path, capsys):
    """``dialeval report`` (issue 22) says what ``compare`` says: every unmatched row and every pair left out."""
    a, b = _two_files(tmp_path)
    out = tmp_path / "report.html"
    assert main(["report", "--no-judge", str(a), str(b), "--metrics", "bleu", "--out", str(out), "--n-boot", "100", "--n-perm", "50",
                 "--quiet"]) == 0
    page = out.read_text(encoding="utf-8")
    assert "2 unmatched row(s), not compared" in page and "2 of 4 pairs left out" in page
    assert "a.jsonl row 5, id &#x27;r5&#x27;" in page and "a.jsonl row 3: blank response" in page
    assert "warning: 1 of 8 rows have a blank response" in capsys.readouterr().err
    assert not list(tmp_path.glob("*.part"))


@pytest.mark.parametrize("fmt", ["text", "markdown", "csv", "json"])
def test_judge_lists_unmatched_rows_with_a_count_in_every_format(fmt, tmp_path, capsys, monkeypatch):
    """The judge's output formats render the same verdict; the judge itself is replaced by fixed numbers (its
    model is not the point here)."""
    import core.cli.judge as judge_cli

    def fixed(comp, *args, **kw):
        n = len(comp.pairs)
        p = np.linspace(0.2, 0.8, n)
        return JudgeOutput(p, p, p, ["B" if x < 0.45 else "A" if x > 0.55 else "tie" for x in p], 0.0, 0.05, "test")
    monkeypatch.setattr(judge_cli, "judge_comparison", fixed)
    a, b = _two_files(tmp_path)
    assert main(["judge", str(a), str(b), "--format", fmt, "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "a.jsonl row 5, id 'r5'" in out and "b.jsonl row 5, id 'r9'" in out
    if fmt == "json":
        assert json.loads(out)["n_unmatched"] == 2
    elif fmt == "csv":
        import csv
        import io
        rows = list(csv.DictReader(io.StringIO(out)))
        assert [r["n"] for r in rows if r["kind"] == "unmatched_total"] == ["2"]
    else:
        assert "2 unmatched row(s), not compared" in out


def test_the_verdict_counts_every_pair_it_leaves_out(tmp_path):
    from core.engine import score_comparison
    a, b = _two_files(tmp_path)
    comp = load_comparison(str(a), str(b))
    cs = score_comparison(comp, "bleu")
    v = build_verdict(comp, cs, None, n_boot=100, n_perm=20)
    row = v.rows("metric")[0]
    assert row.n + row.n_dropped == len(comp.pairs) == 4
    assert v.left_out[0]["n_left_out"] == row.n_dropped == 2
    assert v.n_unmatched == len(comp.unmatched_a) + len(comp.unmatched_b) == 2
    out = JudgeOutput(np.full(4, 0.7), np.full(4, 0.7), np.full(4, 0.7), ["A"] * 4, 0.0, 0.05)
    assert build_verdict(comp, None, summarize_judge(comp, out)).n_unmatched == 2


def test_score_flags_blank_text_per_row(tmp_path, capsys):
    src = write_jsonl(tmp_path / "in.jsonl", [rec(1), rec(2, response=""), rec(3, references=[]),
                                              rec(4, references=["", "a fine day 4"])])
    assert main(["score", str(src), "--metrics", "bleu,ruber", "--quiet"]) == 0
    out, err = capsys.readouterr()
    rows = [json.loads(x) for x in out.splitlines()]
    assert [r["metrics"]["bleu"] is None for r in rows] == [False, True, True, False]
    assert rows[1]["details"]["ruber"] == {"skipped": "blank response: no score"}  # no s_R / s_U left behind
    assert rows[0]["details"]["ruber"]["s_U"] is not None
    assert [r.get("flags") for r in rows] == [None, ["blank response"], ["no reference"], ["blank reference ignored"]]
    assert "1 of 4 rows have a blank response (in.jsonl row 2)" in err and "no reference (in.jsonl row 3)" in err
    # the blank reference beside a real one is ignored: the same BLEU as the real one alone
    alone = write_jsonl(tmp_path / "alone.jsonl", [rec(4)])
    assert main(["score", str(alone), "--metrics", "bleu", "--quiet"]) == 0
    assert json.loads(capsys.readouterr().out)["metrics"]["bleu"] == rows[3]["metrics"]["bleu"]


def test_dashboard_sidebar_lists_unmatched_rows(repo_root):
    AppTest = pytest.importorskip("streamlit.testing.v1").AppTest
    at = AppTest.from_file(str(repo_root / "app.py"), default_timeout=120)
    at.session_state["metrics"] = ["bleu"]
    at.run()
    at.switch_page("views/upload.py").run()
    at.radio(key="upload_mode").set_value("Two files (system A, system B)").run()
    at.selectbox(key="upload_format").set_value("jsonl").run()
    at.text_area(key="paste_a").set_value("\n".join(json.dumps(rec(i)) for i in (1, 2, 3))).run()
    at.text_area(key="paste_b").set_value("\n".join(json.dumps(rec(i, "b", "ok")) for i in (1, 2))).run()
    at.button(key="use_two").click().run()
    assert not at.exception, at.exception
    at.switch_page("views/home.py").run()  # the sidebar of every page, drawn with the new data loaded
    labels = [e.label for e in at.sidebar.expander]
    assert "1 unmatched row, not compared" in labels


# ------------------------------------------------------------------------------------------------
# --quiet


@pytest.mark.slow  # MiniLM and SmolLM2 loaded in a child process
def test_quiet_silences_the_model_loaders(tmp_path):
    """MiniLM ("Loading weights") and SmolLM2 (GGUF de-quantization) draw tqdm bars unless told not to."""
    src = write_jsonl(tmp_path / "in.jsonl", [rec(1), rec(2)])
    exe = Path(sys.executable).with_name("dialeval")
    r = subprocess.run([str(exe), "score", str(src), "--metrics", "bert_ruber_unref,mme_sm_nll", "--quiet"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert len(r.stdout.splitlines()) == 2
    noise = [ln for ln in r.stderr.replace("\r", "\n").splitlines()
             if ln.strip() and not ln.startswith(("bert_ruber_unref: metric:", "mme_sm_nll: metric:"))]
    assert not noise, noise


@pytest.mark.slow  # MiniLM loaded in a child process
def test_without_a_terminal_the_model_loaders_draw_no_bars_and_dialeval_s_progress_stays(tmp_path):
    """In a CI log (stderr not a terminal) the model libraries' bars ("Loading weights", redrawn with carriage
    returns) were written beside dialeval's own progress lines; they are left out there, not dialeval's."""
    src = write_jsonl(tmp_path / "in.jsonl", [rec(1), rec(2)])
    exe = Path(sys.executable).with_name("dialeval")
    env = {k: v for k, v in os.environ.items() if k not in ("TQDM_DISABLE", "HF_HUB_DISABLE_PROGRESS_BARS",
                                                            "TRANSFORMERS_VERBOSITY")}  # what --quiet sets
    env["DIALEVAL_CACHE"] = str(tmp_path / "cache")  # MiniLM loaded, not read back from a cache
    r = subprocess.run([str(exe), "score", str(src), "--metrics", "bert_ruber_unref"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stderr
    assert "Loading weights" not in r.stderr and "\r" not in r.stderr, r.stderr
    assert "bert_ruber_unref" in r.stderr  # dialeval's own progress line


def test_after_an_interrupt_nothing_is_renamed_into_place_even_if_the_interrupt_was_swallowed(tmp_path, monkeypatch):
    """Python only prints a KeyboardInterrupt raised inside a finalizer; the CLI's SIGINT handler also records
    the interrupt, so the output is still not replaced and the run still exits 130."""
    from core import outputs
    monkeypatch.setattr(outputs, "_interrupted", False)
    target = tmp_path / "out.jsonl"
    target.write_text("previous\n")
    outputs.note_interrupt()
    with pytest.raises(KeyboardInterrupt):
        with outputs.atomic_open(target) as f:
            f.write("new\n")
    assert target.read_text() == "previous\n" and [p.name for p in tmp_path.iterdir()] == ["out.jsonl"]


def test_written_floats_carry_no_rounding_noise(tmp_path):
    """A BLEU of exactly 100 computed through exp(log(...)) is 100.00000000000004 in float64; every JSON and CSV
    output writes it as 100.0 (12 significant digits), and NaN stays null / an empty cell."""
    from dashboard.exports import export_csv
    from core.formatting import clean_json
    from core.report import render
    noisy = 100.00000000000004
    assert json.loads(json.dumps(clean_json({"bleu": noisy, "x": [0.1 + 0.2, float("nan")]}))) == {
        "bleu": 100.0, "x": [0.3, None]}
    assert render([{"bleu": noisy, "p": float("nan")}], [("bleu", "bleu"), ("p", "p")], "csv") == "bleu,p\n100.0,"
    assert export_csv(pd.DataFrame({"bleu": [noisy, 1 / 3]})).decode().splitlines() == ["bleu", "100", "0.333333333333"]


def test_too_few_resamples_are_refused_by_the_api(tmp_path):
    from core.stats import MIN_BOOT, check_settings
    check_settings(MIN_BOOT, 20)
    check_settings(MIN_BOOT, 10, 0.9)
    for bad, setting in (((1,), "n_boot=1"), ((0,), "n_boot=0"), ((-5,), "n_boot=-5"), ((2000.0,), "n_boot=2000.0"),
                         ((MIN_BOOT, 0), "n_perm=0"), ((MIN_BOOT, 1, 95), "level=95"),
                         ((MIN_BOOT, 1, 1.0), "level=1.0"), ((MIN_BOOT, 20, 0.9, -1), "seed=-1"),
                         # too few randomizations for any p below 1 - level: every test would be non-significant
                         ((MIN_BOOT, 19), "n_perm=19: .* smallest p is 1/20 .* at least 20"),
                         ((MIN_BOOT, 50, 0.99), "n_perm=50: .* at least 100"),
                         ((10 ** 8,), "n_boot=100000000: at most 1,000,000"), ((MIN_BOOT, 10 ** 7), "n_perm=10000000")):
        with pytest.raises(ValueError, match=setting):
            check_settings(*bad)
    from core.leaderboard import build_leaderboard
    from core.meta_eval import meta_evaluate
    for call in (lambda: build_verdict(None, None, n_boot=10), lambda: build_leaderboard(None, None, n_boot=99),
                 lambda: meta_evaluate({}, ["bleu"], n_boot=1)):
        with pytest.raises(ValueError, match="at least 100"):
            call()


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_judge_rows_carry_the_whole_context(fmt, tmp_path, capsys, monkeypatch):
    """A judged pair's row names its whole context (turns one per line), not its last turn only."""
    import csv
    import io

    import core.cli.judge as judge_cli
    monkeypatch.setattr(judge_cli, "judge_comparison", lambda comp, *args, **kw: JudgeOutput(
        np.full(len(comp.pairs), 0.7), np.full(len(comp.pairs), 0.7), np.full(len(comp.pairs), 0.7),
        ["A"] * len(comp.pairs), 0.0, 0.05, "test"))
    turns = ["hi there", "hello, how are you?", "fine, and you?"]
    a = write_jsonl(tmp_path / "a.jsonl", [rec(i, context=turns) for i in (1, 2)])
    b = write_jsonl(tmp_path / "b.jsonl", [rec(i, "b", "ok", context=turns) for i in (1, 2)])
    assert main(["judge", str(a), str(b), "--format", fmt, "--quiet"]) == 0
    out = capsys.readouterr().out
    rows = (json.loads(out)["pairs"] if fmt == "json"
            else [r for r in csv.DictReader(io.StringIO(out)) if r["kind"] == "pair"])
    assert len(rows) == 2 and rows[0]["context"].split("\n") == turns


def test_report_out_dash_writes_the_page_to_stdout(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    a, b = _two_files(tmp_path)
    assert main(["report", "--no-judge", str(a), str(b), "--metrics", "bleu", "--out", "-", "--n-boot", "100", "--quiet"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("<!DOCTYPE html>") and out.rstrip().endswith("</html>") and "No verdict on a vs b" in err
    assert not (tmp_path / "-").exists()


def test_a_reply_longer_than_a_metric_s_models_read_is_said():
    from core.data import Example
    from core.engine import blank_text_notes
    rows = [Example("1", "s", ["hi"], " ".join(["word"] * 45), ["hello"]), Example("2", "s", ["yo"], "hey there", [])]
    notes = blank_text_notes(rows, ["bleu", "mme"], judged=True)
    assert ("1 of 2 rows have a response of more than 30 words (item 1): mme, the judge read a reply's first 40 "
            "SmolLM2 tokens (about 30 words), not the rest") in notes
    assert not any("words" in n for n in blank_text_notes(rows, ["bleu"]))  # BLEU reads every word
    # every model's limit is said, not only SmolLM2's: RUBER reads 32 word pieces, BERT-RUBER and ADEM 128
    rows.append(Example("3", "s", ["hm"], " ".join(["word"] * 120), ["hello"]))
    notes = blank_text_notes(rows, ["bleu", "ruber", "bert_ruber", "adem"])
    assert ("2 of 3 rows have a response of more than 24 words (item 1, item 3): ruber reads a reply's first 32 MiniLM "
            "word pieces (about 24 words), not the rest; 1 of 3 rows have a response of more than 95 words (item 3): "
            "bert_ruber, adem read a reply's first 128 MiniLM word pieces (about 95 words), not the rest") in notes
    assert blank_text_notes(rows, ["bleu", "ubleu"]) == ["1 of 3 rows have no reference (item 2): bleu, ubleu are "
                                                          "null for them"]  # BLEU reads every word
    # a reply 'nan' is what pandas' astype(str) writes for a missing value: scored as text, and said
    nan = blank_text_notes([Example("1", "s", ["hi"], "nan", ["hello"])], ["bleu"])
    assert nan == ["1 of 1 rows reply with a text that stands for a missing value in pandas or a spreadsheet ('nan', "
                   "'<NA>', 'N/A', 'NULL', 'None', ...; item 1): it is scored as a reply; if it is a missing value, "
                   "leave those cells empty (a blank reply is null on every metric)"]
    # a spreadsheet's #N/A and a database's NULL are said too (they were scored in silence)
    said = blank_text_notes([Example(str(i), "s", ["hi"], t, ["hello"]) for i, t in enumerate(("#N/A", "NULL", "ok"))],
                            ["bleu"])
    assert said[0].startswith("2 of 3 rows reply with a text that stands for a missing value")
    # DailyDialog's '__eou__' inside a context turn joins turns into one: said (it was read as one turn in silence)
    eou = blank_text_notes([Example("1", "s", ["hi __eou__ how are you? __eou__"], "fine", ["good"])], ["bleu"])
    assert blank_text_notes([Example("1", "s", ["how are you? __eou__"], "fine", ["good"])], ["bleu"]) == []  # ends it
    assert eou == ["1 of 1 rows have '__eou__' inside a context turn (item 1): DailyDialog's turn mark is read as text, "
                   "so the turns it joins are one turn to every metric and the judge; give the context as a list of "
                   "turns (or one turn a line)"]
    # a reply without spaces is as long as the units a tokenizer splits it into at least (it was one word, unsaid)
    long = blank_text_notes([Example("1", "s", ["hi"], "我很好谢谢你" * 10, ["hello"]),
                             Example("2", "s", ["hi"], "Sure," + ",".join(["thanks"] * 40), ["hello"])], ["mme"])
    assert any(n.startswith("2 of 2 rows have a response of more than 30 words") for n in long), long
    zh = blank_text_notes([Example("1", "s", ["hi"], "我觉得很好", ["我觉得还好"])], ["bleu", "ubleu"])
    assert zh[0].startswith("1 of 1 rows reply in a script written without spaces (Chinese, Japanese, Thai, Lao, "
                            "Khmer, Burmese; item 1): bleu, ubleu split words at spaces")  # BLEU 0, without a word
    spaced = [Example("1", "s", ["hi"], "저는 피자를 정말 좋아해요", ["x"]),
              Example("2", "s", ["hi"], "I had 寿司 today", ["x"])]
    # Korean is written with spaces and one Japanese word tokenizes: no note of splitting, but Hangul is not Latin
    assert blank_text_notes(spaced, ["bleu"]) == [
        "1 of 2 rows reply mostly in a script other than Latin, or with no letter at all (emoji alone; item 1): every "
        "model here (MiniLM, SmolLM2, and so the judge) was trained on English, so their scores of those replies say "
        "little"]
    # a row without an id pasted twice was paired and counted twice in silence (with ids it is refused)
    twice = [Example("row1", "s", ["hi"], "hello", ["hey"], row=1, source="f.jsonl", has_id=False),
             Example("row2", "s", ["hi"], "hello", ["hey"], row=2, source="f.jsonl", has_id=False),
             Example("row3", "t", ["hi"], "hello", ["hey"], row=3, source="f.jsonl", has_id=False),
             Example("row4", "s", ["hi"], "hello!", ["hey"], row=4, source="f.jsonl", has_id=False)]
    assert blank_text_notes(twice) == [
        "1 of 4 rows repeat an earlier row of their system word for word (context, reply and references; f.jsonl row 2): "
        "each copy counts as a row of its own (a pair of its own, or an unmatched row); delete the copies if they "
        "are not meant (or give rows ids)"]
    assert blank_text_notes([replace(e, has_id=True) for e in twice]) == []  # ids: the duplicate-id check's
    # Arabic, Cyrillic, Devanagari and emoji alone were scored in silence; accented Latin and a number are answers
    others = ["مرحبا كيف حالك", "Привет, как дела?", "मैं ठीक हूँ", "😂😂😂", "👋 !", "Ça va très bien, merci", "42",
              "ok 👍", "3:30", "?"]
    from core.engine import BlankTextCount
    assert [BlankTextCount.not_latin(t) for t in others] == [True, True, True, True, True, False, False, False, False,
                                                            False]
    from core.judges import smollm_reader
    from core.metrics import mme
    from core.models import encoders, mme_models
    assert mme.READS_SMOLLM[1] == f"{mme_models.SM_RESP_TOKENS} SmolLM2 tokens"
    assert mme.READS_SMOLLM[1] == f"{smollm_reader.REPLY_TOKENS} SmolLM2 tokens"
    assert mme.READS["fm"][1] == f"{mme_models.FM_MAX_LEN} MiniLM word pieces" and encoders.MAX_SEQ_LEN == 128


def test_a_new_file_gets_the_permissions_open_gives_whatever_the_writer_used(tmp_path):
    """safetensors wrote checkpoint weights 0o600 while their manifests were 0o644: others sharing the folder
    could not read them."""
    from core.outputs import atomic_path
    target = tmp_path / "w.bin"
    with atomic_path(target) as tmp:
        fd = os.open(tmp, os.O_CREAT | os.O_WRONLY, 0o600)
        os.close(fd)
    mask = os.umask(0)
    os.umask(mask)
    assert (target.stat().st_mode & 0o777) == 0o666 & ~mask


def test_lists_read_as_a_sentence_lists_them():
    from core.formatting import fmt_list
    from dashboard.words import names
    assert [fmt_list(w) for w in ([], ["a"], ["a", "b"], ["a", "b", "c"])] == ["", "a", "a and b", "a, b and c"]
    assert names(["bleu", "judge", "mme"]) == "BLEU, the judge and MME-CRS"


def test_a_p_value_in_a_sentence_reads_as_words():
    """'(p = <0.001)' was the verdict's sentence for a strong combined test."""
    from core.formatting import fmt_p
    assert [fmt_p(x) for x in (0.0004, 0.0123, float("nan"))] == ["p < 0.001", "p = 0.012", "p = -"]


def test_a_rating_no_upset_ties_to_the_others_gets_no_interval():
    """Ten pairs one system won every time gave "1507 [1507, 1507]": every bootstrap replicate sees the same
    sweep, and only the Bradley-Terry fit's ridge keeps the rating finite. The same holds for the middle one of
    three systems the judge ordered without one upset (it showed [1000, 1270], the ridge's width), and for two
    systems that upset each other but lost every pair to a third: ratings have intervals only where upsets tie
    every system to every other (the 'won or tied' graph strongly connected)."""
    from core.leaderboard import Leaderboard, PairwiseRow, SystemEntry, leaderboard_rows

    def entry(name, rank, rating):
        return SystemEntry(name, rank, {}, {"rating": rating, "rating_low": rating - 80, "rating_high": rating + 90,
                                            "wins": 0, "ties": 0, "losses": 0})

    def judged(first, second, wins, ties, losses):
        return PairwiseRow("judge", first, second, 0.5, 0.4, 0.6, 0.5, 0.5, None, wins, ties, losses)

    def board(systems, pairwise):
        return Leaderboard(systems, pairwise, 10, "id", [], "judge", [], {}, "judge:x", 200, 200, 0.95, 13)

    two = board([entry("engaged", 1, 1507.0), entry("generic", 2, 493.0)], [judged("engaged", "generic", 10, 0, 0)])
    assert [r["judge"] for r in leaderboard_rows(two)[0]] == ["1507 (won every judged pair: no interval)",
                                                             "493 (lost every judged pair: no interval)"]
    two.pairwise[0] = judged("engaged", "generic", 9, 0, 1)  # one loss: the bootstrap interval stands
    assert leaderboard_rows(two)[0][0]["judge"] == "1507 [1427, 1597]"
    three = board([entry("a", 1, 1300.0), entry("b", 2, 1000.0), entry("c", 3, 700.0)],
                  [judged("a", "b", 10, 0, 0), judged("a", "c", 10, 0, 0), judged("b", "c", 10, 0, 0)])
    assert [r["judge"] for r in leaderboard_rows(three)[0]] == [
        "1300 (won every judged pair: no interval)",
        "1000 (above or below each other system in every judged pair: no interval)",
        "700 (lost every judged pair: no interval)"]
    three.pairwise[2] = judged("b", "c", 9, 0, 1)  # b and c tied by an upset; a swept both: the gap from a to
    assert [r["judge"] for r in leaderboard_rows(three)[0]] == [  # them is the ridge's, and every rating centres on it
        "1300 (won every judged pair: no interval)", "1000 (no upset ties b, c to the other systems: no interval)",
        "700 (no upset ties b, c to the other systems: no interval)"]
    three.pairwise[1] = judged("a", "c", 9, 1, 0)  # a tie with c: a -> b -> c -> a, every rating is measured
    assert all("[" in r["judge"] for r in leaderboard_rows(three)[0])
    four = board([*three.systems, entry("d", 1, 1000.0)],  # every pair of d unread: its rating is the ridge's
                 [*three.pairwise, *(judged(x, "d", 0, 0, 0) for x in "abc")])
    assert [r["judge"] for r in leaderboard_rows(four)[0]][3] == "1000 (the judge read none of its pairs: no interval)"
    assert all("[" in r["judge"] for r in leaderboard_rows(four)[0][:3])


def test_a_leaderboard_pair_whose_interval_excludes_0_without_a_winner_says_why():
    """'+36.522 [+9.001, +63.020] ... no significant difference' read as a contradiction; compare's table said
    which p decides, the leaderboard did not."""
    from core.leaderboard import Leaderboard, PairwiseRow, pairwise_cells
    rows = [PairwiseRow("bleu", "A", "C", 36.5, 9.0, 63.0, 0.125, 0.25, None, 4, 4, 0),
            PairwiseRow("bleu", "A", "B", 1.0, -2.0, 4.0, 0.5, 0.5, None, 3, 2, 3),
            PairwiseRow("bleu", "B", "C", 30.0, 10.0, 50.0, 0.001, 0.002, "B", 8, 0, 0)]
    lb = Leaderboard([], rows, 8, "id", [], "bleu", ["bleu"], {}, None, 200, 200, 0.95, 13)
    assert [c["better"] for c in pairwise_cells(lb)] == [
        "no significant difference (the interval excludes 0, but p (Holm) 0.250 >= 0.05: a winner needs both)",
        "no significant difference", "B"]


def test_references_of_one_side_serve_both_and_the_verdict_says_so(tmp_path, capsys):
    """A file without references beside one with them: BLEU was null on that side and the hybrid metrics scored
    their reference-free half there, so identical replies differed 'significantly'. References belong to the
    context: the side without them is scored with the other side's, and every surface says so."""
    a = write_jsonl(tmp_path / "a.jsonl", [rec(i) for i in range(1, 9)])
    b = write_jsonl(tmp_path / "b.jsonl", [rec(i, "b", references=[]) for i in range(1, 9)])  # the same replies
    assert main(["compare", "--no-judge", str(a), str(b), "--metrics", "bleu", "--format", "json", "--n-boot", "100",
                 "--n-perm", "50", "--quiet"]) == 0
    v = json.loads(capsys.readouterr().out)
    bleu = next(m for m in v["metrics"] if m["metric"] == "bleu")
    assert (bleu["n"], bleu["diff"], bleu["winner"]) == (8, 0.0, None) and v["shared_references"] == {"B": 8}
    assert main(["compare", "--no-judge", str(a), str(b), "--metrics", "bleu", "--n-boot", "100", "--n-perm", "50",
                 "--quiet"]) == 0
    assert "8 of b's rows have no reference: they are scored with a's references for the same context" in (
        capsys.readouterr().out)


def test_a_misnamed_field_is_said_and_input_notes_reach_every_output(tmp_path, capsys):
    """'refs' and 'rating' were dropped without a word; the notes on the input went to stderr only. A key like a
    field the row already has ('context_id' beside 'context') is metadata, not a misnamed field."""
    def without(r, *keys):
        return {k: v for k, v in r.items() if k not in keys}
    rows = [dict(without(rec(i), "references"), refs=[f"a fine day {i}"], rating=4, context_id=i) for i in range(1, 7)]
    a = write_jsonl(tmp_path / "a.jsonl", rows)
    b = write_jsonl(tmp_path / "b.jsonl", [dict(without(rec(i, "b", f"maybe {i}"), "system"), sytem="b")
                                           for i in range(1, 7)])
    assert main(["compare", "--no-judge", str(a), str(b), "--metrics", "bleu", "--format", "json", "--n-boot", "100",
                 "--n-perm", "50", "--quiet"]) == 0
    out, err = capsys.readouterr()
    notes = json.loads(out)["input_notes"]["misnamed field"]
    for said in ("6 of 12 rows have a field 'refs' that dialeval does not read (did you mean 'references'?",
                 "field 'rating' that dialeval does not read (did you mean 'scores'?",
                 "field 'sytem' that dialeval does not read (did you mean 'system'?"):
        assert said in notes and said in err
    assert main(["compare", "--no-judge", str(a), str(b), "--metrics", "bleu", "--format", "csv", "--n-boot", "100",
                 "--n-perm", "50", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "input_note" in out and "context_id" not in out
    from core.data import field_suggestion
    assert [field_suggestion(k) for k in ("topic", "refs", "Response", "response")] == [None, "references",
                                                                                        "response", None]


def test_the_leaderboard_scores_every_system_against_the_same_references(tmp_path, capsys):
    """The leaderboard pairs rows as compare does: a system without references takes the others' for the same
    context, and says so."""
    a = write_jsonl(tmp_path / "a.jsonl", [rec(i) for i in range(1, 9)])
    b = write_jsonl(tmp_path / "b.jsonl", [rec(i, "b", references=[]) for i in range(1, 9)])
    c = write_jsonl(tmp_path / "c.jsonl", [rec(i, "c", f"no {i}") for i in range(1, 9)])
    assert main(["leaderboard", str(a), str(b), str(c), "--metrics", "bleu", "--no-judge", "--format", "json",
                 "--n-boot", "100", "--n-perm", "50", "--quiet"]) == 0
    board = json.loads(capsys.readouterr().out)
    means = {e["system"]: e["metrics"]["bleu"]["mean"] for e in board["systems"]}
    assert means["a"] == means["b"] > means["c"], means
    assert "8 of b's rows have no reference: they are scored with another system's references" in " ".join(
        board["notes"])


def test_a_row_whose_interval_excludes_zero_without_a_winner_sayswhich_p_decides():
    """"no significant difference" beside an interval above 0 and a bootstrap p of 0.04 read as a contradiction."""
    from types import SimpleNamespace

    from core.report import which_p_decides
    row = SimpleNamespace(winner=None, n=30, low=0.01, high=0.2, p_randomization=0.071)
    assert which_p_decides(row, 0.95) == ("the interval excludes 0, but randomization p 0.071 >= 0.05: a winner "
                                           "needs both")
    assert which_p_decides(SimpleNamespace(winner=None, n=30, low=-0.1, high=0.2, p_randomization=0.4), 0.95) == ""
    assert which_p_decides(SimpleNamespace(winner="A", n=30, low=0.01, high=0.2, p_randomization=0.01), 0.95) == ""


def test_a_reply_is_never_given_itself_as_a_reference_and_blank_references_are_not_shared():
    """A file of human replies without references beside a model's whose references are those replies: sharing
    them made every human reply its own reference (a perfect BLEU by construction)."""
    from core.data import Example, align
    ctx = [["how was the day?"], ["any plans?"]]
    model = [Example(str(i), "model", c, f"fine {i}", ["it was lovely", "", f"human {i}"]) for i, c in enumerate(ctx)]
    human = [Example(str(i), "human", c, f"human {i}", []) for i, c in enumerate(ctx)]
    comp = align(model, human)
    assert [b.references for _, b in comp.pairs] == [["it was lovely"], ["it was lovely"]]
    assert comp.shared_references == {"A": 0, "B": 2}
    only_self = [Example(str(i), "model", c, f"fine {i}", [f"human {i}"]) for i, c in enumerate(ctx)]
    comp2 = align(only_self, human)
    assert [b.references for _, b in comp2.pairs] == [[], []] and comp2.shared_references == {"A": 0, "B": 0}


def test_the_leaderboard_text_says_which_rows_took_references(tmp_path, capsys):
    a = write_jsonl(tmp_path / "a.jsonl", [rec(i) for i in range(1, 9)])
    b = write_jsonl(tmp_path / "b.jsonl", [rec(i, "b", references=[]) for i in range(1, 9)])
    c = write_jsonl(tmp_path / "c.jsonl", [rec(i, "c", f"no {i}") for i in range(1, 9)])
    assert main(["leaderboard", str(a), str(b), str(c), "--metrics", "bleu", "--no-judge", "--n-boot", "100",
                 "--n-perm", "50", "--quiet"]) == 0
    out, err = capsys.readouterr()
    assert "note: 8 of b's rows have no reference: they are scored with another system's references" in out
    assert "no reference" not in err  # the rows ranked have references once shared


def test_the_api_refuses_an_unrated_file_as_the_command_line_does(tmp_path):
    import core
    a = write_jsonl(tmp_path / "a.jsonl", [rec(i) for i in range(1, 5)])
    with pytest.raises(ValueError, match="no human scores in the input"):
        core.meta_evaluate(str(a), metrics="bleu")


def test_an_output_name_that_promises_another_format_is_said(tmp_path, capsys, monkeypatch):
    """`report --out x.pdf` wrote HTML and `judge --out x.csv` wrote JSON Lines, without a word."""
    monkeypatch.chdir(tmp_path)
    a, b = _two_files(tmp_path)
    assert main(["report", "--no-judge", str(a), str(b), "--metrics", "bleu", "--out", "r.pdf", "--n-boot", "100",
                 "--quiet"]) == 0
    assert "--out r.pdf: the report is an HTML page whatever the file's name" in capsys.readouterr().err
    assert (tmp_path / "r.pdf").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    # said before anything loads (the --dimension here then stops the run before the judge is read)
    assert main(["judge", str(a), str(b), "--out", "pairs.csv", "--dimension", "nowhere", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "--out pairs.csv: the per-pair rows are written as JSON Lines (one JSON object per line" in err
    assert "--dimension 'nowhere' is not in the data" in err
    assert main(["score", str(a), "--metrics", "bleu", "--out", "scores.json", "--quiet"]) == 0
    assert "--out scores.json: the scores are written as JSON Lines" in capsys.readouterr().err
    assert len((tmp_path / "scores.json").read_text(encoding="utf-8").splitlines()) == 5


def test_what_the_options_do_is_said_once(tmp_path, capsys, monkeypatch):
    """`compare` read its options twice (for the time estimate, then for scoring) and said each warning twice."""
    monkeypatch.chdir(tmp_path)
    a, b = _two_files(tmp_path)
    assert main(["compare", "--no-judge", str(a), str(b), "--metrics", "bleu", "--mme-dimension", "grammar",
                 "--n-boot", "100"]) == 0
    assert capsys.readouterr().err.count("--mme-dimension 'grammar' has no effect") == 1


def test_a_repeated_row_left_without_a_partner_is_still_said(tmp_path, capsys):
    """A row repeating an earlier one word for word, with no partner in the other system, was said by `score`
    and `meta-eval` but not by `compare` (its notes counted the paired rows only)."""
    rows = [{"system": s, "context": [f"topic {i}?"], "response": f"{s} reply {i}", "references": [f"ref {i}"]}
            for i in range(12) for s in ("alpha", "beta")]
    rows.append(dict(rows[6]))  # alpha's row for topic 3 again
    path = tmp_path / "dup.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["compare", str(path), "--metrics", "bleu", "--no-judge", "--n-boot", "100", "--n-perm", "50"]) == 0
    out, err = capsys.readouterr()
    assert "1 of 25 rows repeat an earlier row of their system word for word" in out + err
