"""RUBER family: pooling and hybrid normalization (unit), shipped checkpoints on held-out data (integration)."""
import math

import numpy as np
import pytest

from core.data import Example
from core.metrics.ruber import COMBINES, combine, hybrid, maxmin_pool, minmax, referenced_from_vectors
from core.scoring import get_metric
from core.training.ruber import split_pool


def ex(i, resp, refs=("the cat sat on the mat",), ctx=("where is the cat?",), system="A"):
    return Example(id=f"x{i}", system=system, context=list(ctx), response=resp, references=list(refs))


def test_maxmin_pool_concatenates_max_then_min():
    v = np.array([[1.0, -2.0], [3.0, 0.5]])
    assert maxmin_pool(v).tolist() == [3.0, 0.5, 1.0, -2.0]


def test_minmax_and_combinations():
    assert minmax(np.array([2.0, 4.0, np.nan, 3.0]), 2.0, 4.0).tolist()[:2] == [0.0, 1.0]
    assert math.isnan(minmax(np.array([2.0, 4.0, np.nan]), 2.0, 4.0)[2])
    assert minmax(np.array([7.0, 7.0]), 7.0, 7.0).tolist() == [0.5, 0.5]
    assert minmax(np.array([1.0, 5.0, 3.0]), 2.0, 4.0).tolist() == [0.0, 1.0, 0.5]  # clipped outside the range
    a, b = np.array([0.2, 1.0]), np.array([0.8, 0.0])
    assert combine(a, b, "min").tolist() == [0.2, 0.0]
    assert combine(a, b, "max").tolist() == [0.8, 1.0]
    assert combine(a, b, "amean").tolist() == [0.5, 0.5]
    assert np.allclose(combine(a, b, "gmean"), [0.4, 0.0])
    with pytest.raises(ValueError):
        combine(a, b, "median")


def test_hybrid_normalization_is_fixed_so_a_score_ignores_its_company():
    """System B's raw scores are all lower than A's: fixed constants keep B below A, and each row's score is
    the same whether it is normalized with the others or alone (per-set min-max mapped both systems onto
    [0, 1] and hid the difference)."""
    s_ref = np.array([0.8, 0.9, 1.0, 0.1, 0.2, 0.3])
    s_unref = np.array([0.7, 0.8, 0.9, 0.2, 0.3, 0.4])
    joint, details = hybrid(s_ref, s_unref, (0.0, 1.0), (0.0, 1.0), "amean")
    a, b = joint[:3], joint[3:]
    assert a.min() > b.max()
    np.testing.assert_allclose(joint, (s_ref + s_unref) / 2)
    per_a, _ = hybrid(s_ref[:3], s_unref[:3], (0.0, 1.0), (0.0, 1.0), "amean")
    per_b, _ = hybrid(s_ref[3:], s_unref[3:], (0.0, 1.0), (0.0, 1.0), "amean")
    assert np.array_equal(np.concatenate([per_a, per_b]), joint)
    assert details[0]["combine"] == "amean"


def test_hybrid_falls_back_to_unreferenced_without_reference():
    out, det = hybrid(np.array([0.1, np.nan, 0.5]), np.array([0.0, 1.0, 0.5]), (0.0, 1.0), (0.0, 1.0), "min")
    assert out[1] == 1.0 and det[1]["fallback"] == "unreferenced-only"
    assert "fallback" not in det[0]


def test_referenced_takes_best_reference_and_nan_without():
    vec = {"a": np.array([1.0, 0.0]), "b": np.array([0.0, 1.0]), "c": np.array([1.0, 1.0])}
    exs = [ex(0, "a", refs=("b", "c")), ex(1, "a", refs=())]
    s, d = referenced_from_vectors(exs, vec)
    assert s[0] == pytest.approx(1 / math.sqrt(2)) and d[0]["best_reference"] == 1
    assert math.isnan(s[1])


