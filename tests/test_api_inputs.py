"""The Python API reads lists, tuples, numpy arrays and pandas Series the same way (by position), refuses
Series whose indexes disagree, and names the argument and index of a wrong item (issue 21)."""
import json
import math
import re
import warnings

import numpy as np
import pandas as pd
import pytest

import core

RESPONSES = ["sure, see you then", "no idea what you mean", "i like green tea"]
CONTEXTS = [["lunch tomorrow?"], ["what is the capital of france?"], ["what do you drink in the morning?"]]
REFERENCES = [["ok, see you tomorrow"], ["paris, i think"], ["green tea with honey"]]


def bleu(*args, **kw):
    return core.score(*args, metrics="bleu", **kw)["bleu"]


def test_lists_tuples_arrays_and_series_give_the_same_scores():
    want = bleu(RESPONSES, contexts=CONTEXTS, references=REFERENCES)
    assert np.isfinite(want).all() and len(set(want.round(6))) == 3
    np.testing.assert_array_equal(bleu(tuple(RESPONSES), contexts=tuple(CONTEXTS), references=tuple(REFERENCES)), want)
    np.testing.assert_array_equal(bleu(np.array(RESPONSES), contexts=np.array(CONTEXTS, dtype=object),
                                       references=np.array(REFERENCES)), want)
    df = pd.DataFrame({"r": RESPONSES, "c": CONTEXTS, "f": REFERENCES})
    np.testing.assert_array_equal(bleu(df.r, contexts=df.c, references=df.f), want)
    # the issue's case: a shared index that is not 0..n-1 (here reversed, then a filtered frame)
    rev = df.iloc[::-1].set_axis([7, 3, 5])
    np.testing.assert_array_equal(bleu(rev.r, contexts=rev.c, references=rev.f), want[::-1])
    kept = pd.concat([df, df]).reset_index(drop=True).loc[lambda d: d.index >= 3]
    np.testing.assert_array_equal(bleu(kept.r, contexts=kept.c, references=kept.f), want)


def test_series_with_different_indexes_are_refused():
    df = pd.DataFrame({"r": RESPONSES, "c": CONTEXTS, "f": REFERENCES})
    shuffled = df.f.sort_index(ascending=False)  # same labels, another order: pairing by position would mis-pair
    with pytest.raises(ValueError, match=r"responses and references are pandas Series with different indexes"):
        bleu(df.r, contexts=df.c, references=shuffled)
    with pytest.raises(ValueError, match="same length"):
        bleu(df.r[df.index > 0], contexts=df.c, references=df.f)
    # a Series beside a plain list is read by position
    np.testing.assert_array_equal(bleu(df.r.set_axis([9, 8, 7]), contexts=CONTEXTS, references=REFERENCES),
                                  bleu(RESPONSES, contexts=CONTEXTS, references=REFERENCES))


@pytest.mark.parametrize("kwargs, error, message", [
    ({"responses": "just one string"}, TypeError, "responses must be a sequence .* single string"),
    ({"responses": {"a": "x"}}, TypeError, "responses must be an ordered sequence .* dict"),
    ({"responses": {"x", "y", "z"}}, TypeError, "ordered sequence .* set"),
    ({"responses": pd.DataFrame({"r": RESPONSES})}, TypeError, r"one column"),
    ({"responses": 5}, TypeError, "responses must be a sequence"),
    ({"responses": ["a", None, "c"]}, TypeError, r"responses\[1\] must be a string, got NoneType None \(a reply left blank is \"\": counted"),
    ({"responses": pd.Series(["a", "b", math.nan], index=[10, 11, 12])}, TypeError,
     r"responses\[2\] \(index label 12\) must be a string, got float"),
    ({"contexts": [["a"], ["b", 3], ["c"]]}, TypeError, r"contexts\[1\]\[1\] must be a string, got int"),
    ({"contexts": [["a"], 4, ["c"]]}, TypeError, r"contexts\[1\] must be a string or a list of strings"),
    ({"contexts": [["a"], [" "], ["c"]]}, ValueError, r"contexts\[1\] is empty"),
    ({"references": [["a"], [3], ["c"]]}, TypeError, r"references\[1\]\[0\] must be a string, got int 3"),
    ({"metrics": ""}, ValueError, "no metric named"),
])
def test_a_wrong_item_is_named_with_its_argument_and_index(kwargs, error, message):
    args = {"responses": RESPONSES, "contexts": CONTEXTS, "references": REFERENCES, "metrics": "bleu", **kwargs}
    with pytest.raises(error, match=message):
        core.score(**args)


