"""core.stats: intervals that cover, paired tests that are right on identical systems, planted
differences and ties, cluster resampling, and the ``compare`` command on real data."""
import json
import math
import time
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from core import stats
from core.cli import main as cli


# ---------------------------------------------------------------------------------------------- Wilson


@pytest.mark.parametrize("k,n,lo,hi", [(8, 10, 0.4902, 0.9433), (0, 10, 0.0, 0.2775), (10, 10, 0.7225, 1.0),
                                       (5, 10, 0.2366, 0.7634), (50, 100, 0.4038, 0.5962)])
def test_wilson_known_values(k, n, lo, hi):
    a, b = stats.wilson_interval(k, n)
    assert a == pytest.approx(lo, abs=1e-4) and b == pytest.approx(hi, abs=1e-4)


def test_wilson_empty_and_invalid():
    assert stats.wilson_interval(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError):
        stats.wilson_interval(11, 10)


# ---------------------------------------------------------------------------------------------- coverage


def test_mean_interval_covers_true_mean_at_nominal_rate():
    rng = np.random.default_rng(1)
    hits = 0
    reps = 200
    for i in range(reps):
        x = rng.exponential(2.0, size=60)  # skewed: a real test of the percentile interval
        _, lo, hi = stats.mean_ci(x, n_boot=500, seed=i)
        hits += lo <= 2.0 <= hi
    assert 0.88 <= hits / reps <= 0.99


def test_correlation_interval_covers_true_rho():
    rng = np.random.default_rng(2)
    rho, hits, reps = 0.5, 0, 200
    cov = [[1, rho], [rho, 1]]
    for i in range(reps):
        xy = rng.multivariate_normal([0, 0], cov, size=120)
        c = stats.correlate(xy[:, 0], xy[:, 1], "pearson", n_boot=400, seed=i)
        hits += c.low <= rho <= c.high
    assert 0.88 <= hits / reps <= 0.99


def _clustered(rng, n_ctx=40, per=6, slope=0.0):
    """Rows that share a context share a large random effect in x and y (as scores of several systems
    answering one context do)."""
    ctx = np.repeat(np.arange(n_ctx), per)
    u = rng.normal(size=n_ctx)[ctx]
    x = u + 0.3 * rng.normal(size=len(ctx))
    y = slope * x + u + 0.3 * rng.normal(size=len(ctx))
    return x, y, ctx


def test_cluster_bootstrap_covers_where_row_bootstrap_fails():
    rng = np.random.default_rng(3)
    row_hits = ctx_hits = 0
    reps = 150
    for i in range(reps):
        ctx = np.repeat(np.arange(30), 8)
        x = rng.normal(size=30)[ctx] + 0.5 * rng.normal(size=len(ctx))  # true mean 0
        _, lo, hi = stats.mean_ci(x, n_boot=400, seed=i)
        row_hits += lo <= 0 <= hi
        _, lo, hi = stats.mean_ci(x, n_boot=400, seed=i, groups=ctx)
        ctx_hits += lo <= 0 <= hi
    assert row_hits / reps < 0.7  # rows are not independent: the naive interval is far too narrow
    assert 0.87 <= ctx_hits / reps <= 0.99


def test_context_resampling_used_when_contexts_repeat():
    x, y, ctx = _clustered(np.random.default_rng(4))
    rows = stats.correlate(x, y, "spearman", n_boot=500)
    clus = stats.correlate(x, y, "spearman", groups=[f"c{c}" for c in ctx], n_boot=500)
    assert rows.resampled == "rows" and clus.resampled == "contexts"
    assert clus.n_groups == 40 and clus.n == 240 and clus.p_method == "bootstrap"
    assert clus.r == pytest.approx(rows.r)
    assert (clus.high - clus.low) > 1.5 * (rows.high - rows.low)
    # unique groups are just rows
    uniq = stats.correlate(x, y, "spearman", groups=list(range(len(x))), n_boot=500)
    assert uniq.resampled == "rows" and uniq.p_method == "scipy"


def test_bootstrap_is_full_size():
    """Replicate means must have the spread sd/sqrt(n) (a half-size bootstrap gives sqrt(2) more)."""
    x = np.random.default_rng(5).normal(size=400)
    reps = stats.bootstrap_means(x, n_boot=4000, seed=1)
    assert reps.std() == pytest.approx(x.std() / math.sqrt(len(x)), rel=0.08)


