"""How long scoring and judging should take (``core.time_estimates``, asked through ``core.engine.estimate_work``):
every estimate follows the pace the process has measured, counts only the work the score cache cannot give back,
and follows the kind of CPU. These check behaviour against the paces' own attributes, never typed-in seconds."""
import numpy as np
import pytest

from core import time_estimates
from core.cache import ScoreCache
from core.data import Comparison, Example
from core.engine import estimate_comparison, estimate_work, judge_pairs, score_examples
from core.scoring import Judge, JudgeOutput, register_judge
from core.time_estimates import JudgeTime, JudgeWork, ScoreTime, time_so_far


@pytest.fixture(autouse=True)
def fresh_paces():
    """Each test starts from the idle paces and leaves none of its own behind."""
    time_estimates.score_time.cache_clear()
    time_estimates.judge_time.cache_clear()
    yield
    time_estimates.score_time.cache_clear()
    time_estimates.judge_time.cache_clear()


class Clock:
    """A stand-in for ``time.perf_counter`` that moves ``step`` seconds a call."""

    def __init__(self, step: float):
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def rows(n: int, tag: str = "") -> list[Example]:
    return [Example(id=f"r{i}", system="s", context=[f"question {tag}{i}"], response=f"answer {tag}{i} here",
                    references=[f"an answer {i}"]) for i in range(n)]


def test_the_scoring_estimate_follows_the_pace_the_engine_measured(monkeypatch):
    """The engine teaches the process its pace: before any run the idle pace and the loading; after a first run
    (which loads) and a second (which measures), the measured pace and no loading."""
    import core.engine as engine
    examples = rows(60)
    idle = estimate_work(examples, ["bleu"], cache=False)
    pace = time_estimates.score_time()
    assert idle.rows == {"bleu": 60}
    assert idle.metric_seconds["bleu"] == pytest.approx(pace.LOAD_SECONDS["bleu"] + 60 * pace.per_row["bleu"])
    monkeypatch.setattr(engine, "perf_counter", Clock(3.0))  # every run takes 3 s
    score_examples(examples, ["bleu"], cache=False)  # the first run: loaded from now on
    score_examples(examples, ["bleu"], cache=False)  # 60 rows in 3 s
    assert estimate_work(rows(120, "x"), ["bleu"], cache=False).metric_seconds["bleu"] == pytest.approx(6.0)


def test_the_estimate_counts_only_rows_the_score_cache_lacks(tmp_path):
    store = ScoreCache(tmp_path / "s.sqlite3", max_bytes=1 << 30)
    examples = rows(8)
    score_examples(examples[:5], ["bleu"], cache=store)
    est = estimate_work(examples, ["bleu", "not_a_metric"], cache=store)
    assert est.rows == {"bleu": 3, "not_a_metric": 8}  # a metric that cannot be built counts every row
    score_examples(examples, ["bleu"], cache=store)
    done = estimate_work(examples, ["bleu"], cache=store)
    assert done.rows == {"bleu": 0} and done.seconds == 0.0


@register_judge("test-paced")
class _PacedJudge(Judge):
    """A test judge: the longer reply wins."""

    description = "test only"

    @classmethod
    def load(cls, checkpoint=None):
        return cls()

    @classmethod
    def cache_identity(cls, checkpoint=None):
        return "paced-v1"

    def predict(self, contexts, replies_a, replies_b, progress=None):
        p = np.array([0.9 if len(a) > len(b) else 0.1 for a, b in zip(replies_a, replies_b)])
        return JudgeOutput.from_probabilities(p, p, p, 0.05, "judge:test-paced")

    def signature(self):
        return "judge:test-paced"


def test_the_judge_estimate_follows_the_pace_of_the_engines_last_run(monkeypatch, tmp_path):
    """A run through ``judge_pairs`` of the judge the paces describe (here a test judge standing in for the shipped
    one, its models counted as loaded and every reply unread) sets the slowdown every later estimate uses;
    pairs the cache holds are not counted."""
    import core.engine as engine
    monkeypatch.setattr(time_estimates, "JUDGE_TIMED", "test-paced")
    monkeypatch.setattr(time_estimates, "judge_work", lambda n, contexts=None, replies=None: JudgeWork(n, n, None, True))
    store = ScoreCache(tmp_path / "s.sqlite3", max_bytes=1 << 30)
    n = JudgeTime.MIN_PAIRS
    comp = Comparison("a", "b", [(Example(id=str(i), system="a", context=[f"c{i}"], response="long reply " * (i % 3)),
                                  Example(id=str(i), system="b", context=[f"c{i}"], response="short"))
                                 for i in range(n)])
    pace = time_estimates.judge_time()
    before = estimate_comparison(comp, judge="test-paced")
    assert before.judge_pairs == n and before.judge_seconds == pytest.approx(
        pace.start_seconds + pace.idle_work(n, n))
    idle_seconds = pace.idle_work(n, n)
    monkeypatch.setattr(engine, "perf_counter", Clock(pace.start_seconds + 2 * idle_seconds))
    judge_pairs([a.context for a in comp.a], [a.response for a in comp.a], [b.response for b in comp.b],
                judge="test-paced", cache=store)
    assert pace.slowdown == pytest.approx(2.0)
    assert estimate_work(judge="test-paced", n_pairs=n).judge_seconds == pytest.approx(
        pace.start_seconds + 2 * idle_seconds)
    assert estimate_work(pairs=[(a.context, a.response, b.response) for a, b in comp.pairs], judge="test-paced",
                         cache=store).judge_pairs == 0  # judged and kept: nothing left


