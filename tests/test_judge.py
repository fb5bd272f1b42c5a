"""Tests of the learned A/B judge (core/judge.py) on the shipped checkpoint and real rated data.

Held-out slices: contexts on the test side of the judge's context split (``is_test_context``) of the
sets it was trained on, and the DailyDialog-derived sets it never saw. Small slices keep this file fast."""
import json
import math
import random

import numpy as np
import pytest

from core.data import DataError, Example, compare_systems, load_jsonl
from core.judges.pairs import (context_key, is_test_context, is_val_context, load_votes, preference_pairs, save_votes,
                               split_pairs, votes_from_examples)
from core.judges.pairwise import (HEAD_HIDDEN, N_FROZEN, TIE_MARGIN, JudgeNetwork, PairwiseJudge, combine_orders,
                                  build_inputs, encode_pairs, load_judge, verdicts)
from core.judges.smollm_reader import lm_features, scores
from core.judges.votes import (INNER_FOLDS, RIDGE_GRID, VoteFeatures, context_folds, fine_tune_on_votes, fit_votes,
                               learning_curve, p_a_from_logits, refit_logits, vote_features)
from core.models import checkpoints
from core.scoring import JudgeOutput, order_disagreement
from core.settings import SEED
from core.training.judge import train_judge
from core.training.judge_lm import fit_mix, set_weights, train_scorer
from core.training.judge_pairs import (DAILYDIALOG_SETS, TRAIN_SETS, synthetic_pairs, train_test_pairs,
                                       validation_pairs)
from core.verdict import human_preference, human_tie_margin, side_accuracy, summarize_judge
from dashboard.judging import learning_curve_figure


@pytest.fixture(scope="module")
def shipped():
    import torch
    torch.set_num_threads(1)
    return load_judge()


def _test_pairs(shared, name, n, seed=13):
    ex = load_jsonl(shared(f"eval/{name}.jsonl"))
    pairs = preference_pairs(ex)
    if name in TRAIN_SETS:
        pairs = split_pairs(pairs)[1]
    random.Random(seed).shuffle(pairs)
    return pairs[:n]


# ---------------------------------------------------------------- pairs, margins, split, votes


def test_margin_is_a_quarter_of_the_scale():
    assert human_tie_margin("Overall") == 1.0
    assert human_tie_margin("Natural") == 0.5
    assert human_tie_margin("Uses Knowledge") == 0.25
    assert human_preference(4.0, 3.0, 1.0) == "A"
    assert human_preference(3.0, 3.9, 1.0) == "tie"
    assert human_preference(1.0, 2.5, 1.0) == "B"
    assert human_preference(None, 2.5, 1.0) is None


def test_preference_pairs_are_clear_and_split_by_context(shared):
    ex = load_jsonl(shared("eval/usr-topical.jsonl"))
    pairs = preference_pairs(ex)
    assert len(pairs) > 300
    assert all(abs(p.score_a - p.score_b) >= 1.0 - 1e-6 for p in pairs)  # Overall, 1-5 scale
    assert all((p.label == 1.0) == (p.score_a > p.score_b) for p in pairs)
    share_a = np.mean([p.label for p in pairs])
    assert 0.35 < share_a < 0.65  # order randomized -> balanced labels
    train, test = split_pairs(pairs)
    assert train and test
    assert not {context_key(p.context) for p in train} & {context_key(p.context) for p in test}


def test_validation_split_is_disjoint_from_test_and_train(shared):
    ex = load_jsonl(shared("eval/usr-persona.jsonl"))
    pairs = preference_pairs(ex)
    val = [p for p in pairs if is_val_context(p.context)]
    test = [p for p in pairs if is_test_context(p.context)]
    assert val and test
    assert not {context_key(p.context) for p in val} & {context_key(p.context) for p in test}
    # the training pairs of a run with a validation split never include a validation context
    train, test_split = train_test_pairs(cap_train=10 ** 9, cap_test=10 ** 9, val_share=0.1)
    keys = {context_key(p.context) for p in train}
    assert not keys & {context_key(p.context) for p in validation_pairs(cap=10 ** 9)}
    assert len(test_split) == len(train_test_pairs(cap_train=0, cap_test=10 ** 9)[1])  # test does not move


def test_synthetic_pairs_prefer_the_true_turn():
    pairs = synthetic_pairs(200)
    assert len(pairs) >= 190
    assert 0.35 < np.mean([p.label for p in pairs]) < 0.65  # side drawn at random
    assert all(p.label in (0.0, 1.0) and p.response_a != p.response_b for p in pairs)
    from core.models.corpus import chitchat_split, context_pairs
    truth = context_pairs(chitchat_split()[0], 200, SEED)
    for p in pairs:
        ctx, resp = truth[int(p.id[3:])]
        assert p.context == ctx and (p.response_a if p.label == 1.0 else p.response_b) == resp
    again = synthetic_pairs(200)
    assert [(p.response_a, p.label) for p in again] == [(p.response_a, p.label) for p in pairs]  # seeded