# ---------------------------------------------------------------------------------------------- correlations


@pytest.mark.parametrize("method", stats.METHODS)
def test_correlation_matches_scipy_and_bootstrap_ranks_are_exact(method):
    rng = np.random.default_rng(6)
    x = np.round(rng.normal(size=80), 1)  # ties on purpose
    y = np.round(x + rng.normal(size=80), 0)
    c = stats.correlate(x, y, method, n_boot=300)
    ref = {"pearson": sps.pearsonr, "spearman": sps.spearmanr, "kendall": sps.kendalltau}[method](x, y)
    assert c.r == pytest.approx(ref.statistic) and c.p == pytest.approx(ref.pvalue)
    assert c.low < c.r < c.high and c.n == 80
    # each vectorized replicate equals scipy on the explicitly resampled data
    W = stats.cluster_counts(np.random.default_rng(0), 80, 4)
    for j in range(4):
        idx = np.repeat(np.arange(80), W[j].astype(int))
        want = {"pearson": sps.pearsonr, "spearman": sps.spearmanr, "kendall": sps.kendalltau}[method](x[idx], y[idx])
        if method == "pearson":
            got = stats.weighted_pearson(x, y, W[j:j + 1])[0]
        elif method == "spearman":
            Wj = W[j:j + 1]
            got = stats.weighted_pearson(stats.weighted_midranks(x, Wj), stats.weighted_midranks(y, Wj), Wj)[0]
        else:
            got = stats.point_correlation(x[idx], y[idx], "kendall")[0]
        assert got == pytest.approx(want.statistic, abs=1e-10)


def test_correlation_drops_nan_and_handles_constant():
    x = np.array([1, 2, 3, 4, 5, np.nan, 7.0])
    y = np.array([2, 1, 4, 3, 6, 1, np.nan])
    c = stats.correlate(x, y, n_boot=100)
    assert c.n == 5
    c = stats.correlate([1, 1, 1, 1], [1, 2, 3, 4], n_boot=100)
    assert math.isnan(c.r) and math.isnan(c.low)


def test_a_resampled_p_below_what_the_resamples_can_show_is_marked_as_a_floor():
    """meta-eval printed p 0.005 where no resample crossed zero (200 resamples): a floor, not an estimate."""
    rng = np.random.default_rng(3)
    groups = np.repeat(np.arange(40), 3)
    x = rng.normal(size=120)
    strong = stats.correlate(x, x + 0.1 * rng.normal(size=120), groups=groups, n_boot=200)
    assert strong.p_method == "bootstrap" and strong.p_floor and strong.p == pytest.approx(1 / 201)
    weak = stats.correlate(x, rng.normal(size=120), groups=groups, n_boot=200)
    assert not weak.p_floor and weak.p > 1 / 201
    from core.meta_eval import format_rows
    row = {"metric": "m", "dataset": "d", "dimension": "overall", "level": "turn", "n": 120, "spearman": strong.r,
           "spearman_low": strong.low, "spearman_high": strong.high, "spearman_p": strong.p, "spearman_p_floor": True}
    assert "<=0.005" in format_rows([row], methods=["spearman"])
    row["spearman_p"] = 1 / 1001  # 1,000 resamples: '<0.001' says it already (it read '<=<0.001')
    text = format_rows([row], methods=["spearman"])
    assert "<0.001" in text and "<=<" not in text


def test_system_correlation_warns_with_few_systems():
    rng = np.random.default_rng(7)
    systems = np.repeat([f"s{i}" for i in range(5)], 30)
    items = np.tile(np.arange(30), 5)
    quality = np.repeat(np.arange(5.0), 30)
    human = quality + rng.normal(size=150)
    metric = quality + rng.normal(size=150)
    sc = stats.system_correlation(metric, human, systems, "spearman", items=items, n_boot=200)
    assert sc.n_systems == 5 and sc.r == pytest.approx(1.0)
    assert sc.p == pytest.approx(2 / 120)  # exact permutation p: 2 of 5! orderings are as extreme
    assert sc.warning and "only 5 systems" in sc.warning
    assert sc.low <= sc.r <= sc.high
    assert sc.metric_means[0] == pytest.approx(metric[:30].mean())


