"""MME-CRS (METHODS.md §4): seven sub-metrics and their correlation re-scaled combination.

Registered metrics (all in [0, 1], higher = better on that aspect):
  mme_fm      fluency            MiniLM (top layer fine-tuned) on the response alone
  mme_rm      relevance          MiniLM (top layer fine-tuned) on (context, response), semi-hard negatives
  mme_tcm     topic coherence    keyword graph + 2 GAT layers on MiniLM static word-piece vectors
  mme_em      engagement         ridge on frozen MiniLM features, trained on engagement-dd (1-5 -> [0,1])
  mme_sm_nll  specificity        SmolLM2 total surprisal of the response given the context
  mme_sm_nce  specificity        SmolLM2 mean (log p + entropy) of the response tokens
  mme_sm_ppl  specificity        SmolLM2 perplexity of the response given the context
  mme_avg     plain mean of the seven normalized sub-metrics (MME-Avg)
  mme         CRS-weighted sum for a dimension (option ``dimension``, default "overall"), weights from
              checkpoints/crs_weights.json; ``held_out_for(dataset)`` refits them without that dataset.

Raw SM statistics and EM are mapped to [0, 1] by the empirical CDF of a fixed reference distribution
(held-out chitchat pairs, stored in checkpoints/mme-sm.safetensors), so a score never depends on the
batch it is computed in. Training: ``python -m core train mme fm|rm|tcm|em|sm``; CRS:
``python -m core train crs --data FILE...``. See docs/mme.md.
"""
from __future__ import annotations

import argparse
import functools
import json
import random
import sys
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from core import checkpoints
from core import crs as crs_mod
from core.data import Example
from core.metrics import Metric, MetricResult, Progress, Signature, register, tick

SUBMETRICS = ("fm", "rm", "tcm", "em", "sm_nll", "sm_nce", "sm_ppl")
GROUPS = {"FM": ("fm",), "RM": ("rm",), "TCM": ("tcm",), "EM": ("em",), "SM": ("sm_nll", "sm_nce", "sm_ppl"),
          "RM+TCM": ("rm", "tcm")}
CKPT = {"fm": "mme-fm", "rm": "mme-rm", "tcm": "mme-tcm", "em": "mme-em",
        "sm_nll": "mme-sm", "sm_nce": "mme-sm", "sm_ppl": "mme-sm"}
WEIGHTS_FILE = checkpoints.CHECKPOINT_DIR / "crs_weights.json"
# the DSTC10 Track 5 development sets CRS is fitted on (engagement-dd trains EM, holistic-dd is extra)
DEV_SETS = ("usr-topical", "usr-persona", "dailydialog-zhao", "persona-zhao", "convai2-grade",
            "dailydialog-grade", "empathetic-grade", "fed-turn", "humod", "dstc7", "dailydialog-gupta")
DESCRIPTIONS = {
    "fm": "MME fluency: MiniLM classifier of real vs. perturbed responses",
    "rm": "MME relevance: MiniLM (context, response) classifier with semi-hard negatives",
    "tcm": "MME topic coherence: keyword graph + GAT classifier",
    "em": "MME engagement: regressor on human engagement scores",
    "sm_nll": "MME specificity: SmolLM2 total surprisal of the response (normalized)",
    "sm_nce": "MME specificity: SmolLM2 mean log-prob + entropy of the response tokens (normalized)",
    "sm_ppl": "MME specificity: SmolLM2 perplexity of the response (normalized)",
}


def _m():
    from core.metrics import mme_models
    return mme_models


# ============================================================================ training
def _set_threads(n: int) -> None:
    import torch
    torch.set_num_threads(max(1, n))


