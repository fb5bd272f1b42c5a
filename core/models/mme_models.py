"""The models behind MME-CRS's nine sub-metrics (METHODS.md §4), for inference; their training is in
``core/training/mme.py``.

Built from what exists offline here (see docs/mme.md for the differences from the paper):

- FM fluency, RM relevance: all-MiniLM-L6-v2 with only its top transformer layer and a linear head
  fine-tuned (the paper fine-tunes SimCSE). Checkpoints store the trained layer + head only; the rest is
  rebuilt from the base model at load time.
- TCM topic coherence: keyword graph (context keywords x response keywords, bipartite edges + self
  loops), node features = MiniLM's static word-piece embeddings (ConceptNet is not available offline),
  two graph-attention layers, pooled into a classifier of true vs. negative response (after GRADE).
- EM engagement: ridge regression on frozen MiniLM sentence features of (context, response), trained on
  engagement-dd (MIT) with engagement rescaled from 1-5 to [0, 1].
- SM specificity: no masked LM ships offline, so SmolLM2-135M-Instruct scores the response's tokens
  in one causal forward pass over the response alone (instead of masking each token in turn).
- PM context PMI (not in the paper; added for issue 20, see docs/mme.md): SmolLM2-135M-Instruct reads the
  response once after the conversation in its chat format and once alone; how much the context raises the
  response tokens' probabilities.

Training data of FM/RM/TCM: chitchat-dataset (MIT), split by conversation (``core.models.corpus``: every
10th conversation is held out for tests and reported quality). Seeds are fixed everywhere.
"""
from __future__ import annotations

import functools
import gzip
import hashlib
import json
import math
import re
import zlib
from typing import Callable, Hashable, Sequence

import numpy as np
import torch
from torch import nn
import torch.nn.functional as F

from core.models import checkpoints
from core.models.batching import fixed_shape_batches, in_fixed_rows, padded_batch
from core.models.device import on_device, placed, smollm_dtype
from core.models.corpus import CTX_TURNS, chitchat_split
from core.models.encoders import smollm_threads
from core.models.smollm_reading import (RESPONSE_TOKENS, TURN_TOKENS, TURNS, chat_reading, context_turns,
                                        response_token_logprobs)
from core.settings import checkpoint_file

FM_MAX_LEN = 40
RM_MAX_LEN = 64
SM_CTX_TOKENS = 0  # SmolLM2 prompt: 0 = the response alone, as the paper's SM (and the CPU budget); see docs
SM_RESP_TOKENS = 40
PM_TURNS = TURNS  # PM: context turns in the chat prompt (core.models.smollm_reading, shared with the judge)
PM_TURN_TOKENS = TURN_TOKENS  # PM: each turn cut to its last tokens
PM_RESP_TOKENS = RESPONSE_TOKENS  # PM: the response's first tokens read
PM_CHUNK = 1024  # PM: responses read per call of the shared reading (bounds the readings held at once)
PM_COPY_SPAN = 2  # PM: response tokens inside a run of this many tokens found in one context turn are copies
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")  # PM copies
PM_COPY_WORDS = 3  # PM: response tokens on a run of this many words (case-folded) found in one context turn are copies
_WORD = re.compile(r"\w+")
TCM_CTX_KW = 10
TCM_RESP_KW = 8

WORD_RE = re.compile(r"[a-z][a-z']*")


@functools.lru_cache(maxsize=1)
def stop_words() -> frozenset[str]:
    """The words TCM never takes as keywords: scikit-learn's English stop words (a copy,
    ``core.models.english_stop_words``) and chat fillers."""
    from core.models.english_stop_words import ENGLISH_STOP_WORDS
    extra = {"yeah", "oh", "ok", "okay", "just", "really", "like", "im", "i'm", "don't", "it's", "that's",
             "lol", "haha", "hi", "hello", "hey", "yes", "know", "think", "got", "get", "good", "well"}
    return frozenset(ENGLISH_STOP_WORDS) | frozenset(extra)


# ----------------------------------------------------------------------------- context
def context_text(context: Sequence[str], turns: int = CTX_TURNS) -> str:
    return " ".join(t.strip() for t in list(context)[-turns:] if t and t.strip())


