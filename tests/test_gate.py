"""The regression gate (core.gating, `dialeval gate` and `dialeval plan`): its three requirements, exit codes and CI
outputs from the installed command, the power statement, and a simulation check of the power arithmetic."""
import json
import math
import subprocess
import sys
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from core import stats
from core.gating import contexts_needed, detectable_difference

WORDS = "the a cat dog sat ran on mat big small red blue fast slow home park tea cup sun rain".split()


def _rows(n: int, system: str, keep: float, seed: int = 0, filler: int = 1000) -> list[dict]:
    """``n`` contexts; the reply keeps the first ``keep`` share of the reference's 8 words, the rest drawn (from
    seed ``filler`` + the context's number)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        ref = " ".join(rng.choice(WORDS, 8))
        kept = ref.split()[:round(8 * keep)]
        reply = " ".join(kept + list(np.random.default_rng(filler + i).choice(WORDS, 8 - len(kept))))
        out.append({"id": f"c{i}", "context": [f"what about topic {i}?"], "response": reply, "references": [ref],
                    "system": system})
    return out


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def gate_cmd(tmp_path):
    """``gate_cmd(*args, env=...)``: the installed ``dialeval`` command in ``tmp_path``."""
    exe = Path(sys.executable).parent / "dialeval"

    def run(*args, env=None):
        import os
        return subprocess.run([str(exe), *args], capture_output=True, text=True, cwd=tmp_path,
                              env={**os.environ, **(env or {})}, timeout=600)
    return run


FAST = ["--metrics", "bleu", "--no-judge", "--n-boot", "500", "--n-perm", "500", "--quiet"]


@pytest.mark.slow  # three gate runs in child processes; the quick tier keeps the markdown/JUnit run
def test_a_worse_candidate_fails_and_the_baseline_against_itself_passes_not_worse_but_not_better(gate_cmd, tmp_path):
    base = _write(tmp_path / "base.jsonl", _rows(40, "v1", 0.75))
    worse = _write(tmp_path / "worse.jsonl", _rows(40, "v2", 0.25))
    same = _write(tmp_path / "same.jsonl", [dict(r, system="v1-again") for r in _rows(40, "v1", 0.75)])
    r = gate_cmd("gate", str(base), str(worse), *FAST)
    assert r.returncode == 1, r.stderr
    first = r.stdout.splitlines()[0]
    assert first.startswith("FAIL: candidate is worse on bleu: -"), first
    r = gate_cmd("gate", str(base), str(same), *FAST)
    assert r.returncode == 0 and r.stdout.startswith("PASS: no significant difference on bleu"), r.stdout
    assert "could go unseen" not in r.stdout.splitlines()[0]  # identical replies: no spread, no power statement
    alike = _write(tmp_path / "alike.jsonl", _rows(40, "v1-alike", 0.75, filler=5000))  # as good, other words
    r = gate_cmd("gate", str(base), str(alike), *FAST)
    assert r.returncode == 0 and "could go unseen" in r.stdout.splitlines()[0], r.stdout  # beside "no difference"
    r = gate_cmd("gate", str(base), str(same), *FAST, "--require", "better")
    assert r.returncode == 1 and r.stdout.startswith("FAIL: candidate is not significantly better on bleu"), r.stdout
    # a better candidate passes "better"; the gate's exit codes: 2 for bad flags or input
    r = gate_cmd("gate", str(worse), str(base), *FAST, "--require", "better")
    assert r.returncode == 0 and r.stdout.startswith("PASS: candidate is better on bleu"), r.stdout
    assert gate_cmd("gate", str(base), str(same), *FAST, "--require", "worse").returncode == 2
    assert gate_cmd("gate", str(base), str(same), *FAST, "--by", "mme").returncode == 2
    assert gate_cmd("gate", str(base), str(tmp_path / "missing.jsonl"), *FAST).returncode == 2


def test_a_small_pilot_cannot_show_non_inferiority_and_plan_names_more_contexts(gate_cmd, tmp_path):
    base = _write(tmp_path / "base.jsonl", _rows(10, "v1", 0.5, seed=3))
    # made the same way (half the reference kept), other filler words: as good, but 10 contexts cannot show it
    cand = _write(tmp_path / "cand.jsonl", _rows(10, "v2", 0.5, seed=3, filler=5000))
    r = gate_cmd("gate", str(base), str(cand), *FAST, "--require", "non-inferior", "--margin", "2")
    assert r.returncode == 1, r.stdout + r.stderr
    assert r.stdout.startswith("FAIL: non-inferiority not shown (the interval reaches -"), r.stdout
    assert "more contexts would narrow it)" in r.stdout.splitlines()[0], r.stdout
    assert "; margin 2.00" in r.stdout.splitlines()[0]
    plan = gate_cmd("plan", str(base), str(cand), *FAST, "--by", "bleu", "--effect", "2", "--format", "json")
    assert plan.returncode == 0, plan.stderr
    needed = json.loads(plan.stdout)["contexts_needed"]
    assert needed > 10
    text = gate_cmd("plan", str(base), str(cand), *FAST, "--by", "bleu", "--effect", "2").stdout
    assert f"compare about {needed} contexts" in text


def test_markdown_the_step_summary_and_junit_xml(gate_cmd, tmp_path):
    base = _write(tmp_path / "base.jsonl", _rows(30, "v1", 0.75))
    worse = _write(tmp_path / "worse.jsonl", _rows(30, "v2", 0.25))
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    r = gate_cmd("gate", str(base), str(worse), *FAST, "--format", "markdown", "--junit", "gate.xml",
                 env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert r.returncode == 1
    assert r.stdout.startswith("❌ **FAIL**: candidate is worse on bleu"), r.stdout
    assert "| metric |" in r.stdout  # the verdict's table follows, as a pull-request comment shows it
    text = summary.read_text()
    assert text.startswith("earlier step\n❌ **FAIL**") and "| metric |" in text  # appended, not replaced
    suite = ET.parse(tmp_path / "gate.xml").getroot()
    assert suite.tag == "testsuite" and suite.get("tests") == "1" and suite.get("failures") == "1"
    case = suite.find("testcase")
    assert case.get("name") == "bleu: not-worse" and case.find("failure").get("message").startswith("FAIL:")
    ok = gate_cmd("gate", str(worse), str(base), *FAST, "--junit", "ok.xml", "--format", "json")
    assert ok.returncode == 0 and json.loads(ok.stdout)["passed"] is True
    assert ET.parse(tmp_path / "ok.xml").getroot().find("testcase").find("failure") is None


def test_the_judge_is_planned_at_the_spread_of_an_even_win_rate():
    """`plan --by judge` on a lopsided pilot (the candidate winning 90 %) promised about 2.5 times fewer contexts
    than on an even one, for the same 5 points near the 50 % the gate tests against."""
    from core.gating import Criterion, planning_interval
    lopsided = Criterion("judge", 20, 20, 0.4, 0.3, 0.5, "candidate", math.nan, 0.95)
    low, high = planning_interval(lopsided)
    assert (high - low) == pytest.approx(0.2 * 0.5 / math.sqrt(0.9 * 0.1)) and (low + high) / 2 == pytest.approx(0.4)
    even = Criterion("judge", 20, 20, 0.0, -0.1, 0.1, None, math.nan, 0.95)
    assert planning_interval(even) == pytest.approx((-0.1, 0.1))
    metric = Criterion("bleu", 20, 20, 3.0, 1.0, 5.0, "candidate", math.nan, 0.95)
    assert planning_interval(metric) == (1.0, 5.0)


@pytest.mark.parametrize("n_contexts", [40, 120])
def test_a_planted_difference_of_the_detectable_size_is_found_at_about_the_stated_power(n_contexts):
    """Simulated paired data: the detectable difference read off a pilot's interval, planted in new comparisons
    of the same size, is detected (randomization p < 0.05 and the interval excludes 0) in about 80 % of them;
    contexts_needed for the same difference gives back about the pilot's size."""
    rng = np.random.default_rng(7)
    pilot_a, pilot_b = rng.normal(0, 1, n_contexts), rng.normal(0, 1, n_contexts)
    p = stats.paired_comparison(pilot_a, pilot_b, n_boot=1000, n_perm=200, seed=1)
    d = detectable_difference(p.low, p.high)
    assert contexts_needed(p.low, p.high, n_contexts, d) in range(n_contexts - 2, n_contexts + 3)
    hits = 0
    runs = 150
    for i in range(runs):
        a = rng.normal(d, 1, n_contexts)
        b = rng.normal(0, 1, n_contexts)
        r = stats.paired_comparison(a, b, n_boot=300, n_perm=300, seed=i)
        hits += r.verdict == "A better"
    # 80 % power, with the pilot's own noise in d: 150 runs give a binomial sd of ~3.3 points
    assert 0.65 <= hits / runs <= 0.93, hits / runs
    assert math.isclose(detectable_difference(-1.0, 1.0), (1.959964 + 0.841621) / 1.959964, rel_tol=1e-5)


