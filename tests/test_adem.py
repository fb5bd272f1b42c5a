"""ADEM: length-binned weights, context text, training on a small real set, shipped LODO checkpoints."""
import numpy as np
import pytest

from core.data import Example, load_jsonl
from core.metrics.adem import AdemModel, context_text, example_vectors
from core.training.adem import fit_adem, initial_model, length_bin_weights, pick_dimension, rescale


def test_context_text_keeps_newest_turns_within_budget():
    ctx = ["a " * 50, "b " * 30, "c " * 20]
    assert context_text(ctx, max_words=64).split() == ["b"] * 30 + ["c"] * 20
    assert context_text(["x " * 100], max_words=10).split() == ["x"] * 100  # the last turn always stays


def test_length_bin_weights_decorrelate_length_and_score():
    rng = np.random.default_rng(0)
    y = rng.integers(1, 6, 2000).astype(float)
    draws = rng.integers(1, 31, (3, 2000))
    # good replies tend to be short, bad ones long, but every length occurs at every score
    lengths = np.where(y >= 4, draws.min(0), np.where(y <= 2, draws.max(0), draws[0])).astype(float)
    w, _ = length_bin_weights(lengths, y)
    raw = np.corrcoef(lengths, y)[0, 1]
    # weighted correlation between length *bin* and score
    edges = np.unique(np.quantile(lengths, [0.25, 0.5, 0.75]))
    lb = np.searchsorted(edges, lengths, side="right").astype(float)

    def wcorr(a, b, w):
        a, b = a - np.average(a, weights=w), b - np.average(b, weights=w)
        return np.average(a * b, weights=w) / np.sqrt(np.average(a * a, weights=w) * np.average(b * b, weights=w))
    assert raw < -0.4 and wcorr(lb, y, np.ones_like(w)) < -0.4
    assert abs(wcorr(lb, y, w)) < 0.05
    assert w.mean() == pytest.approx(1.0)


def test_rescale_maps_fed_overall_to_1_5():
    y, scale = rescale(np.array([0.0, 2.0, 4.0]), "fed-turn", "Overall")
    assert scale == (0.0, 4.0) and y.tolist() == [1.0, 3.0, 5.0]
    y, scale = rescale(np.array([1.0, 3.0]), "usr-topical", "Overall")
    assert scale == (1.0, 5.0) and y.tolist() == [1.0, 3.0]


@pytest.mark.slow  # trains ADEM on real rated data
def test_training_reduces_validation_error_on_real_data(shared):
    """ADEM fitted on 40 usr-topical contexts beats its M = N = I starting point on 20 held-out contexts."""
    exs = load_jsonl(shared("eval/usr-topical.jsonl"))
    dim = pick_dimension(exs)
    assert dim == "Overall"
    ctx_ids = sorted({tuple(e.context) for e in exs})
    rng = np.random.default_rng(13)
    order = rng.permutation(len(ctx_ids))
    train_ctx = {ctx_ids[i] for i in order[:40]}
    tr = [e for e in exs if tuple(e.context) in train_ctx]
    va = [e for e in exs if tuple(e.context) not in train_ctx]
    C, R, H, has = example_vectors(tr)
    y = np.array([e.scores[dim] for e in tr])
    w = np.ones(len(y))
    vC, vR, vH, vhas = example_vectors(va)
    vy = np.array([e.scores[dim] for e in va])
    init = initial_model(C, R, H, has, y, k=8)
    model = fit_adem(C, R, H, has, y, w, k=8, gamma=1.0, pca=(init.mean, init.components))
    mse0 = float(np.mean((init.predict(vC, vR, vH, vhas) - vy) ** 2))
    mse1 = float(np.mean((model.predict(vC, vR, vH, vhas) - vy) ** 2))
    assert mse1 < mse0 * 0.95, (mse0, mse1)
    assert not np.allclose(model.M, np.eye(8))
    # tensors round-trip
    again = AdemModel.from_tensors(model.tensors())
    assert np.allclose(again.predict(vC, vR, vH, vhas), model.predict(vC, vR, vH, vhas), atol=1e-4)


def test_shipped_adem_and_leave_one_dataset_out(shared):
    from core.scoring import get_metric
    path = shared("eval/usr-persona.jsonl")
    adem = get_metric("adem")
    assert "usr-persona" in adem.trained_on()
    held = adem.held_out_for("usr-persona")
    assert held is not adem and "usr-persona" not in held.trained_on()
    assert adem.held_out_for("some-new-set") is adem
    exs = load_jsonl(path)[:60]
    res = held(exs)
    assert np.isfinite(res.scores).all() and res.scores.std() > 0
    assert 0.0 < np.median(res.scores) < 6.0
    noref = [Example(id="n", system="s", context=["hello there"], response="hi, how are you?")]
    d = held(noref).details[0]
    assert d["uses_reference"] is False
