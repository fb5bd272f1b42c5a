"""Which signals may name the one-line verdict's winner, and how far each is trusted at the system level.

A user asks which of two systems people would prefer, so a signal earns a say in the verdict by how often it
names the system people prefer on rated data, not by a per-row correlation. ``core.system_eval`` measures
that for every signal on every rated set with several systems answering shared contexts; the policy shipped
in ``checkpoints/verdict-policy.json`` was chosen from those measurements with each development set held out
in turn (``scripts/choose_verdict_policy.py``, benchmarks/SYSTEM_LEVEL.md).

A policy (:class:`VerdictPolicy`) names

- ``deciding_metrics``: the metrics that may name the winner; every other metric is a **diagnostic**: it is
  compared and shown, never decides;
- ``judge``: the judge's role. ``"first"``: its winner decides, whatever the metrics say; ``"agree"``: its
  winner decides unless a deciding metric names the other system, and then the verdict abstains (the trusted
  signals conflict); ``"off"``: the judge never decides;
- ``metrics_alone``: whether the deciding metrics may name a winner when the judge names none (or is not run):
  then every deciding metric that names a winner after Holm's correction over the deciding metrics scored
  must name the same one;
- ``lean``: signals (the judge and metrics) whose **unanimous direction** names a winner when nothing above did
  and no trusted signal names the other system: every one of them was computed and its mean difference (the
  judge: its win rate) points the same way, though none is significant alone. The verdict then says the system
  is "probably better" and why; its measured record is the verdict's own;
- ``combine``: signals whose **combined evidence** is tested before every rule above (:func:`combined_values`:
  per pair, each signal's difference A - B divided by its standard deviation over the pairs, summed), as the
  verdict tests a metric. When that test names a winner it is the verdict's; when it names none, the rules above
  apply. When some of its signals were not computed (the judge not run, BLEU without references), the test
  combines the first set of computed signals that ``combine_allowed`` lists (the sets measured to prefer a real
  reply to a generic one, best record first: ``scripts/choose_verdict_policy.py``); with none there is no
  combined test. ``combine_vetoes``: signals of the combined test whose own test, naming the other
  system, makes the verdict abstain ("Mixed evidence"): trusted signals conflict (a set of ``combine_allowed``
  is vetoed by those and by its metrics allowed alone: :meth:`VerdictPolicy.vetoes_for`). ``combine_lean``: when
  nothing above named a winner, the combined test's direction names a "probably better" system if its
  randomization p is below this (0: never), no veto signal naming the other system.

People's ratings in the input come before any of this (:func:`decide`): when they name a winner it is the
verdict's.

Each signal's measured record (:class:`SignalRecord`) is stated beside it in the verdict: "the judge named
people's preferred system in 41 of 45 rated system pairs".
"""
from __future__ import annotations

import functools
import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from core import stats
from core.settings import checkpoint_file

POLICY_FILE = "verdict-policy.json"
JUDGE_ROLES = ("first", "agree", "off")
JUDGE = "judge"  # the judge's name among the signals of a record
MEASURED_JUDGE = "judge:judge|"  # how the judge whose records these are signs (the learned judge, shipped checkpoint)


def is_measured_judge(signature: str) -> bool:
    """Whether a judge's signature is that of the judge the records were measured with (the learned judge's shipped
    checkpoint). Any other judge (``--judge llm``, a registered one, a checkpoint re-fit on votes) has no record:
    it is a diagnostic, never in the combined test, until the policy is chosen again with it."""
    return signature.startswith(MEASURED_JUDGE)


def judge_name(signature: str) -> str:
    """'llm', 'judge-mine': a judge's name as its signature starts ('judge:llm|model:...')."""
    return signature.split("|", 1)[0].removeprefix("judge:")
COMBINED = "combined:"  # the combined tests' names among the signals of a record start so (:func:`combined_name`)
COMBINED_TEST = "combined"  # the verdict's combined test as a criterion: the gate's --by, the leaderboard's --rank-by


def combined_name(signals: Sequence[str]) -> str:
    """'combined:bleu+judge+mme': the name of the combined test of ``signals`` (in sorted order) among the
    signals of a record or of a system pair's calls."""
    return COMBINED + "+".join(sorted(signals))


