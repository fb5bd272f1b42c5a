"""Training of ADEM (``dialeval train adem --data FILE... [--lodo]``; the metric is ``core/metrics/adem.py``).

The score is linear in (M, N) and the loss convex, so ADEM is solved exactly as ridge regression on the
features vec(c r̂^T), vec(r r̂^T) (:class:`RidgeSolver`), with the PCA dimension and γ chosen on a validation
split that holds out 20 % of the contexts; length-binned subsampling (Lowe et al. §4) is applied as sample
weights (:func:`length_bin_weights`). ``--lodo`` also trains one leave-one-dataset-out model per file.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from core.data import Example
from core.metrics.adem import CONTEXT_WORDS, DEFAULT_CKPT, LODO_PREFIX, AdemModel, example_vectors
from core.settings import SEED
from core.training import log, log_progress, register_trainer, set_threads

DIMENSION_PREFERENCE = ("overall", "coherence", "relevance", "context_coherence", "engagement")
KNOWN_SCALES = {("fed-turn", "overall"): (0.0, 4.0)}
PCA_DIMS = (4, 8, 16, 24)
GAMMAS = (1e-3, 1e-2, 1e-1, 1.0, 10.0)
LENGTH_BINS = 4


def pick_dimension(examples: Sequence[Example], wanted: str | None = None) -> str:
    dims = {d for ex in examples for d in ex.scores}
    if not dims:
        where = examples[0].source if examples else "the data"
        raise ValueError(f"{where} has no human scores: ADEM learns from rated rows (a 'scores' object, or "
                         "scores.DIMENSION columns in a CSV)")
    if wanted:
        if wanted not in dims:
            raise ValueError(f"dimension {wanted!r} not found; the file has {sorted(dims)}")
        return wanted
    lower = {d.lower(): d for d in dims}
    for d in DIMENSION_PREFERENCE:
        if d in lower:
            return lower[d]
    raise ValueError(f"no overall-quality dimension among {sorted(dims)}; pass --dimension")


def rescale(values: np.ndarray, dataset: str, dim: str) -> tuple[np.ndarray, tuple[float, float]]:
    """Linear map of a file's rating scale onto 1-5 (known scales, else 1-5 when the values fit in it,
    else the observed range)."""
    lo, hi = KNOWN_SCALES.get((dataset, dim.lower()), (None, None))
    if lo is None:
        vmin, vmax = float(np.nanmin(values)), float(np.nanmax(values))
        lo, hi = (1.0, 5.0) if vmin >= 1.0 and vmax <= 5.0 else (vmin, vmax)
    if hi <= lo:
        raise ValueError(f"{dataset}/{dim}: constant scores cannot be learned from")
    return 1.0 + 4.0 * (values - lo) / (hi - lo), (lo, hi)


def length_bin_weights(lengths: np.ndarray, y: np.ndarray, edges: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Sample weights that equalize the response-length distribution inside every (integer) score bin,
    keeping each score bin's total (Lowe et al. §4, as weights). Returns (weights, length-bin edges)."""
    if edges is None:
        edges = np.unique(np.quantile(lengths, np.linspace(0, 1, LENGTH_BINS + 1)[1:-1]))
    lb = np.searchsorted(edges, lengths, side="right")
    sb = np.clip(np.rint(y), 1, 5).astype(int)
    w = np.zeros(len(y))
    for s in np.unique(sb):
        in_s = sb == s
        bins, counts = np.unique(lb[in_s], return_counts=True)
        share = in_s.sum() / len(bins)
        for b, c in zip(bins, counts):
            w[in_s & (lb == b)] = share / c
    return w * len(w) / w.sum(), edges