def train_fm(n: int = 1500, epochs: int = 1, seed: int = 13, n_eval: int = 300) -> dict:
    """FM: positives = real chitchat responses (half with stop words randomly dropped), negatives =
    shuffled / partly deleted / repeated words. Top MiniLM layer + head, 1 epoch."""
    M = _m()
    M.seed_all(seed)
    train, held = M.chitchat_split()
    rng = random.Random(seed)
    texts, labels = [], []
    for _, r in M.context_pairs(train, n, seed):
        texts += [M.perturb_positive(r, rng), M.perturb_negative(r, rng)]
        labels += [1.0, 0.0]
    model = M.MiniLMClassifier(n_train=1, pair=False, max_len=M.FM_MAX_LEN)
    M.log(f"FM: {len(texts)} training texts")
    M.train_classifier(model, texts, None, labels, epochs=epochs, seed=seed)
    erng = random.Random(seed + 1)
    ev = [r for _, r in M.context_pairs(held, n_eval, seed + 1)]
    pos = model.predict(ev)
    neg = model.predict([M.perturb_negative(r, erng) for r in ev])
    quality = {"heldout_pairs": len(ev), "pairwise_acc_true_vs_perturbed": round(M.accuracy_pairs(pos, neg), 4),
               "mean_p_true": round(float(pos.mean()), 4), "mean_p_perturbed": round(float(neg.mean()), 4)}
    M.log(f"FM held-out: {quality}")
    checkpoints.save("mme-fm", model.trained_state(), {
        "command": f"python -m core train mme fm --n {n} --epochs {epochs} --seed {seed}",
        "data": "chitchat-dataset (MIT), conversations i % 10 != 0; held-out = i % 10 == 0",
        "seed": seed, "heldout_quality": quality,
        "config": {"base": "all-MiniLM-L6-v2", "trained_layers": 1, "max_len": M.FM_MAX_LEN, "pair": False,
                   "n_examples": len(texts), "epochs": epochs, "lr": "1e-4 top layer, 1e-3 head, linear warmup min(50, steps/10) then linear decay", "batch_size": 32}})
    return quality


def train_rm(n: int = 4000, epochs: int = 20, seed: int = 13, n_eval: int = 300) -> dict:
    """RM: (context, response) positives vs. semi-hard negatives (of 10 random responses the one at the
    median MiniLM similarity to the true reply). MLP head on frozen MiniLM sentence embeddings (the CPU
    budget did not allow fine-tuning a cross-encoder layer on enough pairs; see docs/mme.md)."""
    from core.encoders import encode
    M = _m()
    M.seed_all(seed)
    train, held = M.chitchat_split()
    pairs = M.context_pairs(train, n, seed)
    resp = [r for _, r in pairs]
    er = encode(resp)
    ec = encode([M.context_text(c) for c, _ in pairs])
    rng = np.random.default_rng(seed)
    neg = []
    for i in range(len(resp)):
        cand = rng.choice(len(resp) - 1, size=10, replace=False)
        cand = cand + (cand >= i)
        neg.append(int(cand[np.argsort(er[cand] @ er[i])[5]]))
    X_c = np.vstack([ec, ec])
    X_r = np.vstack([er, er[neg]])
    y = np.concatenate([np.ones(len(resp)), np.zeros(len(resp))])
    M.log(f"RM: {len(y)} training pairs")
    net = M.train_pair_head(X_c, X_r, y, epochs=epochs, seed=seed)
    quality = _eval_pair_model(lambda c, r: net.predict(encode(c), encode(r)), held, n_eval, seed)
    M.log(f"RM held-out: {quality}")
    checkpoints.save("mme-rm", net.state_dict(), {
        "command": f"python -m core train mme rm --n {n} --epochs {epochs} --seed {seed}",
        "data": "chitchat-dataset (MIT), conversations i % 10 != 0; held-out = i % 10 == 0",
        "seed": seed, "heldout_quality": quality,
        "config": {"base": "all-MiniLM-L6-v2 sentence embeddings (frozen)", "head": "MLP 1536-256-1",
                   "features": "[e_c, e_r, e_c*e_r, |e_c-e_r|]", "context_turns": M.CTX_TURNS,
                   "n_examples": len(y), "epochs": epochs, "lr": 1e-3, "batch_size": 128,
                   "negatives": "semi-hard: median MiniLM similarity of 10 random responses"}})
    return quality


