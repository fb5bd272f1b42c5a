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
  is "probably better" and why; its measured record is the verdict's own.

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

from core import stats
from core.settings import checkpoint_file

POLICY_FILE = "verdict-policy.json"
JUDGE_ROLES = ("first", "agree", "off")
JUDGE = "judge"  # the judge's name among the signals of a record


@dataclass(frozen=True)
class VerdictPolicy:
    """Which signals decide the verdict (module docstring)."""

    deciding_metrics: tuple[str, ...] = ()
    judge: str = "first"
    metrics_alone: bool = True
    lean: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.judge not in JUDGE_ROLES:
            raise ValueError(f"judge role {self.judge!r}: choose one of {', '.join(JUDGE_ROLES)}")

    @property
    def name(self) -> str:
        metrics = "+".join(self.deciding_metrics) or "no metric"
        alone = "alone" if self.metrics_alone else "never alone"
        lean = f"; else the lean of {'+'.join(self.lean)}" if self.lean else ""
        return f"judge {self.judge}; deciding metrics {metrics} ({alone}){lean}"

    def decides(self, signal: str) -> bool:
        """Whether ``signal`` (a metric's name or ``"judge"``) may name the verdict's winner."""
        if signal == JUDGE:
            return self.judge != "off"
        return signal in self.deciding_metrics


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
                               tuple(p.get("lean", ())))
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
    """Which side the verdict names (``side`` "A" / "B" / None) and on what ``basis``: "people", "judge",
    "metrics", "lean" (the policy's lean signals all point to ``side``, none significantly), "conflict" (trusted
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
           metrics: Sequence[tuple], level: float = 0.95, judge_order: str | None = None) -> Decision:
    """The verdict's side under ``policy``: people's winner when their ratings name one; else the judge and the
    deciding metrics as the policy's rules say, else the lean signals (module docstring). ``judge``: the judge's
    winner ("A" / "B" / None) and ``judge_order`` the side its win rate favours; ``metrics``: (name, winner,
    randomization p[, the side its mean difference favours]) for every metric compared."""
    if people in ("A", "B"):
        return Decision(people, "people")
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
