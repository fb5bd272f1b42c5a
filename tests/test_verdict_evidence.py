"""The verdict's promises on real models: generic replies never win it over engaged on-topic ones, and υBLEU never
takes a reply's own copy in its pool for a reference (the demo's retrieval bot answers from the same corpus)."""
import random

import pytest

import core
from core.data import load_jsonl
from core.engine import score_examples
from core.metrics.ubleu import is_own_copy
from core.models.corpus import chitchat_split
from core.training.common_sense import looks_like_answer
from core.verdict import verdict_decision, verdict_glance
from core.verdict_policy import shipped_policy

pytestmark = pytest.mark.slow

GENERIC = ("i don't know.", "ok.", "yes.", "I'm not sure.", "Okay.", "That's nice.", "Sure.", "No idea.")


def generic_against_engaged(n: int = 30, seed: int = 13):
    """(contexts, generic replies, engaged replies, references) made by rule from chitchat-dataset's held-out
    conversations: the engaged reply is the conversation's real next turn, the generic one a reply that fits
    anything, and the reference the same speaker's following turn (on the conversation's topic, not a copy of
    either reply)."""
    _, held = chitchat_split()
    rng = random.Random(seed)
    spots = [(d, t) for d in held for t in range(1, len(d) - 2)
             if looks_like_answer(d[t]) and len(d[t - 1].split()) >= 4 and looks_like_answer(d[t + 2])]
    rng.shuffle(spots)
    spots = spots[:n]
    contexts = [d[max(0, t - 3):t] for d, t in spots]
    generic = [rng.choice(GENERIC) for _ in spots]
    engaged = [d[t] for d, t in spots]
    references = [[d[t + 2]] for d, t in spots]
    return contexts, generic, engaged, references


@pytest.mark.parametrize("with_references", [True, False])
def test_the_verdict_names_engaged_replies_over_generic_ones(with_references):
    contexts, generic, engaged, references = generic_against_engaged()
    v = core.compare_replies(contexts, generic, engaged, references if with_references else None,
                             system_a="generic", system_b="engaged", cache=False)
    assert v.judge is not None  # the judge runs by default
    assert verdict_decision(v).side == "B", v.sentence
    assert v.sentence.startswith("engaged is better than generic"), v.sentence
    # at a glance: strong evidence, and the record of what decided (without references, the combined test that ran)
    said = dict(verdict_glance(v))
    assert said["Evidence"].startswith("strong (statistically significant)"), said
    if with_references:
        rec, significant = shipped_policy().record("verdict"), shipped_policy().record("combined")
        assert said["Track record"].startswith("tested on rated sets it was not tuned on") and (
            f"in {rec.right} of {rec.pairs} pairs" in said["Track record"]), said
        assert said["Track record"].endswith(  # the record the sentence quotes for the combined test, tied to it
            f"where its combined test was significant, as here: the one people preferred in {significant.right}, "
            f"the other one in {significant.wrong}"), said
    else:
        assert said["Track record"].startswith("not measured for this verdict (") and (
            "ubleu not computed" in said["Track record"] and "the combined test of " in said["Track record"]), said


def test_no_demo_reply_is_its_own_ubleu_reference(repo_root):
    rows = load_jsonl(repo_root / "demo" / "demo.jsonl")
    result = score_examples(rows, ["ubleu"], cache=False).results["ubleu"]
    left_out = {"C-BM25": 0, "SmolLM2-135M": 0}
    for ex, details in zip(rows, result.details):
        assert not any(r["kind"] != "original" and is_own_copy(ex.response, r["text"]) for r in details["references"])
        left_out[ex.system] += bool(details["own_copies_left_out"])
    # the retrieval bot answers from the pool's corpus: most of its replies were found word for word
    assert left_out["C-BM25"] >= 30 and left_out["SmolLM2-135M"] <= 3, left_out