# ----------------------------------------------------------------------------- MiniLM top-layer classifier
class MiniLMClassifier(nn.Module):
    """all-MiniLM-L6-v2 with its top ``n_train`` layers trainable and a linear head on mean pooling.

    ``trained_state()`` returns only the trainable tensors (a few MB); ``load_trained`` puts them back on a
    freshly loaded base model."""

    def __init__(self, n_train: int = 1, pair: bool = False, max_len: int = 64):
        super().__init__()
        from transformers import AutoModel, AutoTokenizer
        from core.models.encoders import minilm_path
        from core.progress import model_loading
        with model_loading():
            self.bert = AutoModel.from_pretrained(minilm_path())
        self.tok = AutoTokenizer.from_pretrained(minilm_path())
        self.tok.truncation_side = "left"  # keep the end of a long context
        self.pair, self.max_len, self.n_train = pair, max_len, n_train
        n_layers = len(self.bert.encoder.layer)
        self.trained_prefixes = tuple(f"bert.encoder.layer.{i}." for i in range(n_layers - n_train, n_layers))
        for name, p in self.bert.named_parameters():
            p.requires_grad = ("bert." + name).startswith(self.trained_prefixes)
        self.head = nn.Sequential(nn.Dropout(0.1), nn.Linear(self.bert.config.hidden_size, 1))

    def encode_inputs(self, texts: Sequence[str], responses: Sequence[str] | None = None):
        if self.pair:
            return self.tok(list(texts), list(responses), truncation="only_first", max_length=self.max_len,
                            padding=True, return_tensors="pt")
        return self.tok(list(texts), truncation=True, max_length=self.max_len, padding=True, return_tensors="pt")

    def forward(self, input_ids, attention_mask, token_type_ids=None):
        h = self.bert(input_ids=input_ids, attention_mask=attention_mask,
                      token_type_ids=token_type_ids).last_hidden_state
        m = attention_mask.unsqueeze(-1).to(h.dtype)
        pooled = (h * m).sum(1) / m.sum(1).clamp(min=1.0)
        return self.head(pooled).squeeze(-1)

    def trained_state(self) -> dict[str, torch.Tensor]:
        return {k: v for k, v in self.state_dict().items() if k.startswith(self.trained_prefixes + ("head.",))}

    def load_trained(self, tensors: dict[str, torch.Tensor]) -> None:
        missing = set(self.trained_state()) - set(tensors)
        if missing:
            raise checkpoints.CheckpointError(f"checkpoint lacks tensors {sorted(missing)[:3]}...")
        self.load_state_dict(tensors, strict=False)

    @torch.inference_mode()
    @torch.inference_mode()
    def predict(self, texts: Sequence[str], responses: Sequence[str] | None = None,
                progress: Callable | None = None, desc: str = "") -> np.ndarray:
        """Sigmoid probabilities, on fixed-shape batches (``core.models.batching``)."""
        self.eval()
        enc = (self.tok(list(texts), list(responses), truncation="only_first", max_length=self.max_len)
               if self.pair else self.tok(list(texts), truncation=True, max_length=self.max_len))
        ids, types = enc["input_ids"], enc.get("token_type_ids")
        n = len(ids)
        out = np.zeros(n, dtype=np.float64)
        done = 0
        placed(self)
        for idx, length in fixed_shape_batches([len(x) for x in ids]):
            x, mask = padded_batch(ids, idx, length)
            t = padded_batch(types, idx, length)[0] if types is not None else torch.zeros_like(x)
            out[idx] = torch.sigmoid(self(*on_device(x, mask, t))).double().cpu().numpy()[:len(idx)]
            done += len(idx)
            if progress:
                progress(done, n, desc)
        return out


# ----------------------------------------------------------------------------- RM: head on frozen MiniLM
class PairHead(nn.Module):
    """Relevance head on frozen MiniLM sentence embeddings: MLP([e_c, e_r, e_c*e_r, |e_c-e_r|]) -> logit."""

    def __init__(self, d: int = 384, hidden: int = 256):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(4 * d, hidden), nn.ReLU(), nn.Dropout(0.1), nn.Linear(hidden, 1))

    def forward(self, ec: torch.Tensor, er: torch.Tensor) -> torch.Tensor:
        return self.mlp(torch.cat([ec, er, ec * er, (ec - er).abs()], -1)).squeeze(-1)

    @torch.inference_mode()
    def predict(self, ec: np.ndarray, er: np.ndarray) -> np.ndarray:
        """P(relevant) of each (context, response) vector pair, in fixed row chunks."""
        self.eval()
        d = ec.shape[1]

        def head(x: np.ndarray) -> np.ndarray:
            t = torch.from_numpy(x).float()
            return torch.sigmoid(self(t[:, :d], t[:, d:])).double().numpy()
        return in_fixed_rows(head, np.concatenate([ec, er], axis=1).astype(np.float32))


