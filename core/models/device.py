"""Where the heavy model passes run: one device per process, chosen by the run's ``Options.device``
(``--device auto|cpu|cuda|mps``; auto picks CUDA, then MPS, then the CPU).

The passes that dominate the cost run there: MiniLM sentence encodings (υBLEU, RUBER, BERT-RUBER, ADEM,
MME's relevance and engagement inputs), the MiniLM classifiers of MME, SmolLM2's passes (MME specificity, the
judge's reader). Their outputs come back to the CPU as numpy arrays, where the small heads run. The CPU is
the tested default (CI has no GPU); on another device a score may differ from the CPU's in the last digits
(different kernels), so the score cache keeps each device's rows apart (``core.engine.metric_namespace``).

CPUs differ too: SmolLM2 runs in bfloat16 where the CPU multiplies it natively, and oneDNN computes those products
with AMX tiles where the CPU has them, with AVX-512 BF16 instructions where it has those; each rounds differently.
Elsewhere SmolLM2 runs in float32 (:func:`smollm_dtype`; emulated bfloat16 was 5x slower). Measured on the demo's
golden rows (an AMD EPYC with AVX-512 BF16 against the AMX machine the shipped numbers were recorded on): MME up to
0.037 apart per row, the judge's P(A) 0.0086, the float32 MiniLM metrics 1e-7 to 2e-5 (ADEM), the verdicts the same.
So a CPU's results are keyed by its kernel family (:func:`cpu_kernels`): a cached or precomputed row is the number a
fresh run gives *on that kind of CPU*, and the golden file keeps one record per kind (tests/test_golden.py).
"""
from __future__ import annotations

import functools
import os
import platform
from typing import Any

DEVICES = ("cpu", "cuda", "mps", "auto")
_ACTIVE = {"device": "cpu"}


class DeviceError(RuntimeError):
    """A device was asked for that this machine does not have."""


def resolve_device(device: str = "cpu") -> str:
    """``auto`` -> CUDA if available, then MPS, then CPU; an explicit device must be available."""
    if device not in DEVICES:
        raise DeviceError(f"device must be one of {', '.join(DEVICES)}, got {device!r}")
    if device == "cpu":
        return "cpu"
    import torch
    mps = getattr(torch.backends, "mps", None)
    has_mps = bool(mps is not None and mps.is_available())
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "mps" if has_mps else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise DeviceError("device 'cuda' was asked for but torch sees no CUDA GPU; choose the device cpu or auto "
                          "(--device on the command line, Device in the dashboard's sidebar)")
    if device == "mps" and not has_mps:
        raise DeviceError("device 'mps' was asked for but torch sees no Apple GPU; choose the device cpu or auto "
                          "(--device on the command line, Device in the dashboard's sidebar)")
    return device


@functools.lru_cache(maxsize=1)
def offered_devices() -> tuple[str, ...]:
    """The devices worth offering in a menu: ``cpu``, ``auto``, and ``cuda`` / ``mps`` only where this machine
    looks like it has one, found without importing torch (which costs seconds on a dashboard's first visit):
    an NVIDIA driver (``/proc/driver/nvidia/version`` or ``nvidia-smi`` on the path) for CUDA, an Apple silicon
    Mac for MPS. Where torch is already imported its own answer is used. A device offered here can still be
    refused by :func:`resolve_device` (a driver without a CUDA build of torch), with its one-line reason."""
    import shutil
    import sys
    torch = sys.modules.get("torch")
    if torch is not None:
        mps = getattr(torch.backends, "mps", None)
        cuda, apple = torch.cuda.is_available(), bool(mps is not None and mps.is_available())
    else:
        cuda = os.path.exists("/proc/driver/nvidia/version") or shutil.which("nvidia-smi") is not None
        apple = platform.system() == "Darwin" and platform.machine() == "arm64"
    return ("cpu", "auto", *(["cuda"] if cuda else []), *(["mps"] if apple else []))


@functools.lru_cache(maxsize=1)
def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags as ``/proc/cpuinfo`` lists them (empty where there is no such file)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


@functools.lru_cache(maxsize=1)
def cpu_kernels() -> str:
    """This CPU's family of bfloat16 matrix kernels: ``amx-bf16`` (Intel AMX tiles), ``avx512-bf16`` (AVX-512
    BF16 instructions), else torch's vector capability (``avx512``, ``avx2``, ``default``, lower case) or the
    machine type (``arm64``). A limit set with ``ONEDNN_MAX_CPU_ISA`` is appended (``+isa:...``), since it
    changes which kernels run."""
    flags = cpu_flags()
    if "amx_bf16" in flags:
        family = "amx-bf16"
    elif "avx512_bf16" in flags:
        family = "avx512-bf16"
    elif flags:
        family = vector_capability(flags)
    else:
        family = platform.machine().lower() or "unknown"
    isa = os.environ.get("ONEDNN_MAX_CPU_ISA", "").strip().lower()
    return f"{family}+isa:{isa}" if isa else family


def vector_capability(flags: set[str]) -> str:
    """torch's CPU capability (the vector kernels its own operators pick: ``avx512``, ``avx2``, ``default``), lower
    case. Read from the CPU's ``flags`` where the answer is certain, without importing torch (about 2 s, which the
    demo's first visit would otherwise wait on a CPU without AVX-512): no ``ATEN_CPU_CAPABILITY`` and no AVX-512F
    leave torch AVX2 when the CPU has AVX2 and FMA, else its default kernels. Otherwise torch is asked."""
    if "ATEN_CPU_CAPABILITY" not in os.environ and "avx512f" not in flags:
        return "avx2" if {"avx2", "fma"} <= flags else "default"
    import torch
    return str(torch.backends.cpu.get_cpu_capability()).lower()


