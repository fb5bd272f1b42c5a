"""The common-sense check set (tests/data/obvious_pairs_*.jsonl) and how the judge and MME-CRS do on it.

The set: 240 pairs made by rule from held-out chitchat conversations (``scripts/make_common_sense.py``) and 97
written by hand; in each the better reply is obvious to a person, and the worse one is the longer in at least a
third, so "the longer reply wins" cannot pass it. The issue's targets are judge >= 0.95 and MME-CRS >= 0.85
(docs/judge.md, "Common sense"). MME-CRS's is asserted where its CRS weights were fitted (0.694 at 0.4.0, 0.715
since 0.5.0, 0.837 with PM's copies left out and RM's parrot negatives, 0.855 since PM's copies are matched
whatever their case and PM-evidence replaced PM-mean, 2026-11-26, on the 337 pairs); on another kind of CPU,
where SmolLM2's bfloat16 sub-metrics round differently, a floor a little lower. The judge's is not met (0.846 at
0.4.0, 0.862 since 0.6.0): its floor is a regression guard. Both must beat "the longer reply wins" (0.540).
"""
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from core.data import Example
from core.engine import judge_pairs, score_examples
from core.metrics import mme as mme_metric
from core.models.device import active_device, device_key
from core.training.common_sense import GENERIC, KINDS, RUDE, TERSE, obvious_pairs, read_pairs

DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture(scope="module")
def rule_pairs():
    return read_pairs(DATA / "obvious_pairs_rule.jsonl")


@pytest.fixture(scope="module")
def hand_pairs():
    return read_pairs(DATA / "obvious_pairs_handwritten.jsonl")


def longer_share(pairs) -> float:
    return sum(len(p.worse.split()) > len(p.better.split()) for p in pairs) / len(pairs)


def agreement(better: np.ndarray, worse: np.ndarray) -> float:
    """Share of pairs where the better reply scores higher; equal scores count half."""
    d = np.asarray(better, float) - np.asarray(worse, float)
    return float(np.mean(np.where(d > 0, 1.0, np.where(d < 0, 0.0, 0.5))))


def test_the_check_set_covers_every_kind_and_length_cannot_decide(rule_pairs, hand_pairs):
    assert Counter(p.kind for p in rule_pairs) == {k: 30 for k in KINDS}
    hand_kinds = Counter(p.kind for p in hand_pairs)
    assert len(hand_pairs) >= 80
    for kind in ("terse", "generic", "off_topic", "word_salad", "parrot", "contradiction", "rude", "nonsense"):
        assert hand_kinds[kind] >= 10, kind
    assert len({p.id for p in rule_pairs + hand_pairs}) == len(rule_pairs) + len(hand_pairs)
    assert longer_share(rule_pairs + hand_pairs) >= 1 / 3  # 133 of 337
    assert longer_share(rule_pairs) >= 0.3 and longer_share(hand_pairs) >= 0.5  # 73 of 240, 60 of 97
    assert all(p.better.strip() and p.worse.strip() and p.better != p.worse for p in rule_pairs + hand_pairs)


def test_the_rule_made_half_is_reproduced_from_held_out_conversations(rule_pairs):
    from core.models.corpus import chitchat_split
    train, held = chitchat_split()
    assert obvious_pairs(held, 240, part="check") == rule_pairs
    # no check pair's (context, real reply) occurs in a training conversation, and the phrases differ
    train_examples = {(tuple(d[max(0, t - n):t]), d[t]) for d in train for t in range(1, len(d)) for n in (1, 2, 3)}
    assert not any((p.context, p.better) in train_examples for p in rule_pairs)
    for words in (GENERIC, TERSE, RUDE):
        assert not set(words["train"]) & set(words["check"])


def test_the_mix_s_rule_made_pairs_are_new_to_the_reader_and_to_the_check_set(rule_pairs):
    """The judge's mix is fitted beside the validation pairs on the rule-made pairs after the reader's share
    (``common_sense_pairs(n, skip=share)``): none of them trained the reader, and none shares a conversation turn
    with the check set (a turn of six words or more: "Hello" occurs in many conversations)."""
    from core.training.judge_lm import COMMON_SENSE
    from core.training.judge_pairs import common_sense_pairs
    reader = common_sense_pairs(40)
    mix = common_sense_pairs(40, skip=40)
    assert [p.id for p in common_sense_pairs(80)] == [p.id for p in reader + mix]
    assert not {p.id for p in reader} & {p.id for p in mix} and len(mix) == 40
    assert {p.dataset for p in mix} == {f"common-sense-{k}" for k in KINDS}
    assert common_sense_pairs(3, skip=COMMON_SENSE)[0].id == common_sense_pairs(COMMON_SENSE + 1)[-1].id
    check_texts = {t for p in rule_pairs for t in (*p.context, p.better) if len(t.split()) >= 6}  # not "Hello"
    assert not any(t in check_texts for p in mix for t in (*p.context, p.response_a, p.response_b))


def test_every_kind_of_worse_reply_is_made_as_described():
    dialog = ["I went hiking in the mountains near Denver last weekend.",
              "That sounds amazing, which trail did you take and how long was it?",
              "We took the Mount Falcon trail, about seven miles round trip, with great views of the city."]
    pairs = obvious_pairs([dialog] * 40, 16, part="check")
    by_kind = {p.kind: p for p in pairs}
    assert set(by_kind) >= {"word_salad", "parrot", "generic", "truncated", "repetition", "terse", "rude"}
    assert sorted(by_kind["word_salad"].worse.split()) == sorted(by_kind["word_salad"].better.split())
    assert by_kind["parrot"].worse == by_kind["parrot"].context[-1]
    assert by_kind["generic"].worse in GENERIC["check"]
    assert len(by_kind["truncated"].worse.split()) <= 3
    assert len(by_kind["repetition"].worse.split()) > len(by_kind["repetition"].better.split())
    with pytest.raises(ValueError):
        obvious_pairs([dialog], 1, part="test")


@pytest.mark.slow  # the judge and MME-CRS on 337 pairs: a quality floor (316 s on 2 AVX2 cores)
def test_the_judge_and_mme_prefer_the_better_reply_more_often_than_length_does(rule_pairs, hand_pairs):
    pairs = rule_pairs + hand_pairs
    length = agreement([len(p.better.split()) for p in pairs], [len(p.worse.split()) for p in pairs])
    out = judge_pairs([list(p.context) for p in pairs], [p.better for p in pairs], [p.worse for p in pairs])
    tie = np.abs(out.p_a - 0.5) < out.tie_margin
    judge = float(np.mean(np.where(tie, 0.5, (out.p_a > 0.5).astype(float))))
    rows = [Example(f"{p.id}-{side}", side, list(p.context), p.better if side == "better" else p.worse)
            for side in ("better", "worse") for p in pairs]
    mme = score_examples(rows, ["mme"]).column("mme")
    mme_agreement = agreement(mme[:len(pairs)], mme[len(pairs):])
    assert length < 0.6
    assert judge >= 0.80 and judge > length + 0.05, judge
    here = device_key(active_device())
    target = 0.85 if here == mme_metric.WEIGHTS_COMPUTED_ON else 0.82  # 0.855 on cpu-avx512-bf16, 2026-11-26
    assert mme_agreement >= target and mme_agreement > length + 0.05, (mme_agreement, here)
