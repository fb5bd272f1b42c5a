"""ADEM (Lowe et al. 2017) on MiniLM sentence vectors, trained on human scores.

    score(c, r, r̂) = (c^T M r̂ + r^T N r̂ - α) / β

c, r, r̂ are the context, reference and model-response vectors: all-MiniLM-L6-v2 sentence embeddings
(the stand-in METHODS.md allows for the paper's VHRED encoder) projected by PCA to k dimensions, k
chosen on validation data (the paper does the same with its VHRED vectors). M and N start at the
identity in the paper, with α, β "initializing the predictions in [1, 5]" (``initial_model`` builds
that starting point; it is the baseline the fit must beat). Loss: (length-binned weighted) mean squared
error + γ(||M||² + ||N||²). The score is linear in (M, N) and the loss convex, so we solve it exactly as
ridge regression on the features vec(c r̂^T), vec(r r̂^T) instead of running SGD (on this shared CPU the
exact solve is ~100x cheaper); α is the fitted intercept and β = 1 (absorbed in M, N). k and γ are
chosen on a validation split that holds out whole *contexts*.

Choices written down:
- **context text**: the last turns, newest first, added while the total stays within 64 words (at least
  the last turn), joined oldest first - MiniLM reads 128 word pieces, so the whole of a long context
  would be truncated at its *end*, which is the part that matters.
- **references**: several references are averaged (mean of their unit vectors); without any
  reference the r^T N r̂ term is 0, so on reference-free data ADEM is c^T M r̂ alone (the same model
  serves both; rows with and without references are mixed in training).
- **length-binned subsampling** (Lowe et al. §4: "divide the training examples into bins based on
  the number of words in a response and the score of that response; then over-sample from bins across
  the same score to ensure ADEM does not use response length to predict the score"): responses fall in
  4 length bins (training quartiles of word count) x integer score bins; within each score bin every
  non-empty length bin gets the same total weight. We apply this as deterministic sample weights, the
  expectation of over-sampling, instead of duplicating rows.
- **targets**: one overall-quality style dimension per file (``overall``/``Overall``, else
  ``coherence``, ``relevance``, ``context_coherence``, ``engagement``), rescaled linearly from the
  file's rating scale to 1-5 (FED's Overall is 0-4; the others are 1-5 already). At most
  ``--max-per-dataset`` rows (whole contexts, seeded) are taken from each file so the two 10k-row sets
  (dstc7, humod) do not drown the others.
- **leave-one-dataset-out**: ``train adem --lodo`` also trains ``adem-lodo-<dataset>`` for every
  training file without that file; ``ADEM.held_out_for(dataset)`` returns the model that never saw
  ``dataset`` (the full model when it never saw it either). Meta-evaluation must use it.
"""
from __future__ import annotations

import argparse
import functools
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from core.data import Example
from core.metrics import Metric, MetricResult, Progress, Signature, get_metric, register, tick

DEFAULT_CKPT = "adem"
LODO_PREFIX = "adem-lodo-"
SEED = 13
CONTEXT_WORDS = 64
DIMENSION_PREFERENCE = ("overall", "coherence", "relevance", "context_coherence", "engagement")
KNOWN_SCALES = {("fed-turn", "overall"): (0.0, 4.0)}
PCA_DIMS = (4, 8, 16, 24)
GAMMAS = (1e-3, 1e-2, 1e-1, 1.0, 10.0)
LENGTH_BINS = 4


def context_text(context: Sequence[str], max_words: int = CONTEXT_WORDS) -> str:
    """The newest turns that fit in ``max_words`` words (at least the last one), oldest first."""
    turns = [t for t in context if t.strip()]
    keep: list[str] = []
    words = 0
    for t in reversed(turns):
        n = len(t.split())
        if keep and words + n > max_words:
            break
        keep.append(t)
        words += n
    return " ".join(reversed(keep))


def pick_dimension(examples: Sequence[Example], wanted: str | None = None) -> str:
    dims = {d for ex in examples for d in ex.scores}
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