def test_votes_file_roundtrip_and_errors(tmp_path):
    good = tmp_path / "votes.jsonl"
    good.write_text(json.dumps({"context": ["hi", "how are you?"], "response_a": "fine, you?",
                                "response_b": "banana", "vote": "A"}) + "\n"
                    + json.dumps({"context": "what now?", "response_a": "x", "response_b": "y", "vote": "tie"}) + "\n"
                    + json.dumps({"context": "hi\nhow are you?", "response_a": "a", "response_b": "b", "vote": "B"})
                    + "\n")
    votes = load_votes(good)
    assert [v.vote for v in votes] == ["A", "tie", "B"] and votes[1].context == ["what now?"]
    assert votes[2].context == ["hi", "how are you?"]  # a context string is turns at line ends, as data files read
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"context": ["hi"], "response_a": "a", "response_b": "b", "vote": "A"}) + "\n"
                   + json.dumps({"context": ["hi"], "response_a": "a", "response_b": "", "vote": "maybe"}) + "\n")
    with pytest.raises(DataError) as e:
        load_votes(bad)
    msg = str(e.value)
    assert "row 2" in msg and "vote" in msg and "response_b" in msg


def test_combine_orders_is_antisymmetric():
    p_ab = np.array([0.9, 0.4, 0.6])
    p_ba = np.array([0.2, 0.7, 0.55])  # P(first | c, B, A)
    p_a, flipped, dis = combine_orders(p_ab, p_ba)
    np.testing.assert_allclose(p_a, [0.85, 0.35, 0.525])
    np.testing.assert_allclose(flipped, [0.8, 0.3, 0.45])
    assert dis == pytest.approx(1 / 3)  # third pair: 0.6 says A, 0.45 says B
    q_a, _, _ = combine_orders(p_ba, p_ab)  # the swapped pair
    np.testing.assert_allclose(q_a, 1 - p_a)
    assert verdicts(np.array([0.52, 0.9, 0.1]), 0.05) == ["tie", "A", "B"]


def test_identical_replies_are_left_out_of_the_order_disagreement():
    """A pair of identical replies has no winner to pick: a flip between its two orders is position bias alone
    (reported as first_shown), not disagreement; the summary counts the other pairs only."""
    ctx = ["hi", "how are you?"]
    a = [Example(f"c{i}", "a", ctx, r) for i, r in enumerate(["fine, thanks", "same reply", "ok"])]
    b = [Example(f"c{i}", "b", ctx, r) for i, r in enumerate(["i like dogs", "same reply ", "no"])]
    comp = compare_systems(a + b, "a", "b")
    # pair 2 (identical replies) flips: 0.6 says A, 1 - 0.6 = 0.4 says B; pair 3 flips as well
    out = JudgeOutput.from_probabilities(np.array([0.8, 0.5, 0.5]), np.array([0.8, 0.6, 0.7]),
                                         np.array([0.8, 0.4, 0.3]), 0.05)
    assert out.order_disagreement == pytest.approx(2 / 3)  # the judge alone does not know the replies
    assert summarize_judge(comp, out).order_disagreement == pytest.approx(1 / 2)
    same = compare_systems(a[1:2] + b[1:2], "a", "b")
    assert math.isnan(summarize_judge(same, out.subset([1])).order_disagreement)
    assert order_disagreement([0.6, 0.7], [0.4, 0.8], [True, False]) == 1.0


# ---------------------------------------------------------------- the shipped judge


def test_shipped_checkpoint_is_small_and_documented():
    from core.models.checkpoints import paths
    w, m = paths("judge")
    assert w.stat().st_size <= 25 * 2 ** 20
    man = json.loads(m.read_text())
    assert man["training_command"].startswith("python -m core train judge")
    assert man["quality"]["held_out"][-1]["dataset"] == "overall"
    assert not set(man["data"]["train_sets"]) & set(DAILYDIALOG_SETS)


def test_swapping_a_and_b_flips_the_combined_probability(shipped, shared):
    pairs = _test_pairs(shared, "usr-persona", 8)
    c = [p.context for p in pairs]
    a = [p.response_a for p in pairs]
    b = [p.response_b for p in pairs]
    seen = []
    ab = shipped.predict(c, a, b, progress=lambda done, total, desc: seen.append((done, total)))
    # one bar in pairs from reading to scoring (its total went from 64 to 32 half-way)
    assert {t for _, t in seen} == {8} and seen[-1] == (8, 8)
    assert all(x[0] <= y[0] for x, y in zip(seen, seen[1:]))
    ba = shipped.predict(c, b, a)
    np.testing.assert_allclose(ab.p_a, 1 - ba.p_a, atol=1e-5)
    np.testing.assert_allclose(ab.p_ab, 1 - ba.p_ba_flipped, atol=1e-5)
    assert ab.verdict == [{"A": "B", "B": "A", "tie": "tie"}[v] for v in ba.verdict]
    assert np.std(ab.p_a) > 0.01  # not a constant


