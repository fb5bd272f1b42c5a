"""The learned pairwise A/B judge: P(a person prefers reply A over reply B) for one context.

Method (after Wu & Chien, ``seeds/ab-judge_wu-chien.txt``; METHODS.md §5): a BERT-style encoder reads the
post and two replies and a linear classifier predicts which reply humans prefer; trained on a few hundred
votes it predicts the rest (~70 % agreement in the paper). Here:

- **Encoder**: all-MiniLM-L6-v2 as a *cross-encoder* over ``[CLS] context [SEP] reply A [SEP] reply B [SEP]``
  (context truncated from the left, each reply capped at ``REPLY_TOKENS`` word pieces). The bottom
  ``N_FROZEN`` (3) transformer layers stay at the base model's weights; only the top three layers and a
  small head are trained, so a checkpoint holds just those tensors (5.7 M parameters per member) and the
  rest is rebuilt from the installed base model at load time. A checkpoint's manifest records its
  ``n_frozen``, so judges trained with another depth (``--n-frozen``) load as well.
- **Two members**: the shipped judge is two such judges trained with different seeds (``--members 2``);
  the bottom layers run once and the logit is the mean of the members' logits (:meth:`JudgeNetwork.ensemble`),
  stored as float16 (22.9 MB). The configuration was chosen on a **validation split** of the contexts
  (``--val-share 0.1``, ``core.judges.pairs.is_val_context``), never on the test pairs.
- **Head**: features ``[h_CLS; mean(A); mean(B); mean(A) - mean(B)]`` of the top layer -> Linear(1536, 256)
  -> tanh -> Linear(256, 1) -> logit of "A preferred".
- **SmolLM2 reader** (:class:`core.judges.smollm_reader.SmolLMReader`, owned by the judge; trained by
  ``dialeval train judge-lm``): a frozen SmolLM2-135M reads each (context, reply); a small scorer on its
  hidden states gives ``s(reply)``, and each single-order
  logit becomes ``w_judge * z_MiniLM + w_lm * (s(A) - s(B))`` (weights fitted on the validation pairs and, since
  0.6.3, rule-made obvious pairs the reader never read: ``core.training.judge_lm``).
  Its tensors (``lm.*``, 1.1 MB) live in the same checkpoint. It lifted held-out agreement by more than
  anything tried on the MiniLM side (docs/judge.md).
- **MME-CRS difference** (since 0.6.3, when the manifest's mix has ``mme_weights``): the logit gains
  ``w_mme * (q(A) - q(B))``, q the MME-CRS score of a reply (``core.metrics.mme``; the CRS weights are frozen into
  the judge's manifest, ``lm.mix.mme_weights``, so a later re-fit of MME's CRS weights does not change the judge;
  re-trained MME sub-models do change q, and loading the judge then warns, ``lm.mix.mme_checkpoints``).
  It carried across rated sets the judge never trained on better than any input tried before (docs/judge.md).
- **Position bias**: trained on both orders of every pair; at inference the judge scores A|B and B|A and
  averages ``p_a = (p(A|B) + 1 - p(B|A)) / 2``, so swapping A and B gives exactly ``1 - p_a``.
  ``order_disagreement`` is the share of pairs where the two single-order estimates pick different
  winners (before combining; pairs of identical replies left out in a comparison's summary); after combining it is
  zero by construction.
- **Ties**: the verdict is ``"tie"`` when ``|p_a - 0.5| < tie_margin`` (default 0.05, stored in the manifest).
- **Training** (``core/training/judge.py``, ``dialeval train judge``) on clear-margin pairs derived from the
  human-rated sets (``core.judges.pairs``), split by context; **your own votes** re-fit only the output
  layers (``core.judges.votes``; :meth:`PairwiseJudge.with_refit_output_layers` writes the re-fit back, so a
  tuned judge is an ordinary checkpoint).
"""
from __future__ import annotations

import copy
import functools
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from core.judges.smollm_reader import HIDDEN as READER_HIDDEN
from core.judges.smollm_reader import MEMBERS as READER_MEMBERS
from core.judges.smollm_reader import SmolLMReader, lm_features, reads_as_recorded
from core.judges.smollm_reader import config as reader_config
from core.models import checkpoints
from core.models.batching import ROWS, batch_rows, dtype_name, fixed_shape_batches, in_fixed_rows, padded_batch
from core.progress import Progress, share_of
from core.scoring import Judge, JudgeOutput, order_disagreement, register_judge
from core.scoring import verdicts  # noqa: F401 (re-exported)
from core.settings import SEED
from core.version import __version__