# ------------------------------------------------------------------------------------------------
# vectors


def encode_texts(texts: Sequence[str], progress: Progress | None = None, desc: str = "adem: MiniLM") -> dict[str, np.ndarray]:
    """text -> normalized MiniLM vector (rounded to float16 precision), each distinct text encoded once:
    memoized in-process and in an on-disk cache (``$DIALEVAL_CACHE/adem-vectors-<encoder>.npz``; vectors
    only, keyed by text hash)."""
    from core.encoders import encode
    disk = _disk_cache()
    need = [t for t in dict.fromkeys(texts) if t not in _MEMO]
    for t in need:
        h = _text_key(t)
        if h in disk:
            _MEMO[t] = disk[h]
    need = [t for t in need if t not in _MEMO]
    if need:
        # rounded through float16 as stored on disk, so a cached and a fresh vector are identical
        for t, v in zip(need, encode(need, progress=progress, desc=desc).astype(np.float16).astype(np.float32)):
            _MEMO[t] = v
            disk[_text_key(t)] = v
        _save_disk_cache(disk)
    return {t: _MEMO[t] for t in dict.fromkeys(texts)}


_MEMO: dict[str, np.ndarray] = {}


def _text_key(t: str) -> str:
    return hashlib.sha1(t.encode("utf-8")).hexdigest()[:16]


def _disk_path() -> Path:
    from core.encoders import encoder_id
    from core.retrieval import cache_dir
    return cache_dir() / f"adem-vectors-{encoder_id()}.npz"


@functools.lru_cache(maxsize=1)
def _disk_cache() -> dict[str, np.ndarray]:
    path = _disk_path()
    if not path.exists():
        return {}
    try:
        z = np.load(path)
        return dict(zip(z["keys"].tolist(), z["vectors"].astype(np.float32)))
    except (OSError, ValueError, KeyError):
        return {}


def _save_disk_cache(disk: dict[str, np.ndarray]) -> None:
    if len(disk) > 200000:  # keep the cache bounded
        return
    import os
    path = _disk_path()
    tmp = path.with_suffix(".tmp.npz")
    np.savez(tmp, keys=np.array(list(disk)), vectors=np.stack(list(disk.values())).astype(np.float16))
    os.replace(tmp, path)


