"""System-level meta-evaluation (core.system_eval) and the verdict policy it chooses (core.verdict_policy)."""
import json
import math

import numpy as np
import pytest

from core import system_eval as se
from core.cli import main as cli
from core.data import Example, align
from core.scoring import Metric, MetricResult, Signature
from core.verdict import build_verdict, compare_values, verdict_decision, verdict_sentence
from core.verdict_policy import (FALLBACK, JUDGE, Decision, ShippedPolicy, SignalRecord, VerdictPolicy, decide,
                                 deciding_winners, shipped_policy)

TRUSTED = VerdictPolicy(("mme", "bert_ruber"), "agree", True)


# ------------------------------------------------------------------------------------------------
# the policy's rules


def test_people_decide_first_whatever_the_signals_say():
    d = decide(TRUSTED, "B", "A", [("mme", "A", 0.001)])
    assert d == Decision("B", "people")


def test_a_diagnostic_metric_never_decides():
    d = decide(TRUSTED, None, None, [("ubleu", "A", 1e-6), ("bleu", "A", 1e-6)])
    assert d.side is None and d.basis is None


def test_the_judge_decides_and_trusted_metrics_that_agree_are_named():
    d = decide(TRUSTED, None, "B", [("mme", "B", 0.001), ("ubleu", "A", 1e-6)])
    assert d.side == "B" and d.basis == "judge" and d.named == (JUDGE, "mme") and d.against == ()


def test_judge_and_a_trusted_metric_that_disagree_make_the_verdict_abstain():
    d = decide(TRUSTED, None, "A", [("mme", "B", 0.001)])
    assert d.side is None and d.basis == "conflict" and d.against == ("mme",)
    first = VerdictPolicy(("mme",), "first", True)
    assert decide(first, None, "A", [("mme", "B", 0.001)]).side == "A"  # "first": the judge wins the conflict


def test_metrics_alone_decide_only_when_every_trusted_winner_agrees_after_holm():
    assert decide(TRUSTED, None, None, [("mme", "A", 0.001), ("bert_ruber", None, 0.5)]) == Decision(
        "A", "metrics", ("mme",))
    assert decide(TRUSTED, None, None, [("mme", "A", 0.001), ("bert_ruber", "B", 0.001)]).basis == "conflict"
    # p = 0.04 alone passes; two at 0.04 and 0.3: Holm makes the first 0.08
    assert deciding_winners(TRUSTED, [("mme", "A", 0.04)]) == {"mme": "A"}
    assert deciding_winners(TRUSTED, [("mme", "A", 0.04), ("bert_ruber", None, 0.3)]) == {}
    never_alone = VerdictPolicy(("mme",), "agree", False)
    assert decide(never_alone, None, None, [("mme", "A", 1e-4)]).side is None


def test_a_lean_names_a_side_only_when_every_lean_signal_points_there_and_none_names_the_other():
    lean = VerdictPolicy(("mme",), "off", True, ("judge", "mme"))
    assert decide(lean, None, None, [("mme", None, 0.2, "B")], judge_order="B") == Decision("B", "lean", ("judge", "mme"))
    assert decide(lean, None, None, [("mme", None, 0.2, "B")], judge_order="A").side is None
    assert decide(lean, None, None, [("mme", None, 0.2, None)], judge_order="B").side is None
    assert decide(lean, None, None, [], judge_order="B").side is None  # a lean signal not computed: no lean
    assert decide(lean, None, None, [("mme", "A", 0.001, "A")], judge_order="B").basis == "metrics"
    assert "else the lean of judge+mme" in lean.name


def test_a_judge_that_is_off_never_decides():
    off = VerdictPolicy(("mme",), "off", True)
    assert decide(off, None, "A", []).side is None
    assert not off.decides(JUDGE) and off.decides("mme") and not off.decides("bleu")
    with pytest.raises(ValueError, match="judge role"):
        VerdictPolicy((), "always")


def test_the_shipped_policy_names_registered_metrics_and_records_them():
    from core.scoring import available_metrics
    shipped = shipped_policy()
    assert shipped is not FALLBACK, "checkpoints/verdict-policy.json is missing"
    assert set(shipped.policy.deciding_metrics) <= set(available_metrics())
    assert ShippedPolicy.from_dict(json.loads(json.dumps(shipped.to_dict()))) == shipped
    for name, rec in shipped.records.items():
        assert 0 <= rec.wrong <= rec.pairs and 0 <= rec.right <= rec.pairs and rec.right + rec.wrong <= rec.pairs, name
    assert "judge" in shipped.records


def test_record_words_a_stakeholder_reads():
    assert SignalRecord("judge", 45, 41, 1, 43).words("the judge") == (
        "the judge named people's preferred system in 41 of 45 rated system pairs, the other one in 1")
    assert SignalRecord("mme", 10, 9, 0, 10).words().endswith("in 9 of 10 rated system pairs, never the other one")


# ------------------------------------------------------------------------------------------------
# system pairs, records and leave one set out on made-up calls


def _pair(ds, people, **calls):
    diff = {"A": 1.0, "B": -1.0, None: 0.0}[people]
    p = se.SystemPair(ds, "x", "y", 20, 20, "overall", diff, diff - 0.5, diff + 0.5, people)
    for name, (order, winner, pval) in calls.items():
        p.calls[name] = se.SignalCall(order, winner, pval)
    return p


def _pairs():
    # set s1: the judge right, mme right; ubleu wrong and significant
    s1 = [_pair("s1", "A", judge=("A", "A", 0.01), mme=("A", "A", 0.01), ubleu=("B", "B", 0.001)) for _ in range(4)]
    # set s2: the judge wrong twice, mme right: "agree" abstains there, "first" is wrong
    s2 = [_pair("s2", "B", judge=("A", "A", 0.01), mme=("B", "B", 0.01), ubleu=("B", "B", 0.01)) for _ in range(2)]
    s2 += [_pair("s2", "A", judge=("A", "A", 0.01), mme=("A", None, 0.2), ubleu=("B", None, 0.3))]
    s2 += [_pair("s2", None, judge=("B", None, 0.5), mme=("A", None, 0.5), ubleu=("A", "A", 0.01))]
    return s1 + s2


def test_records_count_right_wrong_and_order_over_the_pairs_people_separate():
    pairs = _pairs()
    assert se.record(pairs, "judge") == SignalRecord("judge", 7, 5, 2, 5, 2)
    assert se.record(pairs, "ubleu") == SignalRecord("ubleu", 7, 2, 4, 2, 2)
    assert se.record(pairs, "mme") == SignalRecord("mme", 7, 6, 0, 7, 2)
    # tau over every system pair: the unseparated one counts as neither (people's diff 0)
    assert se.kendall_tau([p for p in pairs if p.dataset == "s2"], "judge") == pytest.approx((1 - 2) / 4)


