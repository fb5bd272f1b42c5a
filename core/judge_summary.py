"""The judge over every pair of a comparison, summarized for the verdict: A's wins, ties and losses, the win rate
(ties excluded) with its interval (Wilson's, or a context bootstrap where contexts repeat) and sign test, the rate at equal reply length, and agreement with people
(their ratings in the input, or votes). ``core.verdict`` carries it as ``Verdict.judge``."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from core import stats
from core.data import Comparison
from core.engine import is_blank
from core.formatting import fmt_p
from core.human_preferences import context_groups, human_preferences, preference_dimension, scales_differ, side_accuracy
from core.scoring import JudgeOutput, order_disagreement, same_reply
from core.settings import SEED
from core.stats import LEVEL, N_BOOT


@dataclass
class HumanAgreement:
    """How often the judge sides with people on the pairs where people clearly preferred one reply."""

    source: str  # "scores" (derived from ratings on ``dimension``) or "votes"
    dimension: str | None
    margin: float | None  # the human tie margin used (None for votes)
    n: int  # pairs with a human A/B preference
    agreement: float  # side accuracy of P(A) (0.5 counts half)
    low: float
    high: float
    n_decided: int  # of those, pairs the judge did not call a tie
    agreement_decided: float
    human: list[str | None] = field(default_factory=list)  # per pair: "A" | "B" | "tie" | None


@dataclass
class JudgeSummary:
    """The judge over every pair: wins / ties / losses of A, the win rate (ties excluded) with its interval
    (``win.interval`` names it) and sign test, and agreement with people where the input says what people preferred."""

    n: int
    win: stats.WinStats  # A's wins, ties and losses by the judge's calls, win rate and its interval
    winner: str | None
    order_disagreement: float  # of the pairs whose replies differ, the share whose two orders pick different winners
    tie_margin: float
    signature: str
    p_a: list[float]
    verdicts: list[str]
    human: HumanAgreement | None = None
    length_controlled: stats.LengthControlled | None = None  # A's win rate at equal reply length
    n_contexts: int = 0  # distinct contexts among the pairs (the unit the judge's test resamples)
    first_shown: float = math.nan  # share of single-order calls preferring the reply shown first (0.5: no bias)
    notes: dict[str, Any] = field(default_factory=dict)  # what the judge adds (llm: model, unparsed pairs)

    @property
    def unparsed(self) -> list[int]:
        """The pairs (0-based) the judge could not read in both orders (the llm judge's ``notes``): no call."""
        return list(self.notes.get("unparsed") or ())

    def better(self, system_a: str, system_b: str) -> str:
        return {"A": system_a, "B": system_b}.get(self.winner or "", "no significant preference")

    @property
    def blank_left_out(self) -> int:
        """The decided pairs the rate at equal length leaves out because a reply is blank
        (:func:`judge_length_controlled`)."""
        lc = self.length_controlled
        return max(0, self.win.wins + self.win.losses - lc.n) if lc is not None else 0

    def at_length_words(self) -> str:
        """', without the 4 pairs with a blank reply' when the rate at equal length leaves some out, else ''."""
        n = self.blank_left_out
        return f", without the {n} pair{'s' * (n != 1)} with a blank reply" if n else ""

    def length_check_words(self) -> str:
        """Where the rate at equal reply length and the judge's own test read differently, in words; '' where they
        agree or there is no interval at equal length. The judge's winner is its sign test's (and its win-rate
        interval's); the rate at equal length (AlpacaEval's length control) is a check on it, never a second test:
        its interval can exclude 50 % while the sign test finds nothing (a lean that shows only once length is
        taken out), include 50 % under a winner (a preference that may owe to the replies' length), or exclude it
        on the other side (the preference is length's)."""
        lc = self.length_controlled
        if lc is None or not lc.n or not (math.isfinite(lc.low) and math.isfinite(lc.high)):
            return ""
        excludes = lc.low > 0.5 or lc.high < 0.5
        if excludes and self.winner and (lc.low > 0.5) != (self.winner == "A"):
            return ("at equal reply length the interval excludes 50 % on the other side: the judge's preference goes "
                    "with the replies' length, and at equal length it prefers the other system")
        if excludes and not self.winner:
            return ("at equal reply length the interval excludes 50 %, but the judge's sign test finds no "
                    f"significant preference ({fmt_p(self.win.sign_p)}): a winner is named by the sign test; the rate "
                    "at equal length is a check on it, not a second test")
        if self.winner and not excludes:
            return ("at equal reply length the interval reaches 50 %: the preference may owe to the replies' "
                    "length (their mean difference is stated beside it)")
        return ""

    def detectable(self, level: float = LEVEL) -> float:
        """How far from 0.5 a win rate could be and go unseen at 80 % power (``stats.detectable_difference`` on
        the win rate's interval); NaN where the judge decided too few pairs (or contexts) for any p below
        ``1 - level`` (no winner was possible, so nothing is stated)."""
        # what the sign test can move: decided pairs, or where contexts repeat, contexts whose wins and losses
        # do not cancel
        units = self.win.sign_units if self.win.sign_units >= 0 else self.win.wins + self.win.losses
        if not stats.can_be_significant(units, 1 - level):
            return math.nan
        return stats.detectable_difference(self.win.low, self.win.high, level)


def summarize_judge(comp: Comparison, out: JudgeOutput, dimension: str | None = None,
                    votes: Sequence[str | None] | None = None, level: float = LEVEL, n_boot: int = N_BOOT,
                    seed: int = SEED, people: bool = True) -> JudgeSummary:
    """The judge's :class:`JudgeSummary` for the pairs of ``comp``. People's preferences come from ``votes``
    (one 'A' / 'B' / 'tie' / None per pair) or else from the ratings on ``dimension`` (default: the overall
    one, :func:`preference_dimension`) when both systems carry it; ``people`` False (``--no-human``): the ratings
    are left out, so no agreement with them is measured. ``level``: the intervals' level and the
    winner's threshold (p < 1 - level); ``n_boot`` and ``seed``: the length-controlled rate's resamples."""
    verdicts = list(out.verdict)
    unread = set(out.unparsed)  # pairs the judge could not read (the llm judge's unparsed): no call, not a tie
    read = [i for i in range(len(verdicts)) if i not in unread]
    groups = context_groups(comp.a)
    win = judge_win_stats(verdicts, read, groups, level, n_boot, seed)
    winner = None
    if win.sign_p < 1 - level and win.wins != win.losses:
        winner = "A" if win.wins > win.losses else "B"
    human = None
    if votes is not None:
        human = _agreement("votes", None, None, out, list(votes), level)
    elif people:
        dim = dimension or preference_dimension(comp.examples())
        two_scales = dim is not None and scales_differ(dim, {"A": [x.scores.get(dim, math.nan) for x in comp.a],
                                                             "B": [y.scores.get(dim, math.nan) for y in comp.b]})
        if (dim is not None and not two_scales and any(dim in x.scores for x in comp.a)
                and any(dim in y.scores for y in comp.b)):  # ratings on two scales agree with nothing
            prefs, margin = human_preferences(comp, dim)
            human = _agreement("scores", dim, margin, out, prefs, level)
    # identical replies (whitespace aside, as the verdict's identical_pairs counts them) have no winner to flip; a
    # pair the judge could not read in both orders (the llm judge's unparsed) has no flip to count
    different = [not same_reply(x.response, y.response) and i not in unread for i, (x, y) in enumerate(comp.pairs)]
    return JudgeSummary(len(verdicts), win, winner, order_disagreement(out.p_ab, out.p_ba_flipped, different),
                        out.tie_margin, out.signature,
                        [float(p) for p in out.p_a], verdicts, human,
                        judge_length_controlled(comp, verdicts, level, n_boot, seed),
                        len(set(context_groups(comp.a))), out.first_shown, dict(out.notes))


def judge_win_stats(verdicts: Sequence[str], read: Sequence[int], groups: Sequence, level: float = LEVEL,
                    n_boot: int = N_BOOT, seed: int = SEED) -> stats.WinStats:
    """The judge's wins, ties and losses of A over the pairs ``read`` (``core.stats.clustered_win_stats``, contexts
    ``groups`` resampled), the pairs put in one order first (``core.stats.canonical_rows``: by context, then call),
    so its interval does not depend on the order of the input's rows."""
    outcome = [{"A": 1, "B": -1}.get(verdicts[i], 0) for i in read]
    ctx = [groups[i] for i in read]
    order = stats.canonical_rows(ctx, outcome)
    return stats.clustered_win_stats([outcome[k] for k in order], [ctx[k] for k in order], level, n_boot, seed)


def reply_length(text: str) -> int:
    """A reply's length in words (whitespace-separated tokens): the length every slice and control uses."""
    return len(text.split())


def judge_length_controlled(comp: Comparison, verdicts: Sequence[str], level: float = LEVEL,
                            n_boot: int = N_BOOT, seed: int = SEED) -> stats.LengthControlled:
    """The judge's win rate of A at equal reply length: its A / B calls (ties left out) regressed on the
    length difference A - B in words (``core.stats.length_controlled_win_rate``), contexts resampled; the calls put
    in one order first (``core.stats.canonical_rows``), so the interval does not depend on the order of the rows.
    Pairs with a blank reply are left out: silence is not a short reply (read as one, a system that left a third of
    its replies blank had a rate of 99.8 % at equal length, its losses blamed on their length)."""
    keep = [i for i, v in enumerate(verdicts) if v in ("A", "B")
            and not (is_blank(comp.pairs[i][0].response) or is_blank(comp.pairs[i][1].response))]
    groups = context_groups(comp.a)
    won = [1.0 if verdicts[i] == "A" else 0.0 for i in keep]
    longer = [reply_length(comp.pairs[i][0].response) - reply_length(comp.pairs[i][1].response) for i in keep]
    ctx = [groups[i] for i in keep]
    order = stats.canonical_rows(ctx, won, longer)
    return stats.length_controlled_win_rate([won[k] for k in order], [longer[k] for k in order],
                                            [ctx[k] for k in order], n_boot=n_boot, seed=seed, level=level)


def _agreement(source: str, dimension: str | None, margin: float | None, out: JudgeOutput,
               human: list[str | None], level: float) -> HumanAgreement | None:
    unread = set(out.unparsed)  # pairs the judge could not read: no call to agree or not
    idx = [i for i, h in enumerate(human) if h in ("A", "B") and i not in unread]
    if not idx:
        return HumanAgreement(source, dimension, margin, 0, math.nan, math.nan, math.nan, 0, math.nan, human)
    acc = side_accuracy([out.p_a[i] for i in idx], [human[i] for i in idx])
    lo, hi = stats.wilson_interval(acc * len(idx), len(idx), level)
    dec = [i for i in idx if out.verdict[i] != "tie"]
    acc_dec = float(np.mean([out.verdict[i] == human[i] for i in dec])) if dec else math.nan
    return HumanAgreement(source, dimension, margin, len(idx), acc, lo, hi, len(dec), acc_dec, human)