# ----------------------------------------------------------------------------- TCM: keyword graph + GAT
SHIPPED_IDF = "chitchat-idf.json.gz"
"""The word counts behind :func:`chitchat_idf`, shipped in ``checkpoints/`` for the corpus file they were counted
from, so that scoring TCM does not read and count the corpus in every process (about 3 s on 2 cores); written by
``python scripts/build_chitchat_idf.py`` and checked against a fresh count by ``tests/test_mme.py``."""


def chitchat_document_frequencies() -> tuple[int, dict[str, int]]:
    """(n, df): the number of utterances in chitchat's training conversations (``core.models.corpus``) and, per
    word (``WORD_RE`` on the lower-cased utterance), how many of them hold it."""
    train, _ = chitchat_split()
    df: dict[str, int] = {}
    n = 0
    for d in train:
        for t in d:
            n += 1
            for w in set(WORD_RE.findall(t.lower())):
                df[w] = df.get(w, 0) + 1
    return n, df


def idf_code_fingerprint() -> str:
    """A hash of the code that turns the corpus into the counts (the corpus reader, the split, the counting and
    its word pattern), so a change to any of them never meets counts shipped before it."""
    import inspect

    from core.models import corpus
    source = "\n".join(inspect.getsource(f) for f in (corpus.chitchat_dialogues, corpus.chitchat_split,
                                                      chitchat_document_frequencies))
    return hashlib.sha1(f"{source}\n{WORD_RE.pattern}\n{corpus.HELD_OUT_EVERY}".encode("utf-8")).hexdigest()[:12]


def shipped_document_frequencies() -> tuple[int, dict[str, int]] | None:
    """The shipped (n, df) (:data:`SHIPPED_IDF`) when they were counted from the installed corpus file (same
    SHA-256, about 0.1 s for its 40 MB) by this code (:func:`idf_code_fingerprint`), else None."""
    try:
        from core.models.retrieval import chitchat_corpus_file
        with gzip.open(checkpoint_file(SHIPPED_IDF), "rt", encoding="utf-8") as f:
            shipped = json.load(f)
        digest = hashlib.sha256(chitchat_corpus_file().read_bytes()).hexdigest()
        code = idf_code_fingerprint()  # OSError / TypeError where the source cannot be read
    except (ImportError, OSError, EOFError, ValueError, TypeError, zlib.error):
        return None
    if (isinstance(shipped, dict) and shipped.get("corpus_sha256") == digest and shipped.get("code") == code
            and isinstance(shipped.get("utterances"), int) and isinstance(shipped.get("df"), dict)):
        return shipped["utterances"], shipped["df"]
    return None


@functools.lru_cache(maxsize=1)
def chitchat_idf() -> dict[str, float]:
    """Inverse document frequency of words over chitchat training utterances: idf(w) = ln((n + 1) / (df(w) + 1))
    + 1, from the shipped counts where they match the installed corpus, else counted
    (:func:`chitchat_document_frequencies`); the same numbers either way."""
    n, df = shipped_document_frequencies() or chitchat_document_frequencies()
    return {w: math.log((n + 1) / (c + 1)) + 1.0 for w, c in df.items()}


def keywords(text: str, k: int) -> list[str]:
    """Up to k keywords: non-stop-words, highest idf first (unknown words count as rarest)."""
    idf = chitchat_idf()
    sw = stop_words()
    seen: list[str] = []
    for w in WORD_RE.findall(text.lower()):
        w = w.strip("'")
        if len(w) >= 2 and w not in sw and w not in seen:
            seen.append(w)
    top = max(idf.values()) if idf else 1.0
    return sorted(seen, key=lambda w: -idf.get(w, top))[:k]


class WordVectors:
    """Node features: mean of MiniLM's static word-piece input embeddings of a word (cached)."""

    def __init__(self):
        from core.models.encoders import minilm_tokenizer, minilm_word_embeddings
        self.tok = minilm_tokenizer()
        self.emb = minilm_word_embeddings()
        self.cache: dict[str, np.ndarray] = {}

    def __call__(self, word: str) -> np.ndarray:
        v = self.cache.get(word)
        if v is None:
            ids = self.tok.convert_tokens_to_ids(self.tok.tokenize(word)) or [self.tok.unk_token_id]
            v = self.emb[ids].mean(0)
            self.cache[word] = v
        return v