CHECKPOINT = "judge"
N_LAYERS = 6
N_FROZEN = 3
MAX_TOKENS = 128
REPLY_TOKENS = 40
HEAD_HIDDEN = 256
TIE_MARGIN = 0.05
READ_SHARE = 0.88  # the share of a judged pair's time spent reading it (the progress bar's phases)
MINILM_SHARE = 0.11  # the share of that reading spent in MiniLM's bottom layers (the rest is SmolLM2)
READER_SHARE = 0.45  # with the MME-CRS input: the share of the reading up to the end of the reader (MME after it)


# ----------------------------------------------------------------------------------------------
# the network


def _torch():
    import torch
    return torch


@functools.lru_cache(maxsize=1)
def base_model():
    """The installed all-MiniLM-L6-v2 (eager attention so additive masks behave identically everywhere)."""
    from transformers import AutoModel

    from core.models.encoders import minilm_path
    from core.progress import model_loading
    with model_loading():
        model = AutoModel.from_pretrained(minilm_path(), attn_implementation="eager")
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return model


def _tokenizer():
    from core.models.encoders import minilm_tokenizer
    return minilm_tokenizer()


def build_inputs(context: Sequence[str], reply_a: str, reply_b: str, max_tokens: int = MAX_TOKENS,
                 reply_tokens: int = REPLY_TOKENS) -> tuple[list[int], tuple[int, int], tuple[int, int]]:
    """Token ids of ``[CLS] ctx [SEP] A [SEP] B [SEP]`` and the (start, end) spans of A and B.

    Replies are capped at ``reply_tokens`` word pieces each; the context keeps its *last* tokens (turns
    joined by [SEP]) in the remaining budget."""
    tok = _tokenizer()
    # verbose=False: a turn longer than the model's 512 tokens is cut below (its last tokens kept), so the
    # tokenizer's "will result in indexing errors" warning would be wrong
    enc = functools.partial(tok.encode, add_special_tokens=False, verbose=False)
    sep, cls = tok.sep_token_id, tok.cls_token_id
    a = enc(reply_a)[:reply_tokens] or [tok.unk_token_id]
    b = enc(reply_b)[:reply_tokens] or [tok.unk_token_id]
    budget = max_tokens - len(a) - len(b) - 4
    ctx: list[int] = []
    for turn in reversed(list(context)):
        t = enc(turn)
        ctx = t + ([sep] if ctx else []) + ctx
        if len(ctx) >= budget:
            break
    ctx = ctx[-budget:] if budget > 0 else []
    ids = [cls] + ctx + [sep]
    sa = (len(ids), len(ids) + len(a))
    ids += a + [sep]
    sb = (len(ids), len(ids) + len(b))
    ids += b + [sep]
    return ids, sa, sb


def _ext_mask(mask):
    torch = _torch()
    return (1.0 - mask[:, None, None, :].to(torch.float32)) * torch.finfo(torch.float32).min


def bottom_states(seqs: list[list[int]], progress: Progress | None = None, desc: str = "judge: encoding",
                  n_frozen: int = N_FROZEN) -> list:
    """Hidden states after the frozen bottom ``n_frozen`` layers, one fp16 (len, 384) tensor per sequence
    (computed once, reused by every epoch of the trained layers and the head), on fixed-shape batches
    (``core.models.batching``), so a sequence's states never depend on its batch mates."""
    torch = _torch()
    model = base_model()
    out: list = [None] * len(seqs)
    done = 0
    with torch.no_grad():
        for idx, length in fixed_shape_batches([len(s) for s in seqs]):
            ids, mask = padded_batch(seqs, idx, length, batch_rows(len(idx), dtype_name(model), length))
            h = model.embeddings(input_ids=ids, token_type_ids=torch.zeros_like(ids))
            ext = _ext_mask(mask)
            for layer in model.encoder.layer[:n_frozen]:
                h = layer(h, attention_mask=ext)
                h = h[0] if isinstance(h, tuple) else h
            for j, i in enumerate(idx):
                out[i] = h[j, :len(seqs[i])].to(torch.float16).clone()
            done += len(idx)
            if progress is not None:
                progress(done, len(seqs), desc)
    return out


def _pooled(layers, h, mask, spans_a, spans_b):
    """Run ``layers`` on the bottom states and pool ``[h_CLS; mean(A); mean(B); mean(A) - mean(B)]``."""
    torch = _torch()
    ext = _ext_mask(mask)
    for layer in layers:
        h = layer(h, attention_mask=ext)
        h = h[0] if isinstance(h, tuple) else h
    B, L, _ = h.shape
    pos = torch.arange(L)[None, :]
    ma = ((pos >= spans_a[:, :1]) & (pos < spans_a[:, 1:])).to(h.dtype)
    mb = ((pos >= spans_b[:, :1]) & (pos < spans_b[:, 1:])).to(h.dtype)
    va = (h * ma[..., None]).sum(1) / ma.sum(1, keepdim=True).clamp(min=1)
    vb = (h * mb[..., None]).sum(1) / mb.sum(1, keepdim=True).clamp(min=1)
    return torch.cat([h[:, 0], va, vb, va - vb], dim=-1)


