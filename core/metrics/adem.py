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
- **leave-one-dataset-out**: ``dialeval train adem --lodo`` (``core/training/adem.py``) also trains ``adem-lodo-<dataset>`` for every
  training file without that file; ``ADEM.held_out_for(dataset)`` returns the model that never saw
  ``dataset`` (the full model when it never saw it either). Meta-evaluation must use it.
"""
from __future__ import annotations

import functools
from typing import Any, Sequence

import numpy as np

from core.data import Example
from core.models.checkpoints import CheckpointError, load, paths
from core.models.encoders import MAX_SEQ_LEN
from core.models.memo import remembers
from core.progress import Progress, tick
from core.scoring import CheckpointMetric, MetricResult, get_metric, register_metric

DEFAULT_CKPT = "adem"
LODO_PREFIX = "adem-lodo-"
CONTEXT_WORDS = 64


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


# ------------------------------------------------------------------------------------------------
# vectors


def encode_texts(texts: Sequence[str], progress: Progress | None = None, desc: str = "adem: MiniLM") -> dict[str, np.ndarray]:
    """text -> normalized MiniLM vector rounded to float16 precision (as the checkpoint was trained), each
    distinct text encoded once per process; nothing is kept on disk but whole rows in the score cache
    (``core.cache``; why: docs/architecture.md, "Version 0.6.2")."""
    from core.models.device import computed_on
    from core.models.encoders import encode
    dev = computed_on()  # vectors are remembered per device and precision (each rounds differently)
    need = [t for t in dict.fromkeys(texts) if (dev, t) not in _MEMO]
    if need:
        for t, v in zip(need, encode(need, progress=progress, desc=desc).astype(np.float16).astype(np.float32)):
            _MEMO[(dev, t)] = v
    return {t: _MEMO[(dev, t)] for t in dict.fromkeys(texts)}


_MEMO: dict[tuple[str, str], np.ndarray] = {}  # (device, text) -> vector
remembers(_MEMO.clear)


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
        """PCA coordinates, row by row (einsum's own loop: a row's numbers never depend on the other rows)."""
        return np.einsum("ij,kj->ik", np.asarray(X, dtype=np.float64) - self.mean, self.components)

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


# ------------------------------------------------------------------------------------------------
# metric


@register_metric("adem")
class ADEM(CheckpointMetric):
    reads_sentence_vectors = True
    models = ("minilm",)
    reads_references = True  # the r^T N r̂ term
    reads_response = (95, f"{MAX_SEQ_LEN} MiniLM word pieces")  # its sentence vectors' pass
    description = "ADEM (Lowe 2017): (c^T M r̂ + r^T N r̂ - α)/β on PCA-reduced MiniLM vectors, trained on human scores (1-5)"
    default_checkpoint = DEFAULT_CKPT
    variant = "minilm-pca|{checkpoint}"

    @functools.cached_property
    def _loaded(self) -> tuple[AdemModel, dict]:
        tensors, manifest = load(self.checkpoint)
        return AdemModel.from_tensors(tensors), manifest

    @property
    def manifest(self) -> dict:
        return self._loaded[1]

    def trained_on(self) -> list[str]:
        return list(self.manifest.get("datasets", []))

    def held_out_for(self, dataset: str) -> "ADEM":
        """An ADEM that never saw ``dataset`` during training (leave-one-dataset-out)."""
        if dataset not in self.trained_on():
            return self
        name = LODO_PREFIX + dataset
        if not paths(name)[0].exists():
            raise CheckpointError(f"no leave-one-out ADEM for {dataset!r} (checkpoint {name} missing); "
                           f"train with `dialeval train adem --data ... --lodo`")
        return get_metric("adem", self.options, checkpoint=name)  # type: ignore[return-value]

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