def test_a_judge_without_a_known_pace_says_so():
    est = estimate_work(judge="test-paced", n_pairs=5)
    assert est.judge_pairs == 5 and est.judge_seconds is None and est.seconds == 0.0


def test_the_judge_pace_keeps_mmes_share_apart_from_the_slowdown():
    """A run on fresh replies (MME-CRS read for every pair) sets a slowdown against the idle pace of that work, so a
    re-run on pairs MME has read is not overestimated, nor the other way round."""
    t = JudgeTime()
    fresh, read = t.estimate(100, loaded=True, mme_pairs=100), t.estimate(100, loaded=True)
    assert fresh - t.start_seconds == pytest.approx(t.idle_work(100, 100))
    t.record(100, t.start_seconds + 2 * (fresh - t.start_seconds), mme_pairs=100)  # twice the idle time, fresh
    assert t.estimate(100, loaded=True) - t.start_seconds == pytest.approx(2 * (read - t.start_seconds))
    t.record(10, 1e6)  # too few pairs to tell the pace
    assert t.slowdown == pytest.approx(2.0)
    t.record(100, 3.0)  # done within the start (a GPU): the pace is not taken to be infinite
    assert t.slowdown == t.MIN_SLOWDOWN


def test_the_judge_estimate_of_a_run_with_nothing_to_read_loads_only_the_judges_own_models():
    """SmolLM2 and MME already hold every reply: only the judge's own models load and the start is short."""
    for float32 in (True, False):
        t = JudgeTime(float32=float32)
        quick = t.estimate(3, loaded=False, read_pairs=0)
        assert quick == pytest.approx(t.OWN_LOAD_SECONDS + t.QUICK_START_SECONDS + 3 * t.seconds_per_pair)
        assert quick < t.estimate(3, loaded=False, read_pairs=0, mme_pairs=1) < t.estimate(3, loaded=False)
        assert t.estimate(3, loaded=False, reading_loaded=True) == pytest.approx(
            t.OWN_LOAD_SECONDS + t.start_seconds + t.idle_work(3))
        assert t.estimate(0, loaded=False) == 0.0


def test_the_scoring_pace_is_learned_only_from_long_enough_runs_with_the_models_loaded():
    t = ScoreTime(float32=False)
    first = t.estimate("mme", 1000)
    assert first == pytest.approx(t.LOAD_SECONDS["mme"] + 1000 * t.SECONDS_PER_ROW["mme"])
    t.record("mme", 20, 31.0)  # loaded now; 20 rows say little about the pace
    assert t.estimate("mme", 1000) == pytest.approx(1000 * t.SECONDS_PER_ROW["mme"])
    t.record("mme", 100, 20.0)
    assert t.estimate("mme", 1000) == pytest.approx(200.0)
    assert t.estimate("some_plugin_metric", 10) == pytest.approx(t.OTHER_LOAD + 10 * t.OTHER_PER_ROW)


def test_the_idle_paces_follow_the_kind_of_cpu(monkeypatch):
    """Where SmolLM2 runs in float32 (an AVX2 laptop) its models are slower than in bfloat16: the idle paces are
    the ones measured for the machine's kind."""
    bf16, f32 = ScoreTime(float32=False), ScoreTime(float32=True)
    assert set(f32.per_row) == set(bf16.per_row) and f32.per_row["mme"] > bf16.per_row["mme"]
    assert JudgeTime(float32=True).estimate(60, True, 60) > JudgeTime(float32=False).estimate(60, True, 60)
    for float32 in (True, False):
        monkeypatch.setattr(time_estimates, "smollm_in_float32", lambda f=float32: f)
        assert ScoreTime().per_row is (f32.per_row if float32 else bf16.per_row)
        assert JudgeTime().seconds_per_pair == JudgeTime(float32=float32).seconds_per_pair


