"""MME-CRS end to end on the human-rated sets in ../shared/data/eval (read in place, never copied).

    python scripts/train_mme.py cache    # score every eval set with the 9 sub-metrics (+ SmolLM2 LL baselines) -> .cache/mme/eval_scores.json
    python scripts/train_mme.py fit      # CRS weights from the DSTC10 dev sets -> checkpoints/crs_weights.json
    python scripts/train_mme.py report   # leave-one-dataset-out + ablation tables (markdown) -> .cache/mme/report.md
    python scripts/train_mme.py all

The sub-metric checkpoints come first: ``dialeval train mme fm|rm|tcm|em|sm``. Scores go through the engine. Sets larger than
--max-rows (default 300, the shipped run) are subsampled to that many random rows (a prefix of one seed-13 permutation)
because the 2 CPU cores were shared by ~6 engineers while this was built.
The cache is keyed by the sub-metric checkpoint hashes, so a retrained checkpoint invalidates it.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from core.metrics import crs, mme
from core.progress import progress_bar
from core.settings import shared_data_dir, use_float32_encodings, writable_checkpoint_dir
from core.training.crs import crs_weights_file, human_by_dimension, sub_metric_scores

ROOT = Path(__file__).resolve().parent.parent
EVAL_DIR = shared_data_dir() / "eval"
CACHE = ROOT / ".cache" / "mme" / "eval_scores.json"
EXTRA_SETS = ("engagement-dd", "holistic-dd")
ANCHOR = {"usr-topical": .115, "usr-persona": .082, "dailydialog-zhao": .143, "persona-zhao": .449,
          "convai2-grade": .337, "dailydialog-grade": .092, "empathetic-grade": .255, "fed-turn": .026,
          "humod": .126, "dstc7": .247, "dailydialog-gupta": .281}
SUBSAMPLED = ("usr-topical", "usr-persona", "dailydialog-zhao", "persona-zhao", "convai2-grade", "dailydialog-grade",
              "empathetic-grade", "fed-turn", "humod", "dstc7", "dailydialog-gupta", "engagement-dd")


def load_cache() -> dict:
    if not CACHE.exists():
        raise SystemExit(f"{CACHE} missing: run `python scripts/train_mme.py cache` first")
    c = json.loads(CACHE.read_text())
    want = {mme.CKPT[s]: mme.checkpoint_hash(s) for s in mme.SUBMETRICS}
    if c["checkpoints"] != want:
        raise SystemExit("the cache was computed with other checkpoints: rerun `cache`")
    return c


def _load_set(name: str, max_rows: int):
    from core.data import load_jsonl
    exs = load_jsonl(EVAL_DIR / f"{name}.jsonl")
    idx = list(range(len(exs)))
    if len(exs) > max_rows:
        # a prefix of one fixed permutation: a smaller cap is a subset of a larger one
        idx = sorted(int(i) for i in np.random.default_rng(13).permutation(len(exs))[:max_rows])
        exs = [exs[i] for i in idx]
    return exs, idx


def cmd_cache(a) -> None:
    import torch
    torch.set_num_threads(a.threads)
    from core.models.device import active_device, device_key
    out = {"checkpoints": {mme.CKPT[s]: mme.checkpoint_hash(s) for s in mme.SUBMETRICS}, "max_rows": a.max_rows,
           "seed": 13, "computed_on": device_key(active_device()), "sets": {}}
    if CACHE.exists() and not a.fresh:
        old = json.loads(CACHE.read_text())
        if all(old.get(k) == out[k] for k in ("checkpoints", "max_rows", "computed_on")):
            out = old
    for name in mme.DEV_SETS + (EXTRA_SETS if a.extra else ()):
        if name in out["sets"]:
            continue
        exs, idx = _load_set(name, a.max_rows)
        t0 = time.time()
        subs = sub_metric_scores(exs, progress_bar(prefix=f"{name}: "))
        lm = lm_baselines(exs)
        dt = time.time() - t0
        print(f"{name}: {len(exs)} rows in {dt:.0f}s ({len(exs) / max(dt, 1e-9):.1f} ex/s)", flush=True)
        out["sets"][name] = {"rows": idx, "ids": [e.id for e in exs],
                             "subs": {k: [None if not np.isfinite(v) else round(float(v), 6) for v in subs[k]]
                                      for k in mme.SUBMETRICS},
                             "lm": {k: [None if not np.isfinite(v) else round(float(v), 6) for v in vals]
                                    for k, vals in lm.items()},
                             "human": {d: [None if not np.isfinite(v) else float(v) for v in h]
                                       for d, h in human_by_dimension(exs).items()}}
        CACHE.parent.mkdir(parents=True, exist_ok=True)
        CACHE.write_text(json.dumps(out))


def lm_baselines(exs) -> dict[str, np.ndarray]:
    """Plain SmolLM2 log-likelihoods of each reply, the baselines MME-CRS must beat: given the context in
    the chat format (mean and total over the reply's tokens; ``PMIScorer``) and read alone (total, = -SM-NLL)."""
    models = mme.scorer()  # the process's loaded SmolLM2 scorers, shared with the sub-metrics
    ok = [i for i, e in enumerate(exs) if (e.response or "").strip()]
    out = {k: np.full(len(exs), np.nan) for k in ("ll_context_mean", "ll_context_sum", "ll_alone_sum")}
    pm = models.load("pm").raw([exs[i].context for i in ok], [exs[i].response for i in ok])
    alone = models.load("sm")[1].raw(["" for _ in ok], [exs[i].response for i in ok])
    out["ll_context_mean"][ok], out["ll_context_sum"][ok], out["ll_alone_sum"][ok] = pm[:, 2], pm[:, 3], -alone[:, 0]
    return out


def _arrays(entry: dict) -> tuple[dict, dict]:
    f = lambda xs: np.array([np.nan if v is None else v for v in xs], dtype=np.float64)  # noqa: E731
    return {k: f(v) for k, v in entry["subs"].items()}, {k: f(v) for k, v in entry["human"].items()}


def fit_from_cache(cache: dict) -> dict:
    """The crs_weights.json content from the cached sub-metric scores of the DSTC10 dev sets."""
    table = {}
    for ds in mme.DEV_SETS:
        subs, human = _arrays(cache["sets"][ds])
        table[ds] = {"subs": subs, "human": human}
    return crs_weights_file(
        table, {ds: len(cache["sets"][ds]["ids"]) for ds in mme.DEV_SETS}, cache["checkpoints"],
        "dialeval train mme ref && python scripts/train_mme.py cache && python scripts/train_mme.py fit",
        {"sets": "DSTC10 Track 5 development sets in ../shared/data/eval",
         "subsampled": {s: cache["max_rows"] for s in SUBSAMPLED}, "subsample_seed": 13,
         "excluded": "engagement-dd (EM's training data), holistic-dd (not a DSTC10 dev set)"})


def cmd_fit(a) -> None:
    res = fit_from_cache(load_cache())
    out = writable_checkpoint_dir() / mme.WEIGHTS_NAME  # the checkout's checkpoints/, never an installed copy
    out.write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {out}")
    for canon, w in res["weights"].items():
        print(f"  {canon:<11} " + "  ".join(f"{k}={v:.3f}" for k, v in w.items()))


def lodo(cache: dict, corr: dict, drop=(), sets=mme.DEV_SETS, power: int = crs.POWER, also_exclude=()) -> dict:
    """{(set, dim): {sub: rho, 'avg': rho, 'crs': rho, 'how': ...}} with CRS weights fitted without the set
    (and without ``also_exclude``: the inner loop of the nested choice of the exponent)."""
    subs_all = [k for k in mme.SUBMETRICS if k not in drop]
    out = {}
    for ds in sets:
        subs, human = _arrays(cache["sets"][ds])
        w_all = crs.fit_weights(corr, subs_all, exclude=(ds, *also_exclude), drop=drop, power=power)
        for dim, h in human.items():
            canon, w, how = crs.resolve(dim, w_all, subs_all)
            row = {k: crs.spearman(subs[k], h) for k in subs_all}
            row["avg"] = crs.spearman(crs.combine({k: subs[k] for k in subs_all}, {k: 1.0 for k in subs_all}), h)
            row["crs"] = crs.spearman(crs.combine(subs, w), h)
            for k, v in cache["sets"][ds].get("lm", {}).items():
                row[k] = crs.spearman(np.array([np.nan if x is None else x for x in v], dtype=np.float64), h)
            row["how"] = how
            row["canon"] = canon
            out[(ds, dim)] = row
    return out


def cmd_report(a) -> None:
    cache = load_cache()
    fitted = fit_from_cache(cache)
    corr = fitted["correlations"]
    res = lodo(cache, corr, sets=[s for s in mme.DEV_SETS + EXTRA_SETS if s in cache["sets"]])
    lines = []
    cols = list(mme.SUBMETRICS) + ["avg", "crs"]
    hdr = "| set | dimension (canonical) | n | " + " | ".join(f"{c}" for c in cols) + " |"
    lines += ["### Leave-one-dataset-out Spearman per set and dimension", "",
              "(MME-CRS weights fitted on the other DSTC10 dev sets; `avg` = MME-Avg, `crs` = MME-CRS)", "",
              hdr, "|" + "---|" * (3 + len(cols))]
    for (ds, dim), r in res.items():
        n = len(cache["sets"][ds]["ids"])
        note = "" if r["how"] == "fitted" else " [fallback: overall]"
        lines.append(f"| {ds} | {dim} ({r['canon']}){note} | {n} | " + " | ".join(f"{r[c]:.3f}" for c in cols) + " |")
    dev = [(k, r) for k, r in res.items() if k[0] in mme.DEV_SETS]
    avg = {c: float(np.nanmean([r[c] for _, r in dev])) for c in cols}
    lines.append(f"| **average, {len(dev)} set-dimension pairs of the 11 dev sets** | | | "
                 + " | ".join(f"**{avg[c]:.3f}**" for c in cols) + " |")
    lines += ["", "### Per set (mean over its dimensions) next to the Deep AM-FM anchor", "",
              "| set | Deep AM-FM | MME-Avg | MME-CRS (LODO) | best sub-metric |", "|---|---|---|---|---|"]
    per_set = []
    for ds in mme.DEV_SETS:
        rs = [r for (s, _), r in res.items() if s == ds]
        a_, c_ = np.mean([r["avg"] for r in rs]), np.mean([r["crs"] for r in rs])
        best = max(mme.SUBMETRICS, key=lambda k: np.nanmean([r[k] for r in rs]))
        per_set.append((a_, c_))
        lines.append(f"| {ds} | {ANCHOR[ds]:.3f} | {a_:.3f} | {c_:.3f} | {best} {np.nanmean([r[best] for r in rs]):.3f} |")
    lines.append(f"| **mean of the 11 sets** | **{np.mean(list(ANCHOR.values())):.3f}** | "
                 f"**{np.mean([p[0] for p in per_set]):.3f}** | **{np.mean([p[1] for p in per_set]):.3f}** | |")
    lm_keys = [k for k in ("ll_context_mean", "ll_context_sum", "ll_alone_sum") if k in dev[0][1]]
    if lm_keys:
        lines += ["", "### Plain SmolLM2 log-likelihood baselines (no fitting, so no held-out set needed)", "",
                  "| baseline | mean Spearman, dev set-dimension pairs |", "|---|---|"]
        for k in lm_keys:
            lines.append(f"| {k} | {np.nanmean([r[k] for _, r in dev]):.3f} |")
    lines += ["", "### The CRS exponent d, by leave-one-dataset-out", "",
              "Fixed d: the LODO average over the dev set-dimension pairs. Nested: for each held-out set, d is chosen "
              "by LODO on the other 10 sets alone, then applied to the held-out set (an estimate that does not "
              "use the held-out set to choose d).", "",
              "| d | LODO MME-CRS avg |", "|---|---|"]
    fixed = {}
    for p in crs.POWERS_TRIED:
        fixed[p] = float(np.nanmean([r["crs"] for r in lodo(cache, corr, power=p).values()]))
        lines.append(f"| {p}{' (shipped)' if p == crs.POWER else ''} | {fixed[p]:.4f} |")
    nested, chosen = [], []
    for ds in mme.DEV_SETS:
        inner = [d for d in mme.DEV_SETS if d != ds]
        best = max(crs.POWERS_TRIED, key=lambda p: np.nanmean(
            [r["crs"] for r in lodo(cache, corr, sets=inner, power=p, also_exclude=(ds,)).values()]))
        chosen.append(best)
        nested += [r["crs"] for r in lodo(cache, corr, sets=[ds], power=best).values()]
    lines.append(f"| nested choice ({', '.join(f'{d}={p}' for d, p in zip(mme.DEV_SETS, chosen))}) | "
                 f"{np.nanmean(nested):.4f} |")
    lines += ["", "### Ablation: LODO MME-CRS average over the dev set-dimension pairs with a group removed", "",
              "| removed | MME-CRS avg | change |", "|---|---|---|", f"| (none) | {avg['crs']:.3f} | |"]
    for g, drop in mme.GROUPS.items():
        r2 = lodo(cache, corr, drop=drop)
        v = float(np.nanmean([r["crs"] for r in r2.values()]))
        lines.append(f"| {g} | {v:.3f} | {v - avg['crs']:+.3f} |")
    lines += ["", "### Shipped CRS weights (all 11 dev sets)", "",
              "| dimension | " + " | ".join(mme.SUBMETRICS) + " |", "|---|" + "---|" * len(mme.SUBMETRICS)]
    for canon, w in fitted["weights"].items():
        lines.append(f"| {canon} | " + " | ".join(f"{w[k]:.3f}" for k in mme.SUBMETRICS) + " |")
    text = "\n".join(lines) + "\n"
    (CACHE.parent / "report.md").write_text(text)
    print(text)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("step", choices=["cache", "fit", "report", "all"])
    p.add_argument("--max-rows", type=int, default=300, help="rows kept of sets larger than this (random rows, seed 13)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--extra", action="store_true", help="also score engagement-dd and holistic-dd")
    p.add_argument("--fresh", action="store_true", help="recompute the whole cache")
    a = p.parse_args()
    use_float32_encodings("scripts/train_mme.py")  # checkpoints and the CRS weights are fitted on float32's
    for step in (["cache", "fit", "report"] if a.step == "all" else [a.step]):
        {"cache": cmd_cache, "fit": cmd_fit, "report": cmd_report}[step](a)


if __name__ == "__main__":
    main()
