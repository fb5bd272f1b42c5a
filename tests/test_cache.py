"""The score cache (core.cache): cached rows are exactly what a fresh run computes, only changed rows are
scored again, the judge is not loaded when every pair is cached, the size cap holds, --no-cache keeps
nothing, and the demo's shipped precomputed scores answer for today's signatures."""
import gzip
import json
import re
import os
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest

from core.cache import CacheError, Precomputed, ScoreCache, export_precomputed, judge_namespace, pair_key, row_key
from core.data import load_comparison, load_jsonl
from core.engine import (DEFAULT_METRICS, cached_judge_comparison, judge_pairs, metric_namespace,
                         score_examples)
from core.models.device import device_key
from core.scoring import CompositeMetric, Judge, JudgeOutput, Options, get_metric, register_judge

METRICS = ["bleu", "bert_ruber"]  # a lexical metric and a composite of two MiniLM parts (fast to load)


@pytest.fixture(scope="module")
def rows(repo_root):
    return load_jsonl(repo_root / "demo" / "demo.jsonl")[:12]


def _same(t1, t2, metrics):
    for m in metrics:
        np.testing.assert_array_equal(t1.column(m), t2.column(m))
        assert t1.results[m].details == t2.results[m].details
        assert str(t1.results[m].signature) == str(t2.results[m].signature)


def test_cached_rows_equal_fresh_ones(rows, tmp_path):
    store = ScoreCache(tmp_path / "s.sqlite3", max_bytes=1 << 30)
    fresh = score_examples(rows, METRICS, cache=False)
    first = score_examples(rows, METRICS, cache=store)
    assert store.hits == 0
    again = score_examples(rows, METRICS, cache=store)
    assert store.misses == store.hits  # the second run found every row the first one kept
    _same(fresh, first, METRICS)
    _same(fresh, again, METRICS)
    # the records every surface writes are the same too
    assert json.dumps(fresh.to_records(), sort_keys=True) == json.dumps(again.to_records(), sort_keys=True)


def test_only_changed_rows_are_scored_again(rows, tmp_path, monkeypatch):
    store = ScoreCache(tmp_path / "s.sqlite3", max_bytes=1 << 30)
    score_examples(rows, METRICS, cache=store)
    changed = list(rows)
    changed[3] = replace(changed[3], response=changed[3].response + " Really.")
    changed[7] = replace(changed[7], references=["A different reference entirely."])
    calls = []
    metric = get_metric("bleu")
    compute = metric.compute

    def counting(examples, progress=None):
        calls.append(len(examples))
        return compute(examples, progress)
    monkeypatch.setattr(metric, "compute", counting)  # the process's shared instance: undone after the test
    from core.engine import fully_cached, uncached_rows  # what the dashboard's time estimate counts
    assert uncached_rows(metric, changed, store) == 2 and not fully_cached(metric, changed, store)
    assert uncached_rows(metric, rows, store) == 0 and uncached_rows(metric, rows, None) == len(rows)
    table = score_examples(changed, [metric], cache=store)
    assert calls == [2]  # 10 of 12 rows came from the cache
    np.testing.assert_array_equal(table.column("bleu"), score_examples(changed, ["bleu"], cache=False).column("bleu"))


def test_a_changed_signature_is_another_namespace(rows):
    assert metric_namespace(get_metric("mme")) != metric_namespace(get_metric("mme", Options(dimension="engaging")))
    assert metric_namespace(get_metric("ubleu")) != metric_namespace(get_metric("ubleu_paper"))
    ex = rows[0]
    assert row_key(ex.context, ex.response, ex.references) != row_key(ex.context, ex.response + " ", ex.references)
    assert row_key(["a", "b"], "c", []) != row_key(["a\nb"], "c", [])  # turn boundaries count


@register_judge("test-length")
class _LengthJudge(Judge):
    """A test judge: the longer reply wins; counts the pairs it is asked about."""

    description = "test only"
    asked: list[int] = []

    @classmethod
    def load(cls, checkpoint=None):
        return cls()

    @classmethod
    def cache_identity(cls, checkpoint=None):
        return "length-v1"

    def predict(self, contexts, replies_a, replies_b, progress=None):
        type(self).asked.append(len(contexts))
        p = np.array([0.9 if len(a) > len(b) else 0.1 if len(a) < len(b) else 0.5 for a, b in zip(replies_a, replies_b)])
        return JudgeOutput.from_probabilities(p, p, p, 0.05, self.signature())

    def signature(self):
        return "judge:test-length"