class JudgeNetwork:
    """Builds the trainable part of the judge (MiniLM layers ``n_frozen``..5 + head) as one torch module:
    :meth:`single` for one judge, :meth:`ensemble` for several trained members read as one."""

    @staticmethod
    def single(seed: int = SEED, n_frozen: int = N_FROZEN):
        import copy

        torch = _torch()
        nn = torch.nn

        class JudgeTop(nn.Module):
            def __init__(self):
                super().__init__()
                base = base_model()
                self.layers = nn.ModuleList(copy.deepcopy(base.encoder.layer[n_frozen:]))
                for p in self.layers.parameters():
                    p.requires_grad_(True)
                torch.manual_seed(seed)
                d = base.config.hidden_size
                self.head = nn.Sequential(nn.Dropout(0.1), nn.Linear(4 * d, HEAD_HIDDEN), nn.Tanh(),
                                          nn.Dropout(0.1), nn.Linear(HEAD_HIDDEN, 1))

            def features(self, h, mask, spans_a, spans_b):
                return _pooled(self.layers, h, mask, spans_a, spans_b)

            def forward(self, h, mask, spans_a, spans_b):
                return self.head(self.features(h, mask, spans_a, spans_b)).squeeze(-1)

        return JudgeTop()

    @staticmethod
    def ensemble(tops: Sequence | None = None, n_members: int = 2, n_frozen: int = N_FROZEN):
        """k trained judges as one module that reads the bottom states once. Each member's layers pool their
        own features (concatenated); the head's hidden part applies each member's hidden layer to its own
        features, and its output layer is the members' output layers side by side divided by k, so the
        logit is exactly the mean of the members' logits (and re-fitting the output layer on votes, as for
        a single judge, fits one logistic regression on all members' hidden units). ``tops=None`` builds
        ``n_members`` untrained members (the skeleton a checkpoint is loaded into)."""
        import copy

        torch = _torch()
        nn = torch.nn
        tops = list(tops) if tops else [JudgeNetwork.single(SEED + i, n_frozen) for i in range(n_members)]
        k = len(tops)
        width = tops[0].head[1].in_features

        class MemberHidden(nn.Module):
            def __init__(self):
                super().__init__()
                self.hidden = nn.ModuleList([copy.deepcopy(t.head[:-1]) for t in tops])

            def forward(self, f):
                return torch.cat([h(f[:, i * width:(i + 1) * width]) for i, h in enumerate(self.hidden)], -1)

        class JudgeEnsemble(nn.Module):
            def __init__(self):
                super().__init__()
                self.branches = nn.ModuleList([copy.deepcopy(t.layers) for t in tops])
                out = nn.Linear(k * HEAD_HIDDEN, 1)
                with torch.no_grad():
                    out.weight.copy_(torch.cat([t.head[-1].weight for t in tops], 1) / k)
                    out.bias.copy_(sum(t.head[-1].bias for t in tops) / k)
                self.head = nn.Sequential(MemberHidden(), out)

            @property
            def layers(self):  # the depth of one member (n_frozen = 6 - len(layers))
                return self.branches[0]

            def features(self, h, mask, spans_a, spans_b):
                return torch.cat([_pooled(b, h, mask, spans_a, spans_b) for b in self.branches], dim=-1)

            def forward(self, h, mask, spans_a, spans_b):
                return self.head(self.features(h, mask, spans_a, spans_b)).squeeze(-1)

        return JudgeEnsemble()


def collate(states: list, spans: list, idx: Sequence[int], length: int | None = None, rows: int | None = None):
    """A padded batch (bottom states, mask, spans of A, spans of B) of the sequences ``idx``: ``rows`` x ``length``
    when given (a fixed shape; dummy rows attend to one position), else as small as the sequences allow."""
    torch = _torch()
    L = length or max(states[i].shape[0] for i in idx)
    d = states[idx[0]].shape[1]
    R = rows or len(idx)
    h = torch.zeros((R, L, d), dtype=torch.float32)
    mask = torch.zeros((R, L), dtype=torch.long)
    mask[len(idx):, 0] = 1
    for j, i in enumerate(idx):
        n = states[i].shape[0]
        h[j, :n] = states[i].to(torch.float32)
        mask[j, :n] = 1
    sa = torch.tensor([spans[i][0] for i in idx] + [(0, 1)] * (R - len(idx)), dtype=torch.long)
    sb = torch.tensor([spans[i][1] for i in idx] + [(0, 1)] * (R - len(idx)), dtype=torch.long)
    return h, mask, sa, sb