@pytest.mark.slow  # MME and the judge over the demo's 60 contexts
def test_a_candidate_with_generic_replies_fails_the_default_gate(gate_cmd, tmp_path, repo_root):
    rows = [json.loads(line) for line in (repo_root / "demo" / "demo.jsonl").read_text().splitlines() if line]
    base = [r for r in rows if r["system"] == "SmolLM2-135M"]
    generic = ["i don't know.", "ok.", "yes.", "I'm not sure."]
    cand = [dict(r, system="SmolLM2-generic", response=generic[i % 4] if i % 2 == 0 else r["response"])
            for i, r in enumerate(base)]
    r = gate_cmd("gate", str(_write(tmp_path / "base.jsonl", base)), str(_write(tmp_path / "cand.jsonl", cand)),
                 "--quiet")
    assert r.returncode == 1, r.stdout + r.stderr
    from core.verdict_policy import shipped_policy
    checks = r.stdout.split("\n\n")[0].splitlines()
    policy = shipped_policy().policy
    if policy.combine:  # what the verdict decides on: its combined test, and the judge that may veto it
        combined = "+".join(policy.combine)
        assert checks[0].startswith(f"FAIL: candidate is worse on the combined test of {combined}: -"), checks
        assert [c for c in checks[1:] if " on the judge: wins " in c] or "judge" not in policy.combine_vetoes, checks
    elif policy.trusts("judge"):
        assert checks[0].startswith("FAIL: candidate is worse on the judge: wins "), checks
    else:  # the deciding metric of the shipped policy
        assert checks[0].startswith(f"FAIL: candidate is worse on {policy.deciding_metrics[0]}: -"), checks
    judged = gate_cmd("gate", str(tmp_path / "base.jsonl"), str(tmp_path / "cand.jsonl"), "--by", "judge", "--quiet")
    assert judged.returncode == 1 and judged.stdout.startswith("FAIL: candidate is worse on the judge: wins "), \
        judged.stdout


def test_too_few_randomizations_and_a_margin_that_does_nothing_are_said_before_anything_runs(tmp_path, capsys):
    """`--n-perm 10` made every test non-significant (smallest p 1/11), so a gate passed a candidate 28 BLEU worse;
    `--margin` without `--require non-inferior` was ignored without a word."""
    from core.cli import main
    base = _write(tmp_path / "base.jsonl", _rows(12, "v1", 0.75))
    worse = _write(tmp_path / "worse.jsonl", _rows(12, "v2", 0.25))
    assert main(["gate", str(base), str(worse), "--metrics", "bleu", "--no-judge", "--n-perm", "10", "--quiet"]) == 2
    assert "--n-perm 10: with 10 randomizations the smallest p is 1/11" in capsys.readouterr().err
    assert main(["compare", str(base), str(worse), "--metrics", "bleu", "--no-judge", "--n-perm", "50", "--level",
                 "0.99", "--quiet"]) == 2
    assert "at least 100" in capsys.readouterr().err
    assert main(["gate", str(base), str(worse), *FAST, "--margin", "3"]) == 1  # worse: fails
    assert "--margin 3 has no effect: it is the non-inferiority margin" in capsys.readouterr().err


def test_differences_that_do_not_vary_state_no_detectable_difference(tmp_path, capsys):
    """A file against a copy of itself read "(< 0.000 could go unseen)", and plan promised any difference with 2
    contexts."""
    from core.cli import main
    base = _write(tmp_path / "base.jsonl", _rows(12, "v1", 0.75))
    same = _write(tmp_path / "same.jsonl", [dict(r, system="v1-again") for r in _rows(12, "v1", 0.75)])
    assert main(["compare", str(base), str(same), *FAST]) == 0
    out = capsys.readouterr().out
    assert "no significant difference" in out and "could go unseen" not in out, out
    assert main(["plan", str(base), str(same), *FAST, "--by", "bleu", "--effect", "1"]) == 2
    err = capsys.readouterr().err
    assert "do not vary" in err and "2 contexts" not in err, err
    assert math.isnan(detectable_difference(1.0, 1.0)) and detectable_difference(0.0, 1.0) > 0


def test_a_candidate_that_stops_answering_fails_and_all_blank_is_a_fail_not_an_error(tmp_path, capsys):
    """A candidate blank on 8 of 12 contexts passed ("no significant difference on bleu ... over 4 contexts": every
    metric leaves a blank reply's pair out); one blank everywhere stopped with exit 2 ("nothing to gate on")."""
    from core.cli import main
    base = _write(tmp_path / "base.jsonl", _rows(12, "v1", 0.75))
    rows = _rows(12, "v2", 0.75)
    blank = _write(tmp_path / "blank.jsonl", [dict(r, response="" if i < 8 else r["response"])
                                              for i, r in enumerate(rows)])
    assert main(["gate", str(base), str(blank), *FAST, "--format", "json"]) == 1
    checks = json.loads(capsys.readouterr().out)["checks"]
    assert [c["passed"] for c in checks] == [False, False]  # the blank replies fail; bleu's 4 pairs cannot
    assert "(4 contexts: fewer than 5 give no interval or p" in checks[1]["reason"]
    assert "bleu: +0.000 [" in checks[1]["reason"]  # a tie, never '-0.000'
    assert checks[0]["require"] == "no more than the baseline's" and checks[1]["require"] == "not-worse"
    assert checks[0]["reason"].startswith("FAIL: candidate answers less: the candidate's reply is blank in 8 of 12 "
                                          "pairs, the baseline's in 0")
    none = _write(tmp_path / "none.jsonl", [dict(r, response=" ") for r in rows])
    assert main(["gate", str(base), str(none), *FAST]) == 1
    assert capsys.readouterr().out.startswith("FAIL: candidate answers less: the candidate's reply is blank in 12 of 12")
    # nothing scored a pair, yet the criterion a scoring run reads stays, failed: a CI's JUnit history keeps its case
    # (it held the blank-replies case alone); the report written with --quiet says nothing on stderr
    junit, report = tmp_path / "none.xml", tmp_path / "none.json"
    assert main(["gate", str(base), str(none), *FAST, "--format", "json", "--junit", str(junit), "-o", str(report)]) == 1
    assert [c["id"] for c in json.loads(report.read_text())["checks"]] == [
        "blank replies: no more than the baseline's", "bleu: not-worse"]
    assert [t.get("name") for t in ET.parse(junit).getroot()] == ["blank replies: no more than the baseline's",
                                                                  "bleu: not-worse"]
    assert "wrote" not in capsys.readouterr().err
    # blank replies no more than the baseline's: said, and the gate is read on its criterion (the 4 answered
    # pairs are unchanged: nothing could be worse)
    assert main(["gate", str(blank), str(blank), *FAST]) == 0
    out = capsys.readouterr().out
    assert "PASS: no more blank replies than the baseline" in out and "too few" not in out
    # a verdict made from replies in memory is gated on its own blank replies (it passed: 'no significant difference')
    from core import compare_replies
    from core.gating import gate_verdict
    with pytest.warns(UserWarning, match="8 of 12 rows have a blank response"):
        v = compare_replies([r["context"] for r in rows], [r["response"] for r in rows],
                            [("" if i < 8 else r["response"]) for i, r in enumerate(rows)],
                            [r["references"] for r in rows], metrics="bleu", judge=False, n_boot=200, n_perm=200)
    result = gate_verdict(v, by="bleu")
    assert not result.passed and result.checks[0].reason.startswith("FAIL: candidate answers less: the candidate's "
                                                                    "reply is blank in 8 of 12")