def test_the_verdict_under_a_policy_and_leave_one_set_out():
    pairs = _pairs()
    agree = VerdictPolicy(("mme",), "agree", True)
    first = VerdictPolicy(("mme",), "first", True)
    assert se.policy_score(pairs, agree) == (5, 0, 7)  # s2's conflicts abstain
    assert se.policy_score(pairs, first) == (5, 2, 7)
    with_v = se.with_verdict(pairs, agree)
    assert se.record(with_v, se.VERDICT) == SignalRecord(se.VERDICT, 7, 5, 0, 5, 2)
    assert se.VERDICT not in pairs[0].calls  # the input is not changed
    cands = se.candidate_policies(["mme", "ubleu"], lean=False)
    assert len(se.candidate_policies(["mme", "ubleu"])) == len(cands) * 5  # no lean, or judge+mme, judge+ubleu, ...
    assert len(cands) == len(set(cands)) and agree in cands and first in cands
    # mme alone is right on 6 of 7 and never wrong: better than letting the judge speak
    assert se.best_policy(pairs, cands, wrong_cost=4) == VerdictPolicy(("mme",), "off", True)
    assert se.best_policy(pairs[:4], cands, wrong_cost=4) == VerdictPolicy((), "first", False)  # fewest metrics first
    rows = se.leave_one_set_out(pairs, cands, wrong_cost=4)
    assert [r["held_out"] for r in rows] == ["s1", "s2"]
    assert all(r["right"] + r["wrong"] + r["none"] == r["separated"] for r in rows)
    assert all(sorted(k for _, k in r["by_pair"]) == sorted(["right"] * r["right"] + ["wrong"] * r["wrong"]
                                                            + ["none"] * r["none"]) for r in rows)
    summary = se.summarize(with_v)
    assert {r["dataset"] for r in summary} == {"s1", "s2", "all"}
    text = se.format_system_rows(summary, "markdown")
    assert "| all | overall | verdict | 8 | 8 | 7 | 0.714 | 5 (71 %) | 0 (0 %) | 2 |" in text


# ------------------------------------------------------------------------------------------------
# a whole data set through the engine


class _Quality(Metric):
    """Test double: a row's hidden quality (its id's last digit), so the metric orders systems as people do."""

    name = "quality-test"

    def compute(self, examples, progress=None):
        return MetricResult(self.name, np.array([float(e.id[-1]) for e in examples]), self.signature())

    def signature(self):
        return Signature(self.name)


def _rated_set(n_ctx=12):
    rng = np.random.default_rng(0)
    rows = []
    for c in range(n_ctx):
        for s, q in (("good", 4), ("mid", 3), ("bad", 1)):
            rows.append(Example(id=f"{s}-{c}-{q}", context=[f"context number {c} about topic {c % 4}"],
                                response=f"{s} reply {c}", references=[f"a fine answer {c}"], system=s,
                                scores={"overall": float(np.clip(q + rng.normal(0, 0.3), 1, 5))},
                                dataset="made-up"))
    return rows


def test_a_data_set_gives_every_system_pair_with_people_and_each_signal():
    rows = _rated_set()
    pairs = se.evaluate_dataset("made-up", rows, [_Quality()], judge=False, n_boot=200, n_perm=200)
    assert [(p.system_a, p.system_b) for p in pairs] == [("bad", "good"), ("bad", "mid"), ("good", "mid")]
    assert [p.people for p in pairs] == ["B", "B", "A"]
    assert all(p.n_contexts == 12 and p.dimension == "overall" for p in pairs)
    assert [p.calls["quality-test"].winner for p in pairs] == ["B", "B", "A"]
    rec = se.record(se.with_verdict(pairs, VerdictPolicy(("quality-test",), "off", True)), se.VERDICT)
    assert rec == SignalRecord(se.VERDICT, 3, 3, 0, 3, 1)
    # the shipped policy does not trust an unknown metric: its verdict names no winner
    assert se.record(se.with_verdict(pairs, TRUSTED), se.VERDICT).right == 0


def test_pairs_sharing_too_few_contexts_are_skipped_and_counted():
    rows = [r for r in _rated_set(12) if not (r.system == "bad" and int(r.id.split("-")[1]) >= 3)]
    comps, skipped = se.system_pairs(rows)
    assert skipped == 2 and [(c.system_a, c.system_b) for c in comps] == [("good", "mid")]


def test_meta_eval_level_system_says_about_how_long_before_it_starts(tmp_path, capsys, monkeypatch):
    """It ran for minutes with a fresh bar per judged pair and no estimate, where the leaderboard says one."""
    import core.cli
    path = tmp_path / "rated.jsonl"
    path.write_text("".join(json.dumps({"id": r.id, "context": r.context, "response": r.response,
                                        "references": r.references, "system": r.system, "scores": r.scores})
                            + "\n" for r in _rated_set()))
    monkeypatch.setattr(core.cli, "ESTIMATE_SAID_FROM", 0.0)  # this file's run is short: said all the same
    monkeypatch.setenv("DIALEVAL_NO_CACHE", "1")
    assert cli(["meta-eval", "--level", "system", str(path), "--metrics", "bleu", "--no-judge", "--format", "csv"]) == 0
    err = capsys.readouterr().err
    rows = len({(r.context[0], r.response) for r in _rated_set()})
    assert f"for this run: {rows} rows to score with bleu" in err, err