@dataclass
class Encoded:
    """Both orders of n pairs: sequence 2i is (c, A, B), 2i+1 is (c, B, A)."""

    states: list
    spans: list
    reader_features: tuple | None = None  # SmolLM2 features of (A, B) per pair, when the judge has the reader
    mme_scores: tuple | None = None  # MME-CRS scores of (A, B) per pair, when the judge's mix reads them

    def __len__(self) -> int:
        return len(self.states) // 2


def mme_pair_scores(contexts: Sequence[Sequence[str]], replies_a: Sequence[str], replies_b: Sequence[str],
                    weights: dict[str, float], progress: Progress | None = None) -> tuple[np.ndarray, np.ndarray]:
    """MME-CRS scores ``q = sum_k w_k * sub_k`` (docs/mme.md, correlation re-scaling; ``core.metrics.crs.combine``)
    of every reply A and every reply B, with the CRS ``weights`` given (the judge's frozen ones). The sub-scores
    come from the process's MME scorer, which remembers them: replies MME has already scored are not read
    again. An empty reply scores NaN."""
    from core.data import Example
    from core.metrics import crs
    from core.metrics.mme import scorer
    ctx = [[c] if isinstance(c, str) else list(c) for c in contexts]
    examples = [Example(f"judged-{i}", "judged", c, r)
                for i, (c, r) in enumerate(zip(ctx + ctx, list(replies_a) + list(replies_b)))]
    subs = scorer().score(examples, [k for k, w in weights.items() if w > 0], progress)
    q = crs.combine(subs, weights)
    return q[:len(ctx)], q[len(ctx):]


def encode_pairs(contexts: Sequence[Sequence[str]], replies_a: Sequence[str], replies_b: Sequence[str],
                 progress: Progress | None = None, n_frozen: int = N_FROZEN, reader: bool = False,
                 mme_weights: dict[str, float] | None = None) -> Encoded:
    """Bottom MiniLM states of both orders of every pair; with ``reader=True`` also the SmolLM2 features of
    every (context, reply) (:mod:`core.judges.smollm_reader`); with ``mme_weights`` also the MME-CRS scores of
    both replies (:func:`mme_pair_scores`)."""
    seqs, spans = [], []
    for c, a, b in zip(contexts, replies_a, replies_b):
        for x, y in ((a, b), (b, a)):
            ids, sa, sb = build_inputs(c, x, y)
            seqs.append(ids)
            spans.append((sa, sb))
    n = len(seqs)
    # one bar over both phases, counted in pairs: MiniLM's bottom layers, then the reader (about 1 and 8 parts of
    # the time on the demo's pairs, 2 cores)
    pairs = n // 2
    states = bottom_states(seqs, progress=share_of(progress, 0.0, MINILM_SHARE if reader else 1.0, pairs),
                           n_frozen=n_frozen)
    feats = None
    reader_end = READER_SHARE if mme_weights is not None else 1.0
    if reader:
        ctx = [list(c) for c in contexts]
        from core.models.encoders import smollm_first_load
        first = smollm_first_load()  # SmolLM2's first load: said, not a bar that stands still
        if first and progress is not None:
            share_of(progress, MINILM_SHARE, reader_end, pairs)(0, pairs, f"judge: {first}")
        f = lm_features().features(ctx + ctx, list(replies_a) + list(replies_b),
                                   progress=share_of(progress, MINILM_SHARE, reader_end, pairs))
        feats = (f[:len(ctx)], f[len(ctx):])
    mme = None
    if mme_weights is not None:
        mme = mme_pair_scores(contexts, replies_a, replies_b, mme_weights,
                              progress=share_of(progress, reader_end, 1.0, pairs, "judge: "))
    return Encoded(states, spans, feats, mme)


# ----------------------------------------------------------------------------------------------
# the judge