def test_a_candidate_that_leaves_inputs_out_fails(tmp_path, capsys):
    """A candidate missing 2 of 8 contexts passed ("no significant difference on bleu ... over 6 contexts"): the
    rows without a partner were listed at the bottom and not compared."""
    from core.cli import main
    base = _write(tmp_path / "base.jsonl", _rows(12, "v1", 0.75))
    short = _write(tmp_path / "short.jsonl", _rows(12, "v2", 0.75)[2:])
    assert main(["gate", str(base), str(short), *FAST, "--format", "json"]) == 1
    checks = json.loads(capsys.readouterr().out)["checks"]
    assert [c["passed"] for c in checks] == [False, True] and checks[0]["criterion"]["name"] == "missing replies"
    assert checks[0]["reason"].startswith("FAIL: candidate answers fewer inputs: 2 of the baseline's rows have no "
                                          "candidate reply, 0 of the candidate's no baseline reply (10 pairs")
    # the baseline leaving inputs out is not the candidate's fault
    assert main(["gate", str(short), str(base), *FAST]) == 0
    assert "missing" not in capsys.readouterr().out.split("\n\n")[0]


def test_the_default_criterion_is_the_dimension_the_verdict_reads(tmp_path, capsys):
    """With people's ratings on two dimensions the gate took the first one with a winner (Grammar, the candidate
    better) and passed, under a verdict that named the baseline better on Overall."""
    from core.cli import main
    base = [dict(r, scores={"Grammar": 3.0, "Overall": 4.0}) for r in _rows(12, "v1", 0.5)]
    cand = [dict(r, scores={"Grammar": 4.0 + 0.1 * (i % 2), "Overall": 2.5 + 0.1 * (i % 3)})
            for i, r in enumerate(_rows(12, "v2", 0.5, filler=5000))]
    assert main(["gate", str(_write(tmp_path / "b.jsonl", base)), str(_write(tmp_path / "c.jsonl", cand)),
                 *FAST]) == 1
    out = capsys.readouterr().out
    assert out.startswith("FAIL: candidate is worse on human:Overall: -1.") and "v1 is better than v2" in out, out
    # human:overall is the inputs' Overall, as the leaderboard's --rank-by reads it (it was refused), in the API too
    assert main(["gate", str(tmp_path / "b.jsonl"), str(tmp_path / "c.jsonl"), *FAST, "--by", "human:overall"]) == 1
    assert capsys.readouterr().out.startswith("FAIL: candidate is worse on human:Overall: -1.")
    import core
    result = core.gate(str(tmp_path / "b.jsonl"), str(tmp_path / "c.jsonl"), by="human:overall", metrics="bleu",
                       judge=False, n_boot=500, n_perm=500)
    assert not result.passed and [c.criterion.name for c in result.checks] == ["human:Overall"]
    assert str(result).startswith("FAIL: candidate is worse on human:Overall")  # print(result): the command's text


def test_criteria_are_checked_before_anything_is_scored(tmp_path, capsys, monkeypatch):
    """`gate --by foo` scored every metric and ran the judge before saying 'not compared here'."""
    from core.cli import gate as gate_cli
    from core.cli import main
    base = _write(tmp_path / "base.jsonl", _rows(12, "v1", 0.75))
    cand = _write(tmp_path / "cand.jsonl", _rows(12, "v2", 0.5))
    scored = []
    monkeypatch.setattr(gate_cli, "verdict_from", lambda *a, **k: scored.append(1) or (_ for _ in ()).throw(
        AssertionError("scored")))
    for by, extra, said in (("foo", [], "--by foo: unknown metric(s) 'foo'"),
                            ("foo", [], "; or judge, combined, human:DIM"),  # a criterion is not only a metric
                            ("judg", [], "--by judg: unknown criterion 'judg' (did you mean 'judge'?)"),
                            ("judge", [], "--by judge with --no-judge"),
                            ("mme", [], "--by mme: it is not among --metrics bleu"),
                            ("combined", [], "--by combined: the verdict's combined test needs"),
                            ("human:overall", ["--no-human"], "--by human:overall with --no-human")):
        assert main(["gate", str(base), str(cand), *FAST, "--by", by, *extra]) == 2, by
        assert said in capsys.readouterr().err, by
    assert not scored
    monkeypatch.undo()
    assert main(["gate", str(base), str(cand), *FAST, "--by", "human:overall"]) == 2
    assert "--by human:overall: the inputs have no such human rating; they have none" in capsys.readouterr().err
    assert main(["gate", str(base), str(cand), *FAST, "--by", "BLEU"]) == 1  # a metric's name as --metrics reads it


def test_plan_refuses_all_and_a_checkpoint_its_criterion_does_not_read(tmp_path, capsys):
    """`--by all` gated on ADEM alone ('all' read as every metric, the first taken); `plan --by bleu --checkpoint x`
    ran the judge over every pair."""
    from core.cli import main
    base = _write(tmp_path / "base.jsonl", _rows(12, "v1", 0.75))
    cand = _write(tmp_path / "cand.jsonl", _rows(12, "v2", 0.5))
    assert main(["plan", str(base), str(cand), "--by", "all", "--effect", "1"]) == 2
    assert "--by all: name criteria one by one" in capsys.readouterr().err
    assert main(["gate", str(base), str(cand), *FAST, "--by", "all"]) == 2
    assert "--by all: name criteria one by one" in capsys.readouterr().err
    assert main(["plan", str(base), str(cand), "--by", "bleu", "--checkpoint", "mine", "--effect", "1"]) == 2
    assert "--by bleu does not read the judge" in capsys.readouterr().err


def test_a_step_summary_that_cannot_be_written_changes_nothing_else(tmp_path, capsys, monkeypatch):
    """A GITHUB_STEP_SUMMARY in a folder that does not exist turned FAIL/PASS into exit 2 ("No such file or
    directory", not naming it) and left the JUnit file unwritten."""
    from core.cli import main
    base = _write(tmp_path / "base.jsonl", _rows(12, "v1", 0.75))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "no" / "summary.md"))
    assert main(["gate", str(base), str(base), *FAST, "--junit", str(tmp_path / "j.xml")]) == 0
    assert "GITHUB_STEP_SUMMARY=" in capsys.readouterr().err and (tmp_path / "j.xml").exists()
    # without --quiet the JUnit file is said as every written file is (it was written in silence)
    loud = [a for a in FAST if a != "--quiet"]
    assert main(["gate", str(base), str(base), *loud, "--junit", str(tmp_path / "k.xml")]) == 0
    assert f"wrote {tmp_path / 'k.xml'}" in capsys.readouterr().err