def native_bfloat16() -> bool:
    """Whether this CPU multiplies bfloat16 matrices natively (AMX tiles or AVX-512 BF16, and no
    ``ONEDNN_MAX_CPU_ISA`` below them: ``ALL``, an ``AVX10`` level or one naming BF16, FP16 or AMX keeps them).
    Elsewhere oneDNN converts to float32 and bfloat16 is slower than float32: MiniLM ran at 0.74x with AVX-512
    alone and 0.29x with AVX2 (benchmarks/PRECISION.md), SmolLM2 at 0.19x with AVX2 (:func:`smollm_dtype`)."""
    family, _, isa = cpu_kernels().partition("+isa:")
    keeps = not isa or isa == "all" or any(k in isa for k in ("bf16", "fp16", "amx", "avx10"))
    return family in ("amx-bf16", "avx512-bf16") and keeps


@functools.lru_cache(maxsize=1)
def smollm_dtype() -> str:
    """SmolLM2's number format in this process: ``bfloat16`` where this CPU multiplies bfloat16 matrices natively
    (:func:`native_bfloat16`), ``float32`` elsewhere, where oneDNN converts every bfloat16 product to float32:
    there SmolLM2's chat reading ran 5.2x faster in float32 (2 AVX2 cores, warm: 2.36 against 0.45 replies/s,
    docs/architecture.md, "Kinds of CPU"). Decided by the host's CPU once per process (the weights are cast once
    and go to a GPU as they are), and named in every :func:`device_key`. ARM CPUs (no ``flags`` line) get float32
    too; not measured there."""
    return "bfloat16" if native_bfloat16() else "float32"


def rows_are_independent(dtype: str) -> bool:
    """Whether a transformer pass in ``dtype`` on the active device gives each row of a batch the same bits
    whatever the number of rows beside it, so a batch needs no dummy rows to keep its shape
    (``core.models.batching``; the padded length still matters everywhere and stays). True for float32 on a CPU of
    the ``avx2`` family without AVX-512 (so MKL runs its AVX2 code too, whatever ``ATEN_CPU_CAPABILITY`` tells
    torch) with MKL in its reproducible mode (``core.models.blas``, as when measured): SmolLM2's hidden states at
    every layer were bit-identical for 1, 3, 8, 12 and 15 rows against 16 (demo rows, 2 AMD EPYC AVX2 cores,
    2026-11-28), and ``tests/test_batching.py`` checks the passes, one-row batches included, wherever the tests
    run on such a CPU (Intel AVX2 CPUs count too; not measured on one). Not measured, so False: bfloat16 (oneDNN's
    AMX tiles and AVX-512 BF16 round by batch shape), other CPU families, GPUs."""
    return (active_device() == "cpu" and dtype == "float32" and cpu_kernels() == "avx2"
            and "avx512f" not in cpu_flags() and _reproducible_mkl())


@functools.lru_cache(maxsize=1)
def _reproducible_mkl() -> bool:
    from core.models.blas import reproducible_products
    return reproducible_products() is True


def device_key(device: str) -> str:
    """How the score cache and the shipped precomputed scores name where a result was computed: the device,
    and for the CPU its kernel family (``cpu-amx-bf16``, ``cpu-avx512-bf16``, ...); ``+smollm-f32`` is appended
    when SmolLM2 runs in float32 (:func:`smollm_dtype`), ``+minilm-bf16`` when MiniLM's encodings run in bfloat16
    (``core.settings.minilm_precision``)."""
    where = f"cpu-{cpu_kernels()}" if device == "cpu" else device
    return where + ("+smollm-f32" if smollm_dtype() == "float32" else "") + precision_suffix()


def precision_suffix() -> str:
    """``""`` with float32 MiniLM encodings (the default), ``"+minilm-bf16"`` with bfloat16 ones."""
    from core.settings import minilm_precision
    return "" if minilm_precision() == "float32" else "+minilm-bf16"


def computed_on() -> str:
    """The key under which the in-process memories keep a value computed now: the active device, plus
    :func:`precision_suffix` (a bfloat16 MiniLM vector is never read where a float32 one is asked for)."""
    return active_device() + precision_suffix()


def use_device(device: str = "cpu") -> str:
    """Make ``device`` (resolved) the one the model passes run on from now on; returns it. The in-process
    memories of computed values (``core.models.memo``) key their entries by the device they were computed on,
    as the score cache on disk does, so a value of one device is never read on another."""
    _ACTIVE["device"] = resolve_device(device)
    return _ACTIVE["device"]


def active_device() -> str:
    return _ACTIVE["device"]


def placed(model: Any) -> Any:
    """``model`` on the active device (moved there if it is elsewhere; a no-op on the CPU path)."""
    dev = active_device()
    try:
        current = next(model.parameters()).device.type
    except (StopIteration, AttributeError):
        return model
    return model if current == dev else model.to(dev)


def on_device(*tensors: Any) -> tuple:
    """The tensors on the active device (the same objects on the CPU)."""
    dev = active_device()
    return tuple(t if t.device.type == dev else t.to(dev) for t in tensors)
