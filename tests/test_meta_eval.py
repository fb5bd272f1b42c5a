"""core.meta_eval on small slices of the real human-rated sets (read in place from ../shared/data)."""
import csv
import io
import json
import math

import numpy as np
import pytest
from scipy import stats as sps

from core import meta_eval
from core.cli import main as cli
from core.data import Example, load_jsonl
from core.engine import is_reference_copy
from core.scoring import Metric, MetricResult, Signature
from core.verdict import context_groups


def _usr_slice(shared, n_ctx=20):
    exs = load_jsonl(shared("eval/usr-topical.jsonl"))
    groups = context_groups(exs)
    keys = set(list(dict.fromkeys(groups))[:n_ctx])
    return [e for e, g in zip(exs, groups) if g in keys]


class _Oracle(Metric):
    """Test double for a learned metric: 'trained' on every dataset it was not held out from, it
    returns the human Overall score (a perfect but leaked fit); held out, it returns seeded noise."""

    name = "oracle-test"

    def __init__(self, held_out_from=None):
        super().__init__()
        self.held_out_from = held_out_from
        self.calls = []

    def held_out_for(self, dataset):
        self.calls.append(dataset)
        return _Oracle(held_out_from=dataset)

    def compute(self, examples, progress=None):
        if self.held_out_from is not None:
            scores = np.random.default_rng(0).normal(size=len(examples))
        else:
            scores = [e.scores["Overall"] for e in examples]
        return MetricResult(self.name, np.asarray(scores), self.signature())

    def signature(self):
        return Signature(self.name, variant=f"held-out:{self.held_out_from}")


class _Broken(Metric):
    name = "broken-test"

    def compute(self, examples, progress=None):
        raise RuntimeError("model file missing")

    def signature(self):
        return Signature(self.name)


def test_meta_evaluate_bleu_on_real_slice(shared):
    exs = _usr_slice(shared, 20)
    rows = meta_eval.meta_evaluate(exs, ["bleu"], n_boot=300)
    turn = {r["dimension"]: r for r in rows if r["level"] == "turn"}
    assert set(turn) == {"Understandable", "Natural", "Maintains Context", "Engaging", "Uses Knowledge", "Overall"}
    ov = turn["Overall"]
    copies = sum(is_reference_copy(e) for e in exs)
    assert copies >= 20  # the "Original Ground Truth" system copies the reference
    assert ov["n"] == len(exs) - copies and ov["n_reference_copies"] == copies
    assert ov["resampled"] == "contexts" and ov["n_contexts"] == 20 and ov["p_method"] == "bootstrap"
    # the point estimate is the plain correlation on the kept rows
    from core.engine import score_examples
    kept = [e for e in exs if not is_reference_copy(e)]
    bleu = score_examples(kept, ["bleu"]).column("bleu")
    human = [e.scores["Overall"] for e in kept]
    assert ov["spearman"] == pytest.approx(sps.spearmanr(bleu, human).statistic)
    assert ov["kendall"] == pytest.approx(sps.kendalltau(bleu, human).statistic)
    for m in ("spearman", "pearson", "kendall"):
        assert ov[f"{m}_low"] <= ov[m] <= ov[f"{m}_high"]
    sysrows = [r for r in rows if r["level"] == "system"]
    assert sysrows and all(r["n"] == 5 and "fragile" in r["warning"] for r in sysrows)
    # keeping the copies inflates BLEU's correlation (they score 100 and are rated well)
    rows_k = meta_eval.meta_evaluate(exs, ["bleu"], dims=["Overall"], n_boot=100, system_level=False,
                                     keep_reference_copies=True)
    assert rows_k[0]["n"] == len(exs) and rows_k[0]["spearman"] > ov["spearman"]
    # the same call, the same rows: nothing in them depends on the clock (they carried the seconds scoring took)
    assert meta_eval.meta_evaluate(exs, ["bleu"], dims=["Overall"], n_boot=100, system_level=False,
                                   keep_reference_copies=True) == rows_k


def test_rows_where_metric_cannot_apply_are_counted(shared):
    exs = load_jsonl(shared("eval/fed-turn.jsonl"))[:60]  # no references: BLEU is NaN
    rows = meta_eval.meta_evaluate(exs, ["bleu"], dims=["Overall"], n_boot=100)
    assert len(rows) == 1  # no system-level row without data
    assert rows[0]["n"] == 0 and rows[0]["n_excluded"] == 60 and math.isnan(rows[0]["spearman"])