@dataclass(frozen=True)
class VerdictPolicy:
    """Which signals decide the verdict (module docstring)."""

    deciding_metrics: tuple[str, ...] = ()
    judge: str = "first"
    metrics_alone: bool = True
    lean: tuple[str, ...] = ()
    combine: tuple[str, ...] = ()
    combine_allowed: tuple[tuple[str, ...], ...] = ()
    combine_vetoes: tuple[str, ...] = ()
    combine_lean: float = 0.0

    def __post_init__(self) -> None:
        if self.judge not in JUDGE_ROLES:
            raise ValueError(f"judge role {self.judge!r}: choose one of {', '.join(JUDGE_ROLES)}")

    @property
    def name(self) -> str:
        metrics = "+".join(self.deciding_metrics) or "no metric"
        alone = "alone" if self.metrics_alone else "never alone"
        lean = f"; else the lean of {'+'.join(self.lean)}" if self.lean else ""
        rules = f"judge {self.judge}; deciding metrics {metrics} ({alone}){lean}"
        if not self.combine:
            return rules
        nothing = self.judge == "off" and not self.deciding_metrics and not self.lean
        veto = f" (vetoed by {'+'.join(self.combine_vetoes)})" if self.combine_vetoes else ""
        lean = f"; else its direction at p < {self.combine_lean:g}" if self.combine_lean else ""
        return (f"the combined test of {'+'.join(self.combine)}{veto}" + (" alone" if nothing else f", then {rules}")
                + lean)

    def combination(self, computed: Sequence[str]) -> tuple[str, ...]:
        """The signals the combined test sums when ``computed`` are the signals at hand: all of ``combine`` when
        every one was computed, else the first set ``combine_allowed`` lists whose signals were all computed,
        else none (module docstring)."""
        if all(s in computed for s in self.combine):
            return tuple(self.combine)
        return next((tuple(c) for c in self.combine_allowed if set(c) <= set(computed)), ())

    def vetoes_for(self, signals: Sequence[str]) -> tuple[str, ...]:
        """The signals of a combined test of ``signals`` that veto it: ``combine_vetoes``, and the metrics
        ``combine_allowed`` lists alone (they pass the generic-reply bar alone, as the vetoes do)."""
        return tuple(s for s in signals if s in self.combine_vetoes or (s,) in self.combine_allowed)

    def combinable(self) -> tuple[str, ...]:
        """Every signal the combined test may sum: those of ``combine`` and of ``combine_allowed``."""
        return tuple(dict.fromkeys([*self.combine, *(s for c in self.combine_allowed for s in c)]))

    def decides(self, signal: str) -> bool:
        """Whether ``signal`` (a metric's name or ``"judge"``) may name the verdict's winner."""
        if signal == JUDGE:
            return self.judge != "off"
        return signal in self.deciding_metrics

    def trusts(self, signal: str) -> bool:
        """Whether ``signal`` has a say in the verdict: it decides (:meth:`decides`) or is part of the combined
        test. The others are diagnostics: shown, never deciding."""
        return self.decides(signal) or signal in self.combine


WRONG_COST = 4.0  # choosing a policy: naming the system people did not prefer costs four right verdicts


@dataclass(frozen=True)
class SignalRecord:
    """A signal's system-level record on rated data: of ``pairs`` system pairs people separate, how many its
    own test named people's winner (``right``), the other system (``wrong``) or neither; ``order``: how many
    its mean difference (the judge: its win rate) pointed to people's winner."""

    signal: str
    pairs: int
    right: int
    wrong: int
    order: int
    datasets: int = 0

    @property
    def score(self) -> float:
        """right - ``WRONG_COST`` x wrong: how the verdict policy is chosen, and the gate ranks signals it does not
        trust."""
        return self.right - WRONG_COST * self.wrong

    def words(self, label: str | None = None) -> str:
        """'the judge named people's preferred system in 41 of 45 rated system pairs (the other one in 1)'."""
        who = label or self.signal
        wrong = f", the other one in {self.wrong}" if self.wrong else ", never the other one"
        return (f"{who} named people's preferred system in {self.right} of {self.pairs} rated system pairs"
                f"{wrong}")


@dataclass
class ShippedPolicy:
    """The policy in force and the records of every signal it was chosen from."""

    policy: VerdictPolicy
    records: dict[str, SignalRecord] = field(default_factory=dict)
    source: str = ""  # what measured the records (the command and the data)

    def record(self, signal: str) -> SignalRecord | None:
        return self.records.get(signal)

    def to_dict(self) -> dict[str, Any]:
        return {"policy": asdict(self.policy), "records": {k: asdict(r) for k, r in self.records.items()},
                "source": self.source}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "ShippedPolicy":
        p = d["policy"]
        policy = VerdictPolicy(tuple(p["deciding_metrics"]), p["judge"], bool(p["metrics_alone"]),
                               tuple(p.get("lean", ())), tuple(p.get("combine", ())),
                               tuple(tuple(c) for c in p.get("combine_allowed", ())),
                               tuple(p.get("combine_vetoes", ())), float(p.get("combine_lean", 0.0)))
        records = {k: SignalRecord(**r) for k, r in d.get("records", {}).items()}
        return cls(policy, records, d.get("source", ""))