def test_a_long_runs_clock_shows_its_time_so_far_against_the_estimate():
    assert time_so_far(12.2, 40.0) == " · 12 s of about 40 s"
    assert time_so_far(52.0, 40.0) == " · 52 s (about 40 s was estimated)"
    assert time_so_far(1.0, 2.0) == ""  # a run estimated under 3 s shows no estimate


def test_a_judge_that_cannot_be_built_counts_every_pair_as_new():
    est = estimate_work(pairs=[(["hi"], "a", "b"), (["hi"], "a", "b"), (["yo"], "c", "d")], judge="no-such-judge")
    assert est.judge_pairs == 2 and est.judge_seconds is None


def test_a_command_says_how_long_its_run_should_take_before_it_starts(capsys):
    """The CLI printed one optimistic bar after another and no estimate for the run (the dashboard had one)."""
    from core.cli import note_estimate
    from core.time_estimates import WorkEstimate, about
    e = WorkEstimate(rows={"bleu": 60, "mme": 60, "ubleu": 0}, metric_seconds={"bleu": 0.1, "mme": 52.0},
                     judge="pairwise", judge_pairs=30, judge_seconds=3.0)
    assert e.sentence() == "about 55 s for this run: 60 rows to score with bleu, mme; 30 pairs to judge"
    note_estimate(e)
    assert capsys.readouterr().err == e.sentence() + "\n"
    note_estimate(WorkEstimate(rows={"bleu": 60}, metric_seconds={"bleu": 0.1}))  # a short run: no word
    assert capsys.readouterr().err == ""
    assert WorkEstimate(rows={"bleu": 0}).sentence() == ""  # nothing left to compute (all cached)
    assert [about(s) for s in (0.2, 40, 200, 3 * 3600)] == ["1 s", "40 s", "3 min", "3.0 h"]


def test_the_judge_reads_nothing_after_mme_only_when_mme_reads_every_row_it_reads():
    from core.engine import after_mme_reads_all
    rows = [(["hi"], "a"), (["hi"], "b"), ("hi", "a")]  # a context as turns or as one string: the same row
    assert after_mme_reads_all(2, rows) and not after_mme_reads_all(1, rows)  # some rows come from the cache
    assert not after_mme_reads_all(0, [])


def test_score_says_how_long_before_it_starts_as_compare_does(tmp_path, capsys, monkeypatch):
    """`dialeval score` started a long run without a word of its length (compare, gate, judge and leaderboard say
    it); --quiet keeps it silent."""
    import json

    from core.cli import main
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps({"id": e.id, "context": e.context, "response": e.response,
                                        "references": e.references}) + "\n" for e in rows(8)))
    monkeypatch.setitem(time_estimates.score_time().per_row, "bleu", 2.0)  # a slow metric, as mme is on a CPU
    assert main(["score", str(path), "--metrics", "bleu", "--out", str(tmp_path / "s.jsonl")]) == 0
    assert "about 16 s for this run: 8 rows to score with bleu" in capsys.readouterr().err
    assert main(["score", str(path), "--metrics", "bleu", "--out", str(tmp_path / "s.jsonl"), "--quiet"]) == 0
    assert "for this run" not in capsys.readouterr().err


def test_smollm2_s_first_read_in_a_cache_folder_is_counted_only_when_a_run_loads_it(monkeypatch):
    """A first cold run took 51 s against an estimate of 32 s: reading SmolLM2's GGUF file (once per cache folder)
    was not counted. It is counted where the run computes something with SmolLM2 and the read is still due."""
    from core.models import encoders
    monkeypatch.setattr(encoders, "smollm_first_load", lambda: "reading SmolLM2's model file (once)")
    due = estimate_work(rows(4, "due"), ["bleu", "mme"], cache=False)
    assert due.first_read_seconds == encoders.SMOLLM_FIRST_READ_SECONDS > 0
    assert due.seconds == pytest.approx(sum(due.metric_seconds.values()) + due.first_read_seconds)
    assert "SmolLM2's model file to read once" in due.sentence()
    judged = estimate_work(pairs=[(["hi due"], "a due", "b due")], judge="pairwise", cache=False)
    assert judged.first_read_seconds == encoders.SMOLLM_FIRST_READ_SECONDS  # replies nothing has read
    assert estimate_work(rows(4, "due"), ["bleu"], cache=False).first_read_seconds == 0.0  # BLEU loads no SmolLM2
    monkeypatch.setattr(encoders, "smollm_first_load", lambda: "")  # a copy is kept, or it is loaded
    done = estimate_work(rows(4, "due"), ["bleu", "mme"], cache=False)
    assert done.first_read_seconds == 0.0 and "SmolLM2" not in done.sentence()