def test_junit_is_checked_as_out_is_before_anything_runs(tmp_path, capsys):
    """`--junit` overwrote an input file with XML, and a folder that does not exist was found after the whole gate
    had run."""
    from core.cli import main
    base = _write(tmp_path / "base.jsonl", _rows(12, "v1", 0.75))
    cand = _write(tmp_path / "cand.jsonl", _rows(12, "v2", 0.5))
    before = cand.read_bytes()
    for junit, extra, said in ((str(cand), [], "is the input file"), (str(tmp_path), [], "is a folder"),
                               (str(tmp_path / "no" / "j.xml"), [], "does not exist"),
                               (str(tmp_path / "g.txt"), ["--out", str(tmp_path / "g.txt")], "is also --out")):
        assert main(["gate", str(base), str(cand), *FAST, "--junit", junit, *extra]) == 2
        captured = capsys.readouterr()
        assert f"--junit {junit}" in captured.err and said in captured.err and not captured.out, captured
    assert cand.read_bytes() == before and not (tmp_path / "g.txt").exists()


def test_plan_by_a_metric_computes_that_metric_only(tmp_path, capsys, monkeypatch):
    """`plan --by bleu` without --metrics scored every default metric and ran the judge (about 43 s where BLEU
    alone takes 1)."""
    from core.cli import main, plan
    base = _write(tmp_path / "base.jsonl", _rows(12, "v1", 0.75))
    cand = _write(tmp_path / "cand.jsonl", _rows(12, "v2", 0.5))
    asked = {}
    real = plan.verdict_from
    monkeypatch.setattr(plan, "verdict_from", lambda a, *rest: asked.update(metrics=a.metrics, judge=a.judge) or
                        real(a, *rest))
    assert main(["plan", str(base), str(cand), "--by", "bleu", "--effect", "5", "--quiet", "--n-boot", "500",
                 "--n-perm", "500"]) == 0
    assert asked == {"metrics": ["bleu"], "judge": None}
    assert "in bleu with 80 % power" in capsys.readouterr().out
    assert main(["plan", str(base), str(cand), "--by", "bleu", "--metrics", "ubleu", "--effect", "5"]) == 2
    assert "--by bleu: it is not among --metrics ubleu" in capsys.readouterr().err
    assert main(["plan", str(base), str(cand), "--by", "BLEU", "--metrics", "bleu", "--no-judge", "--effect", "5",
                 "--quiet", "--n-boot", "500", "--n-perm", "500"]) == 0  # named as --metrics names it
    assert main(["plan", str(base), str(cand), "--by", "judge", "--no-judge", "--effect", "0.1"]) == 2
    assert "--by judge with --no-judge: the judge is the criterion" in capsys.readouterr().err
    assert main(["plan", str(base), str(cand), "--by", "human:overall", "--effect", "0.5"]) == 2
    assert "--by human:overall (people's ratings alone) and no judge leave nothing to compare: these rows carry no " \
           "human ratings" in capsys.readouterr().err


def test_the_api_s_gate_gives_the_command_s_decision_and_is_truthy_when_it_passes(tmp_path, capsys):
    """core.gate (the one-call API's gate, as ARCHITECTURE.md lists it) gives the checks, the verdict and the JSON
    `dialeval gate` gives, on the same files and settings."""
    import core
    from core.cli import main
    from core.report import to_json
    base = _write(tmp_path / "base.jsonl", _rows(12, "v1", 0.75))
    worse = _write(tmp_path / "worse.jsonl", _rows(12, "v2", 0.25))
    settings = {"n_boot": 500, "n_perm": 500}
    for candidate, code in ((worse, 1), (base, 0)):
        assert main(["gate", str(base), str(candidate), *FAST, "--format", "json"]) == code
        printed = capsys.readouterr()
        command = json.loads(printed.out)
        unchanged = "the candidate gives the baseline's reply in all 12 pairs (the same file twice?)"
        assert (unchanged in printed.err) is (candidate == base)  # said beside a pass that nothing changed
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            result = core.gate(str(base), str(candidate), metrics="bleu", judge=False, **settings)
        assert any(unchanged in str(w.message) for w in said) is (candidate == base)
        assert not any("--require" in str(w.message) for w in said)  # the API's setting is require='better'
        assert any("(require='better' fails it)" in str(w.message) for w in said) is (candidate == base)
        assert bool(result) is (code == 0) and result.passed is (code == 0)
        # the checks and the verdict as the command wrote them: plain JSON data (a margin that is not a number
        # was NaN, which json.dumps wrote as invalid JSON), and render("json") the command's very text
        assert json.loads(json.dumps(result.to_dict(), allow_nan=False)) == command
        assert result.render("json") == to_json(command) and result.render("json") + "\n" == printed.out
        assert result.render().splitlines()[0] == command["checks"][0]["reason"]
    with pytest.raises(ValueError, match="format 'csv': choose text, markdown or json"):
        result.render("csv")
    from core.gating import unchanged_candidate_note  # the note follows the requirement asked for
    assert unchanged_candidate_note(result.verdict).endswith("so it passes as not worse (--require better fails it)")
    assert unchanged_candidate_note(result.verdict, "better").endswith("nothing changed, so it cannot be better")
    # where another check failed (rows the candidate left without a reply), no word of passing
    assert unchanged_candidate_note(result.verdict, passed=False) == ("the candidate gives the baseline's reply in "
                                                                       "all 12 pairs compared: nothing changed in them")
    with pytest.raises(ValueError, match="require='worse'"):
        core.gate(str(base), str(worse), require="worse", metrics="bleu", judge=False)
    import core.engine
    scored = []  # every refusal below comes before anything is scored, as the command's do
    real = core.engine.score_comparison
    core.engine.score_comparison = lambda *a, **k: scored.append(1) or real(*a, **k)
    try:
        for by, judge, message in (("mme", False, "by='mme': it is not among the metrics compared"),
                                   ("judge", None, "by='judge': the judge is the criterion and it does not run"),
                                   ("combined", False, "by='combined': the verdict's combined test needs"),
                                   ("human:overall", False, "by='human:overall': the inputs have no such human rating"),
                                   ("all", False, "by='all': name criteria one by one")):
            with pytest.raises(ValueError, match=message):
                core.gate(str(base), str(worse), by=by, metrics="bleu", judge=judge)
        assert scored == []
    finally:
        core.engine.score_comparison = real
    assert core.gate(str(base), str(worse), by="BLEU", metrics="bleu", judge=False, **settings).checks[0].criterion.name \
        == "bleu"  # 'BLEU' is bleu, as metrics= reads it
    with pytest.warns(UserWarning) as said:
        twice = core.gate(str(base), str(worse), by="bleu,BLEU", metrics="bleu", judge=False, **settings)
    assert [str(w.message).count("by=bleu: the verdict never lets bleu decide alone") for w in said] == [1]
    assert [c.criterion.name for c in twice.checks] == ["bleu"]  # one check (and one JUnit case) per criterion
    with pytest.raises(TypeError, match="n_bot"):
        core.gate(str(base), str(worse), metrics="bleu", judge=False, n_bot=3)