def test_learned_metric_is_evaluated_leave_one_dataset_out(shared):
    exs = _usr_slice(shared, 10)
    oracle = _Oracle()
    rows = meta_eval.meta_evaluate(exs, [oracle], dims=["Overall"], n_boot=100, system_level=False)
    assert oracle.calls == ["usr-topical"]
    assert rows[0]["protocol"] == meta_eval.LODO and "held-out:usr-topical" in rows[0]["signature"]
    assert abs(rows[0]["spearman"]) < 0.4  # noise, not the leaked perfect fit
    rows = meta_eval.meta_evaluate(exs, [oracle], dims=["Overall"], n_boot=100, system_level=False,
                                   held_out=False)
    assert rows[0]["protocol"] == meta_eval.AS_SHIPPED and rows[0]["spearman"] == pytest.approx(1.0)


def test_failing_metric_is_reported_not_fatal(shared):
    exs = _usr_slice(shared, 5)
    with pytest.raises(RuntimeError):
        meta_eval.meta_evaluate(exs, [_Broken()], n_boot=100)
    rows = meta_eval.meta_evaluate(exs, [_Broken(), "bleu"], dims=["Overall"], n_boot=100, on_error="record",
                                   system_level=False)
    assert rows[0]["metric"] == "broken-test" and "model file missing" in rows[0]["error"]
    assert rows[1]["metric"] == "bleu" and rows[1]["n"] > 0
    s = {r["metric"]: r for r in meta_eval.summarize(rows)}
    assert s["broken-test"]["failed"] == 1 and s["bleu"]["cells"] == 1
    assert "FAILED" in meta_eval.format_rows(rows, "markdown")


def test_cli_formats(tmp_path, capsys, shared):
    path = shared("eval/usr-topical.jsonl")
    out = tmp_path / "m.json"
    rc = cli(["meta-eval", str(path), "--metrics", "bleu", "--dimension", "Overall,Engaging", "--format", "json",
                         "--n-boot", "100", "--max-rows", "60", "--out", str(out), "--quiet"])
    assert rc == 0
    rows = json.loads(out.read_text())
    assert {r["dimension"] for r in rows} == {"Overall", "Engaging"}
    assert all(r["rows"] == 60 for r in rows)  # 10 whole contexts of 6 systems
    rc = cli(["meta-eval", str(path), "--metrics", "bleu", "--dimension", "Overall", "--format", "csv",
                         "--n-boot", "100", "--max-rows", "60", "--quiet", "--no-system-level"])
    rec = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    want = next(r for r in rows if r["dimension"] == "Overall" and r["level"] == "turn")
    assert rc == 0 and len(rec) == 1 and float(rec[0]["spearman"]) == pytest.approx(want["spearman"])
    assert cli(["meta-eval", str(path), "--metrics", "bleu", "--dimension", "nope", "--quiet"]) == 2


def test_a_correlation_that_cannot_be_computed_says_why():
    from core.meta_eval import format_rows, no_correlation_reason
    assert no_correlation_reason(np.array([1.0, 2.0]), np.array([3.0, 4.0])).startswith("2 rows with both")
    assert "every rating is the same" in no_correlation_reason(np.array([1.0, 2.0, 3.0]), np.array([3.0] * 3))
    assert "same score" in no_correlation_reason(np.array([1.0] * 3), np.array([1.0, 2.0, 3.0]))
    assert no_correlation_reason(np.array([1.0, 2.0, 3.0]), np.array([1.0, 3.0, 2.0])) is None
    exs = [Example(str(i), "s", [f"question {i}?"], f"answer {i}", [f"reply {i}"], {"overall": 3.0}) for i in range(4)]
    rows = meta_eval.meta_evaluate(exs, ["bleu"], n_boot=100, system_level=False)
    assert rows[0]["spearman"] is None or np.isnan(rows[0]["spearman"])
    assert "every rating is the same" in format_rows(rows, "text")


