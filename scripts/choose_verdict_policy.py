"""Choose the verdict policy by how often the one-line verdict names the system people prefer, each development
set held out in turn, and write it with every signal's system-level record.

    .venv/bin/python scripts/choose_verdict_policy.py            # measure, print, write both files
    .venv/bin/python scripts/choose_verdict_policy.py --no-write # measure and print only

For every development set with several systems answering shared contexts (``core.system_eval``): each metric's,
the judge's and people's call on every system pair. Then, for each set held out, the policy
(``core.verdict_policy.VerdictPolicy``: which metrics decide, the judge's role, whether metrics decide alone)
that scores best on the other sets, right - ``WRONG_COST`` x wrong over the pairs people separate, is applied
to the held-out set. ``WRONG_COST`` is a product choice fixed before measuring: naming the system people did
not prefer costs four verdicts that name the right one (a user acts on a wrong verdict; "no winner" sends them
to look). The shipped policy is the one chosen on all sets; the records are every signal's over all sets.

Writes ``checkpoints/verdict-policy.json`` (read by ``core.verdict_policy.shipped_policy``) and
``benchmarks/SYSTEM_LEVEL.md``. The calls are kept in the cache folder (``system-level-calls.json``) so a
re-run with ``--from-calls`` re-chooses without scoring.
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, replace
from pathlib import Path

from core.engine import DEFAULT_METRICS
from core.meta_eval import group_datasets
from core.progress import progress_bar
from core.settings import cache_dir, shared_data_dir
from core.system_eval import (COMBINED_LEAN_P, GENERIC_BAR, SignalCall, SystemPair, bar_candidates, best_policy, candidate_policies,
                              combinations_of, combined_name, format_system_rows, leave_one_set_out, policy_score,
                              record, summarize, system_level, with_verdict)
from core.verdict_policy import JUDGE, POLICY_FILE, WRONG_COST, ShippedPolicy, SignalRecord, VerdictPolicy, combined_values

ROOT = Path(__file__).resolve().parent.parent
SETS = ("usr-topical", "usr-persona", "dailydialog-zhao", "dailydialog-gupta", "convai2-grade", "dailydialog-grade",
        "empathetic-grade", "fed-turn")
GENERIC_REPLIES = ("ok.", "i don't know.", "yes.", "I'm not sure.", "Okay.", "That's nice.", "Good.", "Right.",
                   "Sounds good.", "Fine.", "No idea.", "Sure.")
BEFORE = VerdictPolicy(tuple(DEFAULT_METRICS), "first", True)  # the rule before system-level evidence


def load_calls(path: Path) -> list[SystemPair]:
    out = []
    for d in json.loads(path.read_text()):
        calls = {k: SignalCall(**c) for k, c in d.pop("calls").items()}
        out.append(SystemPair(**d, calls=calls))
    return out


def generic_check(folder: Path) -> dict[str, float]:
    """Per signal, the share of rule-made pairs where it prefers a real reply to a generic one: every
    DailyDialog-Gupta context (four human references), its first reference against a generic reply (drawn with
    seed 13), the other three references as references (the metrics), P(A) > 0.5 (the judge). Per set of two or
    more signals (``core.system_eval.combined_name``), the share where their combined value
    (``core.verdict_policy.combined_values`` over these pairs) is above 0."""
    import numpy as np

    from core.data import Example, load_jsonl
    from core.engine import judge_pairs, score_examples
    rng = np.random.default_rng(13)
    by_context = {}
    for e in load_jsonl(folder / "dailydialog-gupta.jsonl"):
        by_context.setdefault(tuple(e.context), e)
    real, generic = [], []
    for i, e in enumerate(by_context.values()):
        reply = GENERIC_REPLIES[int(rng.integers(len(GENERIC_REPLIES)))]
        real.append(Example(id=f"r{i}", system="real", context=e.context, response=e.references[0],
                            references=e.references[1:]))
        generic.append(Example(id=f"g{i}", system="generic", context=e.context, response=reply,
                               references=e.references[1:]))
    table = score_examples(real + generic, list(DEFAULT_METRICS))
    n = len(real)
    differences = {m: table.column(m)[:n] - table.column(m)[n:] for m in DEFAULT_METRICS}  # all higher is better
    judged = judge_pairs([e.context for e in real], [e.response for e in real], [e.response for e in generic])
    differences[JUDGE] = np.asarray(judged.p_a, dtype=np.float64) - 0.5
    out = {s: float(np.mean(d > 0)) for s, d in differences.items()}
    for combo in combinations_of(list(differences), 2):
        out[combined_name(combo)] = float(np.mean(combined_values({s: differences[s] for s in combo}) > 0))
    return out


def share(k: int, n: int) -> str:
    return f"{k} of {n} ({100 * k / n:.0f} %)" if n else "-"


CONTEXT_BINS = ((5, 19), (20, 39), (40, None))  # shared contexts a system pair has: the held-out table's rows


def by_contexts(lodo: list[dict]) -> list[tuple[str, list[str]]]:
    """The held-out verdicts ("right" / "wrong" / "none") in :data:`CONTEXT_BINS`, each with its label."""
    calls = [(n, got) for r in lodo for n, got in r["by_pair"]]
    return [(f"{lo} to {hi}" if hi else f"{lo} or more",
             [got for n, got in calls if lo <= n and (hi is None or n <= hi)]) for lo, hi in CONTEXT_BINS]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", default=None, help="folder of the rated sets (default: shared/data/eval)")
    p.add_argument("--from-calls", action="store_true", help="re-use the calls kept by the last run")
    p.add_argument("--no-write", action="store_true")
    p.add_argument("--sets", default=",".join(SETS), help=f"comma-separated set names (default: {','.join(SETS)})")
    p.add_argument("--lean-p", default=",".join(f"{x:g}" for x in COMBINED_LEAN_P),
                   help="the p-values below which a candidate's combined test may lean, comma-separated (default: "
                        f"{','.join(f'{x:g}' for x in COMBINED_LEAN_P)}); others are for exploring, with --no-write")
    args = p.parse_args(argv)
    lean_p = tuple(float(x) for x in args.lean_p.split(",") if x.strip())
    if lean_p != COMBINED_LEAN_P and not args.no_write:
        p.error(f"--lean-p {args.lean_p} explores: add --no-write (the shipped policy is chosen over "
                f"{','.join(f'{x:g}' for x in COMBINED_LEAN_P)}, core.system_eval.COMBINED_LEAN_P)")
    calls_file = cache_dir() / "system-level-calls.json"
    generic_file = cache_dir() / "system-level-generic.json"
    folder = Path(args.data) if args.data else shared_data_dir() / "eval"
    if args.from_calls and generic_file.exists():
        generic = json.loads(generic_file.read_text())
    else:
        generic = generic_check(folder)
        generic_file.parent.mkdir(parents=True, exist_ok=True)
        generic_file.write_text(json.dumps(generic))
    if args.from_calls:
        pairs = load_calls(calls_file)
    else:
        data = group_datasets([folder / f"{s}.jsonl" for s in args.sets.split(",") if s.strip()])
        pairs = system_level(data, list(DEFAULT_METRICS), True, progress=progress_bar(False),
                             log=lambda s: print(s, file=sys.stderr), combine=True)
        calls_file.parent.mkdir(parents=True, exist_ok=True)
        calls_file.write_text(json.dumps([asdict(q) for q in pairs]))
    sane, combos, candidates = bar_candidates(generic, list(DEFAULT_METRICS), GENERIC_BAR, lean_p)
    lodo = leave_one_set_out(pairs, candidates, WRONG_COST)
    chosen = best_policy(pairs, candidates, WRONG_COST)
    if chosen.combine:  # what the combined test sums when some of its signals are not computed: best record first
        # a metric that passes the bar alone too (its combined test: its standardized differences, tested)
        allowed = [c for c in combos if c != chosen.combine] + [(m,) for m in sane]

        def utility(c: tuple[str, ...]) -> float:
            return record(pairs, combined_name(c)).score
        chosen = replace(chosen, combine_allowed=tuple(sorted(allowed, key=lambda c: (-utility(c), len(c)))))
    before_lodo = [(d, *policy_score([q for q in pairs if q.dataset == d], BEFORE)) for d in
                   dict.fromkeys(q.dataset for q in pairs)]
    sep = sum(r["separated"] for r in lodo)
    right, wrong = sum(r["right"] for r in lodo), sum(r["wrong"] for r in lodo)
    b_right, b_wrong = sum(r[1] for r in before_lodo), sum(r[2] for r in before_lodo)
    unseen = [r for r in lodo if r["held_out"].startswith("dailydialog")]
    u_sep, u_right, u_wrong = (sum(r[k] for r in unseen) for k in ("separated", "right", "wrong"))
    records = {s: record(pairs, s) for s in [*DEFAULT_METRICS, JUDGE]}
    # the verdict's own record is the held-out one: each set judged by the policy chosen without it
    records["verdict"] = SignalRecord("verdict", sep, right, wrong, right, len(lodo))
    if chosen.combine:  # the chosen combined test's own record, every set (chosen on them: not a held-out one)
        records["combined"] = SignalRecord(**{**asdict(record(pairs, combined_name(chosen.combine))),
                                              "signal": "combined"})
        records.update({combined_name(c): record(pairs, combined_name(c)) for c in chosen.combine_allowed})
    shipped_rows = summarize(with_verdict(pairs, chosen))
    lines = [
        "# The verdict at the system level: does it name the system people prefer?",
        "",
        "Made by `.venv/bin/python scripts/choose_verdict_policy.py` (`core/system_eval.py`; the per-set table "
        "is also `dialeval meta-eval --level system FILE...`). For every pair of systems that answered at least "
        "5 shared contexts in each development set (reference copies left out), people's side comes from their "
        "mean rating on the set's overall dimension by the verdict's paired test (contexts resampled, 95 %, a "
        "human tie margin of a quarter of the scale): *people separate* the pair when it names a winner. Each "
        "signal is compared as the verdict compares it, with people's ratings hidden; MME-CRS's weights are "
        "held out (refit without the set). The judge is as shipped: it trained on the other contexts of "
        "usr-topical, usr-persona, convai2-grade and empathetic-grade and never on the DailyDialog sets. "
        "fed-turn has one system per context: no pair.",
        "",
        "## The one-line verdict, leave one set out",
        "",
        f"Each set held out in turn, the policy is chosen on the others (score: right - {WRONG_COST:g} x wrong, "
        f"{len(candidates)} candidate policies over the signals that pass the generic-reply bar below: "
        f"{', '.join(([JUDGE] if generic[JUDGE] >= GENERIC_BAR else []) + sane)}, and the combined tests of "
        f"{len(combos)} sets of signals that pass it together), then applied to the held-out set. A combined test "
        "(`core.verdict_policy.combined_values`) sums its signals' per-pair differences A - B, each divided by its "
        "standard deviation over the pair's contexts (the judge's P(A) - 0.5), and tests the sum as the verdict "
        "tests a metric; a policy with one tests it first (abstaining when one of its signals that may decide "
        "alone names the other system), follows its other rules when it names no winner, and may last name the "
        "side the sum favours as 'probably better' when its randomization p is below "
        + ", ".join(f"{x:g}" for x in lean_p) + ".",
        "",
        "| held-out set | policy chosen on the others | people separate | names people's winner | names the "
        "other | names none |",
        "|---|---|---|---|---|---|",
    ]
    for r in lodo:
        lines.append(f"| {r['held_out']} | {r['policy']} | {r['separated']} | {share(r['right'], r['separated'])} | "
                     f"{share(r['wrong'], r['separated'])} | {r['none']} |")
    no_lean = candidate_policies(sane, lean=False, judge=generic[JUDGE] >= GENERIC_BAR)
    own_tests = candidate_policies(sane, judge=generic[JUDGE] >= GENERIC_BAR)
    alone = leave_one_set_out(pairs, own_tests, WRONG_COST)
    no_combined_lean = leave_one_set_out(pairs, [c for c in candidates if not c.combine_lean], WRONG_COST)
    n_right, n_wrong = sum(r["right"] for r in no_combined_lean), sum(r["wrong"] for r in no_combined_lean)
    a_right, a_wrong = sum(r["right"] for r in alone), sum(r["wrong"] for r in alone)
    combined_rows = [record(pairs, combined_name(c)) for c in combos]
    unconstrained = leave_one_set_out(pairs, candidate_policies(list(DEFAULT_METRICS), lean=False), WRONG_COST)
    c_right, c_wrong = sum(r["right"] for r in unconstrained), sum(r["wrong"] for r in unconstrained)
    plain = leave_one_set_out(pairs, no_lean, WRONG_COST)
    p_right, p_wrong = sum(r["right"] for r in plain), sum(r["wrong"] for r in plain)
    lines += [
        f"| **all** | | **{sep}** | **{share(right, sep)}** | **{share(wrong, sep)}** | {sep - right - wrong} |",
        f"| DailyDialog sets (the judge never saw them) | | {u_sep} | {share(u_right, u_sep)} | "
        f"{share(u_wrong, u_sep)} | {u_sep - u_right - u_wrong} |",
        "",
        "The same held-out verdicts by how many contexts the two systems share (most DailyDialog-Zhao pairs "
        "share 5 to 40: too few for any test to separate many of them):",
        "",
        "| shared contexts | people separate | names people's winner | names the other | names none |",
        "|---|---|---|---|---|",
        *[f"| {label} | {len(got)} | {share(got.count('right'), len(got))} | {share(got.count('wrong'), len(got))} "
          f"| {got.count('none')} |" for label, got in by_contexts(lodo)],
        "",
        f"Without the combined test's lean (its significant calls only, "
        f"{sum(not c.combine_lean for c in candidates)} candidates): names people's winner in "
        f"{share(n_right, sep)}, the other system in {share(n_wrong, sep)}.",
        "",
        f"Without combined tests (the {len(own_tests)} candidates of the "
        f"signals' own tests, each set held out the same way): names people's winner in {share(a_right, sep)}, "
        f"the other system in {share(a_wrong, sep)}.",
        "",
        f"Without combined tests or the lean rule ({len(no_lean)} candidates): names people's "
        f"winner in {share(p_right, sep)}, the other system in {share(p_wrong, sep)}.",
        "",
        "Each combined test allowed (it passes the generic-reply bar), alone on every set: the pairs people "
        "separate where it names their winner, the other system, or neither.",
        "",
        "| combined test | names people's winner | names the other | names none |",
        "|---|---|---|---|",
        *[f"| {r.signal[len('combined:'):]} | {share(r.right, r.pairs)} | {r.wrong} | {r.pairs - r.right - r.wrong} |"
          for r in combined_rows],
        "",
        f"Without the generic-reply bar (every default metric may decide; no lean): names people's winner in "
        f"{share(c_right, sep)}, the other system in {share(c_wrong, sep)}; but υBLEU prefers a generic reply "
        "to a real one in most rule-made pairs (below), and the sets chose it as a deciding metric.",
        "",
        "Rule-made check (every DailyDialog-Gupta context: a human reference against a generic reply, the other "
        "three references as references): the share of pairs where each signal prefers the real reply. A signal "
        f"below {GENERIC_BAR:.2f} (the judge's own bar on obvious pairs) may not decide, veto or lean: "
        + ", ".join(f"{k} {v:.2f}" for k, v in generic.items() if not k.startswith("combined:")) + ". A set of "
        "signals is combined only when their combined value prefers the real reply in as many: "
        + ", ".join(f"{k[len('combined:'):]} {v:.2f}" for k, v in generic.items() if k.startswith("combined:")) + ".",
        "",
        f"Before this policy (the judge first, then any default metric after Holm over all of them; "
        f"`{BEFORE.name}`), on the same pairs: names people's winner in {share(b_right, sep)}, the other system "
        f"in {share(b_wrong, sep)}.",
        "",
        f"**Shipped** (chosen on all sets): `{chosen.name}`.",
        "",
        "## Every signal, all development sets (`dialeval meta-eval --level system`)",
        "",
        "'verdict' is the one-line verdict under the shipped policy (chosen on these sets: see the table above for "
        "held-out numbers).",
        "",
        "Kendall tau-a is (concordant - discordant) / the system pairs people rated, a pair either side leaves "
        "unordered counting as neither (people's mean difference within `core.system_eval.PEOPLE_TIE_TOL` is a tie: "
        "usr-topical's Nucleus (p = 0.3) and Nucleus (p = 0.7), rated exactly alike, differ by 2.6e-17); the \"all\" "
        "row's tau is the mean of the sets' taus (each set weighs alike, one-pair sets included).",
        "",
        format_system_rows(shipped_rows, "markdown"),
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if not args.no_write:
        (ROOT / "benchmarks" / "SYSTEM_LEVEL.md").write_text(text)
        shipped = ShippedPolicy(chosen, records, "scripts/choose_verdict_policy.py on " + ", ".join(
            dict.fromkeys(q.dataset for q in pairs)) + f" (leave one set out: the verdict names people's winner in "
            f"{right} of {sep} separated system pairs, the other in {wrong})")
        (ROOT / "checkpoints" / POLICY_FILE).write_text(json.dumps(shipped.to_dict(), indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
