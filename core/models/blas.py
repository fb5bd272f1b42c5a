"""Matrix products that do not depend on the thread count: MKL's conditional numerical reproducibility.

torch's CPU float32 matrix products (MiniLM's encodings: υBLEU, RUBER, BERT-RUBER, ADEM, MME's MiniLM parts,
the judge's cross-encoder) run on Intel MKL, which by default splits a product among its threads in a way that
depends on how many there are, so the partial sums add in another order: on the demo, 1 thread against 2 moved
bert_ruber by up to 3e-7 and υBLEU by up to 8e-5 (0.6.0). MKL's *strict CNR mode* (``MKL_CBWR=AUTO,STRICT``:
the best code path for this CPU, with results that do not depend on the number of threads) removes that: the
same input gives the same bytes with any ``DIALEVAL_THREADS``, and a Ray worker running one thread writes what a
local run on all cores writes. Measured cost on 2 cores: MiniLM 619 vs 636 texts/s (within run-to-run noise;
``MKL_CBWR=COMPATIBLE``, identical across x86 CPUs too, ran at 175).

MKL reads the mode once, at its first call in the process, so it is requested when ``core`` is imported
(:func:`request_reproducible_products`, before any model runs) and cannot be switched on later: a program
that ran a float32 matrix product before importing ``core`` keeps MKL's default mode, and
:func:`reproducible_products` says so (the CLI and dashboard import ``core`` first). A ``MKL_CBWR`` the user set
is respected. SmolLM2's bfloat16 passes run on oneDNN, which has no such mode; they are pinned to a fixed thread
count instead (``core.models.encoders.SMOLLM_THREADS``). Different CPUs may still differ in the last digits
(``AUTO`` picks each CPU's fastest code path).
"""
from __future__ import annotations

import ctypes
import functools
import os
from pathlib import Path

MODE = "AUTO,STRICT"
_CBWR_BRANCH = 1  # mkl_cbwr_get(MKL_CBWR_BRANCH): which code path
_CBWR_BRANCH_OFF = 1  # CNR off: MKL chooses its code path and thread split freely


def request_reproducible_products() -> None:
    """Ask MKL for strict CNR mode through ``MKL_CBWR`` (unless the user set it): read at MKL's first use, so
    this works whenever no float32 matrix product has run yet, even with torch already imported."""
    os.environ.setdefault("MKL_CBWR", MODE)


def reproducible_products() -> bool | None:
    """True when MKL runs in a CNR mode (results independent of the thread count), False when it does not (MKL
    was used before ``core`` was imported), None when torch's matrix products do not run on a visible MKL."""
    lib = _mkl()
    if lib is None:
        return None
    return int(lib.mkl_serv_cbwr_get(_CBWR_BRANCH)) != _CBWR_BRANCH_OFF


@functools.lru_cache(maxsize=1)
def _mkl():
    """torch's statically linked MKL service functions, or None (another BLAS, another platform)."""
    try:
        import torch
        if not torch.backends.mkl.is_available():
            return None
        lib = ctypes.CDLL(str(Path(torch.__file__).parent / "lib" / "libtorch_cpu.so"))
        lib.mkl_serv_cbwr_get.restype = ctypes.c_int
        lib.mkl_serv_cbwr_get.argtypes = [ctypes.c_int]
        return lib
    except (ImportError, OSError, AttributeError):
        return None


def warning() -> str | None:
    """A one-line warning when this process's float32 products depend on the thread count, else None."""
    if reproducible_products() is False:
        return ("MKL's reproducible mode is off in this process (a float32 matrix product ran before `core` was "
                "imported, or MKL_CBWR turned it off): MiniLM-based scores can differ in their last digits with "
                "another thread count. Import core first, or start Python with MKL_CBWR=AUTO,STRICT.")
    return None
