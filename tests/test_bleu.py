"""BLEU equals sacrebleu; ΔBLEU reduces to BLEU at unit weights and punishes n-grams of bad references."""
import random

import pytest
import sacrebleu

from core.metrics.bleu import BleuScorer, bleu_from_stats

HYPS = ["the cat sat on the mat", "i do n't know , maybe tomorrow ?", "yes", "", "hello hello hello there",
        "What a great day it is today!", "no idea what you mean"]
REFS = [["the cat is on the mat", "a cat sat on a mat"], ["maybe tomorrow , i do n't know", "not today"],
        ["no", "yes , of course"], ["something"], ["hello there", "hi"], ["it is a great day today!", "great day"],
        ["i have no idea", "what do you mean ?"]]


def _random_corpus(seed, n=60):
    rng = random.Random(seed)
    vocab = "a b c d e f g the cat dog on mat is was i you , . ?".split()
    sent = lambda: " ".join(rng.choice(vocab) for _ in range(rng.randint(0, 12)))  # noqa: E731
    return [sent() for _ in range(n)], [[sent() for _ in range(rng.randint(1, 4))] for _ in range(n)]


@pytest.mark.parametrize("order", [1, 2, 4])
@pytest.mark.parametrize("smooth", ["exp", "floor", "add-k", "none"])
def test_sentence_bleu_equals_sacrebleu(order, smooth):
    ours = BleuScorer(max_order=order, smooth=smooth)
    ref_metric = sacrebleu.BLEU(max_ngram_order=order, smooth_method=smooth, effective_order=True)
    hyps, refs = _random_corpus(1)
    for h, r in list(zip(HYPS, REFS)) + list(zip(hyps, refs)):
        assert ours.sentence(h, r) == pytest.approx(ref_metric.sentence_score(h, r).score, abs=1e-6)
        assert ours.sentence(h, r[:1]) == pytest.approx(ref_metric.sentence_score(h, r[:1]).score, abs=1e-6)


@pytest.mark.parametrize("order", [2, 4])
@pytest.mark.parametrize("smooth", ["exp", "none"])
def test_corpus_bleu_equals_sacrebleu(order, smooth):
    hyps, refs = _random_corpus(2)
    hyps, refs = hyps + HYPS, refs + REFS
    nref = max(len(r) for r in refs)
    # sacrebleu wants reference streams of equal length; pad with the first reference (no effect on max counts)
    streams = [[r[k] if k < len(r) else r[0] for r in refs] for k in range(nref)]
    expected = sacrebleu.BLEU(max_ngram_order=order, smooth_method=smooth).corpus_score(hyps, streams).score
    padded = [[r[k] if k < len(r) else r[0] for k in range(nref)] for r in refs]
    assert BleuScorer(max_order=order, smooth=smooth).corpus(hyps, padded) == pytest.approx(expected, abs=1e-6)
    single = sacrebleu.BLEU(max_ngram_order=order, smooth_method=smooth).corpus_score(hyps, [[r[0] for r in refs]]).score
    assert BleuScorer(max_order=order, smooth=smooth).corpus(hyps, [[r[0]] for r in refs]) == pytest.approx(single, abs=1e-6)


def test_lowercase_option_matches_sacrebleu():
    ours = BleuScorer(lowercase=True)
    theirs = sacrebleu.BLEU(max_ngram_order=2, lowercase=True, effective_order=True)
    assert ours.sentence("The Cat SAT", ["the cat sat down"]) == pytest.approx(
        theirs.sentence_score("The Cat SAT", ["the cat sat down"]).score, abs=1e-6)


def test_delta_bleu_unit_weights_equal_multi_reference_bleu():
    s = BleuScorer()
    hyps, refs = _random_corpus(3)
    for h, r in list(zip(HYPS, REFS)) + list(zip(hyps, refs)):
        assert s.sentence(h, r, weights=[1.0] * len(r)) == pytest.approx(s.sentence(h, r), abs=1e-9)
    # weighted path forced (a weight of 1 - 0) gives the same numbers as the merged-count path
    st_w = s.stats("the cat sat on the mat", REFS[0], [1.0, 1.0 - 1e-12])
    st = s.stats("the cat sat on the mat", REFS[0])
    assert st_w.correct == pytest.approx(st.correct) and st_w.total == pytest.approx(st.total)


def test_negative_reference_lowers_score():
    s = BleuScorer()
    hyp, good, bad = "i love pizza so much", "i love pasta", "pizza so much fun"
    base = s.sentence(hyp, [good], [1.0])
    with_pos = s.sentence(hyp, [good, bad], [1.0, 0.8])
    with_neg = s.sentence(hyp, [good, bad], [1.0, -0.8])
    assert with_pos > base > with_neg
    # an n-gram shared only with a negatively weighted reference contributes negative mass (clamped at 0)
    st = s.stats("pizza so much", [good, bad], [1.0, -1.0])
    assert st.correct == [0.0, 0.0]


def test_delta_bleu_rejects_bad_weights():
    with pytest.raises(ValueError):
        BleuScorer().sentence("a b", ["a b"], [1.5])
    with pytest.raises(ValueError):
        BleuScorer().sentence("a b", ["a b", "c"], [1.0])


def test_bleu_from_stats_zero_and_unknown_smoothing():
    assert bleu_from_stats([0, 0], [3, 2], 3, 3) == 0.0
    with pytest.raises(ValueError):
        bleu_from_stats([1, 1], [1, 1], 1, 1, smooth="magic")