def _eval_pair_model(predict, held, n_eval: int, seed: int) -> dict:
    M = _m()
    pairs = M.context_pairs(held, n_eval, seed + 1)
    ctx = [M.context_text(c) for c, _ in pairs]
    resp = [r for _, r in pairs]
    semi = M.semi_hard_negatives(resp, seed + 1)
    rnd = np.random.default_rng(seed + 2).permutation(len(resp))
    rnd = np.where(rnd == np.arange(len(resp)), (rnd + 1) % len(resp), rnd)
    pos = predict(ctx, resp)
    ns = predict(ctx, [resp[j] for j in semi])
    nr = predict(ctx, [resp[j] for j in rnd])
    return {"heldout_pairs": len(resp), "pairwise_acc_vs_semi_hard": round(M.accuracy_pairs(pos, ns), 4),
            "pairwise_acc_vs_random": round(M.accuracy_pairs(pos, nr), 4)}


def train_tcm(n: int = 3000, epochs: int = 8, seed: int = 13, n_eval: int = 300) -> dict:
    """TCM: keyword graph + 2 GAT layers; negatives = random other replies (semi-hard mining needs a
    MiniLM pass over every reply, which the shared CPU could not afford; RM uses semi-hard negatives)."""
    import torch
    import torch.nn.functional as F
    M = _m()
    M.seed_all(seed)
    train, held = M.chitchat_split()
    pairs = M.context_pairs(train, n, seed)
    resp = [r for _, r in pairs]
    rng = np.random.default_rng(seed)
    ctx, rs, labels = [], [], []
    for i, (c, r) in enumerate(pairs):
        j = int((i + 1 + rng.integers(len(resp) - 1)) % len(resp))  # a random other reply
        ct = M.context_text(c)
        ctx += [ct, ct]
        rs += [r, resp[j]]
        labels += [1.0, 0.0]
    M.log(f"TCM: building {len(ctx)} graphs")
    graphs = M.build_graphs(ctx, rs)
    y = torch.tensor(labels)
    net = M.TCMNet()
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3, weight_decay=0.01)
    bs = 128
    for ep in range(epochs):
        net.train()
        perm = torch.from_numpy(rng.permutation(len(y)))
        tot = 0.0
        for s in range(0, len(y), bs):
            idx = perm[s:s + bs]
            loss = F.binary_cross_entropy_with_logits(net(*(g[idx] for g in graphs)), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            tot += loss.item() * len(idx)
        M.log(f"TCM epoch {ep} loss {tot / len(y):.4f}")
    quality = _eval_pair_model(lambda c, r: net.predict(c, r), held, n_eval, seed)
    M.log(f"TCM held-out: {quality}")
    checkpoints.save("mme-tcm", net.state_dict(), {
        "command": f"python -m core train mme tcm --n {n} --epochs {epochs} --seed {seed}",
        "data": "chitchat-dataset (MIT), conversations i % 10 != 0; held-out = i % 10 == 0",
        "seed": seed, "heldout_quality": quality,
        "config": {"node_features": "MiniLM static word-piece embeddings (no ConceptNet offline)",
                   "ctx_keywords": M.TCM_CTX_KW, "resp_keywords": M.TCM_RESP_KW, "gat_layers": 2, "heads": 2, "pooled": "mean ctx, mean resp, product, abs diff, max, keyword cosine (mean-max, max)",
                   "hidden": 128, "epochs": epochs, "lr": 1e-3, "batch_size": bs, "n_examples": len(ctx),
                   "negatives": "random other replies"}})
    return quality


def em_features(contexts: Sequence[str], responses: Sequence[str], embed=None) -> np.ndarray:
    """[e_c, e_r, e_c * e_r, cos, log(1 + words)] from frozen MiniLM sentence embeddings."""
    from core.encoders import encode
    embed = embed or (lambda t: encode(list(t)))
    ec = embed(list(contexts))
    er = embed(list(responses))
    lw = np.log1p([len(r.split()) for r in responses])[:, None]
    cos = (ec * er).sum(1, keepdims=True)
    return np.hstack([ec, er, ec * er, cos, lw]).astype(np.float64)


def _shared_eval(name: str) -> Path:
    import os
    base = Path(os.environ.get("DIALEVAL_SHARED_DATA", Path(__file__).resolve().parents[2].parent / "shared" / "data"))
    return base / "eval" / f"{name}.jsonl"


def train_em(data: str | None = None, seed: int = 13) -> dict:
    """EM: ridge regression on engagement-dd (MIT), engagement rescaled (x - 1) / 4; alpha and the
    held-out Spearman from 5-fold cross-validation grouped by context."""
    import torch
    from sklearn.linear_model import Ridge
    from sklearn.model_selection import GroupKFold
    from core.data import load_jsonl
    M = _m()
    path = data or str(_shared_eval("engagement-dd"))
    exs = [e for e in load_jsonl(path) if "engagement" in e.scores]
    X = em_features([M.context_text(e.context) for e in exs], [e.response for e in exs])
    y = np.array([(e.scores["engagement"] - 1.0) / 4.0 for e in exs])
    groups = np.array([hash(tuple(e.context)) % (2 ** 31) for e in exs])
    best = None
    for alpha in (1.0, 3.0, 10.0, 30.0, 100.0):
        pred = np.zeros(len(y))
        for tr, te in GroupKFold(n_splits=5).split(X, y, groups):
            pred[te] = Ridge(alpha=alpha).fit(X[tr], y[tr]).predict(X[te])
        rho = crs_mod.spearman(pred, y)
        M.log(f"EM alpha {alpha}: CV Spearman {rho:.4f}")
        if best is None or rho > best[1]:
            best = (alpha, rho)
    reg = Ridge(alpha=best[0]).fit(X, y)
    quality = {"rows": len(y), "cv_folds": 5, "split": "grouped by context", "alpha": best[0],
               "cv_spearman": round(best[1], 4)}
    checkpoints.save("mme-em", {"coef": torch.tensor(reg.coef_, dtype=torch.float32),
                                "intercept": torch.tensor([reg.intercept_], dtype=torch.float32)}, {
        "command": "python -m core train mme em" + (f" --data {data}" if data else ""),
        "data": "engagement-dd (PredictiveEngagement, Ghazarian 2020, MIT license), engagement 1-5 -> [0,1]",
        "seed": seed, "heldout_quality": quality,
        "config": {"features": "MiniLM sentence embeddings [e_c, e_r, e_c*e_r, cos, log1p(words)]",
                   "model": "ridge", "context_turns": M.CTX_TURNS}})
    return quality


def train_sm(n: int = 200, seed: int = 13, threads: int = 1) -> dict:
    """SM: the reference distribution for normalization -- 101 quantiles of the raw SmolLM2 statistics
    of n held-out chitchat (context, response) pairs, stored as mme-sm.safetensors (no trained weights:
    the LM is used as is)."""
    import torch
    M = _m()
    _, held = M.chitchat_split()
    pairs = M.context_pairs(held, n, seed + 7)
    sc = M.SmolScorer()
    raw = sc.raw(["\n".join(c) for c, _ in pairs], [r for _, r in pairs])
    levels = np.linspace(0, 1, 101)
    q = {k: torch.tensor(np.quantile(raw[:, i], levels), dtype=torch.float64)
         for i, k in enumerate(("nll", "nce", "ppl"))}
    quality = {"reference_pairs": n, "median": {k: round(float(v[50]), 4) for k, v in q.items()}}
    checkpoints.save("mme-sm", q, {
        "command": f"python -m core train mme sm --n {n} --seed {seed}",
        "data": "chitchat-dataset (MIT) held-out conversations (i % 10 == 0)", "seed": seed,
        "heldout_quality": quality,
        "config": {"lm": "SmolLM2-135M-Instruct (GGUF Q4_1, dequantized, bfloat16 inference)",
                   "context_tokens": M.SM_CTX_TOKENS, "response_tokens": M.SM_RESP_TOKENS,
                   "normalization": "empirical CDF over 101 reference quantiles"}})
    return quality


# ============================================================================ inference
class MMEScorer:
    """Loads the sub-metric models lazily (once per process) and scores examples; results are cached
    per (sub-metric, context, response) so mme, mme_avg and the single sub-metrics share the work."""

    def __init__(self):
        self._models: dict[str, Any] = {}
        self._cache: dict[tuple[str, str, str], float] = {}
        self._emb: dict[str, np.ndarray] = {}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """MiniLM sentence embeddings, cached per text (RM and EM share them)."""
        from core.encoders import encode
        new = sorted({t for t in texts if t not in self._emb})
        if new:
            for t, v in zip(new, encode(new)):
                self._emb[t] = v
        return np.stack([self._emb[t] for t in texts]) if texts else np.zeros((0, 384), dtype=np.float32)

    def _load(self, which: str):
        if which in self._models:
            return self._models[which]
        M = _m()
        if which in ("rm", "tcm"):
            tensors, _ = checkpoints.load(f"mme-{which}")
            model = M.PairHead() if which == "rm" else M.TCMNet()
            model.load_state_dict(tensors)
            model.eval()
        elif which == "fm":
            tensors, man = checkpoints.load(CKPT[which])
            cfg = man["config"]
            model = M.MiniLMClassifier(n_train=cfg["trained_layers"], pair=cfg["pair"], max_len=cfg["max_len"])
            model.load_trained(tensors)
            model.eval()
        elif which == "em":
            tensors, _ = checkpoints.load("mme-em")
            model = (tensors["coef"].double().numpy(), float(tensors["intercept"][0]))
        elif which == "sm":
            tensors, _ = checkpoints.load("mme-sm")
            model = ({k: v.numpy() for k, v in tensors.items()}, M.SmolScorer())
        else:
            raise KeyError(which)
        self._models[which] = model
        return model

    def _compute(self, which: str, ctx: list[str], resp: list[str], progress, done0: int, total: int) -> dict[str, np.ndarray]:
        M = _m()
        prog = (lambda d, n, desc: tick(progress, done0 + d, total, desc)) if progress else None
        if which == "fm":
            return {"fm": self._load("fm").predict(resp, progress=prog, desc="MME fluency")}
        if which == "rm":
            model = self._load("rm")
            return {"rm": model.predict(self.embed([M.context_text(c.split("\n")) for c in ctx]), self.embed(resp))}
        if which == "tcm":
            return {"tcm": self._load("tcm").predict([M.context_text(c.split("\n")) for c in ctx], resp)}
        if which == "em":
            coef, b = self._load("em")
            X = em_features([M.context_text(c.split("\n")) for c in ctx], resp, embed=self.embed)
            return {"em": np.clip(X @ coef + b, 0.0, 1.0)}
        quant, sc = self._load("sm")
        raw = sc.raw(["\n".join(c.split("\n")[-M.CTX_TURNS:]) for c in ctx], resp, progress=prog, desc="MME specificity")
        return {"sm_nll": M.ecdf_normalize(raw[:, 0], quant["nll"]),
                "sm_nce": M.ecdf_normalize(raw[:, 1], quant["nce"]),
                "sm_ppl": M.ecdf_normalize(raw[:, 2], quant["ppl"])}

    def score(self, examples: Sequence[Example], subs: Sequence[str] = SUBMETRICS,
              progress: Progress | None = None) -> dict[str, np.ndarray]:
        """sub -> normalized scores in [0, 1] (NaN for an empty response)."""
        keys = [("\n".join(e.context), (e.response or "").strip()) for e in examples]
        out = {s: np.full(len(examples), np.nan) for s in subs}
        families = []
        for s in subs:
            fam = "sm" if s.startswith("sm_") else s
            if fam not in families:
                families.append(fam)
        todo_fam = {}
        for fam in families:
            fsubs = [s for s in SUBMETRICS if (s.startswith("sm_") if fam == "sm" else s == fam)]
            need = sorted({k for k in keys if k[1] and any((s, *k) not in self._cache for s in fsubs)})
            todo_fam[fam] = (fsubs, need)
        total = sum(len(v[1]) for v in todo_fam.values())
        done = 0
        for fam, (fsubs, need) in todo_fam.items():
            if need:
                res = self._compute(fam, [k[0] for k in need], [k[1] for k in need], progress, done, total)
                for s, vals in res.items():
                    for k, v in zip(need, vals):
                        self._cache[(s, *k)] = float(v)
                done += len(need)
                tick(progress, done, total, f"MME {fam}")
        for s in subs:
            out[s] = np.array([self._cache.get((s, *k), np.nan) if k[1] else np.nan for k in keys])
        return out


@functools.lru_cache(maxsize=1)
def scorer() -> MMEScorer:
    return MMEScorer()


def _ckpt_hash(sub: str) -> str:
    return checkpoints.short_hash(CKPT[sub])


class _MMESub(Metric):
    sub: str = ""

    def compute(self, examples, progress=None) -> MetricResult:
        s = scorer().score(examples, [self.sub], progress)[self.sub]
        return MetricResult(self.name, s, self.signature())

    def signature(self) -> Signature:
        return Signature(self.name, variant=self.sub, checkpoint=_ckpt_hash(self.sub))


for _sub in SUBMETRICS:
    register(f"mme_{_sub}")(type(f"MME_{_sub.upper()}", (_MMESub,), {"sub": _sub, "description": DESCRIPTIONS[_sub]}))


def _all_hash() -> str:
    import hashlib
    h = hashlib.sha256("|".join(_ckpt_hash(s) for s in SUBMETRICS).encode()).hexdigest()
    return h[:10]


@register("mme_avg")
class MMEAvg(Metric):
    description = "MME-Avg: plain mean of the seven normalized MME sub-metrics"

    def compute(self, examples, progress=None) -> MetricResult:
        subs = scorer().score(examples, SUBMETRICS, progress)
        scores = crs_mod.combine(subs, {k: 1.0 for k in SUBMETRICS})
        details = [{"sub_scores": {k: _f(subs[k][i]) for k in SUBMETRICS}} for i in range(len(examples))]
        return MetricResult(self.name, scores, self.signature(), details)

    def signature(self) -> Signature:
        return Signature(self.name, variant="avg7", checkpoint=_all_hash())


def _f(x: float) -> float | None:
    return None if not np.isfinite(x) else round(float(x), 4)


@register("mme")
class MMECRS(Metric):
    """CRS-weighted MME score for one dimension (default "overall").

    Options: ``dimension`` (any name; mapped by ``core.crs.canonical_dimension``, unknown -> overall
    weights), ``weights`` (path of a crs_weights.json, default the shipped one), ``exclude`` (datasets whose
    correlations are left out when fitting, for leave-one-dataset-out), ``drop`` (sub-metrics left out)."""

    description = "MME-CRS: sub-metrics weighted by correlation re-scaling for a dimension (dimension=overall)"

    def __init__(self, dimension: str = "overall", weights: str | None = None, exclude: Sequence[str] = (),
                 drop: Sequence[str] = ()):
        self.dimension = dimension
        self.weights_path = Path(weights) if weights else WEIGHTS_FILE
        self.exclude = tuple(exclude)
        self.drop = tuple(drop)
        if not self.weights_path.exists():
            raise checkpoints.CheckpointError(
                f"CRS weights {self.weights_path} not found; fit them with `python -m core train crs --data FILE...`")
        self.file = crs_mod.load_weights_file(self.weights_path)
        self.subs = tuple(k for k in SUBMETRICS if k not in self.drop)
        if self.exclude or self.drop:
            self.weights = crs_mod.fit_weights(self.file["correlations"], self.subs, exclude=self.exclude,
                                               drop=self.drop, power=self.file.get("power", crs_mod.POWER))
        else:
            self.weights = self.file["weights"]

    def held_out_for(self, dataset: str) -> "MMECRS | None":
        """The same metric with CRS weights fitted without ``dataset`` (leave-one-dataset-out), or None when
        the weights never saw ``dataset``. Note: EM was trained on engagement-dd, so engagement-dd is never
        a clean held-out set for EM (it is not among the CRS sets, hence None here)."""
        if dataset not in self.file.get("correlations", {}) or dataset in self.exclude:
            return None
        return MMECRS(self.dimension, str(self.weights_path), self.exclude + (dataset,), self.drop)

    def for_dimension(self, dimension: str) -> "MMECRS":
        return MMECRS(dimension, str(self.weights_path), self.exclude, self.drop)

    def scores_for_dimension(self, result: MetricResult, dimension: str) -> np.ndarray:
        """The scores of ``result`` re-weighted for a human ``dimension`` (meta-evaluation asks for each
        dimension of a set; the sub-metrics are scored once)."""
        canon, w, how = self.weights_for(dimension)
        by_dim = result.extra.get("by_dimension", {})
        if how == "fitted" and canon in by_dim:
            return np.asarray(by_dim[canon], dtype=np.float64)
        subs = {k: np.array([np.nan if d["sub_scores"].get(k) is None else d["sub_scores"][k]
                             for d in result.details], dtype=np.float64) for k in self.subs}
        return np.asarray(crs_mod.combine(subs, w), dtype=np.float64)

    def weights_for(self, dimension: str | None = None) -> tuple[str, dict[str, float], str]:
        return crs_mod.resolve(dimension or self.dimension, self.weights, self.subs)

    def compute(self, examples, progress=None) -> MetricResult:
        subs = scorer().score(examples, self.subs, progress)
        canon, w, how = self.weights_for()
        scores = crs_mod.combine(subs, w)
        wr = {k: round(v, 4) for k, v in w.items()}
        details = [{"dimension": self.dimension, "canonical_dimension": canon, "weights_from": how, "weights": wr,
                    "sub_scores": {k: _f(subs[k][i]) for k in self.subs}} for i in range(len(examples))]
        by_dim = {c: crs_mod.combine(subs, self.weights_for(c)[1]) for c in self.weights}
        return MetricResult(self.name, scores, self.signature(), details,
                            extra={"dimension": self.dimension, "canonical_dimension": canon, "weights_from": how,
                                   "weights": wr, "by_dimension": by_dim})

    def signature(self) -> Signature:
        canon, _, how = self.weights_for()
        var = f"crs-d{self.file.get('power', 2)}-{canon}" + ("" if how == "fitted" else f"-{how}")
        if self.exclude:
            var += "-lodo:" + "+".join(self.exclude)
        if self.drop:
            var += "-drop:" + "+".join(self.drop)
        return Signature(self.name, variant=var, checkpoint=_all_hash() + "+" + checkpoints.weights_hash(self.weights_path))


# ============================================================================ CRS fitting
def human_by_dimension(examples: Sequence[Example]) -> dict[str, np.ndarray]:
    dims: list[str] = []
    for e in examples:
        for d in e.scores:
            if d not in dims:
                dims.append(d)
    return {d: np.array([e.scores.get(d, np.nan) for e in examples], dtype=np.float64) for d in dims}


def fit_crs(sets: dict[str, list[Example]], progress: Progress | None = None,
            sub_scores: dict[str, dict[str, np.ndarray]] | None = None, command: str = "", notes: dict | None = None) -> dict:
    """Score every set with the sub-metrics (unless ``sub_scores`` is given), compute S_ijk and the
    weights; returns the crs_weights.json content."""
    table = {}
    for ds, exs in sets.items():
        subs = sub_scores[ds] if sub_scores is not None else scorer().score(exs, SUBMETRICS, progress)
        table[ds] = {"subs": subs, "human": human_by_dimension(exs)}
    corr = crs_mod.correlations(table, SUBMETRICS)
    weights = crs_mod.fit_weights(corr, SUBMETRICS)
    return {"power": crs_mod.POWER, "submetrics": list(SUBMETRICS), "fallback": crs_mod.FALLBACK,
            "dimension_map": {k: list(v) for k, v in crs_mod.DIMENSION_MAP.items()},
            "checkpoints": {CKPT[s]: _ckpt_hash(s) for s in SUBMETRICS},
            "command": command, "notes": notes or {},
            "sets": {ds: len(exs) for ds, exs in sets.items()},
            "weights": weights, "correlations": corr}


def load_sets(files: Sequence[str], max_rows: int | None = None, seed: int = 13) -> dict[str, list[Example]]:
    """Rated files grouped by their ``dataset`` field (or the file name); optional fixed-seed subsample."""
    from core.data import load_file
    sets: dict[str, list[Example]] = {}
    for f in files:
        for e in load_file(f):
            sets.setdefault(e.dataset or Path(f).stem, []).append(e)
    if max_rows:
        for ds, exs in sets.items():
            if len(exs) > max_rows:
                idx = sorted(np.random.default_rng(seed).choice(len(exs), max_rows, replace=False))
                sets[ds] = [exs[i] for i in idx]
    return sets


def train_main(argv: Sequence[str]) -> int:
    """``python -m core train crs --data FILE... [--out PATH]`` (argv without 'crs') or
    ``python -m core train mme {fm,rm,tcm,em,sm} [options]`` (argv starts with 'mme')."""
    argv = list(argv)
    if argv and argv[0] == "mme":
        p = argparse.ArgumentParser(prog="python -m core train mme")
        p.add_argument("what", choices=["fm", "rm", "tcm", "em", "sm"])
        p.add_argument("--n", type=int, default=None, help="training examples (fm/rm/tcm) or reference pairs (sm)")
        p.add_argument("--epochs", type=int, default=None)
        p.add_argument("--seed", type=int, default=13)
        p.add_argument("--data", default=None, help="em: rated JSONL with an 'engagement' score")
        p.add_argument("--threads", type=int, default=1)
        a = p.parse_args(argv[1:])
        _set_threads(a.threads)
        kw: dict[str, Any] = {"seed": a.seed}
        if a.n and a.what != "em":
            kw["n"] = a.n
        if a.epochs and a.what in ("fm", "rm", "tcm"):
            kw["epochs"] = a.epochs
        if a.what == "em":
            kw["data"] = a.data
        q = {"fm": train_fm, "rm": train_rm, "tcm": train_tcm, "em": train_em, "sm": train_sm}[a.what](**kw)
        print(json.dumps(q, indent=2))
        return 0
    p = argparse.ArgumentParser(prog="python -m core train crs",
                                description="refit MME-CRS weights on rated data (Spearman per set and dimension, d=2)")
    p.add_argument("--data", nargs="+", required=True, help="rated files (JSONL/CSV/DSTC10 JSON); sets = 'dataset' field")
    p.add_argument("--out", default=str(WEIGHTS_FILE))
    p.add_argument("--max-rows", type=int, default=None, help="fixed-seed subsample per set")
    p.add_argument("--threads", type=int, default=1)
    a = p.parse_args(argv)
    _set_threads(a.threads)
    sets = load_sets(a.data, a.max_rows)
    if not sets:
        raise ValueError("no rated examples in --data")
    if not any(e.scores for exs in sets.values() for e in exs):
        raise ValueError("the --data files carry no human scores to correlate with")
    t0 = time.time()
    res = fit_crs(sets, progress=lambda d, n, desc: print(f"\r{desc} {d}/{n}", end="", file=sys.stderr),
                  command="python -m core train crs --data " + " ".join(a.data))
    print(file=sys.stderr)
    Path(a.out).write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    print(f"fitted CRS weights for {', '.join(res['weights']) or 'no dimension'} from {len(sets)} set(s) "
          f"in {time.time() - t0:.0f}s -> {a.out}")
    for canon, w in res["weights"].items():
        print(f"  {canon:<11} " + "  ".join(f"{k}={v:.3f}" for k, v in w.items()))
    return 0


def drilldown_rows(details: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Rows for a dashboard drill-down of one ``mme`` (or ``mme_avg``) score: each sub-metric, its group,
    its normalized score, its CRS weight for the chosen dimension and its share of the final score."""
    if not details:
        return []
    subs = details.get("sub_scores", {})
    w = details.get("weights") or {k: 1.0 / max(len(subs), 1) for k in subs}
    group = {s: g for g, ss in GROUPS.items() if "+" not in g for s in ss}
    tot = sum(w.get(k, 0.0) for k, v in subs.items() if v is not None) or 1.0
    return [{"sub_metric": f"mme_{k}", "group": group.get(k, ""), "score": v, "weight": round(w.get(k, 0.0), 4),
             "contribution": None if v is None else round(w.get(k, 0.0) * v / tot, 4)} for k, v in subs.items()]