def combine_orders(p_ab: np.ndarray, p_ba: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """(p_a, p_ba_flipped, order_disagreement) from the two single-order probabilities."""
    p_ab = np.asarray(p_ab, dtype=np.float64)
    flipped = 1.0 - np.asarray(p_ba, dtype=np.float64)
    p_a = (p_ab + flipped) / 2.0
    return p_a, flipped, order_disagreement(p_ab, flipped)


@dataclass
class OutputLayerInputs:
    """What the judge's output layers read, for both orders of n pairs (row 2i: (c, A, B); 2i+1: (c, B, A)):
    ``z`` the MiniLM cross-encoder's logit, ``hidden`` its head's hidden units, ``logits`` the judge's
    single-order logits; with the reader, per pair ``d = s(A) - s(B)`` and the reader scorer's hidden units
    of A and of B (``reader_a``, ``reader_b``), and the MME-CRS difference ``m`` when the mix reads it."""

    z: np.ndarray
    hidden: np.ndarray
    logits: np.ndarray
    d: np.ndarray | None = None
    reader_a: np.ndarray | None = None
    reader_b: np.ndarray | None = None
    m: np.ndarray | None = None  # per pair q(A) - q(B), when the judge's mix reads MME-CRS


@register_judge("pairwise")
class PairwiseJudge(Judge):
    """The trained judge: frozen MiniLM bottom + trained top layers and head, and (when the checkpoint has
    one) its own SmolLM2 reader: then each single-order logit is ``w_judge * z_MiniLM + w_lm * (s(A) - s(B))``
    ``+ w_mme * (q(A) - q(B))`` with the weights of ``manifest["lm"]["mix"]`` (the last term when the mix has
    ``mme_weights``: q is MME-CRS with those CRS weights)."""

    description = ("learned A/B judge: MiniLM cross-encoder + frozen SmolLM2 reader + the MME-CRS difference, both "
                   "orders combined")
    models = ("minilm", "smollm2")
    reads_response = (30, "40 SmolLM2 tokens")  # its reader's REPLY_TOKENS (and the MiniLM part's 40 word pieces)
    swaps_exactly = True  # both orders scored and averaged (module docstring, "Position bias")

    def __init__(self, top, manifest: dict[str, Any] | None = None, name: str = CHECKPOINT,
                 reader: SmolLMReader | None = None):
        self.top = top
        self.top.eval()
        self.manifest = manifest or {}
        self.reader = reader
        self.mix: tuple[float, float] | None = None
        self.w_mme = 0.0  # the mix weight of the MME-CRS difference (0: the judge does not read MME)
        self.mme_weights: dict[str, float] | None = None
        if reader is not None:
            m = self.manifest.get("lm", {}).get("mix", {})
            self.mix = (float(m.get("w_judge", 1.0)), float(m.get("w_lm", 1.0)))
            if m.get("mme_weights"):
                self.w_mme = float(m.get("w_mme", 0.0))
                self.mme_weights = {k: float(v) for k, v in m["mme_weights"].items()}
        self.checkpoint = name
        self.tie_margin = float(self.manifest.get("config", {}).get("tie_margin", TIE_MARGIN))
        # the encoder layers below the trained ones (inputs must be encoded to this depth)
        self.n_frozen = N_LAYERS - len(top.layers)
        self.train_steps: tuple[int, int] | None = None

    @classmethod
    def load(cls, checkpoint: str | None = None) -> "PairwiseJudge":
        return load_judge(checkpoint or CHECKPOINT)

    @classmethod
    def cache_identity(cls, checkpoint: str | None = None) -> str | None:
        """The checkpoint's name and weights hash (one file holds the MiniLM top and the reader), a hash of the
        mix weights (in the manifest: a re-fitted mix on the same tensors is another judge), and the MME
        sub-metrics' checkpoints when its mix reads MME-CRS."""
        name = checkpoint or CHECKPOINT
        h = checkpoints.short_hash(name)
        if h == "-":
            return None
        mix = checkpoints.load_manifest(name).get("lm", {}).get("mix", {})
        return f"{name}:{h}" + _mix_identity(mix)

    def encode(self, contexts: Sequence[Sequence[str]], replies_a: Sequence[str], replies_b: Sequence[str],
               progress: Progress | None = None) -> Encoded:
        """Inputs as this judge reads them (MiniLM bottom states, plus SmolLM2 features with the reader and the
        replies' MME-CRS scores when its mix reads them)."""
        return encode_pairs(contexts, replies_a, replies_b, progress, n_frozen=self.n_frozen,
                            reader=self.reader is not None, mme_weights=self.mme_weights)

    def reader_diff(self, enc: Encoded) -> np.ndarray:
        """s(A) - s(B) of the reader for every pair of ``enc``."""
        if enc.reader_features is None:
            raise ValueError("these pairs were encoded without the SmolLM2 reader; use judge.encode(...)")
        fa, fb = enc.reader_features
        return self.reader.score(fa) - self.reader.score(fb)

    def mme_diff(self, enc: Encoded) -> np.ndarray | None:
        """q(A) - q(B), the MME-CRS difference of every pair of ``enc`` (0 where a reply has no score: an empty
        one), or None when this judge's mix does not read MME-CRS."""
        if self.mme_weights is None:
            return None
        if enc.mme_scores is None:
            raise ValueError("these pairs were encoded without MME-CRS; use judge.encode(...)")
        qa, qb = enc.mme_scores
        return np.nan_to_num(np.asarray(qa, dtype=np.float64) - np.asarray(qb, dtype=np.float64), nan=0.0)

    # -- inference on encoded inputs
    def logits(self, enc: Encoded, progress: Progress | None = None, desc: str = "judge: scoring") -> np.ndarray:
        """Single-order logits of both orders of every pair (interleaved: (A, B), (B, A), ...)."""
        z = self.minilm_logits(enc, progress, desc)
        if self.reader is None:
            return z
        return self.mix_logits(z, self.reader_diff(enc), self.mme_diff(enc))

    def mix_logits(self, z: np.ndarray, d: np.ndarray, m: np.ndarray | None = None) -> np.ndarray:
        """Single-order logits from the MiniLM logits ``z`` (orders interleaved), the reader's per-pair
        ``d = s(A) - s(B)`` and (when the mix reads it) the MME-CRS difference ``m = q(A) - q(B)``:
        ``w_judge * z + w_lm * d + w_mme * m`` for (A, B), ``w_judge * z - w_lm * d - w_mme * m`` for (B, A)."""
        wj, wl = self.mix
        signed = wl * np.asarray(d, dtype=np.float64)
        if m is not None:
            signed = signed + self.w_mme * np.asarray(m, dtype=np.float64)
        out = wj * np.asarray(z, dtype=np.float64)
        out[0::2] += signed
        out[1::2] -= signed
        return out

    def _in_fixed_shapes(self, enc: Encoded, head, progress: Progress | None, desc: str) -> np.ndarray:
        """``head(features)`` over the sequences of ``enc``, ``features`` the trained MiniLM layers' pooled
        features (:func:`_pooled`) of a fixed-shape batch (``core.models.batching``), rows back in input order: a
        pair's numbers never depend on the pairs judged with it. The layers run on :func:`batch_rows` rows (only
        the real ones where rows are independent, ``core.models.device.rows_are_independent``); ``head`` always
        gets ``ROWS`` rows (the missing ones zero), the shape its products had when every batch held ``ROWS``
        rows, so its output is the same bits either way (a product's output row depends only on its own input row
        and on the shape)."""
        torch = _torch()
        n = len(enc.states)
        out = None
        done = 0
        dtype = dtype_name(self.top)
        with torch.no_grad():
            for idx, length in fixed_shape_batches([st.shape[0] for st in enc.states]):
                rows = batch_rows(len(idx), dtype, length)
                feats = self.top.features(*collate(enc.states, enc.spans, idx, length, rows))
                if rows < ROWS:
                    feats = torch.cat([feats, feats.new_zeros((ROWS - rows, feats.shape[1]))])
                res = head(feats).numpy()[:len(idx)]
                if out is None:
                    out = np.zeros((n,) + res.shape[1:], dtype=res.dtype)
                out[idx] = res
                done += len(idx)
                if progress is not None:
                    progress(done, n, desc)
        return out if out is not None else np.zeros(0)

    def minilm_logits(self, enc: Encoded, progress: Progress | None = None,
                      desc: str = "judge: scoring") -> np.ndarray:
        """The MiniLM cross-encoder's logit of every sequence of ``enc``."""
        return self._in_fixed_shapes(enc, lambda f: self.top.head(f).squeeze(-1).double(), progress,
                                     desc).astype(np.float64)

    def head_inputs(self, enc: Encoded, progress: Progress | None = None) -> np.ndarray:
        """The pooled features the MiniLM head reads, for every sequence of ``enc``."""
        return self._in_fixed_shapes(enc, lambda f: f, progress, "judge: features")

    def output_layer_inputs(self, enc: Encoded, progress: Progress | None = None) -> OutputLayerInputs:
        """:class:`OutputLayerInputs` of the pairs of ``enc`` (the votes re-fit reads these)."""
        torch = _torch()
        head = self.top.head

        def part(layers):
            def run(x: np.ndarray) -> np.ndarray:
                with torch.no_grad():
                    return layers(torch.from_numpy(x)).numpy()
            return run
        hidden = in_fixed_rows(part(head[:-1]), self.head_inputs(enc, progress=progress))
        z = in_fixed_rows(part(head[-1]), hidden)[:, 0].astype(np.float64)
        if self.reader is None:
            return OutputLayerInputs(z, hidden, z.copy())
        d = self.reader_diff(enc)
        m = self.mme_diff(enc)
        fa, fb = enc.reader_features
        return OutputLayerInputs(z, hidden, self.mix_logits(z, d, m), d, self.reader.hidden_units(fa),
                                 self.reader.hidden_units(fb), m)

    def output_from_logits(self, logits: np.ndarray) -> JudgeOutput:
        probs = 1.0 / (1.0 + np.exp(-logits))
        p_a, flipped, _ = combine_orders(probs[0::2], probs[1::2])
        return JudgeOutput.from_probabilities(p_a, probs[0::2].copy(), flipped, self.tie_margin, self.signature())

    def predict_encoded(self, enc: Encoded, progress: Progress | None = None) -> JudgeOutput:
        return self.output_from_logits(self.logits(enc, progress=progress))

    def predict(self, contexts: Sequence[Sequence[str]], replies_a: Sequence[str], replies_b: Sequence[str],
                progress: Progress | None = None) -> JudgeOutput:
        """P(A preferred) for each (context, A, B), both orders combined."""
        if not (len(contexts) == len(replies_a) == len(replies_b)):
            raise ValueError("contexts, replies_a and replies_b must have the same length")
        ctxs = [[c] if isinstance(c, str) else list(c) for c in contexts]
        if not ctxs:
            return JudgeOutput(np.zeros(0), np.zeros(0), np.zeros(0), [], float("nan"), self.tie_margin,
                               self.signature())
        # one bar counted in pairs: reading them (MiniLM's bottom layers ~10 %, SmolLM2 ~78 %), then scoring them
        # with the trained layers (~12 %; 30 demo pairs in a browser, 2 cores)
        n = len(ctxs)
        enc = self.encode(ctxs, replies_a, replies_b, progress=share_of(progress, 0.0, READ_SHARE, n))
        return self.predict_encoded(enc, progress=share_of(progress, READ_SHARE, 1.0, n))

    def signature(self) -> str:
        """checkpoint, weights hash, reader and mix, tie margin, version; ``|precision:bfloat16`` when the mix
        reads MME-CRS and MiniLM's sentence vectors (MME's RM and EM) run in bfloat16 (``DIALEVAL_PRECISION``)."""
        from core.settings import minilm_precision
        reader = "|lm:smollm2" + _mix_identity(self.manifest.get("lm", {}).get("mix", {})) if self.reader else ""
        fmt = minilm_precision()
        precision = f"|precision:{fmt}" if self.mme_weights is not None and fmt != "float32" else ""
        return (f"judge:{self.checkpoint}|ckpt:{checkpoints.short_hash(self.checkpoint)}{reader}"
                f"|tie:{self.tie_margin}|v:{__version__}{precision}")

    # -- the re-fit on votes, written into the output layers
    def with_refit_output_layers(self, delta: np.ndarray, from_scratch: bool, name: str,
                                 manifest: dict[str, Any]) -> "PairwiseJudge":
        """A copy whose output layers carry a re-fit (``core.judges.votes``), so that its single-order logit is
        ``keep * logits + design @ delta`` with ``keep`` 0 (``from_scratch``) or 1 and ``design`` =
        ``[z, d, (m,) reader hidden units (A - B)]`` with the reader (m when the mix reads MME-CRS),
        ``[z, MiniLM head hidden units]`` without (up to float32): the MiniLM head's output layer is scaled (and,
        without the reader, shifted by the hidden-unit weights), the reader members' output layers take the new
        weights and the MME-CRS weight becomes ``keep * w_mme + delta_m`` (in ``manifest``); the other mix
        weights stay as shipped."""
        torch = _torch()
        top = copy.deepcopy(self.top)
        delta = np.asarray(delta, dtype=np.float64)
        width = (2 + (self.mme_weights is not None) + sum(net[-1].weight.shape[1] for net in self.reader.scorer.members)
                 if self.reader is not None else 1 + self.top.head[-1].weight.shape[1])
        if delta.shape != (width,):
            raise ValueError(f"a re-fit of this judge has {width} columns, got {delta.shape}: votes' features "
                             "computed with another judge?")
        keep = 0.0 if from_scratch else 1.0
        wj, wl = self.mix if self.mix else (1.0, 1.0)
        out = top.head[-1]
        with torch.no_grad():
            k_z = (keep * wj + delta[0]) / wj  # the new coefficient of z, in units of the mix weight
            w = out.weight.double() * k_z
            if self.reader is None:
                w += torch.from_numpy(delta[1:] / wj)[None, :]
            out.weight.copy_(w.float())
            out.bias.copy_((out.bias.double() * k_z).float())
        reader = None
        if self.reader is not None:
            k_d = (keep * wl + delta[1]) / wl
            first = 2
            if self.mme_weights is not None:
                manifest = copy.deepcopy(manifest)
                manifest.setdefault("lm", {}).setdefault("mix", {})["w_mme"] = keep * self.w_mme + float(delta[2])
                first = 3
            r = delta[first:].reshape(self.reader.n_members, -1)
            reader = self.reader.with_output_layers(k_d, self.reader.n_members * r / wl)
        return PairwiseJudge(top, manifest, name, reader=reader)

    # -- persistence
    def state_tensors(self, manifest: dict[str, Any] | None = None) -> dict[str, Any]:
        """The trained tensors; float16 when the manifest's config says so (an ensemble of two judges fits
        the 25 MB limit that way; they are read back into float32)."""
        half = (manifest or self.manifest).get("config", {}).get("dtype") == "float16"
        state = dict(self.top.state_dict())
        if self.reader is not None:
            state.update({"lm." + k: v for k, v in self.reader.state_dict().items()})
        return {k: (v.half() if half and v.is_floating_point() else v) for k, v in state.items()}

    def save(self, name: str, manifest: dict[str, Any], directory: str | None = None):
        return checkpoints.save(name, self.state_tensors(manifest), manifest, directory)


def judge_from_tensors(tensors: dict[str, Any], manifest: dict[str, Any], name: str) -> PairwiseJudge:
    """Rebuild a judge from its checkpoint's tensors and manifest (members, depth and reader as recorded)."""
    cfg = manifest.get("config", {})
    n_frozen, members = int(cfg.get("n_frozen", N_FROZEN)), int(cfg.get("members", 1))
    top = (JudgeNetwork.ensemble(n_members=members, n_frozen=n_frozen) if members > 1
           else JudgeNetwork.single(n_frozen=n_frozen))
    reader_tensors = {k[3:]: v for k, v in tensors.items() if k.startswith("lm.")}
    tensors = {k: v for k, v in tensors.items() if not k.startswith("lm.")}
    reader = None
    if reader_tensors:
        recorded = manifest.get("lm", {}).get("reader")
        if recorded is not None and not reads_as_recorded(recorded):
            raise checkpoints.CheckpointError(
                f"judge {name!r} has a SmolLM2 reader trained on features read another way ({recorded.get('prompt')}"
                f"), but this version reads them as: {reader_config()['prompt']}; its P(A) would be wrong. Re-train "
                "its reader with `dialeval train judge-lm`, or use the shipped judge")
        sc = manifest.get("lm", {}).get("scorer", {})
        reader = SmolLMReader.from_tensors(reader_tensors, int(sc.get("hidden", READER_HIDDEN)),
                                           int(sc.get("members", READER_MEMBERS)))
    missing, unexpected = top.load_state_dict(tensors, strict=False)
    if missing or unexpected:
        raise checkpoints.CheckpointError(f"checkpoint {name!r} does not fit the judge network "
                                          f"(missing {list(missing)[:3]}, unexpected {list(unexpected)[:3]})")
    mix = manifest.get("lm", {}).get("mix", {})
    if reader is not None and mix.get("mme_weights") and mix.get("mme_checkpoints") != _mme_checkpoints():
        import warnings
        warnings.warn(f"judge {name!r} weighs MME-CRS fitted with MME checkpoints {mix.get('mme_checkpoints')}, "
                      f"but the installed ones are {_mme_checkpoints()}: re-train its mix (`dialeval train "
                      "judge-lm`) before trusting its P(A)", stacklevel=2)
    return PairwiseJudge(top, manifest, name, reader=reader)


def _mme_checkpoints() -> str:
    """A short hash of the MME sub-metrics' checkpoints (what a judge reading MME-CRS also depends on)."""
    from core.metrics.mme import all_checkpoints_hash
    return all_checkpoints_hash()


def _mix_identity(mix: dict[str, Any]) -> str:
    """``|mix:<hash of the mix weights>`` (and ``|mme:<MME checkpoints>`` when the mix reads MME-CRS): what a
    judge's outputs depend on beyond its tensors."""
    import hashlib
    import json
    keys = ("w_judge", "w_lm", "w_mme", "mme_weights")
    h = hashlib.sha256(json.dumps({k: mix[k] for k in keys if k in mix}, sort_keys=True).encode()).hexdigest()[:8]
    return f"|mix:{h}" + (f"|mme:{_mme_checkpoints()}" if mix.get("mme_weights") else "")


_LOADED: dict[tuple[str, str | None], PairwiseJudge] = {}


def load_judge(name: str = CHECKPOINT, directory: str | None = None) -> PairwiseJudge:
    """The judge stored as checkpoint ``name`` (+ manifest), rebuilt on the base MiniLM; cached per process."""
    key = (name, directory)
    if key not in _LOADED:
        tensors, manifest = checkpoints.load(name, directory)
        _LOADED[key] = judge_from_tensors(tensors, manifest, name)
    return _LOADED[key]


def forget_loaded_judges() -> None:
    """Drop the per-process judge cache (after a trainer rewrote a checkpoint)."""
    _LOADED.clear()
