"""Reference pools of (utterance, response) pairs and the four retrievers of the υBLEU paper's Table 2.

Retrievers (Tsuta et al. 2020, §4.1; ``RETRIEVERS``):
- ``bm25-ur``: BM25 similarity of utterances x BM25 similarity of responses (test reference vs pool response);
- ``bm25-u``: BM25 on utterances only;
- ``emb-ur``: cosine of utterance embeddings x cosine of response embeddings;
- ``emb-u`` (default, the paper's best): cosine of utterance embeddings only.
Embeddings are all-MiniLM-L6-v2 sentence vectors (the paper averaged word vectors; a sentence encoder
is the upgrade METHODS.md allows), searched exactly on a 1/2048 grid (``Retriever.search``; an HNSW graph above
300k pairs). BM25 is ``bm25s`` (Lucene variant, k1=1.5, b=0.75).

Choices the paper leaves open:
- the ``*-ur`` products use similarities clipped at 0 (a product of two negative cosines is not a match);
  ``emb-ur`` reranks the 256 nearest utterances, ``bm25-ur`` scores every pool pair exactly;
- retrieved pairs with the same normalized response are kept once (the best), so 15 references are 15
  different replies;
- the **leakage guard** drops a pool pair whose (utterance, response) equals the test pair after
  normalization (lowercase, punctuation and spacing removed), or whose response equals the test
  reference.

The embedding index of a pool is built once (with progress) and cached on disk under
``core.settings.cache_location()``, keyed by the pool's content hash and the encoder's
weights. The default chitchat pool's index ships in ``checkpoints/`` as a product-quantized faiss index
(128 bytes a vector), so a fresh machine never waits for it.
"""
from __future__ import annotations

import functools
import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from core.models.corpus import chitchat_dialogues
from core.outputs import atomic_path
from core.progress import Progress, tick
from core.settings import cache_location, checkpoint_file

RETRIEVERS = ("emb-u", "emb-ur", "bm25-u", "bm25-ur")
DEFAULT_RETRIEVER = "emb-u"
# Exact search scores vectors rounded to multiples of 1/SIM_SCALE: for unit vectors every product and partial sum
# of the rounded coordinates is then an integer below SIM_SCALE**2 = 2**22 < 2**24, which float32 holds exactly,
# so a similarity is the same number whatever the batch, the BLAS kernel or the thread count (grid_search).
SIM_SCALE = 2048
NORM_ROWS = 8192  # decoded pool vectors normalized this many at a time (load_pq_vectors)
QUERY_BLOCK = 128  # queries scored together (memory: QUERY_BLOCK x pool size float32); never changes a result


_NORM_RE = re.compile(r"[^\w\s]", re.UNICODE)


def normalize(text: str) -> str:
    """Lowercase, drop punctuation, collapse spaces: the identity used by the leakage guard."""
    return " ".join(_NORM_RE.sub(" ", text.lower()).split())


@dataclass
class Pool:
    """Consecutive (utterance, response) pairs; ``texts`` holds each distinct string once and
    ``utt_idx`` / ``resp_idx`` point into it (a turn is usually both a response and the next utterance)."""

    name: str
    texts: list[str]
    utt_idx: np.ndarray
    resp_idx: np.ndarray
    conv_id: np.ndarray  # which conversation a pair comes from (for splits)

    def __len__(self) -> int:
        return len(self.utt_idx)

    def utterance(self, i: int) -> str:
        return self.texts[self.utt_idx[i]]

    def response(self, i: int) -> str:
        return self.texts[self.resp_idx[i]]

    @functools.cached_property
    def text_ids(self) -> dict[str, int]:
        """{text: its index in ``texts``}."""
        return {t: i for i, t in enumerate(self.texts)}

    @functools.cached_property
    def content_hash(self) -> str:
        h = hashlib.sha256()
        for t in self.texts:
            h.update(t.encode("utf-8"))
            h.update(b"\0")
        h.update(self.utt_idx.tobytes())
        h.update(self.resp_idx.tobytes())
        return h.hexdigest()[:12]

    @property
    def key(self) -> str:
        return f"{self.name}-{self.content_hash}"

    @classmethod
    def from_dialogues(cls, name: str, dialogues: Sequence[Sequence[str]]) -> "Pool":
        ids: dict[str, int] = {}
        texts: list[str] = []
        utt, resp, conv = [], [], []

        def tid(t: str) -> int:
            if t not in ids:
                ids[t] = len(texts)
                texts.append(t)
            return ids[t]

        for c, turns in enumerate(dialogues):
            turns = [t for t in turns if t.strip()]
            for a, b in zip(turns, turns[1:]):
                utt.append(tid(a))
                resp.append(tid(b))
                conv.append(c)
        if not utt:
            raise ValueError(f"pool {name!r} has no (utterance, response) pairs")
        return cls(name, texts, np.array(utt, dtype=np.int64), np.array(resp, dtype=np.int64),
                   np.array(conv, dtype=np.int64))

    @classmethod
    def from_pairs(cls, name: str, pairs: Sequence[tuple[str, str]]) -> "Pool":
        return cls.from_dialogues(name, [[u, r] for u, r in pairs])


