"""One SmolLM2 reading of a (context, reply), shared by MME's context-PMI sub-metric and the judge's reader.

SmolLM2-135M-Instruct (``core.models.encoders.smollm``, bfloat16, or float32 where the CPU has no bfloat16
kernels: ``core.models.device.smollm_dtype``) reads the conversation in its chat format
(:meth:`ChatReading.prompt`: the last ``TURNS`` context turns as alternating ``user`` / ``assistant`` messages,
the last one the user's, each cut to its last ``TURN_TOKENS`` tokens, then ``<|im_start|>assistant\\n``) followed
by the reply (its first ``RESPONSE_TOKENS`` tokens). One forward pass gives both things read from it:

- ``token_logprobs``: per reply token t, log p(r_t | prompt, r_<t) (MME's PM, ``core.models.mme_models``);
- ``features``: the mean over the reply's tokens of the hidden states after each layer of ``LAYERS`` (576 each,
  2,880 in all; the judge's reader, ``core.judges.smollm_reader``).

Reading each (context, reply) once for both spares the judge a SmolLM2 pass over every reply MME also scores
(the judge's mix reads MME-CRS), and after MME has scored a comparison the judge runs no SmolLM2 pass at all
(docs/judge.md, "One SmolLM2 reading for the reader and MME"). Passes run on fixed-shape batches
(``core.models.batching``), so an item's reading is a function of the item alone, and the last ``MEMO_ITEMS``
items read are remembered per device (``core.models.memo``).
"""
from __future__ import annotations

import functools
import hashlib
import threading
from collections import OrderedDict
from typing import Callable, NamedTuple, Sequence

import numpy as np

from core.models.batching import batch_rows, dtype_name, fixed_shape_batches, padded_batch
from core.models.device import active_device, on_device, placed, smollm_dtype
from core.models.encoders import smollm_threads
from core.models.heap import return_freed_memory
from core.models.memo import remembers

TURNS = 3  # context turns in the chat prompt
TURN_TOKENS = 64  # each turn cut to its last tokens
RESPONSE_TOKENS = 40  # the reply's first tokens read
STEP = 32  # sequences padded to a multiple of this (few, fuller fixed-shape batches)
LAYERS = (6, 12, 18, 24, 30)  # hidden states averaged over the reply's tokens (0 = the embeddings)
HIDDEN_SIZE = 576
MEMO_ITEMS = 4096  # distinct (context, reply) readings remembered (~48 MB)


class Reading(NamedTuple):
    token_logprobs: np.ndarray  # float32, one per reply token read
    features: np.ndarray  # float32, HIDDEN_SIZE * len(LAYERS)


def context_turns(context: Sequence[str]) -> list[str]:
    """The turns as the reading sees them: a turn holding newlines is several turns (MME joins a context's turns
    with newlines and splits them again), blank ones dropped."""
    return [t.strip() for t in "\n".join(context).split("\n") if t.strip()]


def item_key(context: Sequence[str], reply: str) -> str:
    return hashlib.sha1(("\n".join(context_turns(context)) + "\x00" + reply.strip()).encode("utf-8")).hexdigest()


def response_token_logprobs(model, pad: int, seqs: Sequence[tuple[list[int], list[int]]], step: int = 8,
                            entropy: bool = False, layers: Sequence[int] = (), progress: Callable | None = None,
                            desc: str = "", done0: int = 0, total: int | None = None) -> list[tuple]:
    """SmolLM2's reading of each (prompt ids, response ids): per response token t, log p(r_t | prompt, r_<t)
    (float32, on the CPU); with ``entropy``, the entropy of that prediction (else None); with ``layers``, the
    mean over the response's tokens of the hidden states after each of those layers, concatenated (float32; else
    None). One forward pass per fixed-shape batch of prompt + response (``core.models.batching``; lengths padded
    to a multiple of ``step``), the LM head applied only at the response's positions; MME's SM and PM and the
    judge's reader share it. Where rows do not change each other's numbers (float32 on an AVX2 CPU,
    ``core.models.device.rows_are_independent``) a batch holds only its real rows, at least 64 token positions
    (``batching.batch_rows``): the dummy rows that fill a fixed-shape batch were a third of the tokens read for the
    demo's 120 replies, and the numbers are the same bits.
    ``progress(done, total, desc)`` counts sequences from ``done0``."""
    import torch
    model = placed(model)
    full = [p + r for p, r in seqs]
    out: list = [None] * len(seqs)
    done, total = done0, len(seqs) if total is None else total
    dtype = dtype_name(model)
    with torch.inference_mode():
        for idx, length in fixed_shape_batches([len(q) for q in full], step=step):
            ids, mask = on_device(*padded_batch(full, idx, length, rows=batch_rows(len(idx), dtype, length),
                                                 pad_id=pad))
            res = model.model(input_ids=ids, attention_mask=mask, output_hidden_states=bool(layers))
            h = res.last_hidden_state
            for j, i in enumerate(idx):
                p, r = seqs[i]
                pos = torch.arange(len(p) - 1, len(p) + len(r) - 1, device=h.device)
                lp = torch.log_softmax(model.lm_head(h[j, pos]).float(), -1)
                tok_lp = lp.gather(1, torch.tensor(r, device=h.device)[:, None]).squeeze(1)
                ent = -(lp.exp() * lp).sum(-1).cpu() if entropy else None
                feats = torch.cat([res.hidden_states[k][j, len(p):len(p) + len(r)].float().mean(0)
                                   for k in layers]).cpu().numpy() if layers else None
                out[i] = (tok_lp.cpu(), ent, feats)
            done += len(idx)
            return_freed_memory()  # else the freed LM-head blocks stay resident and memory grows (core.models.heap)
            if progress:
                progress(done, total, desc)
    return out