def test_pairs_that_answer_different_inputs_fail_the_gate_and_nothing_paired_is_refused_everywhere(tmp_path, capsys):
    """Rows paired by id whose contexts all differ passed the gate ('PASS: candidate is better on bleu'), the warning
    on line 7 of stdout only; core.gate and core.compare passed files that share no row at all (the command
    refused them)."""
    import warnings

    import core
    from core.cli import main
    rows = _rows(12, "v1", 0.75)
    base = _write(tmp_path / "base.jsonl", rows)
    other = _write(tmp_path / "other.jsonl", [dict(r, context=[f"something else {i}?"], system="v2")
                                              for i, r in enumerate(_rows(12, "v2", 0.75, filler=5000))])
    unrelated = _write(tmp_path / "unrelated.jsonl", [dict(r, id=f"x{i}", context=[f"unrelated {i}?"], system="v3")
                                                      for i, r in enumerate(rows)])
    assert main(["gate", str(base), str(other), *FAST]) == 1
    out, err = capsys.readouterr()
    assert out.startswith("FAIL: not the same inputs: 12 of 12 pairs were aligned by id but have different contexts")
    assert "12 of 12 pairs were aligned by id but have different contexts" in err  # on stderr too
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = core.gate(str(base), str(other), metrics="bleu", judge=False, n_boot=500, n_perm=500)
    assert not result and "aligned by id but have different contexts" in " ".join(str(w.message) for w in caught)
    assert "so their replies answer different inputs" in result.verdict.sentence
    for call in (core.gate, core.compare):
        with pytest.raises(ValueError, match="no row of 'v1' could be paired with a row of 'v3'"):
            call(str(base), str(unrelated), metrics="bleu", judge=False)
    # a context that only ends with an empty turn, or differs in case and spacing, is the same input
    same = _write(tmp_path / "same.jsonl", [dict(r, context=[r["context"][0].upper() + "  ", ""], system="v2")
                                            for r in rows])
    assert main(["gate", str(base), str(same), *FAST]) == 0 and "not the same inputs" not in capsys.readouterr().out
    one = _write(tmp_path / "one.jsonl", [dict(r, system="v2", context=["else?"] if i == 0 else r["context"])
                                          for i, r in enumerate(rows)])
    assert main(["gate", str(base), str(one), *FAST]) == 1
    assert capsys.readouterr().out.startswith("FAIL: not the same inputs: 1 of 12 pairs was aligned by id but has")


def test_a_judge_that_decided_no_pair_is_said_so_not_as_a_win_rate_of_nan():
    """'no significant difference on the judge: wins nan % [0–100 %] of the 0 pairs it decided' (identical replies:
    every pair a tie) reached the gate's line, its JSON and its JUnit message."""
    from core.gating import Criterion
    from core.verdict_policy import JUDGE
    none = Criterion(JUDGE, 0, 60, math.nan, -0.5, 0.5, None, math.nan, 0.95)
    assert none.evidence() == "it decided none of the pairs (each a tie)"
    some = Criterion(JUDGE, 40, 60, 0.1, 0.0, 0.2, None, math.nan, 0.95)
    assert some.evidence() == "wins 60 % [50–70 %] of the 40 pairs it decided"


def test_a_gate_line_without_a_winner_whose_interval_excludes_0_says_which_p_decides():
    """'PASS: no significant difference on bleu: +1.2 [+0.3, +2.1]' read as contradicting itself (the interval
    excludes 0): compare's table and the leaderboard say which p decides, the gate now says it too."""
    from core.gating import Criterion, check
    from core.verdict_policy import JUDGE
    metric = Criterion("bleu", 30, 30, 1.2, 0.3, 2.1, None, 0.9, 0.95, p=0.071, p_name="randomization p")
    line = check(metric).reason
    assert line.startswith("PASS: no significant difference on bleu") and "randomization p 0.071 >= 0.05" in line
    assert "randomization p" in check(metric, "better").reason
    assert "randomization p" not in check(metric, "non-inferior", margin=0.5).reason  # decided by the margin
    judge = Criterion(JUDGE, 40, 40, 0.14, 0.01, 0.27, None, 0.1, 0.95, p=0.06, p_name="sign test p")
    assert "sign test p 0.06" in check(judge).reason
    holds_0 = Criterion("bleu", 30, 30, 1.2, -0.3, 2.1, None, 0.9, 0.95, p=0.2, p_name="randomization p")
    assert "randomization p" not in check(holds_0).reason


def test_a_one_file_gate_says_which_system_is_the_baseline(tmp_path, capsys):
    """A file of two systems without --system-a/--system-b was gated in the file's order without a word: which
    system is the baseline decides PASS or FAIL."""
    from core.cli import main
    both = _write(tmp_path / "both.jsonl", _rows(12, "v1", 0.75) + _rows(12, "v2", 0.25))
    assert main(["gate", str(both), *FAST]) == 1
    assert "the baseline is v1, the candidate v2 (in the file's order" in capsys.readouterr().err
    assert main(["gate", str(both), *FAST, "--system-a", "v2", "--system-b", "v1"]) == 0
    assert "the baseline is" not in capsys.readouterr().err
    import core
    with pytest.warns(UserWarning, match=r"the baseline is v1, the candidate v2 \(in the file's order; system_a="):
        assert not core.gate(str(both), metrics="bleu", judge=False, n_boot=500, n_perm=500)


def test_a_junit_case_is_named_as_asked_whichever_signals_the_combined_test_used():
    """A CI's test history follows a case by its name: the combined test's case was named after the signals it
    used ('combined: bert_ruber+judge+ubleu: not-worse'), so a run where the judge did not run renamed it."""
    from core.gating import Criterion, check, junit_xml
    names = []
    for used in ("combined: bert_ruber+judge+ubleu", "combined: bert_ruber+ubleu"):
        c = Criterion(used, 30, 30, -1.0, -1.5, -0.5, "baseline", 0.3, 0.95)
        case = ET.fromstring(junit_xml([check(c)], "B is better")).find("testcase")
        names.append(case.get("name"))
        assert case.find("failure") is not None and used.split(": ")[1] in case.find("system-out").text
    assert names == ["combined: not-worse", "combined: not-worse"]
    metric = ET.fromstring(junit_xml([check(Criterion("bleu", 30, 30, 1.0, 0.5, 1.5, "candidate", 0.3, 0.95))]))
    assert metric.find("testcase").get("name") == "bleu: not-worse" and metric.find("testcase/system-out") is None


def test_junit_is_well_formed_whatever_the_systems_are_named(tmp_path, capsys):
    """A candidate named with a terminal colour code (ESC) wrote it raw into the JUnit report, which no XML parser
    (so no CI) could read; a candidate with fewer rows was told it 'passes as not worse' beside its FAIL."""
    import xml.etree.ElementTree as ET
    from core.cli import main
    base = _write(tmp_path / "base.jsonl", _rows(12, "base<&>\"]]>", 0.75))
    worse = _write(tmp_path / "worse.jsonl", _rows(12, "cand\x1b[31m|x", 0.25))
    assert main(["gate", str(base), str(worse), *FAST, "--junit", str(tmp_path / "j.xml")]) == 1
    suite = ET.parse(tmp_path / "j.xml").getroot()
    failure = suite.find("testcase/failure")
    assert "cand#x1B[31m|x" in failure.text and "base<&>\"]]>" in failure.text
    capsys.readouterr()
    fewer = _write(tmp_path / "fewer.jsonl", [{**r, "system": "v2"} for r in _rows(12, "v1", 0.75)[:10]])
    assert main(["gate", str(base), str(fewer), *FAST]) == 1
    said = capsys.readouterr()
    assert "FAIL: candidate answers fewer inputs" in said.out and "passes" not in said.err, said.err


def test_a_gate_on_one_signal_says_the_verdict_never_lets_it_decide_alone(tmp_path, capsys):
    """`--by ubleu --require better` passed a file of 'ok.' (υBLEU favours generic replies) with no word that the
    verdict never trusts υBLEU alone: said before the run, with its measured record beside the combined test's."""
    from core.cli import main
    from core.verdict_policy import shipped_policy
    base = _write(tmp_path / "base.jsonl", _rows(12, "v1", 0.75))
    assert main(["gate", str(base), str(base), *FAST, "--by", "bleu"]) == 0
    err = capsys.readouterr().err
    rec = shipped_policy().record("bleu")
    assert (f"warning: --by bleu: the verdict never lets bleu decide alone: on rated data bleu named people's "
            f"preferred system in {rec.right} of {rec.pairs} rated system pairs") in err
    assert main(["gate", str(base), str(base), *FAST]) == 0  # the default criterion: nothing said
    assert "never lets" not in capsys.readouterr().err