@register_judge("test-length-both-orders")
class _BothOrdersLengthJudge(_LengthJudge):
    """The length judge, with single orders that differ (A|B leans to the first reply) and a swap that mirrors
    its output, as the learned judge's does (both orders averaged)."""

    swaps_exactly = True
    asked: list[int] = []  # its own (the parent's list is the length judge's)

    @classmethod
    def cache_identity(cls, checkpoint=None):
        return "length-both-v1"

    def predict(self, contexts, replies_a, replies_b, progress=None):
        type(self).asked.append(len(contexts))
        def shown_first_wins(x: str, y: str) -> float:  # one order's call: leans to the reply shown first
            return 0.6 + 0.35 * np.tanh(len(x) - len(y))
        first = np.array([shown_first_wins(a, b) for a, b in zip(replies_a, replies_b)])
        second_flipped = np.array([1 - shown_first_wins(b, a) for a, b in zip(replies_a, replies_b)])
        return JudgeOutput.from_probabilities((first + second_flipped) / 2, first, second_flipped, 0.05,
                                              "judge:test-length-both-orders")


def test_a_judge_whose_swap_mirrors_it_reads_a_pair_judged_in_the_other_order(tmp_path):
    """A gate run with the systems swapped (the demo too, whose judge is precomputed in the file's order) judged
    every pair again: a judge that averages both orders answers the swap from the cache, mirrored."""
    store = ScoreCache(tmp_path / "s.sqlite3", max_bytes=1 << 30)
    ctx, a, b = [["hi"], ["how are you?"], ["bye"]], ["hello there", "fine", "see you"], ["hey", "fine thanks", "ok"]
    _BothOrdersLengthJudge.asked.clear()
    judge_pairs(ctx, a, b, judge="test-length-both-orders", cache=store)
    from core.engine import pairs_to_judge
    assert pairs_to_judge(ctx, b, a, judge="test-length-both-orders", cache=store) == 0
    mirrored = judge_pairs(ctx, b, a, judge="test-length-both-orders", cache=store)
    assert _BothOrdersLengthJudge.asked == [3]  # the swap judged nothing
    fresh = judge_pairs(ctx, b, a, judge="test-length-both-orders", cache=False)
    for f in ("p_a", "p_ab", "p_ba_flipped"):
        np.testing.assert_allclose(getattr(mirrored, f), getattr(fresh, f), rtol=0, atol=1e-15)
    assert mirrored.verdict == fresh.verdict and mirrored.first_shown == pytest.approx(fresh.first_shown)
    first = judge_pairs(ctx, a, b, judge="test-length-both-orders", cache=store)
    mixed = judge_pairs([ctx[0], ctx[1], ["new one"]], [b[0], a[1], "x"], [a[0], b[1], "yy"],
                        judge="test-length-both-orders", cache=store)  # mirrored, direct and new in one call
    assert _BothOrdersLengthJudge.asked == [3, 3, 1]  # after the run without a cache: only the new pair judged
    np.testing.assert_allclose(mixed.p_a[:2], [1 - first.p_a[0], first.p_a[1]], rtol=0, atol=1e-15)
    _LengthJudge.asked.clear()  # a judge that does not say its swap mirrors it is asked again
    judge_pairs(ctx, a, b, judge="test-length", cache=store)
    judge_pairs(ctx, b, a, judge="test-length", cache=store)
    assert _LengthJudge.asked == [3, 3]


def test_judged_pairs_are_read_back_and_the_judge_not_asked_again(tmp_path):
    store = ScoreCache(tmp_path / "s.sqlite3", max_bytes=1 << 30)
    ctx, a, b = [["hi"], ["how are you?"], ["bye"]], ["hello there", "fine", "see you"], ["hey", "fine thanks", "ok"]
    _LengthJudge.asked.clear()
    out1 = judge_pairs(ctx, a, b, judge="test-length", cache=store)
    out2 = judge_pairs(ctx, a, b, judge="test-length", cache=store)
    out3 = judge_pairs(ctx + [["new"]], a + ["x"], b + ["yy"], judge="test-length", cache=store)
    assert _LengthJudge.asked == [3, 1]
    for f in ("p_a", "p_ab", "p_ba_flipped"):
        np.testing.assert_array_equal(getattr(out1, f), getattr(out2, f))
    assert out1.verdict == out2.verdict == ["A", "B", "A"] and out3.verdict[-1] == "B"
    assert out2.signature == "judge:test-length" and out2.order_disagreement == out1.order_disagreement
    assert store.get_many(judge_namespace("test-length", "length-v1", __import__("core").__version__,
                                          device_key("cpu")), [pair_key(["hi"], "hello there", "hey")])