# ---------------------------------------------------------------------------------------------- paired


def test_identical_systems_show_no_difference():
    a = np.random.default_rng(8).normal(size=300)
    r = stats.paired_comparison(a, a.copy())
    assert r.diff == 0 and r.low == 0 and r.high == 0
    assert r.p_bootstrap == 1.0 and r.p_randomization == 1.0 and r.sign_p == 1.0
    assert (r.wins, r.ties, r.losses) == (0, 300, 0)
    assert math.isnan(r.win_rate) and r.win_rate_ties_split == 0.5
    assert r.verdict == stats.NO_DIFF


def test_same_distribution_not_significant_and_false_positive_rate():
    rng = np.random.default_rng(9)
    a, b = rng.normal(size=200), rng.normal(size=200)
    r = stats.paired_comparison(a, b)
    assert r.low <= 0 <= r.high and r.p_randomization > 0.05 and r.verdict == stats.NO_DIFF
    # under H0 the test rejects about 5% of the time
    rejections = 0
    for i in range(200):
        a, b = rng.normal(size=50), rng.normal(size=50)
        rejections += stats.paired_comparison(a, b, n_boot=300, n_perm=300, seed=i).p_randomization < 0.05
    assert 0.01 <= rejections / 200 <= 0.10


def test_planted_difference_is_found():
    rng = np.random.default_rng(10)
    a = rng.normal(size=200)
    b = a + 0.25 + rng.normal(scale=0.8, size=200)  # B better by 0.25
    r = stats.paired_comparison(a, b)
    assert r.verdict == "B better"
    assert r.diff == pytest.approx(a.mean() - b.mean())
    assert r.high < 0 and r.low < -0.1 and r.p_randomization < 0.01 and r.p_bootstrap < 0.01
    assert r.losses > r.wins and r.win_rate < 0.5 and r.win_high < 0.5
    # lower is better (e.g. perplexity): the same numbers make A the better one
    r2 = stats.paired_comparison(a, b, higher_is_better=False)
    assert r2.verdict == "A better" and r2.wins == r.losses


def test_ties_are_ties_not_wins():
    a = np.array([1.0, 1.0, 2.0, 3.0, 5.0, 5.0])
    b = np.array([1.0, 2.0, 1.0, 3.0, 5.0, 5.0 + 1e-13])
    r = stats.paired_comparison(a, b, n_boot=200, n_perm=200)
    assert (r.wins, r.ties, r.losses) == (1, 4, 1)
    assert r.win_rate == 0.5 and r.win_rate_ties_split == pytest.approx(0.5)
    assert r.sign_p == 1.0
    # one win and nine ties: win rate 1.0 among decided pairs, but no evidence at all
    r = stats.paired_comparison([1.0] + [0.0] * 9, [0.0] * 10, n_boot=500, n_perm=500)
    assert (r.wins, r.ties, r.losses) == (1, 9, 0) and r.win_rate == 1.0
    assert r.sign_p == 1.0 and r.p_randomization > 0.4 and r.verdict == stats.NO_DIFF
    assert r.win_rate_ties_split == pytest.approx(0.55)


# the dashboard package's modules beside its Streamlit glue (dashboard.state)
DASHBOARD_HELPERS = ("dashboard.loading, dashboard.csv_columns, dashboard.tables, dashboard.correlations, "
                     "dashboard.judging, dashboard.vote_store, dashboard.exports, core.time_estimates")


def test_the_verdicts_path_does_not_import_scipy_stats():
    """Importing scipy.stats took 1.2 s of the demo's first visit: the engine, the verdict, the reports, the command
    line and the dashboard's helpers load without it (correlations import it when they run)."""
    import subprocess
    import sys
    code = ("import sys, core.engine, core.verdict, core.report, core.html_report, core.cli, " + DASHBOARD_HELPERS
            + "; core.cli.build_parser(); print('scipy.stats' in sys.modules)")  # every command's module loaded
    root = Path(__file__).resolve().parent.parent  # the dashboard package is the checkout's
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root)
    assert out.stdout.strip() == "False"