def test_the_dashboards_system_level_correlation_is_meta_evals(shared):
    """One file, one answer: the Correlation page's system-level row equals `dialeval meta-eval`'s (it kept
    the reference copies, a whole system of them on usr-topical, and resampled rows instead of contexts:
    r 0.886 over 6 systems on the page, 0.600 over 5 in meta-eval)."""
    from dashboard.correlations import correlation_rows, system_correlations
    from core.data import align
    from core.engine import comparison_scores, score_examples
    exs = load_jsonl(shared("eval/usr-topical.jsonl"))
    table = score_examples(exs, ["bleu"])
    page = {r["dimension"]: r for r in system_correlations(table, ["bleu"])}
    rows = [r for r in meta_eval.meta_evaluate(exs, ["bleu"], methods=["spearman"], n_boot=1000)
            if r["level"] == "system"]
    assert len(rows) == len(page) == 6
    for r in rows:
        got = page[r["dimension"]]
        assert (got["r"], got["low"], got["high"], got["p"], got["systems"]) == \
            (r["spearman"], r["spearman_low"], r["spearman_high"], r["spearman_p"], r["n"]) and got["systems"] == 5
        assert got["systems left out (every reply a reference)"] == "Original Ground Truth"
    # turn level over two systems' rows: meta-eval on those rows gives the page's numbers
    a, b = ([e for e in exs if e.system == s] for s in ("Original Ground Truth", "Argmax Decoding"))
    comp = align(a, b)
    cs = comparison_scores(comp, {"bleu": score_examples(comp.examples(), ["bleu"]).results["bleu"]})
    turn = {r["dimension"]: r for r in correlation_rows(cs, ("spearman",))}
    two = [r for r in meta_eval.meta_evaluate(comp.examples(), ["bleu"], methods=["spearman"], n_boot=1000,
                                              system_level=False)]
    for r in two:
        got = turn[r["dimension"]]
        assert (got["spearman"], got["spearman low"], got["spearman high"], got["n"]) == \
            (r["spearman"], r["spearman_low"], r["spearman_high"], r["n"])
        assert got["reference copies left out"] == r["n_reference_copies"] == 60


def test_notes_describe_the_rows_scored_and_two_systems_say_why_there_is_no_system_level(tmp_path, capsys):
    """With --max-rows the notes counted the whole file (136 of 360 rows ...), with --keep-reference-copies the
    copy note said meta-eval leaves them out, and two systems had no system-level row without a word."""
    import re
    rows = []
    for i in range(30):
        ref = f"the answer to question number {i} is here"
        for s, reply in (("copy", ref if i % 2 else f"answer {i} maybe"), ("other", "word " * 30 + str(i))):
            rows.append({"id": f"q{i}", "system": s, "context": [f"question {i}?"], "response": reply,
                         "references": [ref], "scores": {"overall": 4.0 if s == "copy" else 1.0 + i % 3}})
    path = tmp_path / "two.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert cli(["meta-eval", str(path), "--metrics", "ruber", "--max-rows", "20", "--quiet", "--n-boot", "200"]) == 0
    err = capsys.readouterr().err
    k, n = map(int, re.search(r"(\d+) of (\d+) rows have a response of more than 24 words", err).groups())
    assert k == 10 and 10 < n < 20  # the 10 "other" rows of the 10 contexts kept, less the copies: not 60
    assert "2 system(s), so no system-level correlation (it needs 3 or more" in err
    assert "reply with their own reference" not in err  # left out, so not in the rows scored
    assert cli(["meta-eval", str(path), "--metrics", "ruber", "--max-rows", "20", "--quiet", "--n-boot", "200",
                "--keep-reference-copies"]) == 0
    err = capsys.readouterr().err
    assert re.search(r"\d+ of 20 rows reply with their own reference", err) and "unless --keep-reference-copies" in err


def test_meta_eval_without_metrics_uses_the_default_metrics_on_every_surface(monkeypatch, tmp_path):
    """README: the default metrics everywhere are bleu, ubleu, bert_ruber, mme; meta-eval (CLI and API) used only
    bleu and ubleu."""
    import core
    from core.cli import build_parser
    from core.engine import DEFAULT_METRICS
    args = build_parser().parse_args(["meta-eval", "rated.jsonl"])
    assert [getattr(m, "name", m) for m in args.metrics] == list(DEFAULT_METRICS)
    seen = {}
    monkeypatch.setattr(meta_eval, "meta_evaluate", lambda paths, metrics, *a, **k: seen.setdefault("m", metrics))
    rated = tmp_path / "rated.jsonl"
    rated.write_text(json.dumps({"id": "1", "system": "s", "context": ["hi"], "response": "hello",
                                 "scores": {"overall": 3}}) + "\n")
    with pytest.warns(UserWarning, match="1 of 1 rows have no reference"):  # said as the command says it
        core.meta_evaluate(str(rated))
    assert [getattr(m, "name", m) for m in seen["m"]] == list(DEFAULT_METRICS)