@functools.lru_cache(maxsize=1)
def word_vectors() -> WordVectors:
    return WordVectors()


def build_graphs(contexts: Sequence[str], responses: Sequence[str]):
    """Padded batch: features [B, N, 384], node type [B, N] (0 ctx, 1 resp), valid [B, N], adjacency
    [B, N, N] (context<->response edges plus self loops; padding nodes only see themselves)."""
    wv = word_vectors()
    n_max = TCM_CTX_KW + TCM_RESP_KW
    B = len(contexts)
    dim = wv.emb.shape[1]
    feats = np.zeros((B, n_max, dim), dtype=np.float32)
    ntype = np.zeros((B, n_max), dtype=np.int64)
    valid = np.zeros((B, n_max), dtype=bool)
    adj = np.zeros((B, n_max, n_max), dtype=bool)
    for b, (c, r) in enumerate(zip(contexts, responses)):
        ck = keywords(c, TCM_CTX_KW) or ["<none>"]
        rk = keywords(r, TCM_RESP_KW) or ["<none>"]
        nodes = ck + rk
        for i, w in enumerate(nodes):
            feats[b, i] = 0.0 if w == "<none>" else wv(w)
        nc, nr = len(ck), len(rk)
        ntype[b, nc:nc + nr] = 1
        valid[b, :nc + nr] = True
        adj[b, :nc, nc:nc + nr] = True
        adj[b, nc:nc + nr, :nc] = True
    idx = np.arange(n_max)
    adj[:, idx, idx] = True
    return (torch.from_numpy(feats), torch.from_numpy(ntype), torch.from_numpy(valid), torch.from_numpy(adj))


class GATLayer(nn.Module):
    """Graph attention (Velickovic et al. 2018) on a dense adjacency mask: multi-head, concatenated."""

    def __init__(self, d_in: int, d_out: int, heads: int = 2):
        super().__init__()
        self.heads, self.d_out = heads, d_out
        self.W = nn.Linear(d_in, heads * d_out, bias=False)
        self.a_src = nn.Parameter(torch.empty(heads, d_out))
        self.a_dst = nn.Parameter(torch.empty(heads, d_out))
        nn.init.xavier_uniform_(self.a_src)
        nn.init.xavier_uniform_(self.a_dst)

    def forward(self, h: torch.Tensor, adj: torch.Tensor) -> torch.Tensor:
        B, N, _ = h.shape
        wh = self.W(h).view(B, N, self.heads, self.d_out)
        e = F.leaky_relu((wh * self.a_dst).sum(-1).unsqueeze(2) + (wh * self.a_src).sum(-1).unsqueeze(1), 0.2)
        e = e.masked_fill(~adj.unsqueeze(-1), float("-inf"))  # [B, i, j, H]
        alpha = torch.softmax(e, dim=2)
        out = torch.einsum("bijh,bjhd->bihd", alpha, wh)
        return F.elu(out.reshape(B, N, self.heads * self.d_out))