def test_missing_references_and_blank_responses_are_flagged_never_zero():
    refs = [["ok, see you tomorrow"], None, math.nan]  # None / NaN (a pandas gap): no reference
    with pytest.warns(UserWarning, match="2 of 3 rows have no reference"):
        out = core.score(RESPONSES, contexts=CONTEXTS, references=refs, metrics="bleu")
    assert np.isfinite(out["bleu"][0]) and np.isnan(out["bleu"][1:]).all()
    assert out["_flags"] == [[], ["no reference"], ["no reference"]]
    with pytest.warns(UserWarning, match="1 of 3 rows have a blank response"):
        out = core.score(["", *RESPONSES[1:]], contexts=CONTEXTS, references=REFERENCES, metrics="bleu")
    assert math.isnan(out["bleu"][0]) and out["_flags"][0] == ["blank response"]
    with pytest.warns(UserWarning, match="1 of 3 rows have a blank response"):  # only zero-width characters
        out = core.score(["\u200b\ufeff ", *RESPONSES[1:]], contexts=CONTEXTS, references=REFERENCES, metrics="bleu")
    assert math.isnan(out["bleu"][0]) and out["_flags"][0] == ["blank response"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing to say about clean input
        core.score(RESPONSES, contexts=CONTEXTS, references=REFERENCES, metrics="bleu")


def test_a_warning_names_the_pandas_index_label_of_the_rows_it_counts():
    """Series indexed 10, 20, 30 warned of "item 1": a position the caller never sees; the label follows it."""
    pd = pytest.importorskip("pandas")
    index = [10, 20, 30]
    resp, ctx = pd.Series(["", *RESPONSES[1:]], index=index), pd.Series(CONTEXTS, index=index)
    refs = pd.Series([REFERENCES[0], None, REFERENCES[2]], index=index)
    with pytest.warns(UserWarning, match=r"blank response \(item 0 \[index label 10\]\).*no reference \(item 1 "
                                         r"\[index label 20\]\)"):
        core.score(resp, ctx, refs, metrics="bleu")
    with pytest.warns(UserWarning, match=r"replies_a: 1 of 3 rows have a blank response \(item 0 \[index label 10\]\)"):
        v = core.compare_replies(ctx, resp, pd.Series(RESPONSES, index=index), refs, metrics="bleu", judge=False,
                                 n_boot=100, n_perm=100)
    # the verdict names those rows as the warning does: its left-out pairs by label, its drivers' ids are the labels
    assert v.left_out[0]["pairs"][0] == "A item 0 [index label 10]: blank response", v.left_out
    assert {d["id"] for row in v.to_dict()["drivers"] for d in row["top"]} <= {"10", "20", "30"}
    with pytest.warns(UserWarning):  # labels repeated: ids stay positions (they pair the rows), locations say both
        twice = core.compare_replies(ctx.set_axis([7, 7, 8]), resp.set_axis([7, 7, 8]), list(RESPONSES),
                                     metrics="bleu", judge=False, n_boot=100, n_perm=100)
    assert twice.left_out[0]["pairs"][0].startswith("A item 0 [index label 7]") and twice.n_pairs == 3
    with pytest.warns(UserWarning, match=r"blank response \(item 0\)"):  # positions that are the labels: as they are
        core.score(resp.reset_index(drop=True), ctx.reset_index(drop=True), metrics="bleu")


def test_judge_checks_its_arguments_before_loading_anything():
    with pytest.raises(TypeError, match=r"replies_b\[1\] must be a string"):
        core.judge(CONTEXTS, RESPONSES, ["a", 2, "c"])
    with pytest.raises(ValueError, match="same length"):
        core.judge(CONTEXTS, RESPONSES, RESPONSES[:2])
    with pytest.raises(TypeError, match="single string"):
        core.judge("lunch?", RESPONSES, RESPONSES)


def test_judge_refuses_an_empty_context_as_score_does():
    for empty in ([], ["  "], ""):
        with pytest.raises(ValueError, match=r"contexts\[1\] is empty"):
            core.judge([CONTEXTS[0], empty, CONTEXTS[2]], RESPONSES, RESPONSES)


def test_no_pairs_give_the_judge_s_own_empty_output_with_or_without_the_cache(monkeypatch):
    """With the score cache on, no pairs gave signature '' and tie margin 0, where cache=False gave the judge's
    signature and its tie margin: the same call, two answers."""
    monkeypatch.delenv("DIALEVAL_NO_CACHE")  # the session's own cache folder (conftest)
    cached, uncached = core.judge([], [], []), core.judge([], [], [], cache=False)
    assert cached.signature and (cached.signature, cached.tie_margin) == (uncached.signature, uncached.tie_margin)
    assert len(cached.p_a) == 0 and cached.verdict == []


def test_compare_stays_callable_after_the_verdict_module_is_imported(tmp_path):
    """``core.compare`` is the API function, not a submodule: importing the verdict module (as ``core.judge``
    and the CLI do) or calling it once must not replace it (it did while the module was ``core/compare.py``)."""
    import importlib
    importlib.import_module("core.verdict")
    path = tmp_path / "two.jsonl"
    path.write_text("".join(
        f'{{"id": "{i}", "system": "{s}", "context": ["{c[0]}"], "response": "{r}", "references": ["{ref[0]}"]}}\n'
        for s, replies in (("A", RESPONSES), ("B", RESPONSES[::-1]))
        for i, (c, r, ref) in enumerate(zip(CONTEXTS, replies, REFERENCES))), encoding="utf-8")
    first = core.compare(str(path), system_a="A", system_b="B", metrics="bleu", judge=False)
    second = core.compare(str(path), system_a="A", system_b="B", metrics="bleu", judge=False)
    assert callable(core.compare)
    assert first.metrics[0].mean_a == second.metrics[0].mean_a


def test_a_lone_surrogate_is_named_and_pandas_na_is_no_reference():
    with pytest.raises(ValueError, match=r"responses\[1\] holds a lone surrogate"):
        core.score([RESPONSES[0], "x\ud800y", RESPONSES[2]], contexts=CONTEXTS, metrics="bleu")
    with pytest.raises(ValueError, match=r"contexts\[2\]\[0\] holds a lone surrogate"):
        core.score(RESPONSES, contexts=[*CONTEXTS[:2], ["\udc00"]], metrics="bleu")
    refs = pd.Series(["ok, see you tomorrow", pd.NA, "green tea with honey"], dtype="string")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = bleu(RESPONSES, contexts=CONTEXTS, references=refs)
    assert math.isnan(out[1]) and not math.isnan(out[0])


def test_options_cache_metrics_and_missing_reference_items():
    """options may be a dict of Options' fields; a wrong options, cache or metrics argument is a TypeError that
    says what is expected (was an AttributeError deep inside); a NaN among a row's references is no reference."""
    with_dict = bleu(RESPONSES, CONTEXTS, REFERENCES, options={"pool": None})
    np.testing.assert_array_equal(with_dict, bleu(RESPONSES, CONTEXTS, REFERENCES))
    np.testing.assert_array_equal(bleu(RESPONSES, CONTEXTS, [r + [math.nan] for r in REFERENCES]), with_dict)
    for kwargs, message in ((dict(options={"poool": 1}), "unknown field(s) 'poool'"),
                            (dict(options=3), "options must be a core.scoring.Options or a dict"),
                            (dict(cache="yes"), "cache must be True"), (dict(metrics=3), "metrics must be a string")):
        with pytest.raises(TypeError, match=re.escape(message)):
            core.score(RESPONSES, CONTEXTS, REFERENCES, **{"metrics": "bleu", **kwargs})
    assert list(core.score(RESPONSES, CONTEXTS, REFERENCES, metrics="BLEU")["_signatures"]) == ["bleu"]
    # a pool no chosen metric reads: said, as the command line says it of --pool (it did nothing in silence)
    with pytest.warns(UserWarning, match="options pool='logs.jsonl' has no effect: it reaches .*ubleu"):
        core.score(RESPONSES, CONTEXTS, REFERENCES, metrics="bleu", options={"pool": "logs.jsonl"})


def test_progress_true_draws_the_command_lines_bar_and_anything_else_is_refused(capsys):
    """progress=True: the bar the command line draws, on stderr, with counts; False: silent; a callable: called
    with (done, total, description); anything else a TypeError saying what is taken (was a raw 'not callable')."""
    shown = bleu(RESPONSES, CONTEXTS, REFERENCES, progress=True)
    err = capsys.readouterr().err
    assert f"{len(RESPONSES)}/{len(RESPONSES)}" in err and "bleu" in err
    np.testing.assert_array_equal(bleu(RESPONSES, CONTEXTS, REFERENCES, progress=False), shown)
    assert capsys.readouterr().err == ""
    calls = []
    bleu(RESPONSES, CONTEXTS, REFERENCES, progress=lambda done, total, desc: calls.append((done, total)))
    assert calls and calls[-1] == (len(RESPONSES), len(RESPONSES))
    with pytest.raises(TypeError, match="progress must be True"):
        core.score(RESPONSES, CONTEXTS, REFERENCES, metrics="bleu", progress="yes")


def test_compare_replies_gives_the_verdict_compare_gives_for_the_same_rows(tmp_path, capsys):
    """Two systems' replies in memory: the same verdict as `core.compare` on two files holding those rows."""
    import json
    a = ["sure, see you then", "paris, i think", "green tea with honey", "yes", "i like dogs", "no idea"]
    b = ["no", "what?", "tea", "maybe tomorrow", "cats are fine", "ok"]
    ctx = [["lunch tomorrow?"], ["capital of france?"], ["morning drink?"], ["coming?"], ["pets?"], ["plans?"]]
    refs = [["ok, see you tomorrow"], ["paris"], ["green tea"], ["yes i am"], ["i have a dog"], ["none yet"]]
    for name, replies in (("a", a), ("b", b)):
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps({"id": str(i), "context": c, "response": r,
                                                                    "references": f}) + "\n"
                                                        for i, (c, r, f) in enumerate(zip(ctx, replies, refs))))
    kw = dict(metrics="bleu", n_boot=200, n_perm=200)
    files = core.compare(str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"), **kw, judge=False).to_dict()
    memory = core.compare_replies(ctx, a, b, refs, system_a="a", system_b="b", **kw, judge=False).to_dict()
    assert memory["sentence"] == files["sentence"] and memory["metrics"] == files["metrics"]
    from core.cli import main  # print(verdict): the lines the command prints first (it printed the dataclass)
    assert main(["compare", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"), "--metrics", "bleu", "--no-judge",
                 "--n-boot", "200", "--n-perm", "200", "--quiet"]) == 0
    said = capsys.readouterr().out
    assert str(core.compare_replies(ctx, a, b, refs, system_a="a", system_b="b", **kw, judge=False)) == \
        said.split("\n\n")[0] and said.split("\n")[1].startswith("evidence: ")
    for bad, error in ((None, TypeError), (1, TypeError), ("", ValueError), (" ", ValueError)):
        with pytest.raises(error, match="system_a is the system's name, a non-blank string"):  # 'No verdict on None'
            core.compare_replies(ctx, a, b, system_a=bad, metrics="bleu", judge=False)
    with pytest.raises(ValueError, match="must have the same length"):
        core.compare_replies(ctx, a, b[:-1], metrics="bleu", judge=False)
    with pytest.raises(ValueError, match="are empty: there is nothing to compare"):  # was a verdict of 0 pairs
        core.compare_replies([], [], [], [], metrics="bleu")
    with pytest.raises(TypeError, match="for replies held in memory use core.compare_replies"):
        core.compare(pd.DataFrame({"response": a}), judge=False)


def test_the_api_states_the_judge_at_the_level_asked_as_the_command_line_does(monkeypatch):
    """``core.compare_replies(..., judge=True, level=0.9)`` gave the judge's win rate a 95 % interval and a
    p < 0.05 threshold while the command line used 0.9 (the two one-line verdicts differed)."""
    import core.engine
    from core import stats
    from core.scoring import JudgeOutput
    from core.verdict import judge_length_controlled
    calls = ["A"] * 13 + ["B"] * 11
    p = np.array([0.9 if c == "A" else 0.1 for c in calls])
    monkeypatch.setattr(core.engine, "judge_comparison",
                        lambda comp, *args, **kw: JudgeOutput(p, p, p, calls, 0.0, 0.05, "judge:test"))
    ctx = [[f"question {i}?"] for i in range(24)]
    a, b = [f"answer {i}" for i in range(24)], [f"reply {i} " * (1 + i % 3) for i in range(24)]
    refs = [[f"answer {i} indeed"] for i in range(24)]
    v = core.compare_replies(ctx, a, b, refs, metrics="bleu", judge=True, level=0.9, n_boot=300, seed=5)
    want = stats.win_stats(13, 0, 11, 0.9)
    assert (v.judge.win.low, v.judge.win.high) == (want.low, want.high)
    assert (want.low, want.high) != (stats.win_stats(13, 0, 11, 0.95).low, stats.win_stats(13, 0, 11, 0.95).high)
    comp = core.data.align(*[[core.data.Example(str(i), s, c, r, []) for i, (c, r) in enumerate(zip(ctx, replies))]
                             for s, replies in (("A", a), ("B", b))], "A", "B")
    assert v.judge.length_controlled == judge_length_controlled(comp, calls, 0.9, n_boot=300, seed=5)
    with pytest.raises(ValueError, match="level=95"):
        core.compare_replies(ctx, a, b, refs, metrics="bleu", judge=True, level=95)


def test_no_metric_gives_peoples_verdict_on_every_surface(tmp_path):
    """``metrics=[]`` worked in ``core.compare`` but raised in ``core.compare_replies``, and the command line's
    compare refused ``--metrics none`` (the leaderboard took it): people's ratings alone make a verdict."""
    import json

    from core.cli import main
    ctx = [[f"question {i}?"] for i in range(12)]
    a, b = [f"a fine answer {i}" for i in range(12)], [f"meh {i}" for i in range(12)]
    rows = [{"id": str(i), "system": s, "context": c, "response": r, "scores": {"overall": 4.0 if s == "A" else 2.0}}
            for s, replies in (("A", a), ("B", b)) for i, (c, r) in enumerate(zip(ctx, replies))]
    path = tmp_path / "rated.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    files = core.compare(str(path), metrics=[], n_boot=200, n_perm=200, judge=False)
    assert files.sentence.startswith("A is better than B: people rate it higher on overall")
    assert main(["compare", "--no-judge", str(path), "--metrics", "none", "--n-boot", "200", "--n-perm", "200", "--quiet",
                 "--format", "json", "--out", str(tmp_path / "v.json")]) == 0
    assert json.loads((tmp_path / "v.json").read_text())["sentence"] == files.sentence
    with pytest.raises(ValueError, match="no metric named"):
        core.compare_replies(ctx, a, b, metrics="", judge=False)
    with pytest.raises(ValueError, match="leave nothing to compare"):
        core.compare_replies(ctx, a, b, metrics=[], judge=False)


def test_rank_and_meta_evaluate_give_the_command_lines_numbers(tmp_path, capsys):
    """The leaderboard and the meta-evaluation were reachable from Python only through their modules; core.rank
    and core.meta_evaluate answer as `dialeval leaderboard` and `dialeval meta-eval` do."""
    import json

    from core.cli import main
    rows = []
    for i in range(12):
        ref = f"the answer to question {i} is {i * 7}"
        for s, reply, rating in (("copy", ref + " indeed", 4.5), ("half", f"the answer is {i}", 3.0),
                                 ("none", "no idea", 1.5)):
            rows.append({"id": f"q{i}", "system": s, "context": [f"question {i}?"], "response": reply,
                         "references": [ref], "scores": {"overall": rating + (i % 3) * 0.1}})
    path = tmp_path / "three.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    board = core.rank(str(path), metrics="bleu", n_boot=200, n_perm=200, judge=False)
    assert [e.system for e in board.systems] == ["copy", "half", "none"] and board.ranked_by == "human:overall"
    from core.cache import ScoreCache  # rank takes cache= as the README says of the API (it refused it)
    store = ScoreCache(tmp_path / "s.sqlite3", max_bytes=1 << 30)
    assert core.rank(str(path), metrics="bleu", n_boot=200, n_perm=200, cache=store, judge=False).to_dict() == board.to_dict()
    assert core.rank(str(path), metrics="bleu", n_boot=200, n_perm=200, cache=False, judge=False).to_dict() == board.to_dict()
    assert store.info()["entries"] == 36  # 3 systems x 12 contexts, bleu
    assert main(["leaderboard", "--no-judge", str(path), "--metrics", "bleu", "--n-boot", "200", "--n-perm", "200", "--quiet",
                 "--format", "json"]) == 0
    cli_board = json.loads(capsys.readouterr().out)
    from core.report import to_json  # the command line's JSON (12 significant digits)
    assert cli_board["systems"] == json.loads(to_json(board.to_dict()))["systems"]
    # to_dict() is the command's JSON data, its notes included, and plain JSON (it held NaN and no notes)
    assert cli_board == board.to_dict() and cli_board["notes"] and json.dumps(board.to_dict(), allow_nan=False)
    with pytest.raises(ValueError, match="'copy' more than once"):  # it stopped with KeyError: 'unscored'
        core.rank(str(path), systems=["copy", "copy", "half"], metrics="bleu", judge=False)
    with pytest.raises(ValueError, match="name one or more systems"):  # it ranked every system
        core.rank(str(path), systems=[], metrics="bleu", judge=False)
    assert main(["leaderboard", "--no-judge", str(path), "--metrics", "bleu", "--n-boot", "200", "--n-perm", "200",
                 "--quiet", "--format", "markdown"]) == 0
    assert board.render("markdown") == capsys.readouterr().out.rstrip("\n")  # print(board) needed the module's renderer
    norefs = tmp_path / "norefs.jsonl"  # the command warns of rows without references; the API said nothing
    norefs.write_text("".join(json.dumps({**r, "references": []}) + "\n" for r in rows))
    with pytest.warns(UserWarning, match="36 of 36 rows have no reference"):
        core.meta_evaluate(str(norefs), metrics="bleu", n_boot=200)
    rows = core.meta_evaluate(str(path), metrics="bleu", n_boot=200)
    assert main(["meta-eval", str(path), "--metrics", "bleu", "--n-boot", "200", "--quiet", "--format", "json"]) == 0
    cli_rows = json.loads(capsys.readouterr().out)
    cli_rows = cli_rows["rows"] if isinstance(cli_rows, dict) else cli_rows
    got = {(r["dimension"], r["level"]): r["spearman"] for r in json.loads(to_json(rows))}
    assert got and got == {(r["dimension"], r["level"]): r["spearman"] for r in cli_rows}
    assert rows == cli_rows  # the command's JSON data, None where a number does not exist
    # one name as a string, as --dimension takes it (it was read letter by letter: "none of ['o', 'v', ...]")
    one = core.meta_evaluate(str(path), metrics="bleu", n_boot=200, dims="overall", methods="spearman")
    assert {r["dimension"] for r in one} == {"overall"} and "spearman" in one[0] and "pearson" not in one[0]
    with pytest.raises(ValueError, match="no file has that human dimension"):
        core.meta_evaluate(str(path), metrics="bleu", level="system", dims="fluency", judge=False)
    with pytest.raises(TypeError, match="needs one or more files' paths"):
        core.rank()
    # progress=True drew a bar at the system level but failed inside BLEU at the turn level ('bool' object is not
    # callable); a mistyped setting failed deep in core.meta_eval, the dimension's name unsaid
    assert core.meta_evaluate(str(path), metrics="bleu", n_boot=200, progress=True) == rows
    assert "bleu" in capsys.readouterr().err
    with pytest.raises(TypeError, match="'nboot'; its settings are methods, n_boot"):
        core.meta_evaluate(str(path), metrics="bleu", nboot=200)
    for level in ("turn", "system"):
        with pytest.raises(TypeError, match=r"'dimension' \(the human dimension is dims=\)"):
            core.meta_evaluate(str(path), metrics="bleu", level=level, dimension="overall", judge=False)


def test_the_api_refuses_bad_settings_before_it_scores(tmp_path):
    """core.rank / core.compare with n_boot=10, a mistyped keyword or systems="name" failed only after scoring
    (minutes with MME), or read the name letter by letter; "none" is no metric, as on the command line."""
    import json
    path = tmp_path / "three.jsonl"
    path.write_text("".join(json.dumps({"id": str(i), "system": s, "context": [f"q {i}?"], "response": f"{s} {i}",
                                        "scores": {"overall": 3.0 + (s == "a")}}) + "\n"
                            for i in range(6) for s in "abc"))
    for call, match in ((lambda: core.rank(str(path), metrics="bleu", n_boot=10, judge=False), "n_boot=10"),
                        (lambda: core.rank(str(path), systems="a", judge=False), r"systems is a list of names.*\['a'\]"),
                        (lambda: core.compare(str(path), system_a="a", system_b="b", levl=0.9, judge=False), "'levl'"),
                        (lambda: core.compare_replies([["hi"]], ["x"], ["y"], metrics="bleu", seed=-1, judge=False), "seed=-1"),
                        (lambda: core.rank(str(path), metrics="bleu", human="no", judge=False), "human must be True")):
        with pytest.raises((TypeError, ValueError), match=match):
            call()
    board = core.rank(str(path), metrics="none", n_boot=200, n_perm=200, judge=False)
    assert board.metrics == [] and board.ranked_by == "human:overall" and board.systems[0].system == "a"


def test_compare_and_rank_warn_about_the_input_as_the_command_line_does(tmp_path):
    import json
    """core.compare and core.rank said nothing of a blank reply or a row without a reference (the CLI warns);
    compare_replies said "item 3" without saying of which argument."""
    rows = [{"id": i, "system": s, "context": [f"question {i}?"],
             "response": "  " if (s, i) == ("a", 2) else f"{s} {i}", "references": [] if i == 3 else [f"answer {i}"]}
            for s in ("a", "b") for i in range(6)]
    path = tmp_path / "two.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    for call in (lambda: core.compare(str(path), metrics="bleu", n_boot=200, n_perm=200, judge=False),
                 lambda: core.rank(str(path), metrics="bleu", n_boot=200, n_perm=200, judge=False)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call()
        said = " ".join(str(w.message) for w in caught)
        assert "have a blank response (two.jsonl row 3)" in said and "have no reference (two.jsonl row 4" in said
        assert {w.filename for w in caught} == {__file__}  # the caller's line, however deep the note was made
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        core.compare_replies([["hi"], ["yo"]], ["hello", " "], ["hey", "sup"], [["hello there"]] * 2, metrics="bleu",
                             n_boot=200, n_perm=200, judge=False)
    assert "replies_a: 1 of 2 rows have a blank response (item 1)" in " ".join(str(w.message) for w in caught)


def test_a_judge_checkpoint_goes_with_the_learned_judge_only_in_the_api_too():
    """compare/compare_replies/rank take checkpoint= as the command line takes --checkpoint; with no judge or
    another judge it is refused before anything loads."""
    for kwargs in (dict(judge=False), dict(judge="llm")):
        with pytest.raises(ValueError, match="names the learned judge's checkpoint"):
            core.compare_replies(CONTEXTS, RESPONSES, RESPONSES[::-1], metrics="bleu", checkpoint="mine", **kwargs)


def test_a_warning_about_the_input_points_at_the_callers_line():
    """The API's warnings name the line that called it (the wrapper that silences the libraries' bars is one
    frame more)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        core.score(["", *RESPONSES[1:]], contexts=CONTEXTS, references=REFERENCES, metrics="bleu")
    assert [w.filename for w in caught] == [__file__]


def test_model_loading_turns_the_libraries_bars_off_only_when_asked_and_restores_them():
    """Inside library_bars(False) a model's load draws no transformers, hub or GGUF-reader bar; after it, and
    elsewhere, each is as it was (the API's silent calls: core.progress.model_loading)."""
    import transformers.modeling_gguf_pytorch_utils as gguf_reader
    from huggingface_hub.utils import are_progress_bars_disabled
    from transformers.utils import logging as transformers_logging

    from core.progress import library_bars, model_loading
    before = (transformers_logging.is_progress_bar_enabled(), are_progress_bars_disabled(), gguf_reader.tqdm)
    with model_loading():
        assert transformers_logging.is_progress_bar_enabled() == before[0] and gguf_reader.tqdm is before[2]
    with library_bars(False), model_loading():
        assert not transformers_logging.is_progress_bar_enabled() and are_progress_bars_disabled()
        assert gguf_reader.tqdm(range(3)).disable
    assert (transformers_logging.is_progress_bar_enabled(), are_progress_bars_disabled(), gguf_reader.tqdm) == before


def test_silent_loads_in_two_threads_that_end_out_of_order_restore_the_bars():
    """Two sessions' silent loads overlapping, the first in leaving first, left the GGUF reader's bar off for the
    life of the process (each restored what it had seen)."""
    import threading

    import transformers.modeling_gguf_pytorch_utils as gguf_reader
    from transformers.utils import logging as transformers_logging

    from core.progress import library_bars, model_loading
    before = (transformers_logging.is_progress_bar_enabled(), gguf_reader.tqdm)
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    while_second_loads = []

    def first():
        with library_bars(False), model_loading():
            first_in.set()
            second_in.wait(10)
        first_out.set()

    def second():
        first_in.wait(10)
        with library_bars(False), model_loading():
            second_in.set()
            first_out.wait(10)
            while_second_loads.append(transformers_logging.is_progress_bar_enabled())
    threads = [threading.Thread(target=f) for f in (first, second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert while_second_loads == [False]  # still off after the first left: the second was still loading
    assert (transformers_logging.is_progress_bar_enabled(), gguf_reader.tqdm) == before


@pytest.mark.slow
def test_the_api_called_silently_draws_no_loading_bar(tmp_path):
    """A first call of core.score with a model (a fresh cache folder) drew transformers' "Loading weights" bars on
    stderr though progress was off; progress=True draws them with the engine's bar, as the command line does."""
    import os
    import subprocess
    import sys
    call = ("import core; core.score(['i like dogs.'], [['do you have pets?']], metrics='bert_ruber', "
            "progress={})")
    env = {**os.environ, "DIALEVAL_CACHE": str(tmp_path / "cache")}
    for name in ("TQDM_DISABLE", "HF_HUB_DISABLE_PROGRESS_BARS", "TRANSFORMERS_VERBOSITY"):  # what --quiet sets in
        env.pop(name, None)  # this process (an earlier test's command) would silence the child whatever it asks
    silent, shown = (subprocess.run([sys.executable, "-c", call.format(p)], capture_output=True, text=True, env=env,
                                    timeout=600) for p in ("False", "True"))
    assert silent.returncode == 0 and shown.returncode == 0, silent.stderr + shown.stderr
    assert silent.stderr == ""
    assert "Loading weights" in shown.stderr and "bert_ruber" in shown.stderr


def test_a_csv_s_columns_are_mapped_in_the_api_as_on_the_command_line_and_a_one_system_csv_says_how(tmp_path, capsys):
    """core.compare/gate/rank had no way to map a CSV's columns (TypeError on columns=); a CSV whose system column
    was not mapped read as one system with no word of the column that holds it."""
    from core.cli import main
    path = tmp_path / "both.csv"
    path.write_text("turn_id,bot,history,reply,gold\n" + "".join(
        f"{i},{s},question {i}?,{s} says {i},answer {i}\n" for i in range(6) for s in ("a", "b")))
    columns = {"id": "turn_id", "system": "bot", "context": "history", "response": "reply", "references": "gold"}
    fast = {"metrics": "bleu", "judge": False, "n_boot": 200, "n_perm": 200}
    verdict = core.compare(str(path), columns=columns, **fast)
    assert main(["compare", str(path), "--columns", ",".join(f"{k}={v}" for k, v in columns.items()),
                 "--metrics", "bleu", "--no-judge", "--n-boot", "200", "--n-perm", "200", "--quiet"]) == 0
    assert capsys.readouterr().out.startswith(verdict.sentence.split(":")[0])
    with pytest.warns(UserWarning, match="the baseline is a, the candidate b"):  # one file: which is which, said
        assert core.gate(str(path), columns=columns, **fast).verdict.sentence == verdict.sentence
    assert [s.system for s in core.rank(str(path), columns=columns, metrics="bleu", judge=False).systems] != []
    with pytest.raises(TypeError, match="columns: unknown field"):
        core.compare(str(path), columns={"sytem": "bot"}, **fast)
    aliased = {**{k: v for k, v in columns.items() if k != "references"}, "reference": "gold"}  # --columns' alias
    assert core.compare(str(path), columns=aliased, **fast).sentence == verdict.sentence
    assert str(core.rank(str(path), columns=columns, metrics="bleu", judge=False)).startswith("2 systems on 6 shared")
    with pytest.raises(ValueError, match=r"map it with --columns system=COLUMN .*its columns: turn_id, bot, history"):
        core.compare(str(path), columns={"context": "history", "response": "reply"}, **fast)


def test_compare_replies_notes_name_the_system_whose_item_it_is():
    """Rows handed over in memory are items of a list: the verdict's notes say whose (both sides' 'item 2' were
    listed together, so a user could not tell which reply to look at); a note both sides give alike, once."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        v = core.compare_replies([["hi"], ["yo"], ["hey"]] * 3, ["nan", "ok", "", "a", "b", "c", "d", "e", "f"],
                                 ["x", "N/A", "y", "z", "w", "q", "r", "s", "t"], references=[["hello"]] * 8 + [[]],
                                 metrics="bleu", judge=False, system_a="v1", system_b="v2")
    assert v.input_notes["blank response"].startswith("v1: 1 of 9 rows have a blank response (item 2)")
    missing = v.input_notes["missing-value text"]
    assert missing.startswith("v1: 1 of 9 rows") and "item 0" in missing and "; v2: 1 of 9 rows" in missing
    assert v.input_notes["no reference"].startswith("1 of 9 rows have no reference (item 8)")  # shared: said once


def test_results_echo_briefly_in_a_notebook_and_the_judge_s_output_is_json_data():
    """A notebook cell ending in core.compare(...) echoed the dataclass's 6,000-13,000 characters; json.dumps of
    core.judge(...) raised 'Object of type JudgeOutput is not JSON serializable'."""
    import json
    contexts = [[f"how was day {i}?"] for i in range(12)]
    a = [f"day {i} was fine, thanks for asking" for i in range(12)]
    b = [f"it was good {i}" for i in range(12)]
    refs = [[f"day {i} was good"] for i in range(12)]
    v = core.compare_replies(contexts, a, b, refs, metrics="bleu", judge=False, n_boot=200, n_perm=200)
    text = repr(v)
    assert text.startswith("<Verdict 'A' vs 'B', 12 pairs: ") and len(text) < 400 and text.endswith(">")
    from core.scoring import JudgeOutput
    out = JudgeOutput.from_probabilities([0.9, 0.2], [0.8, 0.3], [1.0, 0.1], 0.05, "judge:x")
    assert json.loads(json.dumps(out.to_dict()))["verdict"] == ["A", "B"]
    from core.gating import gate_verdict
    gated = repr(gate_verdict(v, by="bleu"))
    assert gated.startswith("<GateResult ") and "check(s)" in gated and len(gated) < 200


def test_a_system_name_that_is_not_a_string_is_named_in_the_error():
    """core.score(..., system=3) failed with "normalize() argument 2 must be str, not int"."""
    with pytest.raises(TypeError, match="system must be a string .*got int 3"):
        core.score(["ok"], [["hi"]], metrics="bleu", system=3)


def test_settings_the_command_line_checks_or_warns_of_are_checked_or_warned_of_in_python_too(tmp_path):
    """An audit of the API found them taken silently (or failing deep inside): options of the wrong type, a margin
    a not-worse gate never reads, a criterion that is not a name, the judge's blank and long replies, a judge
    setting of 'no' that ran the judge."""
    from core.metrics.crs import dimension_note
    for bad, match in (({"dimension": 3}, "dimension is a name"), ({"pool": ["a"]}, "pool is a file's path"),
                       ({"retriever": 1}, "retriever is a name")):
        with pytest.raises(TypeError, match=match):
            core.score(RESPONSES, CONTEXTS, REFERENCES, metrics="bleu", options=bad)
    assert core.score(RESPONSES, CONTEXTS, REFERENCES, metrics="bleu", options={"device": None})["bleu"].size == 3
    assert "is not a dimension MME-CRS has weights for" in dimension_note("nope", "options dimension")
    assert "is read as 'engagement'" in dimension_note("engagingnes", "--mme-dimension")
    assert dimension_note("Overall", "--mme-dimension") is None
    path = tmp_path / "two.jsonl"
    path.write_text("".join(json.dumps({"id": str(i), "system": s, "context": c, "response": f"{r} {s}",
                                        "references": ref}) + "\n"
                            for i, (c, r, ref) in enumerate(zip(CONTEXTS, RESPONSES, REFERENCES)) for s in ("x", "y")))
    with pytest.warns(UserWarning, match="margin=0.5 has no effect: it is the non-inferiority margin"):
        core.gate(str(path), system_a="x", system_b="y", metrics="bleu", judge=False, margin=0.5, n_boot=100,
                  n_perm=100)
    with pytest.raises(TypeError, match="by=5: a criterion's name"):
        core.gate(str(path), system_a="x", system_b="y", metrics="bleu", judge=False, by=5)
    for margin in (math.inf, True):
        with pytest.raises(ValueError, match="a finite number >= 0"):
            core.gate(str(path), system_a="x", system_b="y", metrics="bleu", judge=False, margin=margin,
                      require="non-inferior")
    with pytest.raises(TypeError, match="judge='no': True"):
        core.meta_evaluate(str(path), metrics="bleu", level="system", judge="no")
    with pytest.raises(ValueError, match="did you mean bleu"):  # an unknown name is a bad value too
        core.score(RESPONSES, CONTEXTS, metrics="blue")


def test_a_context_of_chat_messages_reads_as_its_turns_as_a_file_reads_it():
    """A context as chat messages ({role, content}) was refused ('contexts[0][0] must be a string') though a
    file's context of the same messages is read (docs/inputs.md); the system prompt is no turn."""
    chat = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "lunch tomorrow?"}]
    got = core.score(RESPONSES[:1], [chat], REFERENCES[:1], metrics="bleu")
    assert got["bleu"].tolist() == core.score(RESPONSES[:1], [["lunch tomorrow?"]], REFERENCES[:1],
                                              metrics="bleu")["bleu"].tolist()
    with pytest.raises(TypeError, match=r"must be a string"):  # a dict that is no chat message stays refused
        core.score(RESPONSES[:1], [[{"text": "lunch?"}]], metrics="bleu")


def test_meta_evaluate_maps_a_csv_s_columns_as_meta_eval_does(tmp_path, capsys):
    """meta_evaluate took no columns= (a TypeError naming its settings), where `meta-eval` takes --columns and
    --score-columns."""
    from core.cli import main
    path = tmp_path / "rated.csv"
    path.write_text("bot,history,reply,gold,q\n" + "".join(
        f"{s},question {i}?,{ {'a': f'the answer is {i}', 'b': f'answer {i} maybe', 'c': 'hmm'}[s]},the answer is {i} i think,"
        f"{ {'a': 3, 'b': 2, 'c': 1}[s] + i % 2}\n" for i in range(8) for s in ("a", "b", "c")))
    columns = {"system": "bot", "context": "history", "response": "reply", "references": "gold", "scores": "q"}
    rows = core.meta_evaluate(str(path), metrics="bleu", columns=columns, n_boot=100)
    assert main(["meta-eval", str(path), "--columns", "system=bot,context=history,response=reply,references=gold",
                 "--score-columns", "q", "--metrics", "bleu", "--n-boot", "100", "--format", "json", "--quiet"]) == 0
    cli = json.loads(capsys.readouterr().out)
    cli = cli["rows"] if isinstance(cli, dict) else cli
    key = ("metric", "dataset", "dimension", "level", "spearman")
    assert rows and [tuple(r.get(k) for k in key) for r in rows] == [tuple(r.get(k) for k in key) for r in cli]
    assert any(r["rows"] == 24 and r.get("spearman") is not None for r in rows), rows  # every row read, rated