def example_vectors(examples: Sequence[Example], progress: Progress | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(C, R_ref, R_hat, has_ref) as float32 arrays (n x 384; R_ref rows are 0 where no reference)."""
    ctx = [context_text(ex.context) for ex in examples]
    refs = [[r for r in ex.references if r.strip()] for ex in examples]
    vec = encode_texts(ctx + [ex.response for ex in examples] + [r for rs in refs for r in rs], progress)
    d = next(iter(vec.values())).shape[0] if vec else 384
    C = np.stack([vec[c] for c in ctx]) if examples else np.zeros((0, d), np.float32)
    H = np.stack([vec[ex.response] for ex in examples]) if examples else np.zeros((0, d), np.float32)
    R = np.zeros_like(C)
    has = np.zeros(len(examples), dtype=bool)
    for i, rs in enumerate(refs):
        if rs:
            R[i] = np.mean([vec[r] for r in rs], axis=0)
            has[i] = True
    return C, R, H, has


# ------------------------------------------------------------------------------------------------
# the model


class AdemModel:
    """PCA (mean, components k x d) + M, N (k x k) + α, β; ``predict`` works in numpy."""

    def __init__(self, mean: np.ndarray, components: np.ndarray, M: np.ndarray, N: np.ndarray,
                 alpha: float, beta: float):
        self.mean, self.components, self.M, self.N = mean, components, M, N
        self.alpha, self.beta = float(alpha), float(beta)

    def project(self, X: np.ndarray) -> np.ndarray:
        return (X - self.mean) @ self.components.T

    def predict(self, C: np.ndarray, R: np.ndarray, H: np.ndarray, has_ref: np.ndarray) -> np.ndarray:
        c, r, h = self.project(C), self.project(R), self.project(H)
        raw = np.einsum("ij,jk,ik->i", c, self.M, h) + has_ref * np.einsum("ij,jk,ik->i", r, self.N, h)
        return (raw - self.alpha) / self.beta

    def tensors(self) -> dict[str, Any]:
        import torch
        return {"pca_mean": torch.from_numpy(self.mean.astype(np.float32)),
                "pca_components": torch.from_numpy(self.components.astype(np.float32)),
                "M": torch.from_numpy(self.M.astype(np.float32)), "N": torch.from_numpy(self.N.astype(np.float32)),
                "alpha_beta": torch.tensor([self.alpha, self.beta], dtype=torch.float32)}

    @classmethod
    def from_tensors(cls, t: dict[str, Any]) -> "AdemModel":
        ab = t["alpha_beta"].double().numpy()
        return cls(t["pca_mean"].double().numpy(), t["pca_components"].double().numpy(),
                   t["M"].double().numpy(), t["N"].double().numpy(), ab[0], ab[1])


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


class _RidgeSolver:
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
    return _RidgeSolver(C, R, H, has, y, w, k, pca).model(gamma)


# ------------------------------------------------------------------------------------------------
# metric


@register("adem")
class ADEM(Metric):
    description = "ADEM (Lowe 2017): (c^T M r̂ + r^T N r̂ - α)/β on PCA-reduced MiniLM vectors, trained on human scores (1-5)"

    def __init__(self, checkpoint: str = DEFAULT_CKPT):
        self.checkpoint = checkpoint

    @functools.cached_property
    def _loaded(self) -> tuple[AdemModel, dict]:
        from core.checkpoints import load
        tensors, manifest = load(self.checkpoint)
        return AdemModel.from_tensors(tensors), manifest

    @property
    def manifest(self) -> dict:
        return self._loaded[1]

    def signature(self) -> Signature:
        from core.checkpoints import short_hash
        return Signature("adem", f"minilm-pca|{self.checkpoint}", short_hash(self.checkpoint))

    def trained_on(self) -> list[str]:
        return list(self.manifest.get("datasets", []))

    def held_out_for(self, dataset: str) -> "ADEM":
        """An ADEM that never saw ``dataset`` during training (leave-one-dataset-out)."""
        if dataset not in self.trained_on():
            return self
        from core.checkpoints import paths
        name = LODO_PREFIX + dataset
        if not paths(name)[0].exists():
            raise KeyError(f"no leave-one-out ADEM for {dataset!r} (checkpoint {name} missing); "
                           f"train with `python -m core train adem --data ... --lodo`")
        return get_metric("adem", checkpoint=name)  # type: ignore[return-value]

    def compute(self, examples: Sequence[Example], progress: Progress | None = None) -> MetricResult:
        model, _ = self._loaded
        rows = [i for i, ex in enumerate(examples) if ex.context and ex.response.strip()]
        scores = np.full(len(examples), np.nan)
        details: list[dict] = [{"reason": "no context or empty response"} for _ in examples]
        if rows:
            sub = [examples[i] for i in rows]
            C, R, H, has = example_vectors(sub, progress)
            pred = model.predict(C, R, H, has)
            for j, i in enumerate(rows):
                scores[i] = pred[j]
                details[i] = {"prediction": float(pred[j]), "uses_reference": bool(has[j])}
        tick(progress, len(examples), len(examples), "adem")
        return MetricResult(self.name, scores, self.signature(), details,
                            {"scale": "1-5 (human scale the model was trained on)",
                             "trained_on": self.trained_on()})


# ------------------------------------------------------------------------------------------------
# training: python -m core train adem --data FILE... [--lodo]


def _group_key(ex: Example) -> str:
    return hashlib.sha1(("\x1e".join(ex.context)).encode("utf-8")).hexdigest()


def load_training_sets(files: Sequence[str], dimension: str | None, max_per_dataset: int, seed: int, log) -> list[dict]:
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


def train_model(data: dict, seed: int, log, dims=PCA_DIMS, gammas=GAMMAS) -> tuple[AdemModel, dict]:
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
        solver = _RidgeSolver(C[tr], R[tr], H[tr], has[tr], y[tr], w_tr, k, pca)
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


def train_main(argv: list[str] | None = None) -> int:
    """``python -m core train adem --data FILE... [--lodo]``."""
    from scipy.stats import pearsonr, spearmanr

    from core.checkpoints import save
    from core.encoders import encoder_id
    p = argparse.ArgumentParser(prog="python -m core train adem",
                                description="Train ADEM on human-rated files (any format core.data loads).")
    p.add_argument("--data", nargs="+", required=True, help="rated files (JSONL, DSTC10 JSON, column JSON, CSV)")
    p.add_argument("--dimension", default=None, help="score dimension (default: the file's overall-quality one)")
    p.add_argument("--max-per-dataset", type=int, default=2000, help="rows per file, whole contexts (0 = all)")
    p.add_argument("--lodo", action="store_true", help="also train one leave-one-dataset-out model per file")
    p.add_argument("--name", default=DEFAULT_CKPT)
    p.add_argument("--out-dir", default=None)
    p.add_argument("--seed", type=int, default=SEED)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    import torch
    torch.set_num_threads(args.threads)

    def log(msg: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)

    t0 = time.time()
    sets = load_training_sets(args.data, args.dimension, args.max_per_dataset, args.seed, log)
    names = [s["name"] for s in sets]
    if len(set(names)) != len(names):
        raise ValueError(f"two files share a dataset name: {names}")
    all_ex = [ex for s in sets for ex in s["examples"]]
    log(f"encoding {len(all_ex)} rows with MiniLM")
    last = [0.0]

    def prog(done, total, desc):
        if time.time() - last[0] > 30:
            last[0] = time.time()
            log(f"  {desc}: {done}/{total}")
    for s in sets:
        s["C"], s["R"], s["H"], s["has"] = example_vectors(s["examples"], prog)
        s["lens"] = np.array([len(ex.response.split()) for ex in s["examples"]], dtype=float)
    log(f"encoded in {time.time() - t0:.0f}s")
    common = {"encoder": encoder_id(), "seed": args.seed, "context_words": CONTEXT_WORDS,
              "max_per_dataset": args.max_per_dataset, "grid": {"pca_dims": list(PCA_DIMS), "gammas": list(GAMMAS)}}
    data_desc = [{"dataset": s["name"], "file": Path(s["file"]).name, "dimension": s["dimension"],
                  "scale": list(s["scale"]), "rows": len(s["examples"])} for s in sets]
    cmd = "python -m core train adem " + " ".join(argv or [])
    lodo: dict[str, Any] = {}
    if args.lodo:
        for s in sets:
            others = [n for n in names if n != s["name"]]
            if not others:
                continue
            log(f"leave-one-out: without {s['name']}")
            model, info = train_model(_stack(sets, others), args.seed, log)
            pred = model.predict(s["C"], s["R"], s["H"], s["has"])
            sp, pe = spearmanr(pred, s["y"])[0], pearsonr(pred, s["y"])[0]
            lodo[s["name"]] = {"spearman": float(sp), "pearson": float(pe), "n": len(pred)}
            log(f"  held-out {s['name']}: Spearman {sp:.3f} Pearson {pe:.3f} (n={len(pred)})")
            save(LODO_PREFIX + s["name"], model.tensors(), {
                "what": f"ADEM trained on every set except {s['name']} (leave-one-dataset-out)",
                "command": cmd, "data": [d for d in data_desc if d["dataset"] != s["name"]],
                "datasets": others, "held_out_dataset": s["name"],
                "heldout_quality": lodo[s["name"]], "training": info, "config": common}, args.out_dir)
    log("full model on all sets")
    model, info = train_model(_stack(sets, names), args.seed, log)
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