@pytest.mark.slow  # a quality floor on ~200 held-out pairs: ~200 s on 2 loaded cores
def test_shipped_judge_beats_length_baseline_on_held_out_pairs(shipped, shared):
    # the first 20 test pairs per set of the training run's own held-out sample (test-split contexts of
    # the training sets + the DailyDialog-derived sets it never saw), ~200 pairs
    shared("eval/dstc7.jsonl")
    pairs = train_test_pairs(cap_test=20)[1]
    assert len(pairs) > 180
    out = shipped.predict([p.context for p in pairs], [p.response_a for p in pairs], [p.response_b for p in pairs])
    gold = [p.vote for p in pairs]
    judge_acc = side_accuracy(out.p_a, gold)
    lens = np.array([len(p.response_a.split()) - len(p.response_b.split()) for p in pairs], dtype=float)
    length_acc = side_accuracy(0.5 + 0.5 * np.sign(lens), gold)
    assert judge_acc > 0.56, judge_acc
    assert judge_acc > length_acc + 0.03, (judge_acc, length_acc)
    assert 0.0 <= out.order_disagreement < 0.5


@pytest.fixture(scope="module")
def gupta_votes(shipped, shared):
    """Clear-margin votes from a set the shipped judge never saw (DailyDialog-derived), with features."""
    ex = load_jsonl(shared("eval/dailydialog-gupta.jsonl"))
    votes = votes_from_examples(ex)
    random.Random(5).shuffle(votes)
    votes = votes[:200]
    return votes, vote_features(votes, shipped)