@functools.lru_cache(maxsize=1)
def chitchat_pool() -> Pool:
    """The default pool: every consecutive (utterance, response) pair of chitchat-dataset (MIT)."""
    return Pool.from_dialogues("chitchat", chitchat_dialogues())


def load_pool(path: str | os.PathLike) -> Pool:
    """A pool from a file: JSONL of ``{"utterance": ..., "response": ...}`` (or ``context``/``response``,
    the last context turn being the utterance), or DailyDialog text (one dialogue a line, turns separated
    by ``__eou__``)."""
    from dataclasses import replace

    from core.data import DataError, Problem, iter_json_lines, read_text
    path = str(path)
    try:
        text = read_text(path)
    except DataError as e:  # named as the pool, not taken for the input
        raise DataError([replace(p, message=f"{p.message} (the υBLEU reference pool)") for p in e.problems]) from None
    name = Path(path).stem
    if "__eou__" in text[:100000]:
        dialogues = [[t.strip() for t in line.split("__eou__")] for line in text.splitlines() if line.strip()]
        return Pool.from_dialogues(name, dialogues)
    pairs: list[tuple[str, str]] = []
    problems: list[Problem] = []
    for i, rec in iter_json_lines(path, text, problems):
        u = rec.get("utterance") if isinstance(rec, dict) else None
        if u is None and isinstance(rec, dict) and rec.get("context"):
            ctx = rec["context"]
            u = ctx[-1] if isinstance(ctx, list) else str(ctx).split("\n")[-1]
        r = rec.get("response") if isinstance(rec, dict) else None
        if not isinstance(u, str) or not isinstance(r, str):
            problems.append(Problem(path, i, "utterance/response", "needs string 'utterance' (or 'context') and 'response'"))
            continue
        pairs.append((u, r))
    if problems and not pairs:  # not one pair read: the file is not a pool at all (plain text, another format)
        raise DataError([Problem(path, None, None, "is not a υBLEU reference pool: give JSON Lines of {\"utterance\": "
                                 "..., \"response\": ...} (or \"context\" and \"response\"), or DailyDialog text (one "
                                 "dialogue a line, turns separated by __eou__)")])
    if problems:
        raise DataError([replace(p, message=f"{p.message} (the υBLEU reference pool)") for p in problems])
    return Pool.from_pairs(name, pairs)


SHIPPED_POOL_KEY = "pool-chitchat.json"  # the default pool's key, by the corpus file's SHA-256 (build_pool_index.py)
_POOL_KEYS: dict[str, str] = {}  # the default pool's key, once known in this process


def chitchat_corpus_file() -> Path:
    """The file chitchat-dataset reads its conversations from (the default pool's source)."""
    import chitchat_dataset
    return Path(chitchat_dataset.__file__).with_name("dataset.json")


def pool_code_fingerprint() -> str:
    """A hash of the source of the code that turns the corpus into the default pool and its key (the corpus
    reader, :meth:`Pool.from_dialogues`, the content hash), so a change to it never meets a key shipped before."""
    import inspect
    parts = (chitchat_dialogues, Pool.from_dialogues, Pool.content_hash.func, Pool.key.fget)
    return hashlib.sha1("\n".join(inspect.getsource(f) for f in parts).encode("utf-8")).hexdigest()[:12]