FALLBACK = ShippedPolicy(VerdictPolicy(("mme", "bert_ruber"), "agree", True), {},
                         "no policy file found: the judge and MME-CRS / BERT-RUBER decide, unrecorded")


@functools.cache
def shipped_policy() -> ShippedPolicy:
    """The policy of ``checkpoints/verdict-policy.json`` (:data:`FALLBACK` when no checkpoint folder has it)."""
    path = checkpoint_file(POLICY_FILE)
    if path is None or not path.is_file():
        return FALLBACK
    return ShippedPolicy.from_dict(json.loads(path.read_text(encoding="utf-8")))


@dataclass(frozen=True)
class Decision:
    """Which side the verdict names (``side`` "A" / "B" / None) and on what ``basis``: "people", "combined" (the
    combined test of the policy's ``combine`` signals named it), "judge", "metrics", "lean" (the policy's lean
    signals all point to ``side``, none significantly), "combined lean" (the combined test's direction, below
    the policy's ``combine_lean`` p but not significant), "conflict" (trusted
    signals name different systems: the verdict abstains), or None (no trusted signal names a winner).
    ``named``: the signals that named (or leaned to) ``side``; ``against``: those that named the other system."""

    side: str | None
    basis: str | None
    named: tuple[str, ...] = ()
    against: tuple[str, ...] = ()


def deciding_winners(policy: VerdictPolicy, metrics: Sequence[tuple[str, str | None, float]],
                     level: float = 0.95) -> dict[str, str]:
    """{metric: winner} for the deciding metrics whose winner survives Holm's correction over the deciding
    metrics that scored. ``metrics``: (name, its own test's winner or None, its randomization p)."""
    scored = [(m, w, p) for m, w, p in metrics if policy.decides(m) and p is not None and math.isfinite(p)]
    if not scored:
        return {}
    adjusted = stats.holm([p for _, _, p in scored])
    return {m: w for (m, w, _), a in zip(scored, adjusted) if w in ("A", "B") and a < 1 - level}


def leaning(policy: VerdictPolicy, orders: Mapping[str, str | None]) -> str | None:
    """The side every one of the policy's ``lean`` signals points to ("A" / "B"), or None when one is missing,
    points nowhere, or they disagree. ``orders``: {signal: the side its mean difference favours}."""
    if not policy.lean:
        return None
    sides = {orders.get(s) for s in policy.lean}
    return sides.pop() if len(sides) == 1 and sides <= {"A", "B"} else None


def decide(policy: VerdictPolicy, people: str | None, judge: str | None,
           metrics: Sequence[tuple], level: float = 0.95, judge_order: str | None = None,
           combined: tuple | None = None) -> Decision:
    """The verdict's side under ``policy``: people's winner when their ratings name one; else the combined test's
    winner, unless one of the policy's ``combine_vetoes`` among its signals names the other system by its own
    test (then it abstains); else the judge and the deciding metrics as the policy's rules say, else the lean signals (module
    docstring). ``judge``: the judge's winner ("A" / "B" / None) and ``judge_order`` the side its win rate
    favours; ``metrics``: (name, winner, randomization p[, the side its mean difference favours]) for every
    metric compared; ``combined``: (the combined test's winner, the signals it summed[, the side its mean
    favours, its randomization p]), None when it was not run. The combined test's direction names a "probably
    better" system last (``combine_lean``)."""
    if people in ("A", "B"):
        return Decision(people, "people")
    own = {m[0]: m[1] for m in metrics}
    own[JUDGE] = judge

    def vetoed(side: str) -> tuple[str, ...]:
        return tuple(s for s in policy.vetoes_for(combined[1]) if own.get(s) in ("A", "B") and own[s] != side)

    if policy.combine and combined is not None and combined[0] in ("A", "B"):
        against = vetoed(combined[0])
        if against:
            return Decision(None, "conflict", tuple(combined[1]), against)
        return Decision(combined[0], "combined", tuple(combined[1]))
    decision = _decide_by_rules(policy, judge, metrics, level, judge_order)
    if (decision.side is None and decision.basis is None and policy.combine and policy.combine_lean > 0
            and combined is not None and len(combined) > 3 and combined[2] in ("A", "B")
            and combined[3] is not None and combined[3] < policy.combine_lean and not vetoed(combined[2])):
        return Decision(combined[2], "combined lean", tuple(combined[1]))
    return decision