def test_the_dashboards_verdict_path_imports_neither_pandas_nor_sacrebleu():
    """The home page draws its verdict before its first table: the dashboard's modules, the metrics' registry and
    the default metrics' signatures (what a first visit on precomputed scores needs) load without pandas (~0.6 s)
    and sacrebleu (~0.15 s); a table or a BLEU score imports them when it is made."""
    import subprocess
    import sys
    code = ("import sys, dashboard.state, " + DASHBOARD_HELPERS + "; "
            "from core.scoring import available_metrics, get_metric; "
            "available_metrics(); [get_metric(m).signature() for m in ('bleu', 'ubleu', 'bert_ruber', 'mme')]; "
            "print('pandas' in sys.modules, 'sacrebleu' in sys.modules); "
            "dashboard.csv_columns.csv_preview([]); get_metric('bleu').scorer.tokens('a b'); "
            "print('pandas' in sys.modules, 'sacrebleu' in sys.modules)")
    root = Path(__file__).resolve().parent.parent  # the dashboard package is the checkout's
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root)
    assert out.stdout.split() == ["False", "False", "True", "True"]


def test_sign_test_takes_numpy_counts_and_refuses_negative_ones():
    assert stats.sign_test(np.int64(40), np.int64(61)) == pytest.approx(sps.binomtest(40, 101).pvalue, rel=1e-12)
    assert stats.sign_test(np.int32(30000), np.int32(29200)) == pytest.approx(sps.binomtest(30000, 59200).pvalue)
    with pytest.raises(ValueError):
        stats.sign_test(-1, 3)
    with pytest.raises(TypeError):
        stats.sign_test(2.5, 3)


def test_sign_test_and_randomization_agree_with_exact_values():
    assert stats.sign_test(9, 1) == pytest.approx(sps.binomtest(9, 10).pvalue)
    assert stats.sign_test(0, 0) == 1.0
    assert stats.sign_test(1, 0) == 1.0 and stats.sign_test(6, 0) == 2 / 64 and stats.sign_test(5, 5) == 1.0
    # exact integer sums up to EXACT_SIGN_TEST pairs, scipy's binomial beyond: both as scipy's binomtest
    for wins, losses in [(3, 11), (40, 61), (517, 483), (9100, 8700), (12000, 13000), (30000, 29200)]:
        assert stats.sign_test(wins, losses) == pytest.approx(sps.binomtest(wins, wins + losses).pvalue, rel=1e-9)
        assert stats.sign_test(wins, losses) == stats.sign_test(losses, wins)
    # exact randomization p of 4 pairs with differences +1: 2 of 16 sign patterns are as extreme
    p = stats.approximate_randomization(np.ones(4), n_perm=20000, seed=1)
    assert p == pytest.approx(2 / 16, abs=0.01)


def test_paired_clusters_and_nan():
    rng = np.random.default_rng(11)
    ctx = np.repeat(np.arange(25), 8)
    d_ctx = rng.normal(scale=1.0, size=25)[ctx]  # differences shared within a context
    a = rng.normal(size=200)
    b = a - d_ctx - 0.05 * rng.normal(size=200)
    flat = stats.paired_comparison(a, b)
    clus = stats.paired_comparison(a, b, groups=ctx)
    assert clus.resampled == "contexts" and clus.n_groups == 25
    assert (clus.high - clus.low) > 2 * (flat.high - flat.low)
    a2 = a.copy()
    a2[:3] = np.nan
    r = stats.paired_comparison(a2, b, n_boot=100, n_perm=100)
    assert r.n == 197 and r.n_dropped == 3


def test_vectorized_speed():
    rng = np.random.default_rng(12)
    a, b = rng.normal(size=10_000), rng.normal(size=10_000)
    # CPU time, not wall time: the test must not fail because the machine is busy with other work
    t = time.process_time()
    stats.mean_ci(a, n_boot=2000)
    assert time.process_time() - t < 2.0  # ~0.25 s
    t = time.process_time()
    stats.paired_comparison(a, b, n_boot=2000, n_perm=2000)
    assert time.process_time() - t < 4.0  # ~0.4 s


# ---------------------------------------------------------------------------------------------- CLI


