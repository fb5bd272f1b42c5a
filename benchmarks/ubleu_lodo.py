"""How υBLEU and RUBER+υBLEU were configured: leave-one-dataset-out over the 7 rated sets with references.

    python benchmarks/ubleu_lodo.py [--out benchmarks/UBLEU_LODO.md]      # ~10-15 min on 2 cores

For every set with references (USR topical/persona, DailyDialog Zhao/Gupta/GRADE, ConvAI2-GRADE,
Empathetic-GRADE; rows whose response copies a reference are dropped, as in RESULTS.md) a configuration's value
is the mean Spearman ρ over the set's human dimensions (each with >= 10 rated rows). A grid of configurations is
scored on all sets; for each held-out set the configuration with the best mean over the *other six* is chosen
and its value on the held-out set is reported (leave-one-dataset-out, LODO). The baseline never chooses anything:
BLEU-2 with the set's own references for υBLEU, the shipped hybrid ``ruber`` for RUBER+υBLEU.

υBLEU grid (80): k in {5, 15, 30, 50} retrieved references x weights {NN-rater signed [-1, 1] (the paper),
NN-rater clipped at 0, NN-rater as a probability (w + 1) / 2, all 1 (unrated), similarity max(0, cos(R1, R2))}
x parrot return {on (weighted like the others), off} x the brevity penalty's reference length {closest, weighted
mean} (``core.metrics.bleu``). Retrieved references that copy the reply are always left out, as υBLEU does.
RUBER+υBLEU grid (160): υBLEU in {(15, NN-rater signed, parrot), (50, NN-rater probability, parrot),
(30, similarity, no parrot), (50, similarity, no parrot)} x both brevity rules x υBLEU's range [0, c] for c in
{100, 50, 30, 20, 10} x RUBER's four poolings {min, max, geometric, arithmetic mean} with its s_U (fixed min-max
from its manifest).

Generic replies: for every DailyDialog-Gupta context (four human references), its first reference against a
generic reply ("ok.", "i don't know.", ...; drawn with seed 13) with the other three as the references: the
share where υBLEU scores the human reply higher, per configuration the table reports.
"""
from __future__ import annotations

import argparse
import datetime
import itertools
import sys
from pathlib import Path

import numpy as np
from scipy import stats

from core.data import load_jsonl
from core.engine import is_reference_copy, score_examples
from core.metrics.bleu import BleuScorer
from core.metrics.ruber import COMBINES, combine
from core.metrics.ubleu import UBleu, is_own_copy, similarity_weights
from core.models.checkpoints import load_manifest
from core.models.retrieval import get_retriever
from core.settings import shared_eval_file

SETS = ("usr-topical", "usr-persona", "dailydialog-zhao", "dailydialog-gupta", "convai2-grade", "dailydialog-grade",
        "empathetic-grade")
KS = (5, 15, 30, 50)
WEIGHTS = ("nn-signed", "nn-pos", "nn-prob", "one", "similarity")
PARROT = ("on", "off")
BREVITY = ("closest", "weighted")  # the brevity penalty's reference length (core.metrics.bleu)
HYBRID_UBLEU = tuple((*c, b) for c in ((15, "nn-signed", "on"), (50, "nn-prob", "on"), (30, "similarity", "off"),
                                      (50, "similarity", "off")) for b in ("closest", "weighted"))
CAPS = (100.0, 50.0, 30.0, 20.0, 10.0)
MEANS = COMBINES  # RUBER's four pooling heuristics (Tao et al. §3.3): min, max, gmean, amean


def set_value(rows, scores: np.ndarray) -> float:
    """Mean Spearman ρ over the set's dimensions that have at least 10 rated rows."""
    dims = sorted({d for r in rows for d in r.scores})
    vals = []
    for d in dims:
        m = [i for i, r in enumerate(rows) if r.scores.get(d) is not None]
        if len(m) >= 10:
            vals.append(stats.spearmanr(scores[m], [rows[i].scores[d] for i in m]).statistic)
    return float(np.nanmean(vals))


def lodo(table: dict, baseline: dict) -> tuple[dict, object]:
    """{held-out set: (value, configuration chosen on the other sets)} and the configuration all sets choose."""
    def pick(excluded):
        return max(table, key=lambda c: np.mean([table[c][s] for s in SETS if s != excluded]))
    return {s: (table[pick(s)][s], pick(s)) for s in SETS}, pick(None)


GENERIC_REPLIES = ("ok.", "i don't know.", "yes.", "I'm not sure.", "Okay.", "That's nice.", "Good.", "Right.",
                   "Sounds good.", "Fine.", "No idea.", "Sure.")


def weight_source(ub: UBleu):
    """A rater for υBLEU configurations: (name, u1s, r1s, u2s, r2s) -> weights, as the grid computes them."""
    nn_rater = UBleu(k=ub.k, parrot=True, rater="nn-rater")
    stored = get_retriever(None, ub.method).stored_vector

    def rate(name, u1s, r1s, u2s, r2s):
        if name == "similarity":
            return similarity_weights(r1s, r2s, stored=stored)
        if name == "one":
            return np.ones(len(r2s))
        nn = nn_rater.rate(u1s, r1s, u2s, r2s)
        return {"nn-signed": nn, "nn-pos": np.maximum(nn, 0), "nn-prob": (nn + 1) / 2}[name]
    return rate