def test_the_example_ci_workflow_is_valid_yaml_and_its_commands_parse():
    """examples/github-actions.yml had a step name with ': ' unquoted, so GitHub could not read the workflow at
    all: it loads as YAML, and each dialeval command in it parses with today's flags."""
    import shlex
    yaml = pytest.importorskip("yaml")
    from core.cli import build_parser
    flow = yaml.safe_load((Path(__file__).resolve().parent.parent / "examples" / "github-actions.yml").read_text())
    runs = [step["run"] for step in flow["jobs"]["gate"]["steps"] if "run" in step]
    commands = [line.strip() for run in runs for line in run.replace("\\\n", " ").splitlines()
                if line.strip().startswith("dialeval ")]
    assert [c.split()[1] for c in commands] == ["gate", "report"]
    for command in commands:
        build_parser().parse_args(shlex.split(command, comments=True)[1:])  # an unknown flag exits (SystemExit)


def test_the_note_on_a_single_signal_gives_the_judges_record_to_the_shipped_judge_only():
    from core.gating import untrusted_criteria_notes
    shipped, other = untrusted_criteria_notes(["judge"], True), untrusted_criteria_notes(["judge"], False)
    assert "on rated data the judge named people's preferred system" in shipped[0]
    assert "it has no measured system-level record" in other[0]  # the llm judge, a re-fit: not its record
    assert untrusted_criteria_notes(["combined", "human:Overall"], True) == []


def test_a_default_gate_that_stands_on_a_diagnostic_says_so(tmp_path, capsys):
    """Without the judge the verdict's combined test cannot run, and the default gate failed a candidate 'worse on
    bleu' while the verdict under it called bleu a diagnostic that does not decide: the check says why it reads
    bleu (an explicit --by bleu is warned before the run instead)."""
    from core.cli import main
    base = _write(tmp_path / "base.jsonl", _rows(12, "v1", 0.75))
    worse = _write(tmp_path / "worse.jsonl", _rows(12, "v2", 0.25))
    assert main(["gate", str(base), str(worse), *FAST, "--format", "json"]) == 1
    reason = json.loads(capsys.readouterr().out)["checks"][0]["reason"]
    assert reason.startswith("FAIL: candidate is worse on bleu") and reason.endswith(
        "(the verdict's combined test could not run here, so the gate stands on bleu alone, which the verdict "
        "treats as a diagnostic)")
    assert main(["gate", str(base), str(worse), *FAST, "--by", "bleu", "--format", "json"]) == 1
    out = capsys.readouterr()
    assert "stands on bleu alone" not in out.out and "--by bleu: the verdict never lets bleu decide alone" in out.err


def test_a_gate_that_no_candidate_could_fail_does_not_pass(tmp_path, capsys):
    """Five contexts, a candidate that answers 'ok.' to everything: 'PASS: no significant difference' and exit 0,
    since no test over 5 contexts can reach p < 0.05 (2/2^5 = 0.0625); a CI job whose contexts file was cut short
    was green whatever the model said. Six contexts can fail it."""
    from core.cli import main
    base = _write(tmp_path / "base.jsonl", _rows(5, "v1", 0.75))
    worse = _write(tmp_path / "worse.jsonl", _rows(5, "v2", 0.25))
    assert main(["gate", str(base), str(worse), *FAST]) == 1
    line = capsys.readouterr().out.splitlines()[0]
    assert line.startswith("FAIL: too few contexts to show any difference on bleu") and "gate on 6 or more" in line
    base6 = _write(tmp_path / "base6.jsonl", _rows(6, "v1", 0.75))
    worse6 = _write(tmp_path / "worse6.jsonl", _rows(6, "v2", 0.25))
    assert main(["gate", str(base6), str(worse6), *FAST]) == 1  # 6 can show a difference, and do
    assert capsys.readouterr().out.startswith("FAIL: candidate is worse on bleu")


def test_a_human_criterion_only_one_side_rated_is_refused_before_scoring(tmp_path, capsys, monkeypatch):
    """Last release rated by people, the candidate not: `--by human:Overall` scored every metric, then stopped with
    '--by human:Overall: not compared here' (minutes of CI with the default metrics, and the reason unsaid)."""
    import core.cli.compare
    from core.cli import main

    def no_scoring(*args, **kwargs):
        raise AssertionError("scored before the criterion was refused")
    monkeypatch.setattr(core.cli.compare, "score_comparison", no_scoring)
    base = _write(tmp_path / "base.jsonl", [dict(r, scores={"Overall": 4}) for r in _rows(8, "v1", 0.75)])
    cand = _write(tmp_path / "cand.jsonl", _rows(8, "v2", 0.25))
    assert main(["gate", str(base), str(cand), *FAST, "--by", "human:overall"]) == 2
    err = capsys.readouterr().err
    assert "only the baseline's rows carry people's 'Overall' ratings, the candidate's none" in err


def test_a_baseline_that_does_not_vary_sets_no_default_margin():
    """Every baseline row scoring bleu 100 gave a default margin of 2.9e-15 ('margin 0.000'), so one edited reply
    failed non-inferiority; with no spread there is no default, and the error says so."""
    from core.gating import Criterion, check
    flat = Criterion("bleu", 20, 20, -0.12, -0.37, 0.0, None, math.nan, 0.95, baseline_sd=1.45e-14)
    with pytest.raises(ValueError, match="none by default: the baseline's bleu does not vary"):
        check(flat, "non-inferior")
    assert check(flat, "non-inferior", margin=1.0).passed


def test_a_criterion_asked_for_stays_in_the_checks_when_another_fails(tmp_path, capsys):
    """`--by bleu` on replies without references, a candidate blank on 3 of 30: only the blank-replies check came
    back, so the JUnit history lost its 'bleu: not-worse' case without a word."""
    import xml.etree.ElementTree as ET
    from core.cli import main
    rows = [{"id": str(i), "system": "v", "context": [f"q {i}?"], "response": f"answer {i} is long enough"}
            for i in range(30)]
    base = _write(tmp_path / "base.jsonl", rows)
    blank = _write(tmp_path / "blank.jsonl", [dict(r, response="" if i < 3 else r["response"])
                                              for i, r in enumerate(rows)])
    junit = tmp_path / "gate.xml"
    assert main(["gate", str(base), str(blank), *FAST, "--by", "bleu", "--junit", str(junit), "--format", "json"]) == 1
    checks = json.loads(capsys.readouterr().out)["checks"]
    assert [c["criterion"]["name"] for c in checks] == ["blank replies", "bleu"] and not checks[1]["passed"]
    assert checks[1]["reason"] == "FAIL: nothing to gate on (bleu): it scored no pair of these inputs"
    from core.gating import Criterion  # a combined test that did not run has no signals to name
    assert Criterion("combined", 0, 0, math.nan, math.nan, math.nan, None, math.nan, 0.95).label == "the combined test"
    # ids and kinds a pipeline can select on (a combined criterion's name changes with the signals it used)
    assert [(c["id"], c["kind"]) for c in checks] == [("blank replies: no more than the baseline's", "blank replies"),
                                                      ("bleu: not-worse", "metric")]
    assert [t.get("name") for t in ET.parse(junit).getroot()] == ["blank replies: no more than the baseline's",
                                                                  "bleu: not-worse"]


def test_junit_to_a_dash_is_refused(tmp_path, capsys, monkeypatch):
    """`--junit -` wrote a file named '-' in the working folder (`-o -` is standard output)."""
    from core.cli import main
    monkeypatch.chdir(tmp_path)
    base = _write(tmp_path / "base.jsonl", _rows(8, "v1", 0.75))
    assert main(["gate", str(base), str(base), *FAST, "--junit", "-"]) == 2
    assert "--junit -: name a file for the JUnit XML" in capsys.readouterr().err and not (tmp_path / "-").exists()