def _decide_by_rules(policy: VerdictPolicy, judge: str | None, metrics: Sequence[tuple], level: float,
                     judge_order: str | None) -> Decision:
    """:func:`decide`'s rules after people and the combined test: the judge, the deciding metrics, the lean."""
    named = deciding_winners(policy, [m[:3] for m in metrics], level)
    judge = judge if policy.judge != "off" else None
    if judge in ("A", "B"):
        agree = tuple(m for m, w in named.items() if w == judge)
        against = tuple(m for m, w in named.items() if w != judge)
        if against and policy.judge == "agree":
            return Decision(None, "conflict", (JUDGE, *agree), against)
        return Decision(judge, "judge", (JUDGE, *agree), against)
    if policy.metrics_alone and named:
        sides = set(named.values())
        if len(sides) == 2:
            first = named[next(iter(named))]
            return Decision(None, "conflict", tuple(m for m, w in named.items() if w == first),
                            tuple(m for m, w in named.items() if w != first))
        return Decision(sides.pop(), "metrics", tuple(named))
    orders = {m[0]: (m[3] if len(m) > 3 else None) for m in metrics}
    orders[JUDGE] = judge_order
    side = leaning(policy, orders)
    if side is not None and not any(w != side for w in named.values()):
        return Decision(side, "lean", tuple(policy.lean))
    return Decision(None, None)


def combined_values(differences: Mapping[str, Sequence[float]],
                    silent: Sequence[str | None] | None = None) -> np.ndarray:
    """The combined evidence per pair: ``sum_s d_s[i] / sd(d_s)``, where ``d_s[i]`` is signal s's difference A - B
    on pair i, oriented so that a positive value favours A (a metric's A - B, negated when lower is better; the
    judge's P(A) - 0.5), and ``sd(d_s)`` its population standard deviation over the pairs with a value. Every
    signal then weighs the same, in its own units of spread; nothing is fitted. A signal whose differences are
    all equal has no spread: it is divided by their size instead (each pair then adds +1 or -1, or 0 when the
    two systems never differ). A pair that lacks a value of any signal is NaN (the test drops it and counts it).

    ``silent[i]`` (:func:`silent_sides`): "A" or "B" when only that side's reply on pair i is blank, "both" when
    both are. Silence loses the pair: on every signal the pair's difference is the largest that signal shows
    between two replies that both answered, in favour of the side that answered (1 when it shows none; the
    signal's own value there when it favours the answering side by more, as the judge may), before the
    standardization; a metric cannot score a blank reply, so without this the pair was dropped, and a system that
    left the questions it answered worst blank came out ahead. A pair both left blank has no value (dropped)."""
    total = None
    side = None
    if silent is not None:
        side = np.asarray([s or "" for s in silent])
    for d in differences.values():
        x = np.asarray(d, dtype=np.float64)
        if side is not None:
            if len(side) != len(x):
                raise ValueError(f"silent has {len(side)} pairs, the differences {len(x)}")
            answered = x[(side == "") & np.isfinite(x)]
            worst = float(np.abs(answered).max(initial=0.0)) or 1.0
            own = np.where(np.isfinite(x), x, 0.0)
            x = np.where(side == "A", np.minimum(-worst, own), np.where(side == "B", np.maximum(worst, own),
                                                                         np.where(side == "both", np.nan, x)))
        finite = x[np.isfinite(x)]
        sd = float(finite.std()) if finite.size else 0.0
        if sd <= 1e-12 * max(1.0, float(np.abs(finite).max(initial=0.0))):
            sd = float(np.abs(finite).max(initial=0.0))  # no spread: a constant difference counts as 1 a pair
        part = np.where(np.isfinite(x), x / sd, np.nan) if sd > 0 else np.where(np.isfinite(x), 0.0, np.nan)
        total = part if total is None else total + part
    if total is None:
        raise ValueError("no signal to combine")
    return total


def silent_sides(blank_a: Sequence[bool], blank_b: Sequence[bool]) -> list[str | None]:
    """Per pair, "A" or "B" when only that side's reply is blank, "both" when both are, None when both answered:
    :func:`combined_values`' ``silent``."""
    return ["both" if a and b else "A" if a else "B" if b else None for a, b in zip(blank_a, blank_b, strict=True)]