def test_compare_cli_on_real_data(tmp_path, capsys, shared):
    path = shared("eval/usr-topical.jsonl")
    out = tmp_path / "cmp.json"
    rc = cli(["compare", "--no-judge", str(path), "--system-a", "Original Ground Truth", "--system-b", "Argmax Decoding",
                     "--metrics", "bleu", "--format", "json", "--n-boot", "300", "--n-perm", "300",
                     "--out", str(out), "--quiet"])
    assert rc == 0
    res = json.loads(out.read_text())
    assert res["n_pairs"] == 60 and res["aligned_by"] in ("id", "context")
    rows = {r["metric"]: r for r in res["metrics"]}
    assert set(rows) >= {"bleu", "human:Overall"}
    bleu = rows["bleu"]
    assert bleu["n"] + bleu["n_dropped"] == 60
    assert bleu["wins"] + bleu["ties"] + bleu["losses"] == bleu["n"]
    assert bleu["low"] <= bleu["diff"] <= bleu["high"]
    # people rate the real reply above greedy decoding on this set
    assert rows["human:Overall"]["mean_a"] > rows["human:Overall"]["mean_b"]
    rc = cli(["compare", "--no-judge", str(path), "--system-a", "Original Ground Truth", "--system-b", "Argmax Decoding",
                     "--metrics", "bleu", "--format", "markdown", "--n-boot", "200", "--n-perm", "200", "--quiet"])
    text = capsys.readouterr().out
    assert rc == 0 and "| bleu |" in text and "A-B" in text


def test_compare_cli_rejects_unknown_system(shared):
    path = shared("eval/usr-topical.jsonl")
    assert cli(["compare", "--no-judge", str(path), "--system-a", "nope", "--system-b", "Argmax Decoding", "--metrics", "bleu"]) == 2