def fit_pca(X: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    mean = X.mean(0)
    _, _, vt = np.linalg.svd(X - mean, full_matrices=False)
    return mean, vt[:k]


def _features(c: np.ndarray, r: np.ndarray, h: np.ndarray, has: np.ndarray) -> np.ndarray:
    """Score = c^T M r̂ + r^T N r̂ is linear in (M, N): features vec(c r̂^T) and has_ref * vec(r r̂^T)."""
    n, k = c.shape
    fc = (c[:, :, None] * h[:, None, :]).reshape(n, k * k)
    fr = (r[:, :, None] * h[:, None, :]).reshape(n, k * k) * has[:, None]
    return np.concatenate([fc, fr], axis=1)


def initial_model(C, R, H, has, y, k: int, pca=None) -> AdemModel:
    """The paper's starting point: M = N = I, α and β set so predictions have the human mean and spread."""
    mean, comp = pca if pca is not None else fit_pca(np.concatenate([C, H, R[has]]), k)
    m0 = AdemModel(mean, comp, np.eye(k), np.eye(k), 0.0, 1.0)
    raw0 = m0.predict(C, R, H, has)
    beta = float(np.std(raw0) / max(np.std(y), 1e-6)) or 1.0
    m0.alpha, m0.beta = float(np.mean(raw0) - beta * np.mean(y)), beta
    return m0


class RidgeSolver:
    """Exact minimizer of the weighted MSE + L2 objective for one PCA basis, for many γ at once
    (one eigendecomposition of the weighted Gram matrix)."""

    def __init__(self, C, R, H, has, y, w, k: int, pca=None):
        self.mean, self.comp = pca if pca is not None else fit_pca(np.concatenate([C, H, R[has]]), k)
        self.k = k
        P = lambda X: (X - self.mean) @ self.comp.T  # noqa: E731
        F = _features(P(C), P(R), P(H), has.astype(float))
        w = w / w.sum()
        self.fbar = w @ F
        self.ybar = float(w @ y)
        Fc = F - self.fbar
        G = Fc.T @ (Fc * w[:, None])
        self.evals, self.evecs = np.linalg.eigh(G)
        self.b = self.evecs.T @ (Fc.T @ (w * (y - self.ybar)))
        self.scale = float(np.mean(np.diag(G))) or 1.0  # γ is relative to the mean feature variance

    def model(self, gamma: float) -> AdemModel:
        theta = self.evecs @ (self.b / (self.evals + gamma * self.scale))
        kk = self.k * self.k
        alpha = float(self.fbar @ theta - self.ybar)  # pred = F θ - α
        return AdemModel(self.mean, self.comp, theta[:kk].reshape(self.k, self.k),
                         theta[kk:].reshape(self.k, self.k), alpha, 1.0)


def fit_adem(C, R, H, has, y, w, k: int, gamma: float, pca=None) -> AdemModel:
    """Fit M, N, α by weighted MSE + γ(||M||² + ||N||²) (Lowe et al. 2017, §4; γ relative to the mean
    feature variance). The objective is convex and the score linear in (M, N), so it is solved exactly
    (ridge regression on the features vec(c r̂^T), vec(r r̂^T)) instead of by SGD from M = N = I; the
    optimum is the one SGD would approach. β, the paper's scale constant, is absorbed into M, N (β = 1)."""
    return RidgeSolver(C, R, H, has, y, w, k, pca).model(gamma)


def _group_key(ex: Example) -> str:
    return hashlib.sha1(("\x1e".join(ex.context)).encode("utf-8")).hexdigest()


def load_training_sets(files: Sequence[str], dimension: str | None, max_per_dataset: int, seed: int) -> list[dict]:
    from core.data import load_file
    sets = []
    for f in files:
        exs = load_file(f)
        name = exs[0].dataset if exs and exs[0].dataset else Path(f).stem
        dim = pick_dimension(exs, dimension)
        exs = [ex for ex in exs if dim in ex.scores and np.isfinite(ex.scores[dim]) and ex.context and ex.response.strip()]
        groups = sorted({_group_key(ex) for ex in exs})
        rng = np.random.default_rng(seed)
        rng.shuffle(groups)
        if max_per_dataset and len(exs) > max_per_dataset:
            keep, count, by = set(), 0, {}
            for ex in exs:
                by.setdefault(_group_key(ex), []).append(ex)
            for g in groups:
                if count >= max_per_dataset:
                    break
                keep.add(g)
                count += len(by[g])
            exs = [ex for ex in exs if _group_key(ex) in keep]
        y, scale = rescale(np.array([ex.scores[dim] for ex in exs]), name, dim)
        log(f"{name}: {len(exs)} rows, dimension {dim!r} scale {scale} -> 1-5")
        sets.append({"name": name, "file": str(f), "dimension": dim, "scale": scale, "examples": exs, "y": y})
    return sets


def _split_groups(keys: list[str], frac: float, seed: int) -> np.ndarray:
    """Boolean validation mask holding out ``frac`` of distinct keys (contexts)."""
    uniq = sorted(set(keys))
    rng = np.random.default_rng(seed)
    val = set(rng.choice(len(uniq), size=max(1, int(round(frac * len(uniq)))), replace=False).tolist())
    vk = {uniq[i] for i in val}
    return np.array([k in vk for k in keys])


def train_model(data: dict, seed: int, dims=PCA_DIMS, gammas=GAMMAS) -> tuple[AdemModel, dict]:
    """Choose (PCA dim, γ) on a validation split holding out 20% of contexts, then refit on everything."""
    C, R, H, has, y, lens, keys = (data[k] for k in ("C", "R", "H", "has", "y", "lens", "keys"))
    is_val = _split_groups(keys, 0.2, seed)
    tr = ~is_val
    w_tr, edges = length_bin_weights(lens[tr], y[tr])
    val = (C[is_val], R[is_val], H[is_val], has[is_val])
    mse = lambda m: float(np.mean((m.predict(*val) - y[is_val]) ** 2))  # noqa: E731
    base = float(np.mean((np.average(y[tr], weights=w_tr) - y[is_val]) ** 2))
    results = []
    for k in dims:
        pca = fit_pca(np.concatenate([C[tr], H[tr], R[tr & has]]), k)
        init = mse(initial_model(C[tr], R[tr], H[tr], has[tr], y[tr], k, pca))
        solver = RidgeSolver(C[tr], R[tr], H[tr], has[tr], y[tr], w_tr, k, pca)
        for g in gammas:
            results.append({"pca_dim": k, "gamma": g, "val_mse": mse(solver.model(g)), "initial_val_mse": init})
    best = min(results, key=lambda r: r["val_mse"])
    log(f"  selected pca_dim={best['pca_dim']} gamma={best['gamma']} val MSE {best['val_mse']:.4f} "
        f"(M=N=I start {best['initial_val_mse']:.4f}, predict-the-mean {base:.4f})")
    w_all, edges = length_bin_weights(lens, y)
    model = fit_adem(C, R, H, has, y, w_all, best["pca_dim"], best["gamma"])
    return model, {"selection": best, "grid": results, "val_mse_predict_mean": base,
                   "n_train": int(tr.sum()), "n_val": int(is_val.sum()), "length_bin_edges": edges.tolist()}


def _stack(sets: list[dict], which: Sequence[str]) -> dict:
    parts = [s for s in sets if s["name"] in which]
    cat = lambda k: np.concatenate([s[k] for s in parts])  # noqa: E731
    return {"C": cat("C"), "R": cat("R"), "H": cat("H"), "has": cat("has"), "y": cat("y"), "lens": cat("lens"),
            "keys": [s["name"] + ":" + _group_key(ex) for s in parts for ex in s["examples"]]}


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", nargs="+", required=True, help="rated files (JSONL, DSTC10 JSON, column JSON, CSV)")
    p.add_argument("--dimension", default=None, help="score dimension (default: the file's overall-quality one)")
    p.add_argument("--max-per-dataset", type=int, default=2000, help="rows per file, whole contexts (0 = all)")
    p.add_argument("--lodo", action="store_true", help="also train one leave-one-dataset-out model per file")
    p.add_argument("--name", default=DEFAULT_CKPT)
    p.add_argument("--out-dir", default=None)
    p.add_argument("--seed", type=int, default=SEED)
    p.add_argument("--threads", type=int, default=1)


@register_trainer("adem", "ADEM on rated data (--data FILE...)", _arguments)
def train(args: argparse.Namespace) -> int:
    from scipy.stats import pearsonr, spearmanr

    from core.models.checkpoints import save
    from core.models.encoders import encoder_id
    if args.lodo and len(args.data) < 2:
        raise ValueError("--lodo trains one model per file left out: give two or more --data files")
    set_threads(args.threads)
    t0 = time.time()
    sets = load_training_sets(args.data, args.dimension, args.max_per_dataset, args.seed)
    names = [s["name"] for s in sets]
    if len(set(names)) != len(names):
        raise ValueError(f"two files share a dataset name: {names}")
    all_ex = [ex for s in sets for ex in s["examples"]]
    log(f"encoding {len(all_ex)} rows with MiniLM")
    for s in sets:
        s["C"], s["R"], s["H"], s["has"] = example_vectors(s["examples"], log_progress())
        s["lens"] = np.array([len(ex.response.split()) for ex in s["examples"]], dtype=float)
    log(f"encoded in {time.time() - t0:.0f}s")
    common = {"encoder": encoder_id(), "seed": args.seed, "context_words": CONTEXT_WORDS,
              "max_per_dataset": args.max_per_dataset, "grid": {"pca_dims": list(PCA_DIMS), "gammas": list(GAMMAS)}}
    data_desc = [{"dataset": s["name"], "file": Path(s["file"]).name, "dimension": s["dimension"],
                  "scale": list(s["scale"]), "rows": len(s["examples"])} for s in sets]
    cmd = args.command_line
    lodo: dict[str, Any] = {}
    # the shipped metric finds adem-lodo-<dataset>; another --name keeps its own (never replacing those)
    lodo_prefix = LODO_PREFIX if args.name == DEFAULT_CKPT else f"{args.name}-lodo-"
    if args.lodo:
        for s in sets:
            others = [n for n in names if n != s["name"]]
            if not others:
                continue
            log(f"leave-one-out: without {s['name']}")
            model, info = train_model(_stack(sets, others), args.seed)
            pred = model.predict(s["C"], s["R"], s["H"], s["has"])
            sp, pe = spearmanr(pred, s["y"])[0], pearsonr(pred, s["y"])[0]
            lodo[s["name"]] = {"spearman": float(sp), "pearson": float(pe), "n": len(pred)}
            log(f"  held-out {s['name']}: Spearman {sp:.3f} Pearson {pe:.3f} (n={len(pred)})")
            save(lodo_prefix + s["name"], model.tensors(), {
                "what": f"ADEM trained on every set except {s['name']} (leave-one-dataset-out)",
                "command": cmd, "data": [d for d in data_desc if d["dataset"] != s["name"]],
                "datasets": others, "held_out_dataset": s["name"],
                "heldout_quality": lodo[s["name"]], "training": info, "config": common}, args.out_dir)
    log("full model on all sets")
    model, info = train_model(_stack(sets, names), args.seed)
    save(args.name, model.tensors(), {
        "what": "ADEM (Lowe et al. 2017) on PCA-reduced all-MiniLM-L6-v2 vectors, predictions on a 1-5 scale",
        "command": cmd, "data": data_desc, "datasets": names,
        "quality": {"validation": {"val_mse": info["selection"]["val_mse"],
                                   "val_mse_predict_mean": info["val_mse_predict_mean"],
                                   "note": "context-held-out 20% split, used for model selection"},
                    "leave_one_dataset_out": lodo or None},
        "training": info, "config": common}, args.out_dir)
    print(json.dumps({"selection": info["selection"], "leave_one_dataset_out": lodo}, indent=1))
    log(f"done in {time.time() - t0:.0f}s")
    return 0