def test_size_cap_drops_the_least_recently_used(tmp_path):
    store = ScoreCache(tmp_path / "s.sqlite3", max_bytes=20_000)
    for i in range(40):
        store.put_many("ns", {f"k{i}": {"s": float(i), "d": "x" * 900}})
    info = store.info()
    assert info["bytes"] <= 20_000
    assert store.get_many("ns", ["k39"]) and not store.get_many("ns", ["k0"])


def test_not_a_cache_file_is_a_clear_error_for_info_and_a_note_for_a_run(tmp_path):
    """`cache info` says what is wrong with the file (exit 2); a scoring run goes on without it and ends with
    the note, exit 0, its output that of a run without a cache."""
    bad = tmp_path / "scores.sqlite3"
    bad.write_bytes(b"this is not a database" * 100)
    env = dict(os.environ, DIALEVAL_CACHE=str(tmp_path))
    env.pop("DIALEVAL_NO_CACHE", None)
    r = subprocess.run([sys.executable, "-m", "core", "cache", "info"], env=env, capture_output=True, text=True)
    assert r.returncode == 2 and "not a dialeval score cache" in r.stderr and "Traceback" not in r.stderr
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"context": ["hi there"], "response": "hello, how are you?", "references": ["hey"]}\n')
    score = [sys.executable, "-m", "core", "score", str(rows), "--metrics", "bleu", "--quiet"]
    r = subprocess.run(score, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "is damaged (file is not a database): this run went on without it" in r.stderr
    assert bad.read_bytes() == b"this is not a database" * 100
    r_plain = subprocess.run(score + ["--no-cache"], env=env, capture_output=True, text=True)
    assert r.stdout == r_plain.stdout and "damaged" not in r_plain.stderr


def test_cache_info_makes_nothing_and_says_what_all_is_for(tmp_path):
    """`cache info` on a machine that never scored created the cache folder; `info --all` ignored --all."""
    env = dict(os.environ, DIALEVAL_CACHE=str(tmp_path / "never"))
    env.pop("DIALEVAL_NO_CACHE", None)
    r = subprocess.run([sys.executable, "-m", "core", "cache", "info", "--all"], env=env, capture_output=True,
                       text=True)
    assert r.returncode == 0 and "not made yet" in r.stdout and "0 entries" in r.stdout
    assert "--all goes with clear" in r.stderr
    assert not (tmp_path / "never").exists()


def test_cli_keeps_rows_and_no_cache_keeps_nothing(tmp_path, repo_root):
    inp = tmp_path / "in.jsonl"
    lines = (repo_root / "demo" / "demo.jsonl").read_text().splitlines()[:6]
    recs = [dict(json.loads(x), response=json.loads(x)["response"] + " (new)") for x in lines]  # not the demo's rows
    inp.write_text("".join(json.dumps(r) + "\n" for r in recs))
    env = dict(os.environ, DIALEVAL_CACHE=str(tmp_path / "c"))
    env.pop("DIALEVAL_NO_CACHE", None)

    def run(*args):
        r = subprocess.run([sys.executable, "-m", "core", *args], env=env, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        return r.stdout
    plain = run("score", str(inp), "--metrics", "bleu", "--no-cache")
    assert "0 entries" in run("cache", "info")
    assert run("score", str(inp), "--metrics", "bleu") == plain
    assert "6 entries" in run("cache", "info")
    assert run("score", str(inp), "--metrics", "bleu") == plain  # now read from the cache
    assert "removed 6 entries" in run("cache", "clear")
    # what else the folder holds is listed (SmolLM2's 520 MB copy was invisible) and removed only with --all;
    # the dashboard's votes and uploads are the user's and stay
    # and a file dialeval did not make is never touched (the folder may be one the user shares: --all removed it)
    copy = tmp_path / "c" / "smollm2-135m-f32-98362432-b179c9523d0e"
    copy.mkdir()
    (copy / "model.safetensors").write_bytes(b"x" * 2048)
    (tmp_path / "c" / "votes").mkdir()
    (tmp_path / "c" / "votes" / "k.jsonl").write_text("{}\n")
    (tmp_path / "c" / "thesis.tex").write_text("my thesis\n")
    log = tmp_path / "c" / "serve-8765.log"  # a local LLM judge's server log (core.judges.local_server)
    log.write_text("INFO started\n")
    info = run("cache", "info")
    assert copy.name in info and log.name in info and "votes" not in info and "thesis" not in info
    assert "kept 2 other file(s)" in run("cache", "clear")
    assert "removed 2 other file(s)" in run("cache", "clear", "--all")
    assert not copy.exists() and not log.exists() and (tmp_path / "c" / "votes" / "k.jsonl").exists()
    assert (tmp_path / "c" / "thesis.tex").read_text() == "my thesis\n"
    # a copy that is a link to another folder (shared between caches): the link goes, the folder stays
    # (rmtree refused the link, after the score entries were gone: exit 2)
    elsewhere = tmp_path / "shared-copy"
    elsewhere.mkdir()
    (elsewhere / "model.safetensors").write_bytes(b"x" * 2048)
    copy.symlink_to(elsewhere, target_is_directory=True)
    assert "removed 1 other file(s)" in run("cache", "clear", "--all")
    assert not copy.is_symlink() and (elsewhere / "model.safetensors").exists()


def test_precomputed_layer_answers_first_and_only_for_its_keys(rows, tmp_path):
    store = ScoreCache(tmp_path / "a.sqlite3", max_bytes=1 << 30)
    score_examples(rows[:6], ["bleu"], cache=store)
    path = tmp_path / "precomputed-x.json.gz"
    assert export_precomputed(store, path, {"what": "test"}) == 6
    assert gzip.open(path).read() == gzip.open(path).read()
    layered = ScoreCache(tmp_path / "b.sqlite3", max_bytes=1 << 30, precomputed=Precomputed([path]))
    score_examples(rows, ["bleu"], cache=layered)
    assert (layered.hits, layered.misses) == (6, 6)


def test_a_version_bump_that_moves_no_number_keeps_the_precomputed_layer(rows, tmp_path):
    """The shipped layers are found by the namespace without the package version (``core.cache.versionless``):
    entries recorded by one release answer the same signature under the next."""
    store = ScoreCache(tmp_path / "a.sqlite3", max_bytes=1 << 30)
    score_examples(rows[:6], ["bleu"], cache=store)
    (ns, entries), = store.export().items()
    assert "|v:" in ns
    path = tmp_path / "precomputed-x.json.gz"
    export_precomputed(store, path, {"what": "test"})
    bumped = re.sub(r"\|v:[^|]*", "|v:99.0.0", ns)
    assert bumped != ns and Precomputed([path]).get_many(bumped, list(entries)) == entries
    other = bumped.replace("metric:bleu", "metric:ubleu")
    assert Precomputed([path]).get_many(other, list(entries)) == {}


def test_shipped_demo_scores_answer_for_todays_signatures(repo_root, monkeypatch):
    """checkpoints/precomputed-demo.json.gz must cover the demo under today's metric and judge signatures, for
    every kind of CPU it was computed on (re-run scripts/precompute_demo.py after a change that moves one) and
    hold the numbers a fresh run gives there (the golden rows are a subset of the demo; the golden file and the
    precomputed scores are recorded on the same kinds of CPU)."""
    from core import engine
    from core.cache import read_precomputed, shipped_precomputed
    layer = shipped_precomputed()
    assert layer is not None, "no precomputed-*.json.gz among the shipped checkpoints"
    kinds = read_precomputed(repo_root / "checkpoints" / "precomputed-demo.json.gz")["about"]["computed_on"]
    golden = json.loads((repo_root / "tests" / "golden" / "scores.json").read_text())
    for m in DEFAULT_METRICS:  # the golden file keeps each metric's records per kind of CPU
        assert set(kinds) <= set(golden["metrics"][m]["computed_on"]), f"{m}: record both on the same kinds of CPU"
    comp = load_comparison(str(repo_root / "demo" / "demo.jsonl"))
    exs = comp.examples()
    def leaf_metrics(metric):  # what the cache keeps: the metrics that compute (a composite combines its parts)
        if not isinstance(metric, CompositeMetric):
            return [metric]
        return [leaf for part in metric.parts() for leaf in leaf_metrics(part)]
    leaves = [leaf for m in DEFAULT_METRICS for leaf in leaf_metrics(get_metric(m))]
    keys = [row_key(e.context, e.response, e.references) for e in exs]
    where = {tuple(r): i for i, r in enumerate(golden["rows"])}
    gold = [e for e in exs if (e.id, e.system) in where]
    assert len(gold) == 60
    for kind in kinds:
        monkeypatch.setattr(engine, "device_key", lambda device, kind=kind: kind)
        for metric in leaves:
            found = layer.get_many(metric_namespace(metric), keys)
            assert len(found) == len(set(keys)), f"{metric.name} on {kind}: the demo's precomputed scores are stale"
        only_layer = ScoreCache(repo_root / "no-such-folder" / "x.sqlite3", max_bytes=0, precomputed=layer)
        table = score_examples(gold, list(DEFAULT_METRICS), cache=only_layer)
        assert only_layer.misses == 0
        for m in DEFAULT_METRICS:
            record = golden["metrics"][m]["computed_on"][kind]
            want = np.array([np.nan if record[where[(e.id, e.system)]] is None
                             else record[where[(e.id, e.system)]] for e in gold])
            got = table.column(m)  # to 1e-6 of each number's size (at least 1e-6), as tests/test_golden.py compares
            assert np.array_equal(np.isnan(got), np.isnan(want)), f"{m} on {kind}"
            off = np.abs(got - want) / np.maximum(1.0, np.abs(want))
            assert np.nanmax(off) <= 1e-6, (f"{m} on {kind}", float(np.nanmax(off)))
        store = ScoreCache(repo_root / "no-such-folder" / "x.sqlite3", max_bytes=0, precomputed=layer)
        monkeypatch.setattr(engine, "resolve_cache", lambda cache=None, store=store: store)
        out = cached_judge_comparison(comp)
        assert out is not None and len(out.p_a) == len(comp.pairs), f"the judge's demo pairs on {kind}: not precomputed"


def test_the_python_api_takes_a_cache(tmp_path):
    import core
    store = ScoreCache(tmp_path / "s.sqlite3", max_bytes=1 << 30)
    args = (["sure, see you then", "no."], [["lunch tomorrow?"], ["coming?"]], [["ok, see you tomorrow"], ["yes"]])
    first = core.score(*args, metrics="bleu", cache=store)
    again = core.score(*args, metrics="bleu", cache=store)
    none = core.score(*args, metrics="bleu", cache=False)
    assert (store.misses, store.hits) == (2, 2)
    np.testing.assert_array_equal(first["bleu"], again["bleu"])
    np.testing.assert_array_equal(first["bleu"], none["bleu"])


def test_large_values_are_kept_compressed_and_read_back_exactly(tmp_path):
    store = ScoreCache(tmp_path / "s.sqlite3", max_bytes=1 << 30)
    refs = [{"text": f"retrieved reply number {i}, fairly ordinary", "weight": i / 50, "nan": float("nan")}
            for i in range(50)]
    big, small = {"score": 12.5, "details": {"references": refs}}, {"score": 0.25, "details": {"s_R": 0.5}}
    store.put_many("ns", {"big": big, "small": small})
    got = ScoreCache(tmp_path / "s.sqlite3").get_many("ns", ["big", "small"])
    assert json.dumps(got, sort_keys=True) == json.dumps({"big": big, "small": small}, sort_keys=True)
    ns = store.info()["namespaces"]["ns"]
    raw = len(json.dumps(big, separators=(",", ":")))
    assert ns["entries"] == 2 and ns["bytes"] < raw / 2  # the big value compressed, the small one as text


def test_a_run_that_outgrows_the_cap_says_so(tmp_path):
    store = ScoreCache(tmp_path / "s.sqlite3", max_bytes=4000)
    assert store.overflow_note() is None
    for i in range(40):
        store.put_many("ns", {f"k{i}": {"score": i, "details": {"pad": "x" * 200}}})
    assert store.info()["bytes"] <= 4000
    note = store.overflow_note()
    assert note and "DIALEVAL_CACHE_MAX_MB" in note and f"{store.dropped_own:,} of its entries" in note
    later = ScoreCache(tmp_path / "s.sqlite3", max_bytes=1 << 20)  # a new run that fits: no note
    later.put_many("ns", {"k-new": {"score": 1.0}})
    assert later.overflow_note() is None
    from core.cache import overflow_message  # a cap of 10 MB or more was said without what it could not keep
    for cap in (4000, 1024 * 2 ** 20):
        said = overflow_message(5, cap)
        assert said.endswith("(see `dialeval cache info`)") and "could not keep everything this run scored: 5 of" in said
    assert "capped at 1,024 MB" in overflow_message(5, 1024 * 2 ** 20)


def test_the_judges_cache_keeps_devices_and_cpu_kinds_apart(tmp_path, monkeypatch):
    """P(A) computed on a GPU (half precision) is not the CPU's, and one kind of CPU's bfloat16 P(A) is not
    another's (AMX tiles and AVX-512 BF16 instructions round differently): judged pairs are kept per device and
    per CPU kernel family."""
    import core.engine
    from core.models import device
    version = __import__("core").__version__
    assert judge_namespace("pairwise", "h", version, device_key("cpu")) == \
        f"judge:pairwise|ckpt:h|v:{version}|device:cpu-{device.cpu_kernels()}" + \
        ("+smollm-f32" if device.smollm_dtype() == "float32" else "")
    assert judge_namespace("pairwise", "h", version, device_key("cuda")).split("|device:")[1].startswith("cuda")
    assert device_key("cpu") != "cpu" and device.cpu_kernels()
    store = ScoreCache(tmp_path / "s.sqlite3", max_bytes=1 << 30)
    ctx, a, b = [["hi"], ["bye"]], ["hello there", "see you"], ["hey", "ok"]
    _LengthJudge.asked.clear()
    judge_pairs(ctx, a, b, judge="test-length", cache=store)
    monkeypatch.setattr(core.engine, "active_device", lambda: "cuda")
    judge_pairs(ctx, a, b, judge="test-length", cache=store)  # not read from the CPU's entries
    judge_pairs(ctx, a, b, judge="test-length", cache=store)  # read from its own
    assert _LengthJudge.asked == [2, 2]
    monkeypatch.setattr(core.engine, "active_device", lambda: "cpu")
    monkeypatch.setattr(core.engine, "device_key", lambda d: "cpu-another-kernel-family")
    judge_pairs(ctx, a, b, judge="test-length", cache=store)  # another kind of CPU: judged anew
    assert _LengthJudge.asked == [2, 2, 2]


def test_a_damaged_cache_file_is_passed_by_with_a_note_and_clear_removes_it(tmp_path):
    """Pages of the SQLite file overwritten (a full disk, a CI cache restored cut short): scoring ended in a
    traceback, then in an error that stopped every run until the file was removed. The run goes on without the
    file (nothing read from it, nothing written, nothing moved), says so, and `cache clear` resets it."""
    import random
    path = tmp_path / "scores.sqlite3"
    store = ScoreCache(path, max_bytes=1 << 30)
    store.put_many("ns", {f"k{i}": {"v": "x" * 200, "i": i} for i in range(3000)})
    with open(path, "r+b") as f:
        rnd = random.Random(0)
        for page in range(10, 20):
            f.seek(page * 4096)
            f.write(bytes(rnd.randrange(256) for _ in range(4096)))
    before = path.read_bytes()
    damaged = ScoreCache(path, max_bytes=1 << 30)
    assert damaged.damage_note() is None
    from core.cache import DamagedCacheWarning
    with pytest.warns(DamagedCacheWarning, match="went on without it"):  # the API's word for it, once
        assert damaged.get_many("ns", [f"k{i}" for i in range(3000)]) == {}  # all or nothing: no entry of it
    note = damaged.damage_note()
    assert note and "is damaged (database disk image is malformed)" in note and "went on without it" in note
    assert "`dialeval cache clear` removes the file" in note
    damaged.put_many("ns", {"new": 1})
    assert damaged.get_many("ns", ["new", "k1"]) == {} and path.read_bytes() == before  # not written to
    other_process = ScoreCache(path, max_bytes=1 << 30)  # cleared from another process, which then makes a new
    assert other_process.clear() == 0 and not path.exists()  # file (ext4 may give it the old inode number)
    import time
    time.sleep(0.01)
    other_process.put_many("ns", {"theirs": 3})
    assert damaged.get_many("ns", ["theirs"]) == {"theirs": 3}  # this one uses the new file from then on
    damaged.put_many("ns", {"after": 2})
    assert damaged.damage_note() is None and damaged.get_many("ns", ["after"]) == {"after": 2}
    assert damaged.clear() == 2
    fresh = ScoreCache(path, max_bytes=1 << 30)
    fresh.put_many("ns", {"a": 1})
    assert fresh.get_many("ns", ["a"]) == {"a": 1} and fresh.damage_note() is None
    # a value whose bytes were overwritten (its page intact) stopped the run with zlib's error: damage as well
    import sqlite3
    fresh.put_many("ns", {"big": {"v": "y" * 5000}})
    con = sqlite3.connect(path)
    con.execute("UPDATE entries SET value = ? WHERE key = 'big'", (b"\x78\x9c not zlib at all",))
    con.commit()
    con.close()
    with pytest.warns(DamagedCacheWarning, match="an entry cannot be read"):
        assert fresh.get_many("ns", ["big", "a"]) == {}
    info_of_damaged = ScoreCache(tmp_path / "other.sqlite3", max_bytes=1 << 30)
    (tmp_path / "other.sqlite3").write_bytes(b"not a database at all" * 100)
    with pytest.raises(CacheError, match="not a dialeval score cache .*`dialeval cache clear` removes it"):
        info_of_damaged.info()  # looking at the file says what is wrong with it
    (tmp_path / "other.sqlite3").write_bytes(b"not a database at all" * 100)
    assert ScoreCache(tmp_path / "other.sqlite3", max_bytes=1 << 30).clear() == 0


def test_rows_from_the_precomputed_demo_write_the_same_bytes_as_fresh_ones(repo_root, tmp_path, monkeypatch, capsys):
    """The precomputed layer stores details with sorted keys; rows it answered came out with another key order
    than freshly scored rows (same numbers, other bytes)."""
    from core.cli import main
    monkeypatch.setenv("DIALEVAL_CACHE", str(tmp_path / "c"))
    monkeypatch.delenv("DIALEVAL_NO_CACHE", raising=False)
    src = tmp_path / "demo6.jsonl"
    src.write_text("".join((repo_root / "demo" / "demo.jsonl").read_text().splitlines(keepends=True)[:6]))
    assert main(["score", str(src), "--metrics", "bleu,ubleu", "--quiet"]) == 0
    served = capsys.readouterr().out
    assert main(["score", str(src), "--metrics", "bleu,ubleu", "--quiet", "--no-cache"]) == 0
    assert capsys.readouterr().out == served


def test_entries_written_by_other_code_of_the_same_version_are_not_read(tmp_path, monkeypatch):
    """The version alone keyed the disk cache, so a checkout between releases read numbers its earlier code had
    cached (ubleu_paper on 6 of 60 golden rows); the namespace on disk now carries a hash of the code."""
    import core.cache as cache
    from core.cache import ScoreCache, code_fingerprint
    assert len(code_fingerprint()) == 12 and code_fingerprint() == code_fingerprint()
    monkeypatch.setattr(cache, "_FINGERPRINT", "aaaaaaaaaaaa")
    store = ScoreCache(tmp_path / "s.sqlite3")
    store.put_many("metric:x|v:1", {"k": {"s": 1.0}})
    assert store.get_many("metric:x|v:1", ["k"]) == {"k": {"s": 1.0}}
    monkeypatch.setattr(cache, "_FINGERPRINT", "bbbbbbbbbbbb")  # the code changed, the version did not
    assert store.get_many("metric:x|v:1", ["k"]) == {} and store.export() == {}
    store.put_many("metric:x|v:1", {"k": {"s": 2.0}})
    assert store.get_many("metric:x|v:1", ["k"]) == {"k": {"s": 2.0}}
    assert store.export() == {"metric:x|v:1": {"k": {"s": 2.0}}}
    assert set(store.info()["namespaces"]) == {"metric:x|v:1",
                                              "metric:x|v:1 [written by other dialeval code: not read]"}


def test_an_llm_judge_s_answers_are_read_by_any_code(tmp_path, monkeypatch):
    """A remote model's answers (the llm judge's: paid for) were keyed by this code's hash too, so any change of
    dialeval's code sent every request again; the prompt's version is in their namespace."""
    import core.cache as cache
    import core.judges.llm  # noqa: F401 (it names its namespaces: core.cache.kept_across_code)
    from core.cache import ScoreCache
    monkeypatch.setattr(cache, "_FINGERPRINT", "aaaaaaaaaaaa")
    store = ScoreCache(tmp_path / "s.sqlite3")
    store.put_many("llm-judge|model:m|prompt:1", {"k": {"p_first": 1.0}})
    store.put_many("metric:x|v:1", {"k": {"s": 1.0}})
    monkeypatch.setattr(cache, "_FINGERPRINT", "bbbbbbbbbbbb")
    assert store.get_many("llm-judge|model:m|prompt:1", ["k"]) == {"k": {"p_first": 1.0}}
    assert store.get_many("metric:x|v:1", ["k"]) == {}
    assert store.export() == {"llm-judge|model:m|prompt:1": {"k": {"p_first": 1.0}}}
    assert set(store.info()["namespaces"]) == {"llm-judge|model:m|prompt:1",
                                              "metric:x|v:1 [written by other dialeval code: not read]"}


def test_cache_info_counts_entries_written_before_the_code_mark_as_not_read(tmp_path):
    """Entries of an older version (no code mark) overwrote the current code's line in `cache info`, whose lines
    then summed to less than its header."""
    import sqlite3

    from core.cache import ScoreCache
    store = ScoreCache(tmp_path / "s.sqlite3")
    store.put_many("metric:x|v:1", {"k": {"s": 1.0}, "j": {"s": 2.0}})
    con = sqlite3.connect(tmp_path / "s.sqlite3")
    con.execute("INSERT INTO entries (ns, key, value, bytes, used) VALUES (?, ?, ?, ?, ?)",
                ("metric:x|v:1", "old", '{"s": 3.0}', 30, 0.0))
    con.commit()
    con.close()
    info = store.info()
    assert info["namespaces"]["metric:x|v:1"]["entries"] == 2
    assert info["namespaces"]["metric:x|v:1 [written by other dialeval code: not read]"]["entries"] == 1
    assert sum(r["entries"] for r in info["namespaces"].values()) == info["entries"] == 3


def test_the_demo_keeps_another_cpu_kind_only_while_it_answers_for_the_whole_demo(repo_root, tmp_path):
    """scripts/precompute_demo.py keeps the entries of other kinds of CPU only if they hold every row computed here
    under every namespace: one stale metric (MME's change of 2026-11-26 kept the AMX entries of the other three)
    or rows of a changed demo file drop that kind whole."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("precompute_demo", repo_root / "scripts" / "precompute_demo.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    here = {"m1|device:x": {"r1": 1.0, "r2": 2.0}, "m2|device:x": {"r1": 3.0, "r2": 4.0}}
    def kept(entries):
        path = tmp_path / "pre.json.gz"
        with gzip.open(path, "wt", encoding="utf-8") as f:
            json.dump({"about": {}, "entries": entries}, f)
        return sorted({ns.rsplit("|device:", 1)[1] for ns in script.other_kinds(path, "x", here)})
    whole = {"m1|device:y": {"r1": 1.1, "r2": 2.1}, "m2|device:y": {"r1": 3.1, "r2": 4.1}}
    assert kept({**here, **whole}) == ["y"]
    assert kept({**here, "m1|device:y": whole["m1|device:y"], "m2-old|device:y": {"r1": 0.0, "r2": 0.0}}) == []
    assert kept({**here, **whole, "m2|device:y": {"r1": 3.1, "r0": 9.9}}) == []  # rows of another demo file


def test_a_judge_without_flags_of_its_own_is_cached_from_the_command_line(tmp_path, monkeypatch, capsys):
    """`dialeval judge --judge NAME` built every judge but the learned one as an object, which the engine does not
    cache: a new judge with a cache identity judged every pair again on every run (the API, which passes the name,
    kept them)."""
    import json
    from core.cli import main
    monkeypatch.setenv("DIALEVAL_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("DIALEVAL_NO_CACHE", raising=False)
    paths = []
    for s, reply in (("a", "a longer reply about {}"), ("b", "short {}")):
        path = tmp_path / f"{s}.jsonl"
        path.write_text("".join(json.dumps({"id": str(i), "system": s, "context": [f"q {i}?"],
                                            "response": reply.format(i)}) + "\n" for i in range(5)))
        paths.append(str(path))
    _LengthJudge.asked.clear()
    for _ in range(2):
        assert main(["judge", *paths, "--judge", "test-length", "--quiet"]) == 0
    assert _LengthJudge.asked == [5] and capsys.readouterr().out


@pytest.mark.slow  # loads MiniLM and the default pool's index in a child process
def test_a_cache_folder_that_cannot_be_made_only_means_nothing_is_kept(tmp_path, repo_root):
    """With a read-only HOME (a CI runner's) and --no-cache, υBLEU stopped at its pool's key memo ('cannot write
    /dev/null/.cache/dialeval/pool-keys.json'), after the metrics before it had run; SmolLM2's float32 copy and a
    built pool index are kept there the same way: a folder that cannot be made only means nothing is kept."""
    inp = tmp_path / "in.jsonl"
    lines = (repo_root / "demo" / "demo.jsonl").read_text().splitlines()[:4]
    inp.write_text("\n".join(lines) + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("DIALEVAL_CACHE", "XDG_CACHE_HOME")}
    env["HOME"] = "/dev/null"
    r = subprocess.run([sys.executable, "-m", "core", "score", str(inp), "--metrics", "bleu,ubleu", "--no-cache",
                        "--quiet"], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert len(r.stdout.splitlines()) == 4 and "/dev/null" not in r.stderr