def shipped_pool_key(data: Path) -> str | None:
    """The default pool's key as shipped in ``checkpoints/`` (:data:`SHIPPED_POOL_KEY`, written by
    ``python scripts/build_pool_index.py --key-only``) when ``data`` is the corpus file it was computed from
    (same SHA-256, about 0.1 s for its 40 MB) and the pool is built by the same code
    (:func:`pool_code_fingerprint`), else None. ``tests/test_retrieval.py`` checks the shipped key against the
    pool built from the installed corpus."""
    import json
    try:
        shipped = json.loads(checkpoint_file(SHIPPED_POOL_KEY).read_text(encoding="utf-8"))
        digest = hashlib.sha256(data.read_bytes()).hexdigest()
    except (OSError, ValueError):
        return None
    if (isinstance(shipped, dict) and shipped.get("corpus_sha256") == digest
            and shipped.get("code") == pool_code_fingerprint() and isinstance(shipped.get("key"), str)):
        return shipped["key"]
    return None


def pool_key(path: str | os.PathLike | None = None) -> str:
    """``get_pool(path).key`` (name and content hash, for signatures). For the default pool the key is read,
    in this order, from this process's memory, from the cache folder (keyed by the chitchat-dataset file's path,
    size and mtime and the source of the code that builds the pool), from the key shipped for that corpus file
    (:func:`shipped_pool_key`), and only then computed by building the pool (about 2 s: the first visit of a
    new machine paid it before the verdict showed); none but the last reads the corpus."""
    if path not in (None, "", "chitchat"):
        return get_pool(path).key
    import json

    from core.models import corpus
    data = chitchat_corpus_file()
    if not data.exists():
        return get_pool(None).key
    st = data.stat()
    code = hashlib.sha1(Path(corpus.__file__).read_bytes() + Path(__file__).read_bytes()).hexdigest()[:12]
    ident = f"{data}:{st.st_size}:{st.st_mtime_ns}:{code}"
    if ident in _POOL_KEYS:
        return _POOL_KEYS[ident]
    memo = cache_location()[0] / "pool-keys.json"  # looked at, not made: an unusable folder only means no memo
    try:
        known = json.loads(memo.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        known = {}
    if isinstance(known, dict) and isinstance(known.get(ident), str):
        _POOL_KEYS[ident] = known[ident]
        return known[ident]
    key = shipped_pool_key(data) or get_pool(None).key
    _POOL_KEYS[ident] = key
    from core.outputs import OutputError, write_text
    try:
        write_text(memo, json.dumps({ident: key}))
    except (OSError, OutputError):  # an unusable cache folder only means no memo
        pass
    return key


def get_pool(path: str | os.PathLike | None = None) -> Pool:
    return chitchat_pool() if path in (None, "", "chitchat") else _load_pool_cached(str(Path(path).resolve()))


@functools.lru_cache(maxsize=4)
def _load_pool_cached(path: str) -> Pool:
    return load_pool(path)


# ------------------------------------------------------------------------------------------------
# embedding index


PQ_M = 128  # bytes per vector in the shipped index: recall@15 0.90 vs exact search on chitchat (64 bytes: 0.79)
HNSW_PAIRS = 300_000  # pools with more pairs are searched with an HNSW graph instead of exactly


def on_grid(vectors: np.ndarray, overwrite: bool = False) -> np.ndarray:
    """Unit vectors rounded to multiples of 1/``SIM_SCALE``, scaled up to integers (float32): the inner product of
    two of them is an exact integer in float32 arithmetic (at most ``SIM_SCALE``**2 in magnitude, by
    Cauchy-Schwarz on the absolute values), and divided by ``SIM_SCALE``**2 it is the cosine within ~1e-4.
    ``overwrite=True`` computes them in ``vectors`` itself when it is a float32 array: the same numbers without
    new arrays of its size (the default pool's utterances, at every process's first υBLEU row: 0.04 s, against
    0.5-0.8 s for the computation that makes them)."""
    grid = vectors if overwrite and isinstance(vectors, np.ndarray) and vectors.dtype == np.float32 else \
        np.array(vectors, dtype=np.float32)
    grid *= SIM_SCALE
    return np.rint(grid, out=grid)


def index_name(pool: Pool) -> str:
    """The file stem of a pool's embedding index (pool content hash + encoder weights hash)."""
    from core.models.encoders import encoder_id
    return f"pool-{pool.key}-{encoder_id()}"


BUILT_VECTORS = "cnr"
"""How a pool index built on this machine was computed, in its cache file name: MiniLM under MKL's strict
reproducible mode (``core.models.blas``). A file without it was computed otherwise and is not read
(docs/architecture.md, "Version 0.6.2")."""


def cached_index_path(pool: Pool) -> Path:
    """The cache file of a pool's exact float16 embeddings built on this machine (with the device key in its name
    when MiniLM's encodings run in bfloat16, ``core.settings.minilm_precision``)."""
    from core.models.device import active_device, device_key, precision_suffix
    # bfloat16 vectors differ by device and kind of CPU more than float16 rounding hides: each gets its own file
    # (the device key ends in +minilm-bf16)
    precision = f"-{device_key(active_device())}" if precision_suffix() else ""
    return cache_location()[0] / f"{index_name(pool)}-{BUILT_VECTORS}{precision}.npy"


def build_embeddings(pool: Pool, progress: Progress | None = None) -> np.ndarray:
    from core.models.encoders import encode
    return encode(pool.texts, progress=progress, desc=f"indexing pool '{pool.name}'", remember=False)


def save_pq_index(vectors: np.ndarray, path: Path, m: int = PQ_M, seed: int = 13) -> None:
    """Compress vectors with faiss product quantization (``m`` bytes each) and write the index."""
    import faiss
    pq = faiss.IndexPQ(vectors.shape[1], m, 8, faiss.METRIC_INNER_PRODUCT)
    rng = np.random.default_rng(seed)
    train = vectors[rng.choice(len(vectors), size=min(len(vectors), 65536), replace=False)]
    pq.train(np.ascontiguousarray(train))
    pq.add(np.ascontiguousarray(vectors))
    with atomic_path(path) as tmp:
        faiss.write_index(pq, str(tmp))


def load_pq_vectors(path: Path) -> np.ndarray:
    """Decode a product-quantized index back to (approximate) unit vectors."""
    import faiss
    index = faiss.read_index(str(path))
    vecs = index.reconstruct_n(0, index.ntotal).astype(np.float32, copy=False)
    for s in range(0, len(vecs), NORM_ROWS):  # np.linalg.norm's sum per row, a block at a time: no pool-sized
        block = vecs[s:s + NORM_ROWS]  # temporary to allocate (the default pool loads in 0.4 s, was 0.8), same bits
        block /= np.sqrt(np.add.reduce(block * block, axis=1, keepdims=True)).clip(1e-8)
    return vecs


def index_location(pool: Pool) -> str | None:
    """Where the pool's embedding index is on this machine: 'shipped', 'cache', or None (it must be built)."""
    name = index_name(pool)
    if checkpoint_file(f"{name}.faiss").exists():
        return "shipped"
    if cached_index_path(pool).exists():
        return "cache"
    return None


def pool_embeddings(pool: Pool, progress: Progress | None = None) -> tuple[np.ndarray, str]:
    """Embeddings of ``pool.texts`` and where they came from ('shipped', 'cache' or 'built').

    Look-up order: shipped PQ index in checkpoints/, then the on-disk cache, else encode (progress
    bar) and cache as float16. A freshly built index is returned float16-rounded too, so the first run over a
    pool gives the numbers every later (cached) run gives. An index built in a process whose MKL is not in its
    reproducible mode (``core.models.blas``) is used but not cached."""
    from core.models.blas import reproducible_products
    shipped = checkpoint_file(f"{index_name(pool)}.faiss")
    if shipped.exists():
        return load_pq_vectors(shipped), "shipped"
    cached = cached_index_path(pool)
    if cached.exists():
        return np.load(cached).astype(np.float32), "cache"
    vecs = build_embeddings(pool, progress).astype(np.float16)
    if reproducible_products() is not False:
        try:  # a cache folder that cannot be written (a read-only HOME) only means the next process builds again
            cached.parent.mkdir(parents=True, exist_ok=True)
            tmp = cached.with_suffix(".tmp.npy")
            np.save(tmp, vecs)
            os.replace(tmp, cached)
        except OSError:
            pass
    return vecs.astype(np.float32), "built"


@dataclass
class Hit:
    pool_index: int
    utterance: str
    response: str
    similarity: float


class Retriever:
    """Finds the pool pairs most similar to a test pair (utterance U1, reference R1)."""

    def __init__(self, pool: Pool, method: str = DEFAULT_RETRIEVER, progress: Progress | None = None):
        if method not in RETRIEVERS:
            raise ValueError(f"unknown retriever {method!r}; choose one of {RETRIEVERS}")
        self.pool, self.method = pool, method
        self._norm_cache: dict[int, tuple[str, str]] = {}
        if method.startswith("emb"):
            self._init_embeddings(progress)
        else:
            self._init_bm25()

    # -- construction ---------------------------------------------------------------------------
    def _init_embeddings(self, progress: Progress | None) -> None:
        vecs, self.index_source = pool_embeddings(self.pool, progress)
        self.text_vecs = vecs
        n = len(self.pool)
        if n > HNSW_PAIRS:  # large pools: HNSW graph instead of exact search
            import faiss
            self.index = faiss.IndexHNSWFlat(vecs.shape[1], 32, faiss.METRIC_INNER_PRODUCT)
            self.index.hnsw.efSearch = 128
            self.index.add(np.ascontiguousarray(vecs[self.pool.utt_idx]))
        else:
            import torch
            self.index = None
            self._utt_grid = torch.from_numpy(on_grid(vecs[self.pool.utt_idx], overwrite=True))  # a new array

    def stored_vector(self, text: str) -> np.ndarray | None:
        """The pool's stored sentence vector of ``text`` (embedding retrievers; None if the pool lacks the text):
        for the shipped chitchat pool the decoded 128-byte PQ code (cosine with the exact MiniLM vector 0.98 on
        average, 0.97 at least on 2,000 pool texts)."""
        if not hasattr(self, "text_vecs"):
            return None
        i = self.pool.text_ids.get(text)
        return None if i is None else self.text_vecs[i]

    def _init_bm25(self) -> None:
        import bm25s
        self.index_source = "built"
        utt_texts = [self.pool.utterance(i) for i in range(len(self.pool))]
        self._bm25_u = bm25s.BM25()
        self._bm25_u.index(bm25s.tokenize(utt_texts, stopwords="en", show_progress=False), show_progress=False)
        if self.method == "bm25-ur":
            resp_texts = [self.pool.response(i) for i in range(len(self.pool))]
            self._bm25_r = bm25s.BM25()
            self._bm25_r.index(bm25s.tokenize(resp_texts, stopwords="en", show_progress=False), show_progress=False)

    # -- leakage guard --------------------------------------------------------------------------
    def _norm(self, i: int) -> tuple[str, str]:
        if i not in self._norm_cache:
            self._norm_cache[i] = (normalize(self.pool.utterance(i)), normalize(self.pool.response(i)))
        return self._norm_cache[i]

    def _leaks(self, i: int, r1n: str | None) -> bool:
        """The pool response is the test reference (which also covers a pool pair identical to the test pair)."""
        return r1n is not None and self._norm(i)[1] == r1n

    def _select(self, cand: np.ndarray, sims: np.ndarray, r1: str | None, k: int) -> list[Hit]:
        r1n = normalize(r1) if r1 else None
        out, seen = [], set()
        for i, s in zip(cand, sims):
            i = int(i)
            if i < 0:
                continue
            if self._leaks(i, r1n):
                continue
            rn = self._norm(i)[1]
            if rn in seen or not rn:
                continue
            seen.add(rn)
            out.append(Hit(i, self.pool.utterance(i), self.pool.response(i), float(s)))
            if len(out) == k:
                break
        return out

    # -- queries --------------------------------------------------------------------------------
    def retrieve(self, utterances: Sequence[str], references: Sequence[str | None] | None = None,
                 k: int = 15, progress: Progress | None = None) -> list[list[Hit]]:
        """Top-``k`` pool pairs for each test pair, most similar first, after the leakage guard."""
        refs = list(references) if references is not None else [None] * len(utterances)
        if len(refs) != len(utterances):
            raise ValueError("one reference (or None) per utterance")
        if self.method.startswith("emb"):
            return self._retrieve_emb(list(utterances), refs, k, progress)
        return self._retrieve_bm25(list(utterances), refs, k, progress)

    def _retrieve_emb(self, utts, refs, k, progress) -> list[list[Hit]]:
        from core.models.encoders import encode
        q = encode(utts, progress=progress, desc="encoding queries")
        over = max(4 * k + 40, 256 if self.method == "emb-ur" else 0)
        sims, cand = self.search(q, min(over, len(self.pool)))
        if self.method == "emb-ur":
            have = [i for i, r in enumerate(refs) if r]
            rq = np.zeros_like(q)
            if have:
                rq[have] = encode([refs[i] for i in have], desc="encoding references")
        out = []
        for j in range(len(utts)):
            c, s = cand[j], sims[j]
            if self.method == "emb-ur" and refs[j]:
                rs = self.text_vecs[self.pool.resp_idx[c]] @ rq[j]
                s = np.clip(s, 0, None) * np.clip(rs, 0, None)
                order = np.argsort(-s, kind="stable")
                c, s = c[order], s[order]
            out.append(self._select(c, s, refs[j], k))
            tick(progress, j + 1, len(utts), "retrieving references")
        return out

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(similarities, pool indices) of the ``k`` nearest utterances of each query vector, most similar first:
        exact search on the 1/``SIM_SCALE`` grid (:func:`grid_search`) for pools up to ``HNSW_PAIRS`` pairs,
        faiss HNSW above (M = 32, efSearch = 128; each query searched on its own)."""
        if self.index is not None:
            return self.index.search(np.ascontiguousarray(queries, dtype=np.float32), k)
        return grid_search(self._utt_grid, queries, k)

    def _retrieve_bm25(self, utts, refs, k, progress) -> list[list[Hit]]:
        import bm25s
        out = []
        for j, (u, r) in enumerate(zip(utts, refs)):
            qt = bm25s.tokenize([u], stopwords="en", show_progress=False, return_ids=False)[0]
            s = self._bm25_u.get_scores(qt) if qt else np.zeros(len(self.pool))
            if self.method == "bm25-ur" and r:
                rt = bm25s.tokenize([r], stopwords="en", show_progress=False, return_ids=False)[0]
                if rt:
                    s = s * self._bm25_r.get_scores(rt)
            top = np.argpartition(-s, min(len(s) - 1, 4 * k + 40))[: 4 * k + 40]
            top = top[np.argsort(-s[top], kind="stable")]
            top = top[s[top] > 0]
            out.append(self._select(top, s[top], r, k))
            tick(progress, j + 1, len(utts), "retrieving references")
        return out


def grid_search(database_grid, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact inner-product search of unit ``queries`` against ``database_grid`` (a torch float32 tensor made by
    :func:`on_grid`): (similarities, row indices) of the ``k`` best rows per query, most similar first, ties to the
    lower index. Both sides are on the 1/``SIM_SCALE`` grid, so every inner product is an exact integer in
    float32 and a query's result never depends on the queries searched with it, the BLAS kernel or the thread
    count (queries are scored ``QUERY_BLOCK`` at a time only to bound memory)."""
    import torch
    n, k = len(queries), min(k, len(database_grid))
    sims = np.zeros((n, k), dtype=np.float32)
    cand = np.full((n, k), -1, dtype=np.int64)
    grid = torch.from_numpy(on_grid(queries))
    with torch.inference_mode():
        for s in range(0, n, QUERY_BLOCK):
            block = grid[s:s + QUERY_BLOCK] @ database_grid.T
            kth = torch.topk(block, k, dim=1, sorted=False).values.min(dim=1).values.numpy()
            for j, row in enumerate(block.numpy()):
                idx = np.flatnonzero(row >= kth[j])  # the k best and any row tied with the k-th
                idx = idx[np.lexsort((idx, -row[idx]))][:k]
                sims[s + j], cand[s + j] = row[idx] / SIM_SCALE ** 2, idx
    return sims, cand


_RETRIEVER_CACHE: dict[tuple, Retriever] = {}


def get_retriever(pool_path: str | None = None, method: str = DEFAULT_RETRIEVER,
                  progress: Progress | None = None) -> Retriever:
    """A retriever over a pool, built once per process (and, with bfloat16 MiniLM encodings, per device: its
    query vectors differ there); the embedding index is also cached on disk."""
    from core.models.device import computed_on, precision_suffix
    key = (None if pool_path in (None, "", "chitchat") else str(Path(pool_path).resolve()), method,
           computed_on() if precision_suffix() else "")
    if key not in _RETRIEVER_CACHE:
        _RETRIEVER_CACHE[key] = Retriever(get_pool(key[0]), method, progress)
    return _RETRIEVER_CACHE[key]