class ChatReading:
    """The shared reading (module docstring); one per process (:func:`chat_reading`)."""

    def __init__(self):
        import torch

        from core.models.encoders import smollm
        tok, model = smollm()
        self.tok = tok
        self.model = model.to(getattr(torch, smollm_dtype())).eval()
        self.pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id  # empty replies
        self.im_start = self.encode("<|im_start|>")
        self.im_end_nl = self.encode("<|im_end|>") + self.encode("\n")
        self.user, self.assistant = self.encode("user\n"), self.encode("assistant\n")
        self.dim = HIDDEN_SIZE * len(LAYERS)
        self.memo_items = MEMO_ITEMS
        self._memo: OrderedDict[tuple[str, str], Reading] = OrderedDict()
        self._lock = threading.Lock()
        remembers(self.forget)

    def encode(self, text: str) -> list[int]:
        return self.tok(text, add_special_tokens=False)["input_ids"]

    def prompt(self, context: Sequence[str]) -> list[int]:
        """The chat-format prompt ids of a context (module docstring)."""
        turns = context_turns(context)[-TURNS:]
        ids: list[int] = []
        for j, t in enumerate(turns):
            role = self.user if (len(turns) - 1 - j) % 2 == 0 else self.assistant
            ids += self.im_start + role + self.encode(t)[-TURN_TOKENS:] + self.im_end_nl
        return ids + self.im_start + self.assistant

    def response_ids(self, reply: str) -> list[int]:
        return self.encode(reply.strip())[:RESPONSE_TOKENS] or [self.pad]

    def read(self, contexts: Sequence[Sequence[str]], replies: Sequence[str], progress: Callable | None = None,
             desc: str = "SmolLM2 reading", done0: int = 0, total: int | None = None) -> list[Reading]:
        """The :class:`Reading` of every (context, reply); identical items and remembered ones are read once.
        ``progress(done, total, desc)`` counts items read from ``done0`` (``total``: the caller's count)."""
        dev = active_device()  # readings are remembered per device (its kernels round differently)
        keys = [(dev, item_key(c, r)) for c, r in zip(contexts, replies)]
        found: dict[tuple[str, str], Reading] = {}
        first: dict[tuple[str, str], int] = {}
        with self._lock:  # sessions of one dashboard share the memory: take the hits before another evicts them
            for i, k in enumerate(keys):
                if k not in found and k not in first:
                    hit = self._memo.get(k)
                    if hit is None:
                        first[k] = i
                    else:
                        found[k] = hit
        todo = list(first.values())
        if todo:
            with smollm_threads():
                read = response_token_logprobs(
                    self.model, self.pad, [(self.prompt(contexts[i]), self.response_ids(replies[i])) for i in todo],
                    step=STEP, layers=LAYERS, progress=progress, desc=desc, done0=done0,
                    total=len(todo) if total is None else total)
            found.update({keys[i]: Reading(lp.numpy(), feats) for i, (lp, _, feats) in zip(todo, read)})
        with self._lock:
            for k in dict.fromkeys(keys):
                self._memo[k] = found[k]
                self._memo.move_to_end(k)
            while len(self._memo) > self.memo_items:
                self._memo.popitem(last=False)
        return [found[k] for k in keys]

    def unread(self, contexts: Sequence[Sequence[str]], replies: Sequence[str]) -> int:
        """How many distinct (context, reply) items :meth:`read` would still run the model for."""
        dev = active_device()
        keys = {(dev, item_key(c, r)) for c, r in zip(contexts, replies)}
        with self._lock:
            return sum(1 for k in keys if k not in self._memo)

    @property
    def n_remembered(self) -> int:
        return len(self._memo)

    def forget(self) -> None:
        """Drop every remembered reading (the next one runs the model again)."""
        with self._lock:
            self._memo.clear()


@functools.lru_cache(maxsize=1)
def chat_reading() -> ChatReading:
    return ChatReading()
