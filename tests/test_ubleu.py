"""υBLEU end to end on the shipped pool index: the default (k 50, similarity rater) and the paper's configuration
(``ubleu_paper``: k 15, parrot return, NN-rater)."""
import numpy as np
import pytest

from core.data import Example, load_jsonl
from core.metrics.bleu import BleuScorer
from core.metrics.ubleu import UBleu, UBleuPaper, similarity_weights
from core.models.retrieval import get_retriever


@pytest.fixture(scope="module")
def usr_slice(shared):
    exs = load_jsonl(shared("eval/usr-topical.jsonl"))
    return exs[:12]


def test_details_and_range(usr_slice):
    res = UBleuPaper()(usr_slice)
    assert res.scores.shape == (12,) and np.all((res.scores >= 0) & (res.scores <= 100 + 1e-9))
    d = res.details[0]
    kinds = [r["kind"] for r in d["references"]]
    assert kinds.count("original") == 1 and kinds.count("parrot") == 1 and kinds.count("retrieved") == 15
    retrieved = [r for r in d["references"] if r["kind"] == "retrieved"]
    assert all(r["source_utterance"] and r["similarity"] is not None for r in retrieved)
    assert all(retrieved[i]["similarity"] >= retrieved[i + 1]["similarity"] for i in range(14))
    weights = [r["weight"] for r in d["references"]]
    assert d["references"][0]["weight"] == 1.0 and all(-1 <= w <= 1 for w in weights)
    assert any(w < 0 for w in weights[1:]) or any(w > 0 for w in weights[1:])
    assert str(res.signature).startswith("metric:ubleu_paper|variant:ret:emb-u,k:15,parrot:1,rater:nn-rater")


def test_default_weights_each_retrieved_reference_by_its_similarity_to_the_reference(usr_slice):
    res = UBleu()(usr_slice[:3])
    assert str(res.signature).startswith("metric:ubleu|variant:ret:emb-u,k:50,parrot:0,rater:similarity")
    refs = res.details[0]["references"]
    assert [r["kind"] for r in refs].count("retrieved") == 50 and "parrot" not in [r["kind"] for r in refs]
    r1 = usr_slice[0].references[0]
    retrieved = [r for r in refs if r["kind"] == "retrieved"]
    texts = [r["text"] for r in retrieved]
    # a retrieved reply's vector is the one the pool stores (its PQ code decoded), close to a fresh encoding
    want = similarity_weights([r1] * len(retrieved), texts, stored=get_retriever().stored_vector)
    assert np.allclose([r["weight"] for r in retrieved], want, atol=1e-6)
    assert np.abs(similarity_weights([r1] * len(retrieved), texts) - want).max() < 0.05
    assert all(0 <= r["weight"] <= 1 for r in retrieved) and len({r["weight"] for r in retrieved}) > 1
    # the rater reads meaning: a paraphrase of the reference outweighs an unrelated reply
    w = similarity_weights(["I love hiking in the mountains."] * 2,
                           ["Mountain hikes are my favourite thing.", "The invoice is due on Tuesday."])
    assert w[0] > w[1] + 0.3
    with pytest.raises(ValueError):
        UBleu(rater="oracle")


def test_similarity_rater_encodes_only_texts_without_a_stored_vector(monkeypatch):
    from core.models import encoders
    seen = []
    real = encoders.encode
    monkeypatch.setattr(encoders, "encode", lambda texts, *a, **k: (seen.extend(texts), real(texts, *a, **k))[1])
    stored = {"Mountain hikes are my favourite thing.": real(["Mountain hikes are my favourite thing."])[0]}
    w = similarity_weights(["I love hiking in the mountains."] * 2,
                           ["Mountain hikes are my favourite thing.", "The invoice is due on Tuesday."],
                           stored=stored.get)
    assert seen == ["I love hiking in the mountains.", "The invoice is due on Tuesday."]
    assert w[0] > w[1] + 0.3


def test_deterministic_and_score_matches_delta_bleu(usr_slice):
    a, b = UBleu()(usr_slice[:4]), UBleu()(usr_slice[:4])
    assert np.array_equal(a.scores, b.scores)
    refs = a.details[2]["references"]
    expected = BleuScorer().sentence(usr_slice[2].response, [r["text"] for r in refs], [r["weight"] for r in refs])
    assert a.scores[2] == pytest.approx(expected)


def test_unrated_variant_is_multi_reference_bleu(usr_slice):
    res = UBleu(rated=False)(usr_slice[:3])
    refs = [r["text"] for r in res.details[1]["references"]]
    assert all(r["weight"] == 1.0 for r in res.details[1]["references"])
    assert res.scores[1] == pytest.approx(BleuScorer().sentence(usr_slice[1].response, refs))


def test_no_reference_gives_nan():
    ex = Example("x", "s", ["hello there"], "hi", [])
    res = UBleu()([ex])
    assert np.isnan(res.scores[0]) and "skipped" in res.details[0]


def test_leakage_guard_on_default_pool():
    from core.models.retrieval import chitchat_pool, normalize
    pool = chitchat_pool()
    u, r = pool.utterance(500), pool.response(500)
    res = UBleu(rated=False)([Example("x", "s", [u], r, [r])])
    retrieved = [x for x in res.details[0]["references"] if x["kind"] == "retrieved"]
    assert all(normalize(x["text"]) != normalize(r) for x in retrieved)


def test_shipped_rater_separates_true_from_random_pairs():
    """Held-out conversations of the pool (the split the manifest reports): true pairs rated above random ones."""
    from core.models.rater import load_rater
    from core.models.retrieval import chitchat_pool
    from core.settings import SEED
    from core.training.rater import make_pairs
    pool = chitchat_pool()
    rng = np.random.default_rng(SEED)
    split = rng.choice(3, size=int(pool.conv_id.max()) + 1, p=[0.9, 0.05, 0.05])
    pairs = make_pairs(pool, split, 2, np.random.default_rng(1), None)[:600]
    rater = load_rater()
    out = rater.rate([pool.utterance(i) for i, _, _ in pairs], [pool.response(i) for i, _, _ in pairs],
                     [pool.utterance(j) for _, j, _ in pairs], [pool.response(j) for _, j, _ in pairs])
    y = np.array([lab for _, _, lab in pairs])
    acc = float(((out.weight > 0) == (y == 1)).mean())
    assert out.weight[y == 1].mean() > out.weight[y == 0].mean()
    assert acc >= 0.6, acc
    assert rater.manifest["held_out"]["accuracy"] >= 0.65