def test_the_interval_level_is_named_and_a_set_in_two_files_is_not_counted_twice(tmp_path, capsys):
    """--level 0.9 printed "Spearman [95% CI]"; the same rows in two files of one data set were merged and counted
    twice (one file refuses a repeated id); the API skipped a dimension the data lacks where the command refuses."""
    import core
    rows = [{"id": f"q{i}", "system": s, "dataset": "set", "context": [f"question {i}?"],
             "response": f"{s} answer number {i} " + "word " * (i % 5), "references": [f"the answer {i}"],
             "scores": {"overall": float((i * 7 + len(s)) % 5)}} for i in range(12) for s in ("a", "b", "c")]
    path = tmp_path / "set.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert cli(["meta-eval", str(path), "--metrics", "bleu", "--level", "0.9", "--n-boot", "200", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "Spearman [90% CI]" in out and "95%" not in out
    data = meta_eval.meta_evaluate([str(path)], ["bleu"], n_boot=200, level=0.9)
    assert {(r["ci_level"], r["n_boot"]) for r in data if r["level"] == "turn"} == {(0.9, 200)}
    again = tmp_path / "again.jsonl"
    again.write_text("".join(json.dumps(r) + "\n" for r in rows if r["system"] == "a"))
    assert cli(["meta-eval", str(path), str(again), "--metrics", "bleu", "--n-boot", "200", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "id 'q0' of system 'a' in data set 'set' is also set.jsonl row 1" in err
    assert cli(["meta-eval", str(path), str(path), "--metrics", "bleu", "--n-boot", "200", "--quiet"]) == 2
    err = capsys.readouterr().err  # one line, not one per row (360 for usr-topical named twice)
    assert "set.jsonl: named 2 times: each input file once" in err and len(err.splitlines()) == 2
    with pytest.raises(ValueError, match=r"\['fluency'\] not in the data; dimensions are \['overall'\]"):
        core.meta_evaluate(str(path), metrics="bleu", dims=["overall", "fluency"], n_boot=200)


def test_the_dashboard_correlates_mme_per_dimension_as_meta_eval_does():
    """The Correlation page correlated MME-CRS's overall score with engagement (Spearman 0.648 on the shipped
    rated sample) where `dialeval meta-eval` correlates the engagement-weighted one (0.069): one file, two
    answers. Both now read ``Metric.scores_for_dimension``; the rows here are made up, no model runs."""
    from core.data import Example, align
    from core.engine import comparison_scores
    from core.scoring import MetricResult, get_metric
    from dashboard.correlations import correlation_rows, dimension_column, weighed_per_dimension
    rng = np.random.default_rng(3)
    mme = get_metric("mme")
    n = 12
    a = [Example(f"c{i}", "a", [f"question {i}?"], f"answer {i}", [], {"engagement": float(rng.integers(1, 4))})
         for i in range(n)]
    b = [Example(f"c{i}", "b", [f"question {i}?"], f"reply {i}", [], {"engagement": float(rng.integers(1, 4))})
         for i in range(n)]
    comp = align(a, b)
    details = [{"sub_scores": {k: float(rng.normal()) for k in mme.subs}} for _ in range(2 * n)]
    overall = rng.normal(size=2 * n)  # not the sub-scores' sum under any weights
    res = MetricResult("mme", overall, mme.signature(), details)
    cs = comparison_scores(comp, {"mme": res})
    column = dimension_column(cs.table, "mme", "engagement")
    assert np.allclose(column, mme.scores_for_dimension(res, "engagement")) and not np.allclose(column, overall)
    (row,) = correlation_rows(cs, ("spearman",), n_boot=100)
    from core.stats import correlate
    from core.verdict import context_groups
    human = [e.scores["engagement"] for e in comp.examples()]
    assert row["spearman"] == pytest.approx(correlate(column, human, "spearman", groups=context_groups(
        comp.examples()), n_boot=100, seed=13).r)
    assert weighed_per_dimension(["bleu", "mme", "bert_ruber"]) == ["mme"]


def test_meta_eval_leaves_out_blank_replies_and_blank_references_as_score_does():
    """A blank reply scored BLEU 0 in meta-eval (a fifth of a set's replies blanked raised its Spearman from 0.303
    to 0.373) under a warning saying they are null; a reference of spaces was read as a reference. They are null,
    counted in n_excluded, as `dialeval score` gives them."""
    rng = np.random.default_rng(5)
    words = "the a cat dog sat ran on mat big small red blue fast slow home park".split()
    exs = []
    for i in range(16):
        ref = " ".join(rng.choice(words, 8))
        for s, keep in (("good", 6), ("bad", 2)):
            reply = "" if (s == "bad" and i < 4) else " ".join(ref.split()[:keep] + ["ok"] * (8 - keep))
            refs = ["   "] if (s == "good" and i == 15) else [ref]
            exs.append(Example(f"c{i}", s, [f"topic {i}?"], reply, refs, {"overall": float(rng.integers(1, 6))}))
    (row,) = [r for r in meta_eval.meta_evaluate(exs, ["bleu"], methods=["spearman"], n_boot=100,
                                                 system_level=False) if r["level"] == "turn"]
    assert (row["n"], row["n_excluded"]) == (27, 5)
    from core.engine import score_examples
    table = score_examples(exs, ["bleu"], cache=False)
    assert int(np.isnan(table.column("bleu")).sum()) == 5


def test_mme_per_dimension_keeps_a_blank_reply_null_whatever_its_result_holds():
    """A blank reply's details hold no sub-scores ({'skipped': ...}): re-weighing them for a dimension raised
    KeyError on a result read from the cache (the Correlation page's second load), and a fresh result's
    per-dimension scores gave the blank row a number."""
    from core.scoring import get_metric
    mme = get_metric("mme")
    rng = np.random.default_rng(0)
    details = [{"sub_scores": {k: float(rng.normal()) for k in mme.subs}} for _ in range(3)]
    details.append({"skipped": "blank response: no score"})
    scores = np.array([0.1, 0.2, 0.3, np.nan])
    cached = MetricResult("mme", scores, mme.signature(), details)
    fresh = MetricResult("mme", scores, mme.signature(), details, {"by_dimension": {"engagement": [1.0, 2, 3, 4]}})
    for result in (cached, fresh):
        out = mme.scores_for_dimension(result, "engagement")
        assert np.isfinite(out[:3]).all() and np.isnan(out[3])


def test_the_api_warns_as_the_command_does_of_too_few_systems_for_a_system_level_row(tmp_path):
    """`dialeval meta-eval` says a file of two systems has no system-level correlation; core.meta_evaluate was
    silent."""
    import core
    rows = [{"id": f"c{i}", "system": s, "context": [f"topic {i}?"], "response": f"{s} says {i} " * (1 + i % 3),
             "references": [f"b says {i}"], "scores": {"overall": float(1 + (i + len(s)) % 5)}}
            for i in range(10) for s in ("a", "bb")]
    path = tmp_path / "two.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.warns(UserWarning, match="2 system\\(s\\), so no system-level correlation"):
        core.meta_evaluate(str(path), metrics="bleu", n_boot=100)


def test_a_reply_of_zero_width_characters_is_blank_and_nothing_else():
    from core.engine import input_notes
    from core.data import Example
    exs = [Example("1", "s", ["hi"], "\u200b", ["hello"]), Example("2", "s", ["hi"], "hello there", ["hello"])]
    notes = list(input_notes(exs, ["bleu"]).values())
    assert any("blank response" in n for n in notes) and not any("script other than Latin" in n for n in notes)


def test_a_development_set_under_another_name_is_held_out_by_its_content(shared, tmp_path):
    """From a researcher's audit: usr-topical under another name (a CSV copy, the DSTC10 JSON of a set) was scored
    by the ADEM that trained on it, and the row said "held out" (0.574 where the held-out model gives 0.160)."""
    import dataclasses

    from core.rated_sets import overlaps, rated_set_of, row_key
    exs = _usr_slice(shared, 12)
    renamed = [dataclasses.replace(e, dataset="mydata") for e in exs]
    named = meta_eval.meta_evaluate(exs, ["adem"], dims=["Overall"], n_boot=100, system_level=False)
    other = meta_eval.meta_evaluate(renamed, ["adem"], dims=["Overall"], n_boot=100, system_level=False)
    assert other[0]["dataset"] == "mydata" and other[0]["rated_set"] == "usr-topical"
    assert other[0]["protocol"] == meta_eval.LODO and other[0]["spearman"] == named[0]["spearman"]
    assert "held out from usr-topical" in meta_eval.format_rows(other)
    # --no-held-out: the leaky row says so (it read 'as shipped' with no note, as BLEU's do)
    leaky = meta_eval.meta_evaluate(renamed, ["adem", "bleu"], dims=["Overall"], n_boot=100, system_level=False,
                                    held_out=False)
    adem, bleu = leaky
    assert adem["trained_rows"] == adem["n"] + adem["n_excluded"] and "which it trained on" in adem["trained_note"]
    assert "trained_rows" not in bleu and adem["spearman"] != named[0]["spearman"]
    # the rows are known by their content: another file format of a set, and rows that are no set's
    raw = shared("raw/dstc10-format_dailydialog-zhao_eval.json")
    from core.data import load_file
    found = rated_set_of(load_file(raw))
    assert found is not None and (found.name, found.rows, found.of) == ("dailydialog-zhao", 900, 900)
    mine = [dataclasses.replace(e, response=f"my own reply {i}") for i, e in enumerate(exs)]
    assert rated_set_of(mine) is None and overlaps(mine) == []
    assert row_key(["Hi there!"], "do n't") == row_key(["hi", "there"], "Do  n't")  # case, spacing, turn joins


def test_the_shipped_development_set_keys_are_the_datas(shared):
    """checkpoints/rated-sets.json.gz holds every development set's rows' keys: made afresh from the data, the same
    (a set added or changed without re-making it would be recognised by name alone)."""
    import glob
    import os

    from core.rated_sets import row_key, shipped_keys
    held = shipped_keys()
    folder = os.path.dirname(shared("eval/usr-topical.jsonl"))
    files = sorted(glob.glob(os.path.join(folder, "*.jsonl")))
    assert sorted(held) == sorted(os.path.basename(f)[:-len(".jsonl")] for f in files)
    for f in files:
        assert held[os.path.basename(f)[:-len(".jsonl")]] == {row_key(e.context, e.response) for e in load_jsonl(f)}


def test_an_interval_and_a_p_that_read_differently_are_said():
    """From a researcher's audit: fed-turn's Kendall read "0.163 [0.008, 0.320]" beside p 0.075 (rows that share no
    context: p is the test's on the rows, the interval a bootstrap's), without a word."""
    row = {"metric": "m", "dataset": "d", "dimension": "Overall", "level": "turn", "n": 60, "ci_level": 0.95,
           "kendall": 0.163, "kendall_low": 0.008, "kendall_high": 0.32, "kendall_p": 0.075,
           "spearman": 0.2, "spearman_low": 0.01, "spearman_high": 0.4, "spearman_p": 0.03}
    assert meta_eval.interval_p_disagreements(row) == ("Kendall: the interval excludes 0 but p 0.075 >= 0.05, so "
                                                       "neither shows a correlation alone")
    assert "Kendall: the interval excludes 0 but p 0.075" in meta_eval.format_rows([row])
    assert meta_eval.interval_p_disagreements({**row, "kendall_p": 0.01}) == ""


def test_a_metric_that_learned_from_a_set_without_a_held_out_instance_is_marked():
    """From a README audit: MME's EM part trained on engagement-dd (the shipped rated sample is 80 of its rows) and
    has no instance held out from it; meta-eval printed mme_em's 0.84 there with no note (its cross-validated
    figure is 0.59)."""
    from core.rated_sets import Overlap
    from core.scoring import get_metric
    em, mme, bleu = get_metric("mme_em"), get_metric("mme"), get_metric("bleu")
    assert meta_eval.trains_on(em, "engagement-dd") and meta_eval.trains_on(mme, "engagement-dd")
    assert not meta_eval.trains_on(get_metric("mme_fm"), "engagement-dd") and not meta_eval.trains_on(bleu, "fed-turn")
    held = mme.held_out_for("usr-topical")  # CRS weights fitted without it: it learned from the others
    assert not meta_eval.trains_on(held, "usr-topical") and meta_eval.trains_on(held, "usr-persona")
    n, note = meta_eval.trained_rows_note(em, [Overlap("engagement-dd", 80, 80), Overlap("holistic-dd", 3, 80)])
    assert (n, note) == (80, "80 of 80 rows are rows of engagement-dd, which it trained on: not held out for them")


def test_the_turn_level_says_about_how_long_before_it_starts(tmp_path, capsys, monkeypatch, shared):
    """From a README audit: `meta-eval --level system`, compare and gate say about how long a run takes; the turn
    level ran for tens of seconds with bars alone."""
    import core.cli
    monkeypatch.setattr(core.cli, "ESTIMATE_SAID_FROM", 0.0)  # this run is short: said all the same
    monkeypatch.setenv("DIALEVAL_NO_CACHE", "1")
    assert cli(["meta-eval", str(shared("eval/usr-topical.jsonl")), "--metrics", "bleu", "--max-rows", "60",
                "--n-boot", "200"]) == 0
    assert "for this run: 50 rows to score with bleu" in capsys.readouterr().err  # 60 rows, 10 reference copies
