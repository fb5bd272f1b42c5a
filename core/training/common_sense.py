"""Obvious pairs made by rule from chitchat-dataset (MIT) conversations: a real reply against a reply that any
person would rank below it.

Eight kinds of worse reply, each made from the conversation itself (no model):

============== ==================================================================================
``off_topic``  a turn of another conversation (two thirds of them chosen longer than the real reply)
``word_salad`` the real reply's words in a random order
``parrot``     the user's own last turn said back
``generic``    a reply that fits anything ("ok", "I don't know.")
``truncated``  the real reply cut off after two or three words
``repetition`` the real reply's first words said over and over (longer than the real reply)
``terse``      a two- to four-word reply built on a word of the user's turn ("I like movies.")
``rude``       an insult, sometimes naming the user's topic (often longer than the real reply)
============== ==================================================================================

The real reply must look like a real answer (6 to 40 words, mostly letters, no link) and the user's turn must
have at least four words. The word lists come in two disjoint halves: ``part="train"`` (pairs that may train
a judge, drawn from the training conversations) and ``part="check"`` (the check set in ``tests/data``, drawn
from the held-out conversations), so a judge is never checked on a generic or rude phrase it was trained on.

The hand-written pairs of the check set (``scripts/make_common_sense.py``) add the kinds no rule makes well:
contradicting the context, nonsense and more.
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Sequence

from core.settings import SEED

KINDS = ("off_topic", "word_salad", "parrot", "generic", "truncated", "repetition", "terse", "rude")

GENERIC = {
    "train": ("I don't know.", "ok", "lol", "Yeah.", "Cool.", "Sure.", "Maybe.", "haha", "Nice.", "Okay then.",
              "I guess so.", "Yes.", "No idea.", "Oh.", "That's cool.", "Alright.", "Interesting.", "Me too.",
              "I don't know, maybe, I'm not really sure what to say about that.",
              "Well, you know, things are the way they are, I suppose."),
    "check": ("I'm not sure.", "Okay.", "Hmm.", "Whatever.", "That's nice.", "Good.", "Right.", "Oh really?",
              "Fine.", "Sounds good.", "Hmm, well, I suppose that is one of those things that happens sometimes.",
              "Yeah, that's just how it goes, I guess, you know how it is."),
}
TERSE = {
    "train": ("I like {w}.", "{W} is good.", "{W}.", "Yes, {w}.", "{W} is fine.", "No {w}.", "{W}? Okay."),
    "check": ("{W} is nice.", "I love {w}.", "{W}, sure.", "Not {w}.", "{W} exists.", "Maybe {w}."),
}
RUDE = {
    "train": ("Shut up.", "Who cares?", "That's stupid.", "Nobody asked you.", "You're boring.",
              "Stop talking about {w}, nobody cares about your stupid {w} and honestly you are so annoying.",
              "Wow, that is the dumbest thing I have ever heard, just go away and leave me alone.",
              "Ugh, you again? Why would anyone care about {w}? Stop wasting my time with this garbage."),
    "check": ("Go away.", "Mind your own business.", "What a dumb thing to say.", "You're annoying.",
              "Honestly {w} is for idiots, and so are you, so please stop messaging me.",
              "I could not care less about you or your {w}, it's pathetic, do not talk to me again.",
              "Seriously, nobody wants to hear about {w}, you are the most tiresome person I know."),
}
_FUNCTION_WORDS = frozenset("""a an the and or but if then so because as of at by for with about against between into
through during before after above below to from up down in out on off over under again further once here there when
where why how all any both each few more most other some such no nor not only own same than too very can will just
should now i me my myself we our ours you your yours he him his she her hers it its they them their what which who
whom this that these those am is are was were be been being have has had having do does did doing would could
ought i'm you're he's she's it's we're they're i've you've we've they've i'd you'd he'd she'd we'd they'd i'll
you'll he'll she'll we'll they'll isn't aren't wasn't weren't hasn't haven't hadn't doesn't don't didn't won't
wouldn't shan't shouldn't can't cannot couldn't mustn't let's that's who's what's here's there's when's where's
why's how's yeah yes okay really like just know think going get got well also much many lot lots thing things
something anything nothing everything want good great""".split())


@dataclass(frozen=True)
class ObviousPair:
    """A context with a better and a worse reply; ``kind`` says how the worse one was made."""
    id: str
    kind: str
    context: tuple[str, ...]
    better: str
    worse: str
    source: str = "rule"

    def to_dict(self) -> dict:
        return {"id": self.id, "kind": self.kind, "source": self.source, "context": list(self.context),
                "better": self.better, "worse": self.worse}


def looks_like_answer(text: str) -> bool:
    """6 to 40 words, at least 70 % letters among non-space characters, no link."""
    words = text.split()
    if not 6 <= len(words) <= 40 or "http" in text or "www." in text:
        return False
    chars = [c for c in text if not c.isspace()]
    return sum(c.isalpha() for c in chars) >= 0.7 * len(chars)


def topic_word(turn: str) -> str | None:
    """The longest content word (4+ letters, not a function word) of a turn, lower-cased; None if there is none."""
    words = [w.lower() for w in re.findall(r"[A-Za-z][A-Za-z']+", turn)]
    words = [w for w in words if len(w) >= 4 and w not in _FUNCTION_WORDS and "'" not in w]
    return max(words, key=len) if words else None


def _overlap(a: str, b: str) -> float:
    wa, wb = set(a.lower().split()), set(b.lower().split())
    return len(wa & wb) / max(1, min(len(wa), len(wb)))


def worse_reply(kind: str, context: Sequence[str], reply: str, other_replies: Sequence[str], rng: random.Random,
                part: str) -> str | None:
    """A worse reply of ``kind`` for (``context``, ``reply``); None when this example cannot make one."""
    words = reply.split()
    user = context[-1]
    if kind == "off_topic":
        longer = rng.random() < 2 / 3
        for _ in range(50):
            cand = other_replies[rng.randrange(len(other_replies))]
            n = len(cand.split())
            if looks_like_answer(cand) and _overlap(cand, reply) < 0.3 and (n > len(words) if longer else True):
                return cand
        return None
    if kind == "word_salad":
        out = words[:]
        for _ in range(10):
            rng.shuffle(out)
            if out[:3] != words[:3]:
                return " ".join(out)
        return None
    if kind == "parrot":
        return user if len(user.split()) >= 4 and _overlap(user, reply) < 0.5 else None
    if kind == "generic":
        return rng.choice(GENERIC[part])
    if kind == "truncated":
        return " ".join(words[:rng.choice((2, 3))]).rstrip(",.;:!?")
    if kind == "repetition":
        span = words[:rng.randint(3, 4)]
        times = max(3, -(-(len(words) + 1) // len(span)))
        return " ".join(span * times)
    w = topic_word(user)
    if kind == "terse":
        return rng.choice(TERSE[part]).format(w=w, W=w.capitalize()) if w else None
    if kind == "rude":
        template = rng.choice(RUDE[part])
        return template.format(w=w) if w or "{w}" not in template else None
    raise ValueError(f"unknown kind {kind!r}; kinds: {', '.join(KINDS)}")


def obvious_pairs(dialogs: Sequence[Sequence[str]], n: int, part: str = "train", seed: int = SEED,
                  kinds: Sequence[str] = KINDS, ctx_turns: int = 3) -> list[ObviousPair]:
    """``n`` obvious pairs from ``dialogs`` (kinds in turn, one (context, real reply) example each, examples in
    a seeded random order; at most one pair per example)."""
    if part not in GENERIC:
        raise ValueError(f"part must be 'train' or 'check', not {part!r}")
    rng = random.Random(f"{seed}-obvious-{part}")
    examples = [(d, t) for d in dialogs for t in range(1, len(d))
                if looks_like_answer(d[t]) and len(d[t - 1].split()) >= 4]
    rng.shuffle(examples)
    replies = [d[t] for d, t in examples]
    out: list[ObviousPair] = []
    k = 0
    for d, t in examples:
        if len(out) >= n:
            break
        kind = kinds[k % len(kinds)]
        ctx = tuple(d[max(0, t - ctx_turns):t])
        worse = worse_reply(kind, ctx, d[t], replies, rng, part)
        if worse is None or worse.strip().lower() == d[t].strip().lower():
            continue
        out.append(ObviousPair(f"{part}-{kind}-{len(out):05d}", kind, ctx, d[t], worse))
        k += 1
    return out


def read_pairs(path) -> list[ObviousPair]:
    """Obvious pairs from a JSONL file written by :meth:`ObviousPair.to_dict` (one pair per line)."""
    import json
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                r = json.loads(line)
                out.append(ObviousPair(r["id"], r["kind"], tuple(r["context"]), r["better"], r["worse"],
                                       r.get("source", "rule")))
    return out