def test_a_gate_over_many_contexts_but_few_changed_pairs_does_not_pass(tmp_path, capsys):
    """20 contexts, the candidate's reply changed to "i do not know." on 5 of them and worse on every one: 'PASS: no
    significant difference' (p 0.070), since a test that flips only the 5 contexts that differ can reach no p
    below 2/2^5; the rule counted the 20 contexts. So do 8 changed pairs of one context, a metric that scores every
    changed pair alike, and people's ratings that differ on 3 contexts. Nothing changed passes; a veto never fails
    for it."""
    from core.cli import main
    from core.gating import Criterion, check
    base = _rows(20, "v1", 0.75)
    worse = [dict(r, system="v2", response="i do not know." if i < 5 else r["response"]) for i, r in enumerate(base)]
    b, w = _write(tmp_path / "b.jsonl", base), _write(tmp_path / "w.jsonl", worse)
    assert main(["gate", str(b), str(w), *FAST, "--format", "json"]) == 1
    line = json.loads(capsys.readouterr().out)["checks"][0]["reason"]
    assert line.startswith("FAIL: too few differing pairs to show any difference on bleu") and \
        "bleu differs in 5 of the 20 contexts: the smallest p there is 2/2^5" in line
    six = [dict(r, system="v2", response="i do not know." if i < 6 else r["response"]) for i, r in enumerate(base)]
    assert main(["gate", str(b), str(_write(tmp_path / "six.jsonl", six)), *FAST]) == 1  # 6 can fail: and do
    assert capsys.readouterr().out.startswith("FAIL: candidate is worse on bleu")
    # 8 changed pairs that answer one context (its ids repeat it) are one context a randomization flips
    one = base[:12] + [dict(base[12], id=f"r{k}") for k in range(8)]
    worse_one = [dict(r, system="v2", response="i do not know." if i >= 12 else r["response"]) for i, r in enumerate(one)]
    assert main(["gate", str(_write(tmp_path / "one.jsonl", one)), str(_write(tmp_path / "wone.jsonl", worse_one)),
                 *FAST]) == 1
    assert "bleu differs in 1 of the 13 contexts" in capsys.readouterr().out
    # every reply changed, but the metric scores both sides alike: it cannot fail any candidate either
    qa = [dict(r, response="qqq zzz") for r in base]
    qb = [dict(r, system="v2", response="vvv kkk") for r in base]
    assert main(["gate", str(_write(tmp_path / "qa.jsonl", qa)), str(_write(tmp_path / "qb.jsonl", qb)), *FAST]) == 1
    assert "bleu differs in none of the 20 contexts: no p can fall below 1" in capsys.readouterr().out
    # people's ratings: 3 rated differently of 20
    rated = [dict(r, scores={"overall": 3}) for r in base]
    rated_b = [dict(r, system="v2", response=r["response"] + " indeed", scores={"overall": 1 if i < 3 else 3})
               for i, r in enumerate(rated)]
    assert main(["gate", str(_write(tmp_path / "ra.jsonl", rated)), str(_write(tmp_path / "rb.jsonl", rated_b)),
                 *FAST, "--by", "human:overall"]) == 1
    assert "human:overall differs in 3 of the 20 contexts" in capsys.readouterr().out
    few = Criterion("judge", 3, 40, -0.2, -0.4, 0.1, None, math.nan, 0.95, differing=3)
    assert not check(few).passed and check(few, veto=True).passed  # a veto blocks only on a significant difference
    assert check(Criterion("bleu", 40, 40, 0.0, 0.0, 0.0, None, math.nan, 0.95, differing=0,
                           unchanged=True)).passed  # nothing changed: nothing could be worse
    assert not check(Criterion("bleu", 5, 5, 0.1, -0.2, 0.4, None, math.nan, 0.95, differing=5), "non-inferior",
                     margin=1.0).passed  # 5 contexts give an interval no one can trust either


@pytest.mark.slow  # bert_ruber loads MiniLM
def test_the_default_criterion_without_a_combined_test_does_not_follow_the_order_of_metrics(tmp_path):
    """Without the combined test the gate stood on the first metric --metrics named: bleu,bert_ruber passed a
    worse candidate ('no significant difference on bleu') that bert_ruber,bleu failed. It stands on the signal with
    the best measured record, whatever the order."""
    from core.gating import default_criterion
    rows = _rows(12, "v1", 0.75)
    ctx, refs = [r["context"] for r in rows], [r["references"] for r in rows]
    a = [r["response"] for r in rows]
    b = [r["response"].split()[0] + " ok" for r in rows]
    import core
    picked = {default_criterion(core.compare_replies(ctx, a, b, refs, metrics=m, judge=False, n_boot=200,
                                                     n_perm=200)) for m in ("bleu,bert_ruber", "bert_ruber,bleu")}
    assert picked == {"bert_ruber"}


def test_plan_never_names_fewer_contexts_than_the_gate_can_read(tmp_path, capsys):
    """A large effect on a pilot asked `plan` for about 3 contexts: the gate fails any comparison that small ('too
    few contexts to show any difference'), so the plan names the fewest it can read and says why."""
    from core.cli import main
    base = _write(tmp_path / "base.jsonl", _rows(12, "v1", 0.75))
    cand = _write(tmp_path / "cand.jsonl", _rows(12, "v2", 0.5))
    assert main(["plan", str(base), str(cand), "--by", "bleu", *FAST, "--effect", "80", "--format", "json"]) == 0
    planned = json.loads(capsys.readouterr().out)
    assert planned["contexts_needed"] == planned["fewest_the_gate_reads"] == 6 and planned["contexts_for_power"] < 6
    assert main(["plan", str(base), str(cand), "--by", "bleu", *FAST, "--effect", "80"]) == 0
    out = capsys.readouterr().out
    assert "compare about 6 contexts" in out and "but fewer than 6 contexts can show no difference at this level " \
                                                 "(the gate fails them)." in out, out