class TCMNet(nn.Module):
    def __init__(self, d_in: int = 384, d: int = 128, heads: int = 2):
        super().__init__()
        self.proj = nn.Linear(d_in, d)
        self.norm = nn.LayerNorm(d)
        self.type_emb = nn.Embedding(2, d)
        nn.init.normal_(self.type_emb.weight, std=0.02)
        self.gat1 = GATLayer(d, d // heads, heads)
        self.gat2 = GATLayer(d, d // heads, heads)
        self.cls = nn.Sequential(nn.Linear(5 * d + 2, d), nn.ReLU(), nn.Dropout(0.1), nn.Linear(d, 1))

    @staticmethod
    def keyword_similarity(feats, ntype, valid):
        """[mean over response keywords of the max cosine to a context keyword, the overall max]: the
        cosine of the edge endpoints' word vectors, pooled -- a direct topic-overlap signal."""
        fn = F.normalize(feats, dim=-1)
        sim = fn @ fn.transpose(1, 2)
        ctx = (valid & (ntype == 0)).unsqueeze(1)  # [B, 1, j]
        resp = valid & (ntype == 1)  # [B, i]
        best = sim.masked_fill(~ctx, -1.0).max(2).values  # [B, i]
        r = resp.float()
        mean_best = (best * r).sum(1) / r.sum(1).clamp(min=1)
        max_best = best.masked_fill(~resp, -1.0).max(1).values
        return torch.stack([mean_best, max_best], -1)

    def forward(self, feats, ntype, valid, adj):
        h = self.norm(self.proj(feats)) + self.type_emb(ntype)
        h = h + self.gat1(h, adj)
        h = h + self.gat2(h, adj)
        vm = valid.unsqueeze(-1).float()
        cm = vm * (ntype == 0).unsqueeze(-1).float()
        rm = vm * (ntype == 1).unsqueeze(-1).float()
        mc = (h * cm).sum(1) / cm.sum(1).clamp(min=1)
        mr = (h * rm).sum(1) / rm.sum(1).clamp(min=1)
        mx = h.masked_fill(~valid.unsqueeze(-1), -1e4).max(1).values
        ks = self.keyword_similarity(feats, ntype, valid)
        return self.cls(torch.cat([mc, mr, mc * mr, (mc - mr).abs(), mx, ks], -1)).squeeze(-1)

    @torch.inference_mode()
    def predict(self, contexts: Sequence[str], responses: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """P(coherent) of each (context, response), in batches of exactly ``batch_size`` graphs (the last
        filled with empty graphs), so a row's score does not depend on its batch mates."""
        self.eval()
        out = []
        n = len(contexts)
        for s in range(0, n, batch_size):
            c, r = list(contexts[s:s + batch_size]), list(responses[s:s + batch_size])
            k = len(c)
            g = build_graphs(c + [""] * (batch_size - k), r + [""] * (batch_size - k))
            out.append(torch.sigmoid(self(*g)).double().numpy()[:k])
        return np.concatenate(out) if out else np.zeros(0)


# ----------------------------------------------------------------------------- SM: SmolLM2 token surprisal
class SmolScorer:
    """Per-token log-likelihood of a response from SmolLM2-135M-Instruct (bfloat16, or float32 on a CPU without
    bfloat16 kernels; one forward pass per batch; the LM head is applied only at the response's positions).
    With ``ctx_tokens`` > 0 the last ``ctx_tokens`` tokens of the context are the prompt; the shipped setting is
    0 (the response alone, as the paper's SM scores the response with a masked LM without the context).

    Raw statistics per response (T = response tokens, p_t the model's probability of token t, H_t the
    entropy of the model's prediction at t):
      nll = sum_t -log p_t               (total surprisal: specific, content-rich replies score high)
      nce = mean_t (log p_t + H_t)       (negative cross-entropy relative to the model's own expectation:
                                          > 0 when tokens are likelier than the model expected)
      ppl = exp(mean_t -log p_t)         (perplexity, length-normalized)
    """

    def __init__(self, ctx_tokens: int = SM_CTX_TOKENS):
        from core.models.encoders import smollm
        self.ctx_tokens = ctx_tokens
        tok, model = smollm()
        self.tok = tok
        self.model = model.to(getattr(torch, smollm_dtype()))
        self.model.eval()
        self.bos = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
        self.pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id

    def _ids(self, context: str, response: str) -> tuple[list[int], list[int]]:
        """(prompt ids, response ids)."""
        if self.ctx_tokens > 0 and context:
            c = self.tok(context, add_special_tokens=False)["input_ids"][-self.ctx_tokens:]
            prompt = [self.bos] + c + self.tok("\n", add_special_tokens=False)["input_ids"]
        else:
            prompt = [self.bos]
        r = self.tok(" " + response.strip(), add_special_tokens=False)["input_ids"][:SM_RESP_TOKENS] or [self.pad]
        return prompt, r

    @torch.inference_mode()
    def raw(self, contexts: Sequence[str], responses: Sequence[str], progress: Callable | None = None,
            desc: str = "SM") -> np.ndarray:
        """n x 3 array of (nll, nce, ppl), on fixed-shape batches (``core.models.batching``): a response's
        statistics never depend on the responses read with it."""
        seqs = [self._ids(c, r) for c, r in zip(contexts, responses)]
        out = np.zeros((len(seqs), 3), dtype=np.float64)
        with smollm_threads():
            read = response_token_logprobs(self.model, self.pad, seqs, entropy=True, progress=progress, desc=desc)
        for i, (tok_lp, ent, _) in enumerate(read):
            out[i] = (float(-tok_lp.sum()), float((tok_lp + ent).mean()), math.exp(float(-tok_lp.mean())))
        return out


# ----------------------------------------------------------------------------- PM: context PMI (SmolLM2 chat)
class PMIScorer:
    """How much the context raises SmolLM2's probability of each response token (pointwise mutual information),
    with the conversation in SmolLM2-Instruct's chat format: the last ``PM_TURNS`` context turns as alternating
    ``user``/``assistant`` messages (the last turn is the user's, each cut to its last ``PM_TURN_TOKENS`` tokens),
    then ``<|im_start|>assistant\n`` and the response (at most ``PM_RESP_TOKENS`` tokens; this pass is the reading
    ``core.models.smollm_reading`` shares with the judge's reader). The same response is also read after
    ``<|im_start|>assistant\n`` alone. With a_t = log p(r_t | context, r_<t) and b_t = log p(r_t | r_<t) over the T
    response tokens, and N the response tokens that are not copied from the
    context (:func:`copied_tokens` on :meth:`token_forms`: inside a run of ``PM_COPY_SPAN`` tokens that occurs in
    one context turn, case and leading space ignored; or :func:`copied_word_tokens`: on a run of ``PM_COPY_WORDS``
    words of one context turn, case ignored), per response:

      share    = (1/|N|) sum_{t in N} [a_t > b_t]         (the share of the new tokens the context made likelier)
      evidence = (1/sqrt|N|) sum_{t in N} (a_t - b_t)     (the new tokens' total pointwise mutual information
                                                           with the context over the root of their count, nats)
      (share = evidence = 0 when every token is copied: saying the user's words back adds nothing)
      ll_mean = (1/T) sum_t a_t, ll_sum = sum_t a_t   (plain log-likelihood given the context: baselines)

    Copies are left out because a copied token is exactly what the context makes likely: with them, a reply
    that repeats the user's turn had the highest PMI of all (docs/mme.md, "Copies and parrots"). The evidence
    divides by sqrt|N| rather than |N| so that a two-word reply whose few tokens the context predicts does not
    outscore a full answer as the mean let it (the divisors |N|^p, p = 0, 0.25, 0.5, 0.75, 1, were compared by
    leave-one-dataset-out, docs/mme.md). Two forward passes per response on fixed-shape batches
    (``core.models.batching``), bfloat16 like SM; the first is remembered per item (``chat_reading``)."""

    def __init__(self):
        self.reading = chat_reading()  # the with-context pass, shared with the judge's reader
        self.tok, self.model, self.pad = self.reading.tok, self.reading.model, self.reading.pad
        self.im_start, self.assistant = self.reading.im_start, self.reading.assistant
        self._forms: dict[int, str] = {}

    def token_forms(self, ids: Sequence[int]) -> list[str]:
        """Each token as :func:`copied_tokens` compares it: without the leading-space mark, its ASCII letters
        lower-cased, so "It" at the start of a reply matches " it" inside the user's turn. Only A-Z are folded: the
        tokenizer spells every other byte as a character too (U+0120 "Ġ" is the space), and lower-casing those
        would make different bytes equal (上 and 下 had one form)."""
        forms = self._forms
        for i in ids:
            if i not in forms:
                forms[i] = self.tok.convert_ids_to_tokens(int(i)).replace("\u0120", "").translate(_ASCII_LOWER)
        return [forms[i] for i in ids]

    def prompt(self, context: Sequence[str]) -> list[int]:
        return self.reading.prompt(context)

    @torch.inference_mode()
    def raw(self, contexts: Sequence[Sequence[str]], responses: Sequence[str], progress: Callable | None = None,
            desc: str = "PM") -> np.ndarray:
        """n x 4 array of (share, evidence, ll_mean, ll_sum) as defined in the class docstring. The with-context
        pass is the shared reading (``core.models.smollm_reading``; remembered, and read once with the judge's
        reader), in chunks of ``PM_CHUNK`` responses."""
        contexts = [list(c) for c in contexts]
        texts = [r.strip() for r in responses]
        encoded = [self.tok(t, add_special_tokens=False, return_offsets_mapping=True) for t in texts]
        resp = [e["input_ids"][:PM_RESP_TOKENS] or [self.pad] for e in encoded]
        n = len(resp)
        # two passes over n responses: report them as one count of n (each response is half done after the first)
        halves = (lambda d, _total, label: progress(d // 2, n, label)) if progress else None
        with_ctx = []
        for s in range(0, n, PM_CHUNK):
            with_ctx += [r.token_logprobs for r in self.reading.read(
                contexts[s:s + PM_CHUNK], texts[s:s + PM_CHUNK], progress=halves, desc=desc, done0=s, total=2 * n)]
        with smollm_threads():
            alone = response_token_logprobs(self.model, self.pad, [(self.im_start + self.assistant, r) for r in resp],
                                            progress=halves, desc=desc, done0=n, total=2 * n)
        out = np.zeros((n, 4), dtype=np.float64)
        for i, (a, (b, _, _)) in enumerate(zip(with_ctx, alone)):
            a, b = a.astype(np.float64), b.double().numpy()
            said = context_turns(contexts[i])
            offsets = encoded[i]["offset_mapping"][:PM_RESP_TOKENS]
            words = copied_word_tokens(texts[i], offsets, said) if offsets else np.zeros(len(resp[i]), dtype=bool)
            said_forms = [self.token_forms(self.reading.encode(t)) for t in said]
            new = ~(copied_tokens(self.token_forms(resp[i]), said_forms) | words)
            gain = a[new] - b[new]
            share, evidence = (float(np.mean(gain > 0)), float(np.sum(gain) / np.sqrt(len(gain)))) if new.any() \
                else (0.0, 0.0)
            out[i] = (share, evidence, float(np.mean(a)), float(np.sum(a)))
        return out


def copied_tokens(response: Sequence[Hashable], context_turns: Sequence[Sequence[Hashable]],
                  span: int = PM_COPY_SPAN) -> np.ndarray:
    """True at each response token inside a run of ``span`` consecutive tokens that also occurs, in that order,
    within one context turn (tokens as given: ``PMIScorer`` passes their lower-cased forms, ``token_forms``)."""
    copied = np.zeros(len(response), dtype=bool)
    runs = {tuple(t[i:i + span]) for t in context_turns for i in range(len(t) - span + 1)}
    for start in range(len(response) - span + 1):
        if tuple(response[start:start + span]) in runs:
            copied[start:start + span] = True
    return copied


def copied_word_tokens(text: str, offsets: Sequence[tuple[int, int]], context_turns: Sequence[str],
                       span: int = PM_COPY_WORDS) -> np.ndarray:
    """True at each response token (its character span in ``text``, ``offsets``) whose words all lie inside a run
    of ``span`` consecutive words (``\\w+``, case-folded) that also occurs, in that order, within one context turn;
    a token with no word character goes with the word token before it (else the one after). Catches the copies
    that :func:`copied_tokens` misses because a change of case changed the tokens ("I WENT HIKING")."""
    text = text[:offsets[-1][1]] if len(offsets) else ""  # the words of the tokens read, not beyond
    words = [(m.start(), m.end(), m.group().casefold()) for m in _WORD.finditer(text)]
    runs = set()
    for turn in context_turns:
        said = [m.group().casefold() for m in _WORD.finditer(turn)]
        runs.update(tuple(said[i:i + span]) for i in range(len(said) - span + 1))
    on_run = np.zeros(len(words), dtype=bool)
    for start in range(len(words) - span + 1):
        if tuple(w for _, _, w in words[start:start + span]) in runs:
            on_run[start:start + span] = True
    copied = np.zeros(len(offsets), dtype=bool)
    wordy = np.zeros(len(offsets), dtype=bool)
    for t, (a, b) in enumerate(offsets):
        over = [j for j, (ws, we, _) in enumerate(words) if ws < b and a < we]
        if over:
            wordy[t], copied[t] = True, all(on_run[j] for j in over)
    for t in np.flatnonzero(~wordy):
        before, after = np.flatnonzero(wordy[:t]), np.flatnonzero(wordy[t + 1:])
        if len(before) or len(after):
            copied[t] = copied[before[-1] if len(before) else t + 1 + after[0]]
    return copied


# ----------------------------------------------------------------------------- normalization
def ecdf_normalize(x: np.ndarray, quantiles: np.ndarray) -> np.ndarray:
    """Map raw values to [0, 1] by the empirical CDF of a fixed reference distribution (its quantiles at
    evenly spaced levels), with linear interpolation -- a score never depends on the batch."""
    q = np.asarray(quantiles, dtype=np.float64)
    levels = np.linspace(0.0, 1.0, len(q))
    return np.interp(np.asarray(x, dtype=np.float64), q, levels, left=0.0, right=1.0)