def test_meta_eval_level_system_on_the_command_line(tmp_path, capsys, monkeypatch):
    path = tmp_path / "rated.jsonl"
    path.write_text("".join(json.dumps({"id": r.id, "context": r.context, "response": r.response,
                                        "references": r.references, "system": r.system, "scores": r.scores})
                            + "\n" for r in _rated_set()))
    assert cli(["meta-eval", "--level", "system", str(path), "--metrics", "bleu", "--no-judge", "--quiet",
                "--format", "csv"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("dataset,dimension,signal,system_pairs,rated_pairs,separated")
    assert "rated,overall,bleu,3,3,3," in out and "rated,overall,verdict,3,3,3," in out
    assert cli(["meta-eval", "--level", "system", "--level", "turn", str(path)]) == 2
    assert "at most one of turn/system" in capsys.readouterr().err
    # --dimension was checked and then not read at system level: people's side is now read on it (here a
    # dimension that reverses people's order), and the turn level's --max-rows is refused there
    flipped = tmp_path / "flipped.jsonl"
    words = {"good": "a fine answer", "mid": "a fine", "bad": "nothing"}  # BLEU orders good, mid, bad
    flipped.write_text("".join(json.dumps({"id": r.id, "context": r.context, "response": f"{words[r.system]} "
                                           f"{r.id.split('-')[1]}", "references": r.references, "system": r.system,
                                           "scores": {**r.scores, "fluency": -r.scores["overall"]}}) + "\n"
                               for r in _rated_set()))
    rows = {}
    for dim in ("overall", "fluency"):
        assert cli(["meta-eval", "--level", "system", str(flipped), "--metrics", "bleu", "--no-judge", "--quiet",
                    "--format", "json", "--dimension", dim]) == 0
        got = json.loads(capsys.readouterr().out)
        rows[dim] = next(r for r in (got["rows"] if isinstance(got, dict) else got)
                         if r["dataset"] == "flipped" and r["signal"] == "bleu")
    assert (rows["overall"]["order"], rows["fluency"]["order"]) == (1.0, 0.0), rows
    # the settings the tests ran under are in every row and open the text (two tables at other levels looked alike)
    assert {(r["ci_level"], r["n_boot"], r["n_perm"], r["seed"]) for r in got} == {(0.95, 2000, 2000, 13)}
    assert cli(["meta-eval", "--level", "system", "--level", "0.8", str(path), "--metrics", "bleu", "--no-judge",
                "--quiet", "--n-boot", "300", "--seed", "5"]) == 0
    assert capsys.readouterr().out.startswith("people's winner and each signal's by paired tests at 80% (300 resamples "
                                              "of the contexts, 2,000 randomizations, seed 5)\n")
    assert cli(["meta-eval", "--level", "system", str(path), "--metrics", "bleu", "--no-judge", "--max-rows", "9"]) == 2
    assert "--max-rows is for the turn level" in capsys.readouterr().err
    # the shipped verdict cannot decide on BLEU alone: said before its row reads 'names none' everywhere
    assert cli(["meta-eval", "--level", "system", str(path), "--metrics", "bleu", "--no-judge", "--quiet"]) == 0
    said = capsys.readouterr()
    assert "the one-line verdict cannot decide on bleu: its combined test sums" in said.err
    # and its row has no order to read (it said 'same order 0.000', as if it never agreed with people)
    verdict_row = next(line for line in said.out.splitlines() if line.startswith("rated") and " verdict " in line)
    assert "0.000" not in verdict_row and "the verdict cannot decide on these signals" in verdict_row, verdict_row
    import core
    with pytest.warns(UserWarning, match="the one-line verdict cannot decide on bleu"):
        api = core.meta_evaluate(str(path), metrics="bleu", level="system", judge=False)
    assert [(r["order"], r["kendall_tau"]) for r in api if r["signal"] == "verdict"] == [(None, None)] * 2
    json.dumps(api, allow_nan=False)  # plain JSON data, as the command writes it (shares were NaN where it wrote null)
    # an interval level beside 'system', as --level system --level 0.6 gives it on the command line
    assert cli(["meta-eval", "--level", "system", "--level", "0.6", str(path), "--metrics", "bleu", "--no-judge",
                "--quiet", "--format", "json"]) == 0
    got = json.loads(capsys.readouterr().out)
    levels = []
    real_system_level = se.system_level

    def spy(*args, **kwargs):
        levels.append(kwargs.get("level"))
        return real_system_level(*args, **kwargs)
    monkeypatch.setattr(se, "system_level", spy)
    with pytest.warns(UserWarning, match="cannot decide on bleu"):
        at_60 = core.meta_evaluate(str(path), metrics="bleu", level=("system", 0.6), judge=False)
    assert at_60 == (got["rows"] if isinstance(got, dict) else got) and levels == [0.6], levels
    for bad in (("system", "turn"), ("system", 0.6, 0.9), (), "weekly"):
        with pytest.raises(ValueError, match="level="):
            core.meta_evaluate(str(path), metrics="bleu", level=bad, judge=False)
    # a system whose every reply copies its reference leaves the table, and that is said
    copying = tmp_path / "copying.jsonl"
    copying.write_text(path.read_text() + "".join(
        json.dumps({"id": r.id, "context": r.context, "response": r.references[0], "references": r.references,
                    "system": "gold", "scores": r.scores}) + "\n" for r in _rated_set() if r.system == "good"))
    assert cli(["meta-eval", "--level", "system", str(copying), "--metrics", "bleu", "--no-judge"]) == 0
    assert "copying: " in (err := capsys.readouterr().err) and "(gold: every row, so no pair of it)" in err, err


# ------------------------------------------------------------------------------------------------
# the sentence


def _comparison():
    """v1 against v2 on 30 contexts, one pair each."""
    a = [Example(id=str(i), context=[f"c{i}"], response=f"a{i}", system="v1") for i in range(30)]
    return align(a, [Example(id=str(i), context=[f"c{i}"], response=f"b{i}", system="v2") for i in range(30)])


def _verdict(metric_values, judge_winner=None):
    v = build_verdict(_comparison(), None, None, n_boot=200, n_perm=200)
    groups = [(f"c{i}",) for i in range(30)]
    for name, (xa, xb) in metric_values.items():
        v.metrics.append(compare_values(name, "metric", xa, xb, groups, n_boot=200, n_perm=200))
    return v


@pytest.fixture
def trusted(monkeypatch):
    """The sentence under a known policy and records, whatever the shipped file holds."""
    import core.verdict
    known = ShippedPolicy(TRUSTED, {"mme": SignalRecord("mme", 50, 44, 1, 46, 6),
                                    "ubleu": SignalRecord("ubleu", 50, 12, 9, 27, 6)})
    monkeypatch.setattr(core.verdict, "shipped_policy", lambda: known)
    return known


def test_a_diagnostic_winner_alone_is_no_verdict_and_is_labelled(trusted):
    rng = np.random.default_rng(1)
    v = _verdict({"ubleu": (rng.normal(20, 1, 30), rng.normal(10, 1, 30)),
                  "mme": (rng.normal(0.5, 0.01, 30), rng.normal(0.5, 0.01, 30))})
    assert verdict_decision(v).side is None
    s = verdict_sentence(v)
    assert s.startswith("No trusted signal separates v1 and v2:"), s
    assert "as diagnostics, which do not decide: ubleu favours v1" in s
    assert "(ubleu named people's preferred system in 12 of 50 rated system pairs, the other one in 9)" in s


def test_trusted_metrics_decide_and_their_record_is_stated(trusted):
    rng = np.random.default_rng(2)
    v = _verdict({"mme": (rng.normal(0.4, 0.02, 30), rng.normal(0.5, 0.02, 30)),
                  "ubleu": (rng.normal(20, 1, 30), rng.normal(10, 1, 30))})
    s = verdict_sentence(v)
    assert s.startswith("v2 is better than v1: its one deciding metric says so (mme +"), s
    assert "(mme named people's preferred system in 44 of 50 rated system pairs, the other one in 1)" in s
    assert "ubleu favours v1" in s and math.isfinite(v.metrics[0].diff)


def test_no_significant_difference_says_what_could_go_unseen(trusted):
    """Every "no significant difference" states the smallest difference these contexts detect at 80 % power."""
    from core.stats import detectable_difference
    rng = np.random.default_rng(3)
    v = _verdict({"mme": (rng.normal(0.5, 0.1, 30), rng.normal(0.5, 0.1, 30))})
    row = v.metrics[0]
    assert row.winner is None and row.detectable == pytest.approx(detectable_difference(row.low, row.high))
    s = verdict_sentence(v)
    assert s.startswith("No significant difference between v1 and v2: mme finds no significant difference (with "
                        "these 30 contexts a difference smaller than 0.0"), s
    assert s.endswith(" in mme could go unseen)."), s


# ------------------------------------------------------------------------------------------------
# the combined test


def test_combined_values_weigh_each_signal_by_its_own_spread():
    from core.verdict_policy import combined_values
    x = np.array([1.0, 2.0, 3.0, 6.0])
    y = np.array([100.0, -50.0, 20.0, 10.0])
    want = x / x.std() + y / y.std()
    assert combined_values({"x": x, "y": y}) == pytest.approx(want)
    assert combined_values({"x": x * 1000, "y": y}) == pytest.approx(want)  # units do not matter
    # a signal without spread adds 1 per pair in its direction (nothing when it never differs); a missing value
    # makes that pair's sum missing
    assert combined_values({"x": x, "flat": np.full(4, -0.3)}) == pytest.approx(x / x.std() - 1)
    assert combined_values({"x": x, "same": np.zeros(4)}) == pytest.approx(x / x.std())
    got = combined_values({"x": x, "y": np.array([1.0, np.nan, 2.0, 3.0])})
    assert np.isnan(got[1]) and np.isfinite(got[[0, 2, 3]]).all()
    with pytest.raises(ValueError, match="no signal"):
        combined_values({})


def test_a_pair_one_side_left_blank_is_that_side_s_loss_in_the_combined_test():
    """A metric cannot score a blank reply, so a pair with one blank side was NaN and dropped: a system that left
    blank the questions it answered worst came out ahead ("beta is probably better", blank in 3 of 10 pairs).
    Silence loses the pair by the largest difference the signal shows between two answered replies."""
    from core.verdict_policy import combined_values, silent_sides
    x = np.array([1.0, -2.0, 3.0, np.nan, np.nan, np.nan])
    silent = silent_sides([False, False, False, True, False, True], [False, False, False, False, True, True])
    assert silent == [None, None, None, "A", "B", "both"]
    filled = np.array([1.0, -2.0, 3.0, -3.0, 3.0, np.nan])  # both blank: still no value
    got = combined_values({"x": x}, silent)
    assert got[:5] == pytest.approx(filled[:5] / filled[:5].std()) and np.isnan(got[5])
    # a signal that read the blank pair (the judge) keeps its own value where it favours the answering side more;
    # a pair both left blank is dropped even where such a signal has a value there
    judge = np.array([0.1, -0.2, 0.3, -0.45, 0.05, 0.0])
    assert combined_values({"j": judge}, silent)[[3, 4]] * np.nanstd([0.1, -0.2, 0.3, -0.45, 0.3]) == \
        pytest.approx([-0.45, 0.3])
    assert np.isnan(combined_values({"j": judge}, silent)[5])
    never = np.array([0.0, 0.0, 1.0])  # answered pairs that never differ: silence loses by 1 before standardizing
    assert combined_values({"x": np.array([0.0, 0.0, np.nan])}, [None, None, "B"]) == pytest.approx(never / never.std())
    with pytest.raises(ValueError, match="silent has 2 pairs"):
        combined_values({"x": x}, [None, None])


def test_a_system_blank_on_its_hardest_questions_is_not_named_better(tmp_path):
    """A verdict from scores: beta wins the 7 pairs it answered and leaves 5 blank; its combined test (here of BLEU
    alone) named it better before blank pairs counted as its losses."""
    from core.data import Example, compare_systems
    from core.engine import score_comparison
    from core.verdict import build_verdict
    refs = [f"the answer to question {i} is the number {i * 7} and the colour blue" for i in range(12)]
    rows = [Example(f"q{i}", "alpha", [f"question {i}?"], f"the number is {i} or so", [refs[i]]) for i in range(12)]
    rows += [Example(f"q{i}", "beta", [f"question {i}?"], refs[i] if i >= 5 else "", [refs[i]]) for i in range(12)]
    comp = compare_systems(rows, "alpha", "beta")
    v = build_verdict(comp, score_comparison(comp, ["bleu"]), n_boot=500, n_perm=500, combine=["bleu"])
    assert v.combined.n == 12 and v.combined.winner is None, v.sentence
    assert "beta's reply is blank in 5 of the 12 pairs (alpha's in 0), which every metric leaves out and the " \
           "combined test counts as lost by it where only its reply is blank" in v.sentence
    assert v.rows("metric")[0].winner == "B"  # on the pairs both answered BLEU's own row still favours beta



def test_the_judges_rate_at_equal_length_leaves_blank_replies_out():
    """A system that left 4 of 12 replies blank lost those pairs to the judge; the length regression read the
    losses as those of short replies and said it won 99.8 % at equal length."""
    from core.data import Example, compare_systems
    from core.judge_summary import judge_length_controlled
    rows = [Example(f"q{i}", "blanky", [f"question {i}?"], "" if i < 4 else "a short answer" if i % 2 else
                    "a somewhat longer answer to the question", []) for i in range(12)]
    rows += [Example(f"q{i}", "steady", [f"question {i}?"], "a steady answer of some length", []) for i in range(12)]
    comp = compare_systems(rows, "blanky", "steady")
    verdicts = ["B"] * 4 + ["A", "B"] * 4
    lc = judge_length_controlled(comp, verdicts, n_boot=200)
    assert lc.n == 8 and lc.raw == pytest.approx(0.5)
    from core.judge_summary import summarize_judge
    from core.scoring import JudgeOutput
    p_a = [0.05 if v == "B" else 0.95 for v in verdicts]
    summary = summarize_judge(comp, JudgeOutput.from_probabilities(p_a, p_a, p_a, 0.05, "judge:test"), n_boot=200)
    assert summary.blank_left_out == 4 and summary.at_length_words() == ", without the 4 pairs with a blank reply"


def test_the_combined_test_has_its_drivers_as_every_metric_does():
    """What decides the verdict had no 'what drives each difference' line, the metrics that do not decide had
    one: the combined test's pairs that push most, and whether its winner survives without them."""
    from core.data import Example, compare_systems
    from core.engine import score_comparison
    from core.report import driver_lines
    from core.verdict import build_verdict
    refs = [f"the answer to question {i} is the number {i * 7} and the colour blue" for i in range(16)]
    rows = [Example(f"q{i}", "alpha", [f"question {i}?"], f"the number is {i} or so", [refs[i]]) for i in range(16)]
    rows += [Example(f"q{i}", "beta", [f"question {i}?"], refs[i], [refs[i]]) for i in range(16)]
    comp = compare_systems(rows, "alpha", "beta")
    v = build_verdict(comp, score_comparison(comp, ["bleu"]), n_boot=500, n_perm=500, combine=["bleu"])
    combined = v.drivers[-1]
    assert combined.metric == "combined: bleu" and combined.direction == "B" and combined.winner == "B"
    assert combined.n_pairs == 16 and combined.n_left_out == 1 and combined.survives
    assert any(line.startswith("combined: bleu: pairs pushing most toward beta") for line in driver_lines(v))
    assert "rests on a few pairs" not in v.sentence


def test_the_combined_test_decides_first_and_the_other_rules_follow_when_it_names_none():
    combined_then_mme = VerdictPolicy(("mme",), "off", True, (), ("judge", "mme"))
    assert decide(combined_then_mme, None, None, [("mme", "A", 0.001)], combined=("B", ("judge", "mme"))) == \
        Decision("B", "combined", ("judge", "mme"))
    assert decide(combined_then_mme, None, None, [("mme", "A", 0.001)], combined=(None, ("mme",))) == \
        Decision("A", "metrics", ("mme",))
    assert decide(combined_then_mme, None, None, [("mme", "A", 0.001)]).side == "A"  # not run: the rules alone
    assert decide(combined_then_mme, "A", None, [], combined=("B", ("mme",))) == Decision("A", "people")
    assert decide(TRUSTED, None, None, [], combined=("B", ("mme",))).side is None  # a policy without one ignores it
    vetoed = VerdictPolicy((), "off", False, (), ("judge", "mme", "ubleu"), (), ("judge", "mme"))
    both = ("judge", "mme", "ubleu")
    assert decide(vetoed, None, "A", [("mme", None, 0.3), ("ubleu", "B", 0.01)], combined=("B", both)) == \
        Decision(None, "conflict", both, ("judge",))  # the judge's own test names the other system: abstain
    assert decide(vetoed, None, None, [("mme", None, 0.3), ("ubleu", "A", 0.01)], combined=("B", both)) == \
        Decision("B", "combined", both)  # ubleu alone may not veto
    assert vetoed.name == "the combined test of judge+mme+ubleu (vetoed by judge+mme) alone"
    leaning = VerdictPolicy((), "off", False, (), both, (), ("judge",), 0.3)
    assert decide(leaning, None, None, [], combined=(None, both, "A", 0.2)) == Decision("A", "combined lean", both)
    assert decide(leaning, None, None, [], combined=(None, both, "A", 0.4)) == Decision(None, None)
    assert decide(leaning, None, "B", [], combined=(None, both, "A", 0.2)).side is None  # vetoed
    assert decide(vetoed, None, None, [], combined=(None, both, "A", 0.01)).side is None  # no lean in the policy
    assert leaning.name.endswith("alone; else its direction at p < 0.3")
    assert combined_then_mme.trusts("judge") and not combined_then_mme.decides("judge")
    assert combined_then_mme.name.startswith("the combined test of judge+mme, then judge off")
    shipped = ShippedPolicy(combined_then_mme, {})
    assert ShippedPolicy.from_dict(json.loads(json.dumps(shipped.to_dict()))) == shipped


def test_candidate_policies_with_combined_tests_and_their_calls():
    plain = se.candidate_policies(["mme"], lean=False)
    cands = se.candidate_policies(["mme"], lean=False, combine=[("mme", "judge")])
    # nothing after the combined test, or each plain policy; each without a lean or leaning at each p
    assert len(cands) == len(plain) + (len(plain) + 1) * (1 + len(se.COMBINED_LEAN_P))
    assert {c.combine for c in cands[len(plain):]} == {("judge", "mme")}
    assert {c.combine_vetoes for c in cands[len(plain):]} == {("judge", "mme")}
    assert {c.combine_vetoes for c in se.candidate_policies(["mme"], False, combine=[("mme", "ubleu")])} == {(), ("mme",)}
    assert {c.combine_lean for c in cands} == {0.0, *se.COMBINED_LEAN_P}
    assert se.combinations_of(["mme", "judge", "bleu"], 2) == [("bleu", "judge"), ("bleu", "mme"), ("judge", "mme"),
                                                            ("bleu", "judge", "mme")]
    p = _pair("s", "A", judge=("A", None, 0.2), mme=("B", None, 0.3))
    p.calls[se.combined_name(("mme", "judge"))] = se.SignalCall("A", "A", 0.01)
    assert "combined:judge+mme" in p.calls and se.signals_of([p]) == ["judge", "mme"]
    assert p.verdict_under(VerdictPolicy((), "off", False, (), ("judge", "mme"))).winner == "A"
    assert p.verdict_under(VerdictPolicy((), "off", False, (), ("bleu", "mme"))).winner is None  # not called


def test_a_data_set_gives_the_combined_test_of_every_set_of_signals():
    class _Noisy(_Quality):
        name = "noisy-test"

        def compute(self, examples, progress=None):
            rng = np.random.default_rng(5)
            return MetricResult(self.name, np.array([float(e.id[-1]) + rng.normal(0, 3) for e in examples]),
                                self.signature())

    pairs = se.evaluate_dataset("made-up", _rated_set(), [_Quality(), _Noisy()], judge=False, n_boot=200,
                                n_perm=200, combine=True)
    assert all(set(p.calls) == {"quality-test", "noisy-test", "combined:noisy-test", "combined:quality-test",
                                "combined:noisy-test+quality-test"} for p in pairs)
    assert all(p.computed == ["quality-test", "noisy-test"] for p in pairs)
    assert [p.calls["combined:noisy-test+quality-test"].winner for p in pairs] == ["B", "B", "A"]
    listed = se.evaluate_dataset("made-up", _rated_set(), [_Quality(), _Noisy()], judge=False, n_boot=200,
                                 n_perm=200, combine=[("quality-test", "noisy-test"), ("judge", "quality-test")])
    assert set(listed[0].calls) == set(pairs[0].calls) - {"combined:noisy-test", "combined:quality-test"}


def test_the_verdict_names_the_combined_tests_winner_and_its_record(monkeypatch):
    import core.verdict
    from core.verdict import compare_combined, signal_differences
    policy = VerdictPolicy((), "off", False, (), ("bleu", "judge"))
    known = ShippedPolicy(policy, {"combined": SignalRecord("combined", 90, 50, 1, 70, 6)})
    monkeypatch.setattr(core.verdict, "shipped_policy", lambda: known)
    rng = np.random.default_rng(4)
    bleu_a, bleu_b = rng.normal(10, 5, 30), rng.normal(12, 5, 30)

    class _Scores:  # what build_verdict reads of ComparisonScores
        comparison = type("Comparison", (), {"pairs": range(30)})
        metrics = ["bleu"]
        a = staticmethod(lambda m: bleu_a)
        b = staticmethod(lambda m: bleu_b)

    class _Judged:
        p_a = list(np.clip(0.4 + rng.normal(0, 0.1, 30), 0, 1))
        signature = "judge:judge|test"  # as the learned judge signs: the judge the records were measured with

    v = _verdict({"bleu": (bleu_a, bleu_b)})
    diffs = signal_differences(_Scores, _Judged, policy.combine)
    assert set(diffs) == {"bleu", "judge"} and diffs["judge"] == pytest.approx(np.asarray(_Judged.p_a) - 0.5)
    assert set(signal_differences(_Scores, None, policy.combine)) == {"bleu"}  # the judge not run: left out

    class _HalfJudged:
        p_a = _Judged.p_a[:15]
        signature = _Judged.signature

    class _OtherJudge:  # another judge (an LLM, a re-fit checkpoint) has no record: a diagnostic, not in the test
        p_a = _Judged.p_a
        signature = "judge:llm|model:m"

    assert set(signal_differences(_Scores, _HalfJudged, policy.combine)) == {"bleu"}  # not every pair judged
    assert set(signal_differences(_Scores, _OtherJudge, policy.combine)) == {"bleu"}
    v.combined, v.combined_signals = compare_combined(_comparison(), diffs, n_boot=200, n_perm=200), list(diffs)
    assert v.combined.winner == "B" and verdict_decision(v) == Decision("B", "combined", ("bleu", "judge"))
    s = verdict_sentence(v)
    c = v.combined
    from core.verdict_policy import combined_values
    values = combined_values(diffs)  # A - B: below 0 favours v2
    towards, away = int((values < 0).sum()), int((values > 0).sum())
    assert 15 < towards < 30 and away > 0
    assert s.startswith("v2 is better than v1: the combined evidence of bleu and the judge favours it in "
                        f"{towards} of the 30 pairs, the other way in {away} (p = "), s
    assert ") (on rated data this combined test named people's preferred system in 50 of 90" in s
    assert c.diff < 0 and math.isnan(c.mean_a) and math.isnan(c.mean_b)  # a difference, no mean per system
    assert "as diagnostics" not in s  # bleu has a say through the combined test


def test_a_combined_lean_is_said_in_pairs_both_ways_with_its_p(monkeypatch):
    """The lean names the side the combined mean favours; the sentence says how many pairs favour each side, so a
    lean carried by a few large pairs cannot read as most pairs' verdict."""
    import core.verdict
    from core.verdict import compare_combined
    from core.verdict_policy import combined_values
    policy = VerdictPolicy((), "off", False, (), ("bleu", "mme"), combine_lean=0.3)
    monkeypatch.setattr(core.verdict, "shipped_policy", lambda: ShippedPolicy(policy, {}))
    rng = np.random.default_rng(1)
    diffs = {"bleu": rng.normal(0.3, 1.0, 30), "mme": rng.normal(0.1, 1.0, 30)}  # A - B, a weak lean to v1
    v = _verdict({"bleu": (diffs["bleu"], np.zeros(30)), "mme": (diffs["mme"], np.zeros(30))})
    v.combined, v.combined_signals = compare_combined(_comparison(), diffs, n_boot=200, n_perm=200), list(diffs)
    c = v.combined
    assert c.winner is None and 0.05 < c.p_randomization < 0.3
    values = combined_values(diffs)
    s = verdict_sentence(v)
    assert s.startswith(f"v1 is probably better than v2: the combined evidence of bleu and mme leans its way, in "
                        f"{int((values > 0).sum())} of the 30 pairs, the other way in {int((values < 0).sum())} "
                        f"(p = {c.p_randomization:.3f}: not significant, but below the 0.3 at which the verdict says "
                        "'probably')"), s
    from dataclasses import replace

    from core.verdict import Drivers  # a lean that rests on a few pairs says so, as a fragile winner does
    fragile = Drivers("combined: bleu+mme", "A", [], 2, 30, 0.01, -0.2, 0.2, 0.7, None, None, False, True, True, 0.3)
    assert "'probably'; it rests on a few pairs: p = 0.700 without the top 5 %, not below 0.3)" in verdict_sentence(
        replace(v, drivers=[fragile]))
    assert "it rests on a few pairs" not in verdict_sentence(replace(v, drivers=[replace(fragile, survives=True)]))
    assert "without the top 5 % it leans the other way" in verdict_sentence(
        replace(v, drivers=[replace(fragile, p_without=0.1, diff_without=-0.3)]))


def test_with_a_signal_not_computed_the_combined_test_uses_the_first_allowed_set_of_the_others():
    policy = VerdictPolicy((), "off", False, (), ("judge", "mme", "ubleu"),
                           (("judge", "mme"), ("judge", "ubleu"), ("mme",)))
    assert policy.combination(["judge", "mme", "ubleu"]) == ("judge", "mme", "ubleu")
    assert policy.combination(["mme", "ubleu"]) == ("mme",)  # mme+ubleu is not allowed: it prefers generic replies
    assert policy.combination(["judge", "ubleu", "mme"]) == ("judge", "mme", "ubleu")
    assert policy.combination(["judge", "ubleu"]) == ("judge", "ubleu")
    assert policy.combination(["ubleu"]) == ()
    assert policy.name == "the combined test of judge+mme+ubleu alone"
    # on a system pair the judge did not read, the verdict reads MME-CRS's combined test (its standardized values)
    p = _pair("s", "A", mme=("A", "A", 0.01), ubleu=("B", None, 0.3))
    p.calls["combined:mme"] = se.SignalCall("A", "A", 0.01)
    assert p.verdict_under(policy) == se.SignalCall("A", "A")
    assert se.policy_combinations(policy) == [("judge", "mme", "ubleu"), ("judge", "mme"), ("judge", "ubleu"), ("mme",)]
    shipped = ShippedPolicy(policy, {})
    assert ShippedPolicy.from_dict(json.loads(json.dumps(shipped.to_dict()))) == shipped


def test_the_dashboard_says_each_metrics_role_in_the_verdict(monkeypatch):
    import core.verdict_policy
    from dashboard import words
    policy = VerdictPolicy((), "off", False, (), ("bert_ruber", "judge", "ubleu"), (("bleu", "mme"),), ("judge",))
    known = ShippedPolicy(policy, {m: SignalRecord(m, 97, 40, 1, 80) for m in ("bleu", "mme", "bert_ruber")})
    monkeypatch.setattr(core.verdict_policy, "shipped_policy", lambda: known)
    assert words.role("bert_ruber") == "The verdict reads it within its combined test."
    assert words.role("mme").startswith("The verdict reads it only when a signal of its combined test is missing")
    assert words.role("adem") == ""  # never measured at the system level
    assert words.verdict_basis() == "the combined test of BERT-RUBER, the judge and υBLEU"
    monkeypatch.setattr(core.verdict_policy, "shipped_policy", lambda: ShippedPolicy(VerdictPolicy(("mme",), "off"),
                                                                                     known.records))
    assert words.role("mme") == "The verdict lets it decide." and words.verdict_basis() == "MME-CRS"
    assert words.role("bleu") == "A diagnostic: shown, never deciding the verdict."


def test_a_judge_that_names_the_other_system_vetoes_the_combined_test_in_the_sentence(monkeypatch):
    import core.verdict
    from core.judge_summary import summarize_judge
    from core.scoring import JudgeOutput
    from core.verdict import compare_combined
    policy = VerdictPolicy((), "off", False, (), ("bleu", "judge"), (), ("judge",), 0.3)
    monkeypatch.setattr(core.verdict, "shipped_policy", lambda: ShippedPolicy(policy, {}))
    comp = _comparison()
    p_a = [0.9] * 24 + [0.1] * 6  # the judge prefers v1 on 24 of 30 contexts: significant
    judged = summarize_judge(comp, JudgeOutput.from_probabilities(p_a, p_a, p_a, 0.05, "judge:judge|toy"))
    assert judged.winner == "A"
    v = _verdict({"bleu": (np.zeros(30), np.full(30, 50.0))})
    v.judge = judged
    # a combined test that names v2 (made up here: bleu's v2 lead outweighs the judge)
    diffs = {"bleu": np.full(30, -50.0) + np.arange(30) * 0.1, "judge": np.asarray(p_a) - 0.5}
    v.combined, v.combined_signals = compare_combined(comp, {"bleu": diffs["bleu"] * 10, "judge": diffs["judge"]},
                                                      n_boot=200, n_perm=200), ["bleu", "judge"]
    assert v.combined.winner == "B"
    assert verdict_decision(v) == Decision(None, "conflict", ("bleu", "judge"), ("judge",))
    s = verdict_sentence(v)
    assert s.startswith("Mixed evidence on v1 vs v2: the combined evidence of bleu and the judge favours v2"), s
    assert "the judge prefers v1 in 80 % of the 30 pairs it decided" in s


def test_a_signal_not_computed_on_a_system_pair_makes_the_measure_read_the_set_the_product_reads():
    policy = VerdictPolicy((), "off", False, (), ("bert_ruber", "judge", "ubleu"), (("bleu", "mme"), ("mme",)),
                           ("judge",))
    p = _pair("s", "A", bleu=("A", None, 0.3), mme=("A", "A", 0.01), ubleu=("B", None, 0.4),
              bert_ruber=(None, None, math.nan))
    p.calls["combined:bleu+mme"] = se.SignalCall("A", "A", 0.004)
    p.calls["combined:mme"] = se.SignalCall("A", None, 0.06)
    p.computed = ["bleu", "mme", "ubleu"]  # no judge; bert_ruber scored nothing
    assert p.verdict_under(policy) == se.SignalCall("A", "A")  # bleu+mme, as core.verdict's build_verdict picks
    assert policy.combination(p.computed) == ("bleu", "mme") and policy.vetoes_for(("bleu", "mme")) == ("mme",)
    p.calls["mme"] = se.SignalCall("B", "B", 0.01)  # mme's own test names the other system: it vetoes the set
    assert p.verdict_under(policy).winner is None


def test_the_sentence_names_the_set_used_in_place_of_the_policys_and_says_when_none_could_run(monkeypatch):
    import core.verdict
    from core.verdict import compare_combined
    policy = VerdictPolicy((), "off", False, (), ("bleu", "judge"), (("bleu",),), ("judge",))
    records = {"combined": SignalRecord("combined", 90, 60, 1, 70), "combined:bleu": SignalRecord("x", 90, 30, 2, 60)}
    monkeypatch.setattr(core.verdict, "shipped_policy", lambda: ShippedPolicy(policy, records))
    rng = np.random.default_rng(6)
    bleu_a, bleu_b = rng.normal(10, 3, 30), rng.normal(14, 3, 30)
    v = _verdict({"bleu": (bleu_a, bleu_b)})
    comp = _comparison()
    v.combined, v.combined_signals = compare_combined(comp, {"bleu": bleu_a - bleu_b}, n_boot=200, n_perm=200), ["bleu"]
    s = verdict_sentence(v)
    assert s.startswith("v2 is better than v1: the combined evidence of bleu (in place of bleu and the judge: the "
                        "judge not run) favours it"), s
    assert "named people's preferred system in 30 of 90" in s  # the record of the set used, not the policy's
    monkeypatch.setattr(core.verdict, "shipped_policy", lambda: ShippedPolicy(
        VerdictPolicy((), "off", False, (), ("judge", "mme")), records))
    v = _verdict({"ubleu": (bleu_a, bleu_b)})
    s = verdict_sentence(v)
    assert s.startswith("No verdict on v1 vs v2: the verdict's combined test of the judge and mme could not run (the "
                        "judge not run; mme not computed); with the judge and mme it would run;"), s
    assert "as diagnostics, which do not decide: ubleu favours v2" in s
    # a set the policy allows in its place, in reach with one signal more: named (it was "no allowed set of what was
    # computed", which told nobody what to add)
    monkeypatch.setattr(core.verdict, "shipped_policy", lambda: ShippedPolicy(
        VerdictPolicy((), "off", False, (), ("judge", "mme"), (("bleu", "mme"), ("mme",))), records))
    s = verdict_sentence(_verdict({"bleu": (bleu_a, bleu_b), "ubleu": (bleu_a, bleu_b)}))
    assert "could not run (the judge not run; mme not computed); with mme as well it could combine bleu and mme;" in s, s
    # a judge ran but not the one the records were measured with: the hint asks for that one, not "the judge"
    from core.scoring import JudgeOutput
    from core.verdict import summarize_judge
    monkeypatch.setattr(core.verdict, "shipped_policy", lambda: ShippedPolicy(
        VerdictPolicy((), "off", False, (), ("judge", "ubleu")), records))
    v = _verdict({"ubleu": (bleu_a, bleu_b)})
    p_a = np.full(30, 0.7)
    v.judge = summarize_judge(_comparison(), JudgeOutput.from_probabilities(p_a, p_a, p_a, 0.05, "judge:llm|m"))
    s = verdict_sentence(v)
    assert "could not run (the llm judge has no measured record: the records are the learned judge's); with the " \
           "learned judge as well it would run;" in s, s


def test_tau_reads_people_s_rounding_error_as_a_tie_and_leaves_out_pairs_they_did_not_rate():
    """usr-topical's two Nucleus systems, rated exactly alike, had a mean difference of 2.6e-17, which the tau read
    as a direction; a system people did not rate at all counted in the tau's denominator."""
    def pair(diff, order):
        p = se.SystemPair("s", "x", "y", 20, 20, "overall", diff, diff - 0.5, diff + 0.5, None)
        p.calls["bleu"] = se.SignalCall(order, None, 0.5)
        return p
    assert se.kendall_tau([pair(1.0, "A"), pair(2.6e-17, "A")], "bleu") == pytest.approx(1 / 2)
    assert se.kendall_tau([pair(1.0, "A"), pair(math.nan, "A")], "bleu") == 1.0
    rows = se.summarize([pair(1.0, "A"), pair(math.nan, "A")], by_dataset=False)
    assert rows[0]["rated_pairs"] == 1 and rows[0]["system_pairs"] == 2 and rows[0]["dimension"] == "overall"
    assert "overall" in se.format_system_rows(rows)
    # people rated every system alike: no order to agree with (it said 0.000, 'unrelated to people')
    assert math.isnan(se.kendall_tau([pair(0.0, "A"), pair(2.6e-17, "B")], "bleu"))
    flat = se.summarize([pair(0.0, "A"), pair(0.0, "B")], by_dataset=False)
    assert flat[0]["kendall_tau"] != flat[0]["kendall_tau"] and "Kendall tau-a" in se.format_system_rows(flat)


def test_level_system_says_why_a_file_has_no_pair_and_which_system_people_did_not_rate(tmp_path, capsys):
    """A file whose systems share too few contexts got the bare error (each set's reason came after scoring, and
    the early refusal dropped it); a system people did not rate is named, and its pairs are left out of the tau."""
    few = tmp_path / "few.jsonl"
    few.write_text("".join(json.dumps({"id": f"{s}{i}", "system": s, "context": [f"q {s} {i}?"], "response": "some reply",
                                       "references": ["an answer"], "scores": {"overall": 3.0}}) + "\n"
                           for s in ("a", "b") for i in range(6)))
    assert cli(["meta-eval", "--level", "system", str(few), "--metrics", "bleu", "--no-judge", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "share fewer than 5 contexts: skipped" in err and "no data set holds two or more systems" in err
    rows = []
    for i in range(8):
        for s, reply, rating in (("a", "yes a good answer", 4.0), ("b", "no", 2.0), ("c", "maybe so", None)):
            rows.append({"id": f"q{i}", "system": s, "context": [f"question {i}?"], "response": f"{reply} {i}",
                         "references": [f"yes a fine answer {i}"], **({"scores": {"overall": rating}} if rating else {})})
    part = tmp_path / "part.jsonl"
    part.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert cli(["meta-eval", "--level", "system", str(part), "--metrics", "bleu", "--no-judge", "--format", "csv"]) == 0
    said = capsys.readouterr()
    assert "2 pair(s) without people's ratings on both sides (c: no overall rating): not in Kendall tau" in said.err
    assert "part,overall,bleu,3,1," in said.out  # three system pairs, one that people rated


def test_a_development_set_under_another_name_keeps_its_judge_note_and_held_out_metrics(shared):
    """From a researcher's audit: usr-persona's rows under the name 'mydata' lost the note that the judge trained on
    the set's other contexts (and its learned metrics were not held out from it)."""
    import dataclasses

    from core.data import load_jsonl
    exs = load_jsonl(shared("eval/usr-persona.jsonl"))
    systems = sorted({e.system for e in exs})[:3]
    contexts = list(dict.fromkeys(tuple(e.context) for e in exs))[:8]
    rows = [dataclasses.replace(e, dataset="mydata") for e in exs if e.system in systems and tuple(e.context)
            in contexts]
    said = []
    pairs = se.evaluate_dataset("mydata", rows, ["bleu"], judge=False, n_boot=200, n_perm=200, log=said.append)
    assert pairs and all(p.dataset == "mydata" and p.rated_set == "usr-persona" for p in pairs)
    assert any("rows of the development set usr-persona" in line for line in said)
    judged = [dataclasses.replace(p, calls={**p.calls, JUDGE: se.SignalCall("A", None)}) for p in pairs]
    table = se.summarize(judged)
    assert all(r["judge_trained_on"] for r in table if r["signal"] == JUDGE)
    assert "the judge trained on this set's other contexts" in se.format_system_rows(table)
    # a set that is no development set's rows has no such note
    mine = se.summarize([dataclasses.replace(p, rated_set="") for p in judged])
    assert not any(r["judge_trained_on"] for r in mine)