def test_ruber_ref_static_wordpieces_real_model():
    m = get_metric("ruber_ref")
    exs = [ex(0, "the cat sat on the mat"), ex(1, "the dog sat on a mat"), ex(2, "quantum chromodynamics lecture notes"),
           ex(3, "hi", refs=())]
    s = m(exs).scores
    assert s[0] == pytest.approx(1.0, abs=1e-6)
    assert s[1] > s[2]
    assert math.isnan(s[3])


@pytest.fixture(scope="module")
def heldout_pairs():
    """150 (query, true reply, random reply) triples from held-out chitchat conversations (conv_id % 10 == 0)."""
    from core.models.retrieval import chitchat_pool
    pool = chitchat_pool()
    _, ho = split_pool(pool)
    rng = np.random.default_rng(2024)
    idx = rng.choice(ho, size=150, replace=False)
    q = [pool.utterance(i) for i in idx]
    pos = [pool.response(i) for i in idx]
    neg = [pool.response(i) for i in rng.choice(ho, size=150, replace=False)]
    return q, pos, neg


def _examples(q, r, system):
    return [Example(id=f"{system}{i}", system=system, context=[a], response=b) for i, (a, b) in enumerate(zip(q, r))]


@pytest.mark.slow  # a quality floor on held-out pairs
@pytest.mark.parametrize("name", ["ruber_unref", "bert_ruber_unref"])
def test_shipped_unreferenced_scorer_ranks_true_reply_above_random(name, heldout_pairs):
    from core.models.checkpoints import load
    q, pos, neg = heldout_pairs
    m = get_metric(name)
    sp = m(_examples(q, pos, "T")).scores
    sn = m(_examples(q, neg, "R")).scores
    acc = float(np.mean(sp > sn))
    assert acc > 0.6, f"{name}: true reply above random in {acc:.2f} of held-out triples"
    manifest = load(m.checkpoint)[1]
    assert manifest["heldout_ranking_accuracy"] > 0.6


def test_hybrids_score_a_comparison_jointly():
    exs = [ex(0, "the cat sat on the mat"), ex(1, "it is on the mat", system="B"),
           ex(2, "no idea", system="A"), ex(3, "bananas are yellow", system="B", refs=())]
    for name in ("ruber", "bert_ruber"):
        res = get_metric(name)(exs)
        assert np.all((res.scores >= 0) & (res.scores <= 1))
        assert res.details[3]["fallback"] == "unreferenced-only"
        assert "fixed-minmax" in str(res.signature)
    other = get_metric("ruber", combine="min")(exs)
    assert other.details[0]["combine"] == "min" and set(COMBINES) == {"min", "max", "gmean", "amean"}


def test_engine_comparison_scores_each_system_as_it_would_alone(shared):
    """Through the engine: a comparison's RUBER scores are the hybrid of the parts with the fixed constants of
    the manifest, and system A's scores are the same whether B is scored with it or not (two real systems of
    usr-topical, 15 contexts)."""
    from core.data import compare_systems, load_jsonl, systems_in
    from core.engine import score_comparison
    exs = load_jsonl(shared("eval/usr-topical.jsonl"))
    sa, sb = [s for s in systems_in(exs)][:2]
    comp = compare_systems(exs, sa, sb)
    comp.pairs = comp.pairs[:15]
    cs = score_comparison(comp, ["ruber_ref", "ruber_unref", "ruber"])
    ref_range, unref_range = get_metric("ruber").ranges()
    assert ref_range[0] < 0.5 < ref_range[1] and unref_range[0] < 0.5 < unref_range[1]
    expected, _ = hybrid(cs.table.column("ruber_ref"), cs.table.column("ruber_unref"), ref_range, unref_range)
    assert np.allclose(cs.table.column("ruber"), expected)
    from core.engine import score_examples
    from core.models.memo import forget_all
    forget_all()
    alone = score_examples(comp.a, ["ruber"]).column("ruber")
    assert np.array_equal(cs.a("ruber"), alone)  # per-set min-max would give different numbers