@pytest.mark.slow  # the judge reads ~400 rated pairs (gupta_votes): ~165 s
def test_training_on_votes_moves_held_out_agreement_above_chance(shipped, gupta_votes, tmp_path, capsys):
    votes, feats = gupta_votes
    assert feats.reader is not None and feats.reader.shape == (2 * len(votes), 3 * 64)
    # the features' offset is the shipped judge's own logit
    few = votes[:4]
    enc = shipped.encode([v.context for v in few], [v.response_a for v in few], [v.response_b for v in few])
    np.testing.assert_allclose(feats.rows(np.arange(4)).base, shipped.logits(enc), atol=1e-4)
    test_keys = set(sorted({context_key(v.context) for v in votes})[::4])
    tr = np.array([i for i, v in enumerate(votes) if context_key(v.context) not in test_keys])
    te = np.array([i for i, v in enumerate(votes) if context_key(v.context) in test_keys])
    assert len(te) >= 30 and len(tr) >= 100
    train = [votes[i] for i in tr]
    gold = [votes[i].vote for i in te]
    # the votes alone (no offset from the shipped judge) teach a preference on held-out contexts ...
    fresh = fine_tune_on_votes(train, shipped, features=feats.rows(tr), from_scratch=True)
    acc_fresh = side_accuracy(fresh.predict_encoded(_encoded(shipped, votes, te)).p_a, gold)
    assert acc_fresh > 0.6, acc_fresh
    # ... and the re-fit offset by the shipped judge stays above chance; with ~50 held-out votes one
    # standard error is ~7 points, so this only guards against a broken fit
    tuned = fine_tune_on_votes(train, shipped, features=feats.rows(tr))
    assert tuned.manifest["fine_tuned_on_votes"]["ridge"] in RIDGE_GRID
    delta, ridge = fit_votes(feats.rows(tr), np.array([v.label for v in train]),
                               context_folds(train, INNER_FOLDS, SEED))
    expected = p_a_from_logits(refit_logits(feats.rows(te), delta))
    assert side_accuracy(expected, gold) > 0.52
    # the tuned judge carries the re-fit in its output layers: predict() gives what the fit computed,
    # also after saving and reloading it
    out = tuned.predict([votes[i].context for i in te[:5]], [votes[i].response_a for i in te[:5]],
                        [votes[i].response_b for i in te[:5]])
    np.testing.assert_allclose(out.p_a, expected[:5], atol=1e-4)
    assert not np.allclose(out.p_a, p_a_from_logits(feats.rows(te[:5]).base), atol=1e-3)  # it did move
    # the command line writes the same re-fit as a checkpoint that reloads with its reader and mix
    vfile = tmp_path / "votes.jsonl"
    save_votes(train, vfile)
    from core.cli import main
    assert main(["train", "judge", "--votes", str(vfile), "--epochs", "3"]) == 2
    assert "no epochs" in capsys.readouterr().err
    assert main(["train", "judge", "--votes", str(vfile), "--sizes", "40", "--folds", "3", "--out", "judge-votes",
                 "--out-dir", str(tmp_path)]) == 0
    again = load_judge("judge-votes", directory=str(tmp_path))
    assert again.mix == shipped.mix and again.manifest["fine_tuned_on_votes"]["n_votes"] == len(train)
    # --out as a path outside the checkpoint folders: the hint names the path (it named 'mine', not found there)
    capsys.readouterr()
    assert main(["train", "judge", "--votes", str(vfile), "--sizes", "40,5000", "--folds", "3", "--out",
                 str(tmp_path / "mine")]) == 0
    out, err = capsys.readouterr()
    assert f"--checkpoint {tmp_path / 'mine'}`" in out
    assert "--sizes 5000: the training folds hold" in err  # clipped, and said (the curve showed a smaller n)
    # compare takes the re-fitted judge too (it took only the shipped one): shown beside the verdict, not deciding
    for side, key in (("a", "response_a"), ("b", "response_b")):
        (tmp_path / f"{side}.jsonl").write_text("".join(json.dumps({"id": f"p{i}", "system": side, "context": v.context,
                                                                    "response": getattr(v, key)}) + "\n"
                                                        for i, v in enumerate(train[:12])))
    assert main(["compare", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"), "--metrics", "none", "--checkpoint",
                 str(tmp_path / "mine"), "--format", "json", "--quiet"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["judge"]["signature"].startswith(f"judge:{tmp_path / 'mine'}|")
    assert "no measured record" in got["sentence"]
    assert load_judge(str(tmp_path / "mine")).manifest["fine_tuned_on_votes"]["n_votes"] == len(train)
    np.testing.assert_allclose(again.predict_encoded(_encoded(shipped, votes, te[:5])).p_a, expected[:5], atol=2e-3)


def _encoded(judge, votes, idx):
    return judge.encode([votes[i].context for i in idx], [votes[i].response_a for i in idx],
                        [votes[i].response_b for i in idx])


def test_the_votes_refit_moves_only_as_far_as_the_votes_support():
    """No model needed: votes that follow one reader unit make the inner cross-validation choose a weak pull
    and the fit finds that unit; votes that are coin flips make it choose a strong pull (a small change)."""
    rng = np.random.default_rng(3)
    n = 400
    R = rng.normal(size=(n, 192)).astype(np.float32)
    y = (R[:, 7] + 0.3 * rng.normal(size=n) > 0).astype(np.float64)
    signed = np.empty((2 * n, 192), dtype=np.float32)
    signed[0::2], signed[1::2] = R, -R
    zeros = np.zeros(2 * n)
    feats = VoteFeatures(zeros, zeros, np.zeros((2 * n, 4), dtype=np.float32), zeros, signed)
    groups = np.arange(n) % 5
    delta, ridge_signal = fit_votes(feats, y, groups)
    assert int(np.argmax(np.abs(delta[2:]))) == 7 and delta[2 + 7] > 0
    coin = rng.integers(0, 2, n).astype(np.float64)
    delta_coin, ridge_coin = fit_votes(feats, coin, groups)
    assert ridge_coin > ridge_signal and np.abs(delta_coin).max() < 0.2 * np.abs(delta).max()
    # antisymmetric in the two orders: p(A|B) of the refit is 1 - p(B|A)
    logits = refit_logits(feats, delta)
    np.testing.assert_allclose(logits[0::2], -logits[1::2], atol=1e-9)


@pytest.mark.slow  # gupta_votes: the judge reads ~400 rated pairs
def test_learning_curve_table_and_figure(shipped, gupta_votes):
    votes, feats = gupta_votes
    df = learning_curve(votes, sizes=(40, 100), folds=3, base=shipped, features=feats)
    assert list(df["n_train"]) == [0, 40, 100]
    assert df["agreement"].between(0, 1).all() and (df["low"] <= df["high"]).all()
    assert df["agreement"].iloc[-1] > 0.55
    assert df["ridge"].iloc[1:].isin(RIDGE_GRID).all()
    fig = learning_curve_figure(df)
    assert len(fig.data) == 2


@pytest.mark.slow  # gupta_votes: the judge reads ~400 rated pairs
def test_learning_curve_skips_folds_of_ties_and_counts_held_out_votes_whole(shipped, gupta_votes):
    """A fold whose held-out votes are all ties has nothing to agree with: its NaN made the row's agreement
    NaN (the dashboard showed empty rows on small vote sets), and n_test was a fractional mean per fold."""
    import dataclasses
    votes, feats = gupta_votes
    fold = context_folds(votes, 5, SEED)
    tied = [dataclasses.replace(v, label=0.5) if f == 0 else v for v, f in zip(votes, fold)]
    df = learning_curve(tied, sizes=(40,), folds=5, base=shipped, features=feats)
    assert df["agreement"].notna().all() and (df["folds"] == 4).all()
    assert (df["n_test"] == sum(v.vote in ("A", "B") for v in tied)).all() and df["n_test"].dtype.kind == "i"


@pytest.mark.slow  # the judge on a real rated comparison: ~50 s
def test_judge_comparison_and_cli(shipped, tmp_path, capsys, shared):
    # two systems on 12 held-out contexts, written to a temporary file (outside the repository)
    ex = [e for e in load_jsonl(shared("eval/usr-topical.jsonl")) if is_test_context(e.context)]
    keep = [e for e in ex if e.system in ("Original Ground Truth", "Argmax Decoding")]
    path = tmp_path / "two.jsonl"
    path.write_text("".join(json.dumps({"id": e.id, "system": e.system, "context": e.context,
                                        "response": e.response, "scores": e.scores}) + "\n" for e in keep))
    comp = compare_systems(load_jsonl(path), "Original Ground Truth", "Argmax Decoding")
    from core.cli import main
    from core.engine import judge_comparison
    rep = summarize_judge(comp, judge_comparison(comp))
    n = len(comp.pairs)
    assert n == len(keep) // 2 and len(rep.p_a) == n and rep.win.wins + rep.win.ties + rep.win.losses == n
    assert 0 <= rep.win.low <= rep.win.rate <= rep.win.high <= 1
    assert rep.human.dimension == "Overall" and rep.human.n > 0
    out = tmp_path / "rows.jsonl"
    rc = main(["judge", str(path), "--system-a", "Original Ground Truth", "--system-b", "Argmax Decoding",
               "--out", str(out), "--quiet"])
    assert rc == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == n and {"p_a", "verdict", "human"} <= set(rows[0])
    np.testing.assert_allclose([r["p_a"] for r in rows], rep.p_a, atol=1e-6)
    text = capsys.readouterr().out
    assert "win rate of A" in text and "agreement with human Overall" in text


def test_a_judge_trained_at_another_depth_saves_and_loads_with_its_depth(tmp_path):
    """``--n-frozen`` is recorded in the manifest and used at load time: a judge with only layer 5 trained
    (n_frozen = 5) trained for a few steps, saved and reloaded, predicts exactly what it did in memory."""
    import torch
    torch.set_num_threads(1)
    ctx = [["hi , how are you ?"], ["what do you do ?"], ["any plans tonight ?"], ["do you like dogs ?"]]
    a = ["fine , thanks , and you ?", "i teach math .", "a movie with friends .", "yes , i have two ."]
    b = ["the sky .", "no .", "purple .", "i do n't know ."]
    enc = encode_pairs(ctx, a, b, n_frozen=5)
    judge = train_judge(enc, np.ones(4, dtype=np.float32), epochs=1, batch_size=4, n_frozen=5)
    assert judge.n_frozen == 5 and len(judge.top.layers) == 1
    judge.save("judge-depth5", {"config": {"n_frozen": 5, "tie_margin": TIE_MARGIN}}, directory=str(tmp_path))
    again = load_judge("judge-depth5", directory=str(tmp_path))
    assert again.n_frozen == 5
    np.testing.assert_allclose(again.predict(ctx, a, b).p_a, judge.predict(ctx, a, b).p_a, atol=1e-6)
    assert load_judge().n_frozen == N_FROZEN == 3  # the shipped judge: layers 3-5 trained


def test_an_ensemble_averages_its_members_logits_and_reloads_from_float16(tmp_path):
    """``--members 2``: two judges in one module give exactly the mean of their logits; saved as float16
    and reloaded they predict within float16 rounding; a votes re-fit writes into the shared output layer
    (one logistic regression over both members' hidden units)."""
    import torch
    torch.set_num_threads(1)
    ctx = [["hi , how are you ?"], ["what do you do ?"], ["any plans tonight ?"], ["do you like dogs ?"]]
    a = ["fine , thanks , and you ?", "i teach math .", "a movie with friends .", "yes , i have two ."]
    b = ["the sky .", "no .", "purple .", "i do n't know ."]
    enc = encode_pairs(ctx, a, b, n_frozen=5)
    y = np.array([1, 0, 1, 0], dtype=np.float32)
    m1 = train_judge(enc, y, epochs=1, batch_size=4, n_frozen=5, seed=13)
    m2 = train_judge(enc, y, epochs=1, batch_size=4, n_frozen=5, seed=14)
    assert not np.allclose(m1.logits(enc), m2.logits(enc))  # different seeds, different members
    ens = PairwiseJudge(JudgeNetwork.ensemble([m1.top, m2.top], n_frozen=5))
    assert ens.n_frozen == 5
    np.testing.assert_allclose(ens.logits(enc), (m1.logits(enc) + m2.logits(enc)) / 2, atol=1e-5)
    man = {"config": {"n_frozen": 5, "members": 2, "dtype": "float16", "tie_margin": TIE_MARGIN}}
    path = ens.save("judge-ens", man, directory=str(tmp_path))
    from safetensors import safe_open
    with safe_open(str(path), "pt") as f:
        assert {f.get_tensor(k).dtype for k in f.keys()} == {torch.float16}
    again = load_judge("judge-ens", directory=str(tmp_path))
    np.testing.assert_allclose(again.predict(ctx, a, b).p_a, ens.predict(ctx, a, b).p_a, atol=2e-3)
    assert again.head_inputs(enc).shape == (8, 2 * 4 * 384)
    # a votes re-fit of a judge without the reader re-weights both members' hidden units
    feats = VoteFeatures(again.logits(enc), again.logits(enc), again.top.head[:-1](
        torch.from_numpy(again.head_inputs(enc))).detach().numpy())
    assert feats.design().shape == (8, 1 + 2 * HEAD_HIDDEN)
    delta = np.linspace(-0.1, 0.1, 1 + 2 * HEAD_HIDDEN)
    tuned = again.with_refit_output_layers(delta, False, "judge-ens+votes", again.manifest)
    np.testing.assert_allclose(tuned.logits(enc), refit_logits(feats, delta), atol=1e-4)


# ---------------------------------------------------------------- the SmolLM2 reader (core/judges/smollm_reader.py)


def test_reader_scorer_learns_a_pairwise_preference_and_the_mix_weighs_both_parts():
    """No language model needed: replies' features carry a hidden quality direction; the scorer trained on
    s(A) - s(B) recovers it on held-out pairs, is antisymmetric, and fit_mix weighs an informative input
    above a useless one."""
    rng = np.random.default_rng(0)
    d = 40
    w = rng.normal(size=d)
    fa, fb = rng.normal(size=(600, d)).astype(np.float32), rng.normal(size=(600, d)).astype(np.float32)
    y = ((fa - fb) @ w > 0).astype(np.float32)
    sc = train_scorer(fa[:500], fb[:500], y[:500], epochs=8, lr=3e-3, hidden=16, members=2)
    diff = scores(sc, fa[500:]) - scores(sc, fb[500:])
    assert np.mean((diff > 0) == (y[500:] > 0.5)) > 0.85
    np.testing.assert_allclose(scores(sc, fb[500:]) - scores(sc, fa[500:]), -diff, atol=1e-5)
    # mix: column 1 (the judge's logits) is noise, column 2 (the reader's) is informative
    z = np.repeat(rng.normal(size=100), 2)
    w_judge, w_lm = fit_mix(z, diff, y[500:])
    assert w_lm > 0.3 and abs(w_judge) < w_lm
    # a third input (the MME-CRS difference) that carries what the reader missed gets a positive weight; noise
    # there gets little
    hidden = rng.normal(size=100)
    y3 = ((diff / diff.std() + 2 * hidden) > 0).astype(np.float32)
    assert fit_mix(z, diff, y3, hidden)[2] > 1.0
    assert abs(fit_mix(z, diff, y[500:], rng.normal(size=100))[2]) < 0.5 * fit_mix(z, diff, y3, hidden)[2]


def test_set_weights_balance_the_data_sets_and_a_small_set_is_learned_better_with_them():
    """n_set ** -balance, mean 1: 0 weighs every pair alike, 1 every data set alike. A small set whose
    preference follows another direction than the big set's is learned better when the sets are balanced."""
    ds = ["big"] * 900 + ["small"] * 100
    np.testing.assert_allclose(set_weights(ds, 0.0), 1.0)
    w1 = set_weights(ds, 1.0)
    assert w1.mean() == pytest.approx(1.0) and w1[:900].sum() == pytest.approx(w1[900:].sum())
    w5 = set_weights(ds, 0.5)
    assert w5[-1] / w5[0] == pytest.approx(3.0)
    rng = np.random.default_rng(1)
    d = 30
    u, v = np.eye(d)[0], np.eye(d)[1]
    fa, fb = rng.normal(size=(1000, d)).astype(np.float32), rng.normal(size=(1000, d)).astype(np.float32)
    direction = np.where(np.array(ds)[:, None] == "big", u, v)
    y = (((fa - fb) * direction).sum(1) > 0).astype(np.float32)
    ta, tb = rng.normal(size=(400, d)).astype(np.float32), rng.normal(size=(400, d)).astype(np.float32)
    ty = (ta - tb) @ v > 0  # held-out pairs of the small set
    acc = {}
    for balance in (0.0, 1.0):
        sc = train_scorer(fa, fb, y, epochs=6, lr=3e-3, hidden=16, members=1,
                            weights=set_weights(ds, balance))
        acc[balance] = np.mean((scores(sc, ta) - scores(sc, tb) > 0) == ty)
    assert acc[1.0] > acc[0.0] + 0.03, acc


@pytest.mark.slow  # the judge on real rated pairs: ~45 s
def test_the_shipped_judge_reads_with_smollm2_and_records_it(shipped, shared):
    man = shipped.manifest
    assert shipped.reader is not None and "lm" in man
    assert man["lm"]["mix"]["w_lm"] > 0 and man["lm"]["mix"]["w_judge"] > 0
    assert man["lm"]["held_out"][-1]["dataset"] == "overall"
    assert not set(man["lm"]["data"]["train_pairs_per_set"]) & set(DAILYDIALOG_SETS)
    assert "|lm:smollm2" in shipped.signature()
    pairs = _test_pairs(shared, "usr-topical", 6)
    c, a, b = [p.context for p in pairs], [p.response_a for p in pairs], [p.response_b for p in pairs]
    enc = shipped.encode(c, a, b)
    d = shipped.reader_diff(enc)
    np.testing.assert_allclose(shipped.reader_diff(shipped.encode(c, b, a)), -d, atol=1e-4)
    assert np.std(d) > 0.05
    # the same reply after another context reads differently (the reader sees the context)
    f1 = enc.reader_features[0][:1]
    f2 = lm_features().features([["a completely different question about the weather ?"]], [a[0]])
    assert np.abs(f1 - f2).max() > 0.1
    with pytest.raises(ValueError, match="without the SmolLM2 reader"):
        shipped.reader_diff(encode_pairs(c, a, b, n_frozen=shipped.n_frozen))


def test_the_judge_weighs_the_mme_crs_difference_as_mme_scores_it(shipped, shared):
    """The shipped mix reads q(A) - q(B), q the MME-CRS 'overall' score with the CRS weights frozen into the judge:
    those are the shipped MME's (a re-fit of MME must re-train the judge's mix, or this fails), so q is the `mme`
    metric's score row for row; swapping A and B negates the term; an empty reply adds nothing."""
    from core.engine import score_examples
    from core.metrics.mme import MMECRS
    mix = shipped.manifest["lm"]["mix"]
    assert shipped.w_mme > 0 and mix["w_mme"] == shipped.w_mme
    assert shipped.mme_weights == pytest.approx(MMECRS().weights_for("overall")[1], abs=1e-12)
    assert "|mme:" in shipped.signature() and "|mme:" in type(shipped).cache_identity()
    pairs = _test_pairs(shared, "usr-persona", 4)
    c, a, b = [p.context for p in pairs], [p.response_a for p in pairs], [p.response_b for p in pairs]
    enc = shipped.encode(c, a, b)
    table = score_examples([Example(f"a{i}", "A", list(x), r) for i, (x, r) in enumerate(zip(c, a))]
                           + [Example(f"b{i}", "B", list(x), r) for i, (x, r) in enumerate(zip(c, b))], ["mme"],
                           cache=False)
    q = np.asarray(table.column("mme"), dtype=float)
    np.testing.assert_allclose(np.concatenate(enc.mme_scores), q, atol=1e-12)
    m = shipped.mme_diff(enc)
    np.testing.assert_allclose(shipped.mme_diff(shipped.encode(c, b, a)), -m, atol=1e-12)
    z = np.zeros(2 * len(pairs))
    logits = shipped.mix_logits(z, np.zeros(len(pairs)), m)
    np.testing.assert_allclose(logits[0::2], shipped.w_mme * m)
    np.testing.assert_allclose(logits[1::2], -shipped.w_mme * m)
    empty = shipped.encode(c[:1], [""], b[:1])
    assert shipped.mme_diff(empty)[0] == 0.0 and np.isnan(empty.mme_scores[0][0])
    with pytest.raises(ValueError, match="without MME-CRS"):
        shipped.mme_diff(encode_pairs(c, a, b, n_frozen=shipped.n_frozen, reader=True))
    # the mix lives in the manifest, not the tensors: another mix on the same tensors is another judge (signature,
    # and so the score cache's key); a votes re-fit of the wrong width is refused
    other = json.loads(json.dumps(shipped.manifest))
    other["lm"]["mix"]["w_mme"] = 0.5
    assert PairwiseJudge(shipped.top, other, reader=shipped.reader).signature() != shipped.signature()
    with pytest.raises(ValueError, match="columns"):
        shipped.with_refit_output_layers(np.zeros(10), False, "x", shipped.manifest)


@pytest.mark.slow  # the judge, saved and reloaded, on real rated pairs: ~20 s
def test_the_judge_with_its_reader_reloads_from_its_checkpoint(shipped, tmp_path, shared):
    pairs = _test_pairs(shared, "humod", 5)
    c, a, b = [p.context for p in pairs], [p.response_a for p in pairs], [p.response_b for p in pairs]
    shipped.save("judge-copy", shipped.manifest, directory=str(tmp_path))
    again = load_judge("judge-copy", directory=str(tmp_path))
    assert again.reader is not None and again.mix == shipped.mix
    np.testing.assert_allclose(again.predict(c, a, b).p_a, shipped.predict(c, a, b).p_a, atol=1e-6)


def test_a_judge_whose_reader_was_trained_on_another_reading_is_refused(shipped, tmp_path):
    """Since the reader reads MME's chat-format pass, a reader trained on the plain-text reading (0.6.0 up to the
    shared reading, or a user's own `train judge-lm` from then) would score features it never saw and give wrong
    P(A)s without a word: loading it now says so. A manifest that only words the batching differently loads."""
    old = json.loads(json.dumps(shipped.manifest))
    old["lm"]["reader"] = {"lm": old["lm"]["reader"]["lm"], "ctx_tokens": 128, "reply_tokens": 40,
                           "prompt": "<bos> context turns joined by newlines (last ctx_tokens tokens) + newline "
                                     "+ reply", "layers": [6, 12, 18, 24, 30],
                           "batching": "sequences of equal token length only"}
    shipped.save("judge-plain-reader", old, directory=str(tmp_path))
    with pytest.raises(checkpoints.CheckpointError, match="train judge-lm"):
        load_judge("judge-plain-reader", directory=str(tmp_path))
    reworded = json.loads(json.dumps(shipped.manifest))
    reworded["lm"]["reader"]["batching"] = "another description of the same batches"
    shipped.save("judge-reworded", reworded, directory=str(tmp_path))
    assert load_judge("judge-reworded", directory=str(tmp_path)).reader is not None


@pytest.mark.slow  # SmolLM2 reads the same items alone and together: ~9 s
def test_the_reader_reads_each_item_exactly_alone_or_in_a_batch_and_remembers_it():
    """A reply's features do not depend on what else is read with it (equal-length batches only), so the
    reader may remember them: a second reading of the same items runs no model and returns the same rows;
    the memory is bounded."""
    R = lm_features()
    ctx = [["do you have any pets ?"]] * 6
    reps = ["i like cats .", "i like dogs .", "we love fish .", "no , none .", "yes , a dog named rex .",
            "i like cats ."]
    R.forget()
    together = R.features(ctx, reps)
    R.forget()
    alone = np.stack([R.features([c], [r])[0] for c, r in zip(ctx, reps)])
    assert np.array_equal(together, alone)
    np.testing.assert_array_equal(together[0], together[5])  # the repeated item
    calls = []
    old = R.reading.memo_items
    hook = R.reading.model.model.register_forward_hook(lambda *a: calls.append(1))
    try:
        again = R.features(ctx, reps)
        assert calls == [] and np.array_equal(again, together)
        R.reading.memo_items = 3
        R.features([["what is your name ?"]], ["tom ."])
        assert len(calls) == 1 and R.n_remembered == 3
    finally:
        hook.remove()
        R.reading.memo_items = old


@pytest.mark.slow  # SmolLM2 reads the same items four times: ~13 s
def test_the_reader_and_mme_context_pmi_share_one_smollm2_pass():
    """The reader's features and MME's PM come from one chat-format reading of each (context, reply): replies
    MME has scored cost the reader no SmolLM2 pass, and PM after the reader runs only its context-free pass.
    Sharing changes no number: the features and PM values equal those of separate, forgotten runs."""
    from core.models import mme_models as M
    from core.models.memo import forget_all
    ctx = [["A: any plans for the weekend ?", "B: not yet .", "A: want to go hiking ?"], ["do you cook ?"]]
    reps = ["sure , where do you want to go ?", "only pasta , but i make it every day ."]
    forget_all()
    feats = lm_features().features(ctx, reps)
    forget_all()
    pm = M.PMIScorer().raw(ctx, reps)
    calls = []
    hook = lm_features().reading.model.model.register_forward_hook(lambda mod, args, out: calls.append(args))
    try:
        assert np.array_equal(lm_features().features(ctx, reps), feats) and calls == []  # PM read these items
        forget_all()
        lm_features().features(ctx, reps)
        calls.clear()
        assert np.array_equal(M.PMIScorer().raw(ctx, reps), pm)
        assert len(calls) == 1  # one fixed-shape batch: the replies read alone, the context pass remembered
    finally:
        hook.remove()
    assert lm_features().reading.prompt(["hi", "B: hello\nA: how are you ?"]) == lm_features().reading.prompt(
        ["hi", "B: hello", "A: how are you ?"])  # a turn holding a newline is two turns, as MME splits them


def test_a_checkpoint_named_with_its_file_ending_is_the_same_checkpoint(tmp_path):
    """`--checkpoint D/judge-mine.safetensors` looked for judge-mine.safetensors.safetensors."""
    from core.models.checkpoints import paths
    assert paths("judge-mine.safetensors", tmp_path) == paths("judge-mine", tmp_path) == paths("judge-mine.json",
                                                                                               tmp_path)


def test_the_learned_judges_output_mirrors_under_a_swap_as_the_cache_assumes():
    """Judge.swaps_exactly lets the score cache answer (context, B, A) from (context, A, B) mirrored
    (core.engine.cached_judgements): the learned judge's output from the same single-order logits, each pair's two
    orders exchanged, is that mirror, so a calibration that broke it fails here."""
    from types import SimpleNamespace

    from core.judges.pairwise import PairwiseJudge
    assert PairwiseJudge.swaps_exactly
    rng = np.random.default_rng(3)
    logits = rng.normal(0, 2, 2 * 40)  # orders interleaved: (A, B), (B, A) per pair
    swapped = logits.reshape(-1, 2)[:, ::-1].reshape(-1)
    stub = SimpleNamespace(tie_margin=0.05, signature=lambda: "judge:test")
    out, back = (PairwiseJudge.output_from_logits(stub, x) for x in (logits, swapped))
    np.testing.assert_allclose(back.p_a, 1 - out.p_a, rtol=0, atol=1e-15)
    np.testing.assert_allclose(back.p_ab, 1 - out.p_ba_flipped, rtol=0, atol=1e-15)
    np.testing.assert_allclose(back.p_ba_flipped, 1 - out.p_ab, rtol=0, atol=1e-15)
    assert back.verdict == [{"A": "B", "B": "A", "tie": "tie"}[v] for v in out.verdict]


def test_a_context_longer_than_the_encoder_reads_is_cut_without_the_tokenizer_s_false_alarm(capfd):
    """A 2,000-word turn printed transformers' "Token indices sequence length is longer than the specified maximum
    ... will result in indexing errors" on every judge call, though the context keeps its last tokens within the
    512 the encoder reads; the cut is unchanged."""
    long_turn = " ".join(f"word{i % 50}" for i in range(2000))
    ids, span_a, span_b = build_inputs([long_turn, "and you?"], "fine, thanks", "no")
    assert len(ids) <= 512 and span_a[0] < span_a[1] <= span_b[0] < span_b[1] == len(ids) - 1
    assert "indexing errors" not in capfd.readouterr().err