def generic_shares(ub: UBleu, rate, configs) -> dict:
    """{configuration: (share of DailyDialog-Gupta contexts where υBLEU prefers a human reply to a generic one, n)}."""
    rng = np.random.default_rng(13)
    by_ctx = {}
    for e in load_jsonl(shared_eval_file("dailydialog-gupta")):
        if len(e.references) >= 2:
            by_ctx.setdefault(tuple(e.context), e)
    cases = [(e, e.references[0], GENERIC_REPLIES[int(rng.integers(len(GENERIC_REPLIES)))]) for e in by_ctx.values()]
    probes = [type(e)(id=e.id, context=e.context, response=human, references=e.references[1:], system="probe")
              for e, human, _ in cases]
    ext = ub.extended_references(probes)
    out = {}
    for k, weights, parrot, brevity in dict.fromkeys(configs):
        bleu = BleuScorer(2, "exp", brevity=brevity)
        wins = []
        for p, (_, human, gen) in zip(probes, cases):
            refs = ext[(p.utterance, tuple(p.references))]
            extra = [r for r in refs if r["kind"] == "retrieved"][:k] + [r for r in refs if r["kind"] == "parrot" and parrot == "on"]
            w = rate(weights, [p.utterance] * len(extra), [p.references[0]] * len(extra),
                     [r["source_utterance"] for r in extra], [r["text"] for r in extra]) if extra else []
            texts = list(p.references) + [r["text"] for r in extra]
            ws = [1.0] * len(p.references) + [float(x) for x in w]

            def score(reply):
                kept = [(t, x) for j, (t, x) in enumerate(zip(texts, ws))
                        if j < len(p.references) or not is_own_copy(reply, t)]
                return bleu.sentence(reply, [t for t, _ in kept], [x for _, x in kept])
            wins.append(score(human) > score(gen))
        out[(k, weights, parrot, brevity)] = (float(np.mean(wins)), len(wins))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "UBLEU_LODO.md"))
    a = ap.parse_args()
    rows = {s: [e for e in load_jsonl(shared_eval_file(s)) if e.references and not is_reference_copy(e)] for s in SETS}
    keys = list(dict.fromkeys((e.utterance, tuple(e.references)) for s in SETS for e in rows[s]))
    print(f"{sum(map(len, rows.values()))} rows, {len(keys)} distinct (U1, references)", file=sys.stderr)
    # every ingredient once: 50 retrieved references + the parrot, each with NN-rater and similarity weights
    ub = UBleu(k=max(KS), parrot=True, rated=False)
    ex_by_key = {}
    for s in SETS:
        for e in rows[s]:
            ex_by_key.setdefault((e.utterance, tuple(e.references)), e)
    ext = ub.extended_references([ex_by_key[k] for k in keys])
    u1s, r1s, u2s, r2s, slots = [], [], [], [], []
    for key in keys:
        for j, r in enumerate(ext[key]):
            if r["kind"] != "original":
                u1s.append(key[0])
                r1s.append(key[1][0])
                u2s.append(r["source_utterance"])
                r2s.append(r["text"])
                slots.append((key, j))
    print(f"rating {len(slots)} extended references", file=sys.stderr)
    nn = UBleu(k=max(KS), parrot=True, rater="nn-rater").rate(u1s, r1s, u2s, r2s)
    sim = similarity_weights(r1s, r2s, stored=get_retriever(None, ub.method).stored_vector)  # as UBleu.rate
    weight_of = {"nn-signed": nn, "nn-pos": np.maximum(nn, 0), "nn-prob": (nn + 1) / 2, "one": np.ones(len(nn)),
                 "similarity": sim}
    slot_index = {sl: n for n, sl in enumerate(slots)}
    bleu = BleuScorer(2, "exp")
    scorers = {b: BleuScorer(2, "exp", brevity=b) for b in BREVITY}

    def sentence(e, texts, ws, brevity):
        """ΔBLEU as υBLEU scores a row: retrieved copies of the reply itself left out (``is_own_copy``)."""
        kept = [(t, w) for j, (t, w) in enumerate(zip(texts, ws)) if j < len(e.references) or not is_own_copy(e.response, t)]
        return scorers[brevity].sentence(e.response, [t for t, _ in kept], [w for _, w in kept])

    def ubleu_scores(k: int, weights: str, parrot: str, brevity: str = "closest") -> dict:
        refs = {}
        for key in keys:
            texts, ws, n_retrieved = [], [], 0
            for j, r in enumerate(ext[key]):
                if r["kind"] == "original":
                    texts.append(r["text"])
                    ws.append(1.0)
                    continue
                if r["kind"] == "retrieved":
                    n_retrieved += 1
                    if n_retrieved > k:
                        continue
                elif parrot == "off":
                    continue
                texts.append(r["text"])
                ws.append(float(weight_of[weights][slot_index[(key, j)]]))
            refs[key] = (texts, ws)
        return {s: np.array([sentence(e, *refs[(e.utterance, tuple(e.references))], brevity) for e in rows[s]])
                for s in SETS}

    base = {s: set_value(rows[s], np.array([bleu.sentence(e.response, e.references) for e in rows[s]])) for s in SETS}
    grid, cache = {}, {}
    for cfg in itertools.product(KS, WEIGHTS, PARROT, BREVITY):
        cache[cfg] = ubleu_scores(*cfg)
        grid[cfg] = {s: set_value(rows[s], cache[cfg][s]) for s in SETS}
        print(cfg, round(np.mean(list(grid[cfg].values())), 3), file=sys.stderr)
    chosen, all_sets = lodo(grid, base)

    generic = generic_shares(ub, weight_source(ub), [all_sets, (*all_sets[:3], "closest"), (*all_sets[:3], "weighted")])

    ruber_parts = {s: score_examples(rows[s], ["ruber", "ruber_unref"]) for s in SETS}
    ruber = {s: set_value(rows[s], ruber_parts[s].column("ruber")) for s in SETS}
    lo, hi = load_manifest("ruber-unref")["normalization"]["ruber_unref"]
    hgrid = {}
    for cfg, cap, how in itertools.product(HYBRID_UBLEU, CAPS, MEANS):
        vals = {}
        for s in SETS:
            u = np.clip(cache[cfg][s] / cap, 0, 1)
            su = np.clip((ruber_parts[s].column("ruber_unref") - lo) / (hi - lo), 0, 1)
            vals[s] = set_value(rows[s], combine(u, su, how))
        hgrid[(*cfg, cap, how)] = vals
    hchosen, hall = lodo(hgrid, ruber)

    paper = grid[(15, "nn-signed", "on", "closest")]
    lines = ["# υBLEU and RUBER+υBLEU chosen by leave-one-dataset-out", "",
             f"Made by `python benchmarks/ubleu_lodo.py` on {datetime.date.today()}. Value per set: mean Spearman ρ "
             "over its human dimensions (reference copies dropped). LODO: the configuration chosen on the other six "
             "sets, measured on the held-out one.", "",
             "| held-out set | rows | BLEU-2 | υBLEU as in the paper (k 15, NN-rater, parrot) | υBLEU LODO | chosen on the other six | RUBER | RUBER+υBLEU LODO | chosen on the other six |",
             "|---|---|---|---|---|---|---|---|---|"]
    for s in SETS:
        lines.append(f"| {s} | {len(rows[s])} | {base[s]:.3f} | {paper[s]:.3f} | {chosen[s][0]:.3f} | {chosen[s][1]} | "
                     f"{ruber[s]:.3f} | {hchosen[s][0]:.3f} | {hchosen[s][1]} |")
    mean = lambda d: np.mean([v[0] if isinstance(v, tuple) else v for v in d.values()])  # noqa: E731
    lines.append(f"| **mean** | | **{mean(base):.3f}** | **{mean(paper):.3f}** | **{mean(chosen):.3f}** | | "
                 f"**{mean(ruber):.3f}** | **{mean(hchosen):.3f}** | |")
    wins = sum(chosen[s][0] > base[s] for s in SETS)
    hwins = sum(hchosen[s][0] > ruber[s] for s in SETS)
    lines += ["", f"υBLEU (LODO) beats BLEU-2 on {wins} of {len(SETS)} held-out sets, mean {mean(chosen) - mean(base):+.3f}; "
              f"chosen on all seven: {all_sets}.",
              f"RUBER+υBLEU (LODO) beats RUBER on {hwins} of {len(SETS)} held-out sets, mean "
              f"{mean(hchosen) - mean(ruber):+.3f}; chosen on all seven: {hall}.", "",
              "Bound, not a result: where LODO loses to the baseline, the best configuration of the whole grid chosen "
              "on the held-out set itself (an oracle that sees the test set):"]
    for s in SETS:
        if chosen[s][0] <= base[s]:
            best = max(grid, key=lambda c: grid[c][s])
            lines.append(f"- υBLEU on {s}: oracle {grid[best][s]:.3f} {best} vs BLEU-2 {base[s]:.3f}")
        if hchosen[s][0] <= ruber[s]:
            best = max(hgrid, key=lambda c: hgrid[c][s])
            lines.append(f"- RUBER+υBLEU on {s}: oracle {hgrid[best][s]:.3f} {best} vs RUBER {ruber[s]:.3f}")
    lines += ["", "Generic replies (DailyDialog-Gupta: a human reference against a generic reply, the other three "
              "references as references; share where υBLEU prefers the human reply):", ""]
    lines += [f"- {cfg}: {share:.2f} of {n}" for cfg, (share, n) in generic.items()]
    Path(a.out).write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