def test_the_gate_says_its_numbers_are_the_candidate_s_side_where_the_table_gives_a_minus_b(tmp_path, capsys):
    """'FAIL: candidate is worse on bleu: -40.5 [...]' above a table whose A-B reads +40.5, with no word on why the
    signs differ."""
    from core.cli import main
    base, worse = _write(tmp_path / "b.jsonl", _rows(12, "v1", 0.75)), _write(tmp_path / "w.jsonl", _rows(12, "v2", 0.25))
    assert main(["gate", str(base), str(worse), *FAST]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("FAIL: candidate is worse on bleu: -") and lines[1] == (
        "(the numbers above are the candidate's improvement on the baseline: B - A where higher is better; the "
        "verdict's table below gives A - B)")


def test_plan_refuses_an_effect_too_small_to_plan_and_words_a_small_pilot_truly(tmp_path, capsys):
    """--effect 1e-160 stopped with an internal error (an overflow), 1e-10 asked for 1.3e23 contexts; a 5-context
    pilot was said to 'give no interval' beside a plan made from its interval; a 4-context one was refused as
    'fewer than 2 contexts'."""
    from core.cli import main
    base = _write(tmp_path / "base.jsonl", _rows(12, "v1", 0.75))
    cand = _write(tmp_path / "cand.jsonl", _rows(12, "v2", 0.5))
    for tiny in ("1e-160", "1e-10"):
        assert main(["plan", str(base), str(cand), "--by", "bleu", *FAST, "--effect", tiny]) == 2
        assert "would need more than 1,000,000,000 contexts" in capsys.readouterr().err
    five_a, five_b = (_write(tmp_path / f"{s}5.jsonl", _rows(5, s, keep)) for s, keep in (("v1", 0.75), ("v2", 0.5)))
    assert main(["plan", str(five_a), str(five_b), "--by", "bleu", *FAST, "--effect", "1"]) == 0
    out = capsys.readouterr().out
    assert "they give no interval" not in out and "too few for any p below 0.05" in out, out
    four_a, four_b = (_write(tmp_path / f"{s}4.jsonl", _rows(4, s, keep)) for s, keep in (("v1", 0.75), ("v2", 0.5)))
    assert main(["plan", str(four_a), str(four_b), "--by", "bleu", *FAST, "--effect", "1"]) == 2
    assert "fewer than 5 contexts" in capsys.readouterr().err


def test_non_inferiority_calls_a_significant_loss_worse_and_other_checks_carry_no_margin():
    """'FAIL: candidate may be worse' above a table that names the baseline better (p 0.047); the JSON of a
    not-worse check gave a margin it never read."""
    from core.gating import Criterion, check
    lost = Criterion("bleu", 58, 58, -3.36, -6.58, -0.005, "baseline", math.nan, 0.95, differing=58)
    assert check(lost, "non-inferior", 2.5).reason.startswith("FAIL: candidate is worse on bleu")
    unsure = Criterion("bleu", 58, 58, -1.0, -3.0, 1.0, None, math.nan, 0.95, differing=58)
    assert check(unsure, "non-inferior", 0.5).reason.startswith("FAIL: candidate may be worse on bleu")
    assert math.isnan(check(unsure, "not-worse", 2.5).margin) and check(unsure, "non-inferior", 2.5).margin == 2.5


def test_the_too_few_rule_at_other_levels_one_margin_for_two_criteria_and_people_s_ratings_of_same_replies(
        tmp_path, capsys):
    """From a review: at --level 0.8 four differing contexts can reach p 0.125 < 0.2, yet the gate failed them as
    too few (the bootstrap's floor of 5 was applied to the differing contexts); compare promised a detectable
    difference over 5 differing contexts of 20, where none can be shown; one --margin served the judge's points
    and a metric's units at once; identical replies rated differently passed as 'nothing changed'."""
    import core
    from core.cli import main
    from core.gating import Criterion, check
    four = Criterion("bleu", 20, 20, -0.3, -0.6, 0.1, None, math.nan, 0.8, differing=4)
    assert check(four).passed and not check(replace_level(four, 0.8, 3)).passed
    assert "gate on 4 or more that differ" in check(replace_level(four, 0.8, 3)).reason
    base = _rows(20, "v1", 0.75)
    worse = [dict(r, system="v2", response="i do not know." if i < 5 else r["response"]) for i, r in enumerate(base)]
    b, w = _write(tmp_path / "b.jsonl", base), _write(tmp_path / "w.jsonl", worse)
    assert main(["compare", str(b), str(w), *FAST, "--format", "json"]) == 0
    bleu = json.loads(capsys.readouterr().out)["metrics"][0]
    assert bleu["contexts_differing"] == 5 and bleu["detectable"] is None
    assert main(["gate", str(b), str(w), *FAST, "--metrics", "bleu,mme", "--by", "bleu,mme", "--require",
                 "non-inferior", "--margin", "0.5"]) == 2  # refused before anything is scored
    assert "--margin 0.5 with 2 criteria: each criterion has its own units" in capsys.readouterr().err
    with pytest.raises(ValueError, match="margin=0.5 with 2 criteria"):
        core.gate(str(b), str(w), by="bleu,mme", require="non-inferior", margin=0.5, metrics="bleu,mme", judge=False)
    rated = [dict(r, scores={"overall": 3}) for r in base]
    other_panel = [dict(r, system="v2", scores={"overall": 1 if i < 3 else 3}) for i, r in enumerate(rated)]
    assert main(["gate", str(_write(tmp_path / "ra.jsonl", rated)), str(_write(tmp_path / "rb.jsonl", other_panel)),
                 *FAST, "--by", "human:overall"]) == 1
    assert "human:overall differs in 3 of the 20 contexts" in capsys.readouterr().out


def test_a_judge_margin_no_candidate_could_fail_is_refused(tmp_path, capsys):
    """From a CI user's audit: --by judge --require non-inferior --margin 5 (5 points, read as 500) passed a
    candidate that lost every pair ('wins 0 %'): the win-rate interval always lies above 0.5 - 5."""
    import core
    from core.cli import main
    from core.gating import Criterion, check
    base = _rows(10, "v1", 0.75)
    b, w = _write(tmp_path / "b.jsonl", base), _write(tmp_path / "w.jsonl", [dict(r, system="v2") for r in base])
    for margin in ("5", "0.5"):
        assert main(["gate", str(b), str(w), "--metrics", "bleu", "--by", "judge", "--require", "non-inferior",
                     "--margin", margin, "--quiet"]) == 2, margin  # refused before anything is scored
        assert f"--margin {margin} for the judge: its margin is a share of win rate" in capsys.readouterr().err
    with pytest.raises(ValueError, match="margin=0.6 for the judge"):
        core.gate(str(b), str(w), by="judge", require="non-inferior", margin=0.6, metrics="bleu")
    lost_all = Criterion("judge", 30, 30, -0.5, -0.5, -0.39, "baseline", math.nan, 0.95, differing=30)
    with pytest.raises(ValueError, match="0.5 or more passes any candidate"):
        check(lost_all, "non-inferior", 0.5)
    assert not check(lost_all, "non-inferior", 0.3).passed


def replace_level(c, level: float, differing: int):
    from dataclasses import replace
    return replace(c, level=level, differing=differing)


def test_the_judge_s_too_few_rule_counts_contexts_whose_decided_pairs_do_not_cancel():
    """From a review: 8 contexts of 2 pairs, the candidate winning both in 3 and splitting 1-1 in 5; the sign test
    on contexts' net outcomes moves 3 (p >= 0.25), yet the gate passed the judge ('16 decided pairs'), and compare
    stated a detectable difference for 5 contexts of 3 pairs won alike, where no winner was possible."""
    from core.gating import Criterion, check
    from core.stats import clustered_win_stats, paired_comparison
    groups = [i // 2 for i in range(16)]
    w = clustered_win_stats([-1, -1] * 3 + [1, -1] * 5, groups)
    assert (w.wins + w.losses, w.sign_units) == (16, 3)
    judge = Criterion("judge", 16, 8, 0.2, -0.1, 0.4, None, math.nan, 0.95, differing=w.sign_units)
    line = check(judge).reason
    assert line.startswith("FAIL: too few differing pairs") and "the judge's sign test can move 3 of the 8" in line
    five = clustered_win_stats([1] * 15, [i // 3 for i in range(15)])
    assert five.sign_units == 5
    from core.judge_summary import JudgeSummary
    summary = JudgeSummary(15, five, "B", 0.0, 0.05, "judge:judge|test", [0.1] * 15, ["B"] * 15, n_contexts=5)
    assert math.isnan(summary.detectable())  # 5 contexts: no winner possible, nothing stated
    twelve = clustered_win_stats([1] * 24, [i // 2 for i in range(24)])
    assert math.isfinite(JudgeSummary(24, twelve, "B", 0.0, 0.05, "judge:judge|test", [0.1] * 24, ["B"] * 24,
                                      n_contexts=12).detectable())
    # a difference of 1e-10 moves the randomization statistic: counted as differing, as the test counts it
    assert paired_comparison([1] * 6, [0] * 5 + [1 - 1e-10]).n_differing == 6


def test_a_blank_candidate_keeps_the_combined_case_and_its_judge_veto():
    """A reviewer's find: with the judge on, a candidate blank everywhere was gated on the judge alone (the combined
    test had no pair to read), so the JUnit history lost its 'combined: not-worse' case; a scoring run checks the
    combined test and the judge's veto."""
    import warnings

    import core
    from core.gating import gate_verdict
    ctx = [[f"what did you do on day {i}?"] for i in range(8)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the blank replies are warned of: not what this test reads
        v = core.compare_replies(ctx, [f"i went hiking in the hills on day {i}, it was lovely." for i in range(8)],
                                 [""] * 8, None, n_boot=200, n_perm=200)
    checks = gate_verdict(v).checks
    assert [c.id for c in checks] == ["blank replies: no more than the baseline's", "combined: not-worse",
                                      "judge: not significantly worse (a veto of the combined test)"]
    assert not any(c.passed for c in checks) and "nothing to gate on (the combined test)" in checks[1].reason