def test_compare_cli_two_files_lists_unmatched(tmp_path, capsys):
    """System A and B in separate files, aligned by id; a row without partner is listed, not dropped."""
    rng = np.random.default_rng(14)
    words = ["the", "cat", "sat", "on", "a", "mat", "dog", "ran", "home", "fast"]
    rows_a, rows_b = [], []
    for i in range(30):
        ref = " ".join(rng.choice(words, 6))
        good = ref if i % 3 else " ".join(rng.choice(words, 6))  # A mostly repeats the reference
        rows_a.append({"id": f"x{i}", "context": [f"question {i}"], "response": good, "references": [ref]})
        rows_b.append({"id": f"x{i}", "context": [f"question {i}"], "response": " ".join(rng.choice(words, 6)),
                       "references": [ref]})
    rows_a.append({"id": "only-a", "context": ["q"], "response": "r", "references": ["r"]})
    pa, pb = tmp_path / "sysA.jsonl", tmp_path / "sysB.jsonl"
    pa.write_text("\n".join(json.dumps(r) for r in rows_a))
    pb.write_text("\n".join(json.dumps(r) for r in rows_b))
    assert cli(["compare", "--no-judge", str(pa), str(pb), "--metrics", "bleu", "--format", "text", "--n-boot", "300",
                       "--n-perm", "300", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "A = sysA, B = sysB: 30 pairs aligned by id" in out
    assert "A (sysA) better" in out and "1 unmatched row(s)" in out and "'only-a'" in out
    assert cli(["compare", "--no-judge", str(pa), str(pb), "--metrics", "bleu", "--format", "csv", "--n-boot", "100",
                       "--n-perm", "100", "--quiet"]) == 0
    import csv
    import io
    rec = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    said = rec[0]["verdict"]
    assert rec[0]["kind"] == "verdict" and said.startswith("No verdict on sysA vs sysB: the verdict's combined test "
                                                           "of "), said
    assert "could not run" in said and "as diagnostics, which do not decide: bleu favours sysA" in said
    bleu = next(r for r in rec if r["kind"] == "metric")  # rows are told apart by kind (the glance's rows follow the verdict's)
    assert bleu["metric"] == "bleu" and int(bleu["n"]) == 30 and float(bleu["diff"]) > 0


def test_seeded_results_are_reproducible():
    rng = np.random.default_rng(15)
    x, y = rng.normal(size=100), rng.normal(size=100)
    assert stats.correlate(x, y, seed=3) == stats.correlate(x, y, seed=3)
    assert stats.paired_comparison(x, y, seed=3) == stats.paired_comparison(x, y, seed=3)
    assert stats.correlate(x, y, seed=3).low != stats.correlate(x, y, seed=4).low


def test_too_few_contexts_give_no_bootstrap_interval_or_p():
    """One context (or fewer than MIN_RESAMPLED) cannot be resampled: every resample was the data itself, which
    reported a zero-width interval and p = 1/(B+1) ("p < 0.001"). Now: no interval, no bootstrap p, no winner."""
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=12), rng.normal(size=12)
    for n_contexts in (1, 2, stats.MIN_RESAMPLED - 1):
        groups = [i % n_contexts for i in range(12)]
        c = stats.correlate(x, y, "spearman", groups=groups)
        assert math.isnan(c.low) and math.isnan(c.high) and math.isnan(c.p), n_contexts
        pr = stats.paired_comparison(x + 5, y, groups=groups)
        assert math.isnan(pr.low) and math.isnan(pr.high) and math.isnan(pr.p_bootstrap)
        assert pr.verdict == stats.NO_DIFF
        m, lo, hi = stats.mean_ci(x, groups=groups)
        assert math.isfinite(m) and math.isnan(lo) and math.isnan(hi)
    groups = [i % stats.MIN_RESAMPLED for i in range(12)]  # enough contexts: an interval and a p again
    c = stats.correlate(x, y, "spearman", groups=groups)
    assert c.low < c.r < c.high and 0 < c.p <= 1
    pr = stats.paired_comparison(x + 5, y, groups=groups)
    assert pr.low < pr.diff < pr.high and pr.p_bootstrap < 0.05


def test_win_statistics_count_contexts_when_pairs_share_them():
    """Eight contexts answered three times each, A winning every pair: the sign test over pairs said
    p < 0.001 (24 of 24), below anything eight contexts can show; over contexts it is 2/2^8. Without repeated
    contexts nothing changes."""
    from core.stats import clustered_win_stats, win_stats
    flat = clustered_win_stats([1, 1, 0, -1, 1, 1, 1, 0, 1, -1], list(range(10)))
    assert flat == win_stats(6, 2, 2)
    assert clustered_win_stats([1, 0, -1, 1], None) == win_stats(2, 1, 1)
    groups = [f"ctx {i}" for i in range(8) for _ in range(3)]
    ws = clustered_win_stats([1] * 24, groups)
    assert (ws.wins, ws.ties, ws.losses, ws.rate) == (24, 0, 0, 1.0)
    assert ws.sign_p == pytest.approx(2 / 2 ** 8) and win_stats(24, 0, 0).sign_p < 1e-6
    # a bootstrap of outcomes that all go one way cannot vary ([1.0, 1.0]); the interval is never narrower than
    # independent pairs' Wilson interval
    assert (ws.low, ws.high) == (win_stats(24, 0, 0).low, 1.0) and ws.low < 0.9
    mixed = clustered_win_stats([1, 1, -1] * 8, groups, n_boot=500)  # every context: 2 wins, 1 loss
    assert mixed.sign_p == pytest.approx(2 / 2 ** 8) and mixed.rate == pytest.approx(2 / 3)
    assert (mixed.low, mixed.high) == (win_stats(16, 0, 8).low, win_stats(16, 0, 8).high)  # every context alike
    one_loss = clustered_win_stats([1] * 11 + [-1], [i // 2 for i in range(12)])  # 6 contexts, 11 wins, 1 loss
    assert one_loss.low <= win_stats(11, 0, 1).low and one_loss.high == 1.0  # the bootstrap said [0.75, 1]
    few = clustered_win_stats([1, 1, -1, 1], ["a", "a", "b", "c"])  # 3 contexts: no interval
    assert math.isnan(few.low) and math.isnan(few.high) and few.sign_p == 1.0


def test_a_length_controlled_rate_of_calls_all_one_way_has_an_interval():
    """6 of 6 calls to B: the logistic fit separates and every resample agrees; the interval said [0.000, 0.000]
    and the JSON 9.4e-14 for the rate. Now 0 exactly, with at least the Wilson interval of 6 calls."""
    lc = stats.length_controlled_win_rate([0.0] * 6, [1, 2, 3, -1, 0, 4], list(range(6)))
    assert lc.rate == 0.0 and lc.low == 0.0
    assert lc.high == pytest.approx(stats.wilson_interval(0, 6)[1])
    assert stats.wilson_interval(0, 5)[0] == 0.0 and stats.wilson_interval(5, 5)[1] == 1.0  # not 2.8e-17


def test_logistic_fits_at_once_equal_fits_one_at_a_time():
    """The bootstrap's logistic fits run together (each stops on its own): every row's (intercept, slope) is the
    fit of that row's weights alone, by plain Newton steps with numpy's solver."""
    def one_fit(x, y, w, ridge):
        beta, pen = np.zeros(2), np.array([0.0, ridge])
        X = np.stack([np.ones_like(x), x], axis=1)
        for _ in range(50):
            p = 1 / (1 + np.exp(-(X @ beta)))
            step = np.linalg.solve((X * (w * p * (1 - p))[:, None]).T @ X + np.diag(pen) + 1e-12 * np.eye(2),
                                   X.T @ (w * (y - p)) - pen * beta)
            beta = np.clip(beta + step, -30, 30)
            if np.max(np.abs(step)) < 1e-10:
                break
        return beta

    rng = np.random.default_rng(3)
    x = np.tanh(rng.normal(size=40))
    y = (rng.random(40) < 1 / (1 + np.exp(-1.5 * x))).astype(float)
    W = rng.multinomial(40, np.ones(40) / 40, size=30).astype(float)
    W[0] = 0
    W[0, y == 1] = 1  # only wins: the intercept runs off to the clip
    got = stats.logistic_fits(x, y, W, 0.01)
    want = np.array([one_fit(x, y, w, 0.01) for w in W])
    assert np.allclose(got, want, rtol=1e-9, atol=1e-9) and got[0, 0] == 30.0


def test_no_length_controlled_rate_where_equal_length_lies_outside_the_pairs():
    """A's replies the longer in every pair, A winning 9 of 10: the verdict read '(0 % at equal length)' from a
    fit extrapolated to a length difference no pair had."""
    lc = stats.length_controlled_win_rate([1.0] * 9 + [0.0], [5, 7, 3, 9, 4, 6, 8, 5, 3, 2], list(range(10)))
    assert math.isnan(lc.rate) and lc.raw == 0.9
    assert lc.why_none == "A's reply is the longer in 100% of the pairs, so equal length lies outside what was judged"
    mixed = stats.length_controlled_win_rate([1.0] * 9 + [0.0], [5, 7, -3, 9, 4, -6, 8, 5, 3, 2], list(range(10)))
    assert math.isfinite(mixed.rate) and mixed.why_none == ""  # 2 of 10 pairs have B longer: equal length is inside
    # no pair decided (an LLM judge calling every pair a tie): the JSON said why_none "" beside a null rate
    assert stats.length_controlled_win_rate([], [], []).why_none.startswith("no pair decided")


def test_a_replicate_is_connected_where_won_or_tied_edges_lead_everywhere():
    """The Bradley-Terry fit exists without its ridge exactly where the "won or tied" graph is strongly connected
    (Ford 1957); a replicate that drops the only upset is not, and a tie is an edge both ways. Items never
    compared are left out of the test."""
    from core.stats import connected_replicates
    first, second = [0, 1, 0], [1, 2, 2]
    sweep = [1.0, 1.0, 1.0]  # 0 > 1 > 2 and 0 > 2: no upset
    upset = [1.0, 1.0, 0.0]  # 2 beats 0: 0 -> 1 -> 2 -> 0
    both = np.array([[1, 1, 1], [1, 1, 0], [2, 0, 3]])
    assert connected_replicates(first, second, sweep, 3, both).tolist() == [False, False, False]
    assert connected_replicates(first, second, upset, 3, both).tolist() == [True, False, False]
    assert connected_replicates([0, 1], [1, 2], [0.5, 0.5], 4, np.ones((1, 2))).tolist() == [True]  # item 3 unseen
    assert connected_replicates([0, 1], [1, 2], [0.5, 1.0], 3, np.ones((1, 2))).tolist() == [False]
    cycle = [0, 1, 2, 3, 4], [1, 2, 3, 4, 0]  # 0 > 1 > 2 > 3 > 4 > 0: the way back takes 4 steps (2 squarings)
    assert connected_replicates(*cycle, [1.0] * 5, 5, np.array([[1, 1, 1, 1, 1], [1, 1, 0, 1, 1]])).tolist() == [True, False]


def test_a_clustered_correlation_is_never_surer_than_as_many_independent_rows():
    """With rows sharing few contexts the cluster bootstrap ran liberal: 12 % of independent x, y in 6 contexts of 5
    rows came out 'significant' at p < 0.05 (scipy: 5 %), and contexts that all look alike gave a zero-width
    interval at the floor p. The interval is never narrower, and p never smaller, than Fisher's z on the rows as
    if independent, or the bootstrap's spread read with the small-sample t (each consistent with its interval)."""
    from core.stats.correlation import correlate, fisher_z
    rng = np.random.default_rng(0)
    hits = 0
    for s in range(120):
        x, y, g = rng.normal(size=30), rng.normal(size=30), np.repeat(np.arange(6), 5)
        c = correlate(x, y, "spearman", groups=g, n_boot=300, seed=s)
        lo, hi, p = fisher_z(c.r, 30, "spearman", 0.95)
        assert c.p >= p - 1e-12 and c.low <= lo + 1e-12 and c.high >= hi - 1e-12
        assert (c.p < 0.05) == (c.low > 0 or c.high < 0)
        hits += c.p < 0.05
    assert hits <= 0.08 * 120  # was 12 %
    same = np.tile([1.0, 2.0, 3.0, 4.0, 5.0], 6), np.tile([2.0, 5.0, 1.0, 4.0, 3.0], 6)  # every context alike
    c = correlate(*same, "pearson", groups=np.repeat(np.arange(6), 5), n_boot=300)
    assert c.r == pytest.approx(0.1) and c.low < 0 < c.high and c.p > 0.5 and not c.p_floor  # was [0.1, 0.1], floor
    assert fisher_z(0.5, 4, "pearson", 0.95)[2] != fisher_z(0.5, 4, "pearson", 0.95)[2]  # NaN below 5 rows
    lo, hi, p = fisher_z(0.3, 50, "kendall", 0.95)  # Fieller's standard error, sqrt(0.437 / (n - 4))
    assert lo == pytest.approx(np.tanh(np.arctanh(0.3) - 1.959964 * np.sqrt(0.437 / 46)), abs=1e-6) and p < 0.05
    # six contexts of 40 rows sharing a strong context effect: Fisher's z on 240 rows is sure (p ~ 0), the
    # bootstrap's percentile p says 0.053; its spread read with t on 5 degrees of freedom gives 0.056 and decides
    from core.stats.correlation import bootstrap_correlations, clustered_t
    rng = np.random.default_rng(3)
    for _ in range(3):  # the third draw is the one measured
        g = np.repeat(np.arange(6), 40)
        ce = rng.normal(size=6)
        x = rng.normal(size=240) + 2 * ce[g]
        y = rng.normal(size=240) + ce[g] + rng.normal(size=6)[g]
    c = correlate(x, y, "pearson", groups=g, n_boot=300, seed=2)
    reps = bootstrap_correlations(x, y, "pearson", g, 300, 2)
    assert c.p_method == "bootstrap t" and c.p == pytest.approx(clustered_t(c.r, reps[np.isfinite(reps)], 6, 0.95)[2])
    assert c.p > 0.0534 and c.low < 0 < c.high


def test_a_system_level_p_over_few_systems_is_the_exact_permutation_one_for_every_method():
    """Three systems, two of them copies: Pearson's t test said p < 0.001 for r = 1 from what are two distinct
    points, beside Spearman's exact 0.333. With 8 systems or fewer every method's p counts all n! orderings."""
    from scipy import stats as sps

    from core.stats import exact_permutation_p, system_correlation
    rng = np.random.default_rng(2)
    alpha = rng.normal(size=10)
    metric = np.concatenate([alpha, alpha, alpha + 1.0])
    human = np.concatenate([alpha, alpha, alpha + 2.0]) * 0.5 + 3
    systems = ["alpha"] * 10 + ["alpha-copy"] * 10 + ["beta"] * 10
    items = list(range(10)) * 3
    for method in ("pearson", "spearman", "kendall"):
        sc = system_correlation(metric, human, systems, method=method, items=items, n_boot=100)
        assert sc.p >= 1 / 3 - 1e-12, (method, sc.p)
    x, y = np.array([1.0, 2, 3, 4, 5]), np.array([1.2, 1.9, 3.5, 3.9, 5.2])
    assert exact_permutation_p(x, y, "kendall") == pytest.approx(sps.kendalltau(x, y).pvalue)  # scipy's exact
    assert exact_permutation_p(x, y, "pearson") == pytest.approx(2 / 120)
