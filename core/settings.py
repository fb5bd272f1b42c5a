"""Where things are, and the one seed.

Every other module asks here; nothing else knows a path or picks a seed of its own.

- ``SEED``: the fixed seed of every sampler, split, bootstrap and training run (13).
- :func:`checkpoint_dirs`: where weights are read, in order: ``$DIALEVAL_CHECKPOINTS`` when set, then the
  shipped ones: the ``checkpoints/`` folder beside ``core/`` in a source checkout, else the copy installed with
  the package (``core.shipped_checkpoints``, the same files as package data). :func:`checkpoint_file` finds a
  file in the first folder that holds it, so a folder of one's own trained weights needs no copy of the rest;
  :func:`checkpoint_dir` is the first folder.
- :func:`writable_checkpoint_dir`: where trainers write (never into an installed package).
- :func:`cache_dir`: what is computed once and kept (pool indexes, reader features). ``$DIALEVAL_CACHE``
  when set, else ``$XDG_CACHE_HOME/dialeval``, else ``~/.cache/dialeval``.
- :func:`shared_data_dir`: the human-rated data others collected (``../shared/data`` beside the repository;
  read in place, never copied). ``$DIALEVAL_SHARED_DATA`` when set, else the nearest ``shared/data`` found
  from the working directory upwards, else the one beside the source checkout.
- :func:`threads`: CPU threads for torch (``$DIALEVAL_THREADS``, default: all cores).
- :func:`minilm_precision`: the number format of MiniLM's sentence encodings (``$DIALEVAL_PRECISION``:
  ``float32``, the default and the tested path, or ``bfloat16``, faster where the CPU has bfloat16 kernels).
"""
from __future__ import annotations

import os
from pathlib import Path

SEED = 13

_SOURCE_ROOT = Path(__file__).resolve().parent.parent


class SettingError(ValueError):
    """An environment variable holds a value that cannot be used."""


def checkpoint_dirs() -> list[Path]:
    """The folders weights are read from, first match wins: ``$DIALEVAL_CHECKPOINTS`` (when set), then the
    shipped checkpoints (the source checkout's ``checkpoints/``, else the installed package's copy)."""
    dirs = [Path(env)] if (env := os.environ.get("DIALEVAL_CHECKPOINTS")) else []
    source = _SOURCE_ROOT / "checkpoints"
    if source.is_dir():
        return dirs + [source]
    from importlib.util import find_spec
    spec = find_spec("core.shipped_checkpoints")  # package data of an installed copy (a folder, no __init__)
    if spec is not None and spec.submodule_search_locations:
        dirs.append(Path(list(spec.submodule_search_locations)[0]))
    if not dirs:
        raise SettingError("no shipped checkpoints: set DIALEVAL_CHECKPOINTS to the folder that holds them")
    return dirs


def checkpoint_dir() -> Path:
    """The first folder of :func:`checkpoint_dirs` (``$DIALEVAL_CHECKPOINTS`` when set)."""
    return checkpoint_dirs()[0]


def checkpoint_file(name: str) -> Path:
    """``name`` in the first of :func:`checkpoint_dirs` that holds it; where none does, its path in the first
    folder (so a message about the missing file names where it was looked for first)."""
    dirs = checkpoint_dirs()
    return next((d / name for d in dirs if (d / name).exists()), dirs[0] / name)


def writable_checkpoint_dir() -> Path:
    """Where trainers write: ``$DIALEVAL_CHECKPOINTS``, else the source checkout's ``checkpoints/``, else a
    ``checkpoints/`` folder in the working directory; never into an installed package."""
    env = os.environ.get("DIALEVAL_CHECKPOINTS")
    if env:
        return Path(env)
    for d in (_SOURCE_ROOT / "checkpoints", Path.cwd() / "checkpoints"):
        if d.is_dir():
            return d
    raise SettingError("no checkpoint folder to write to: run from the repository checkout (its checkpoints/ "
                       "folder), make a checkpoints/ folder here, or set DIALEVAL_CHECKPOINTS (train adem, judge "
                       "and ruber also take --out-dir)")


def cache_location() -> tuple[Path, str]:
    """(the cache folder, the setting that chose it: ``$DIALEVAL_CACHE``, ``$XDG_CACHE_HOME`` or 'the
    default'), without creating it."""
    env = os.environ.get("DIALEVAL_CACHE")
    if env:
        return Path(env), "$DIALEVAL_CACHE"
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]) / "dialeval", "$XDG_CACHE_HOME"
    return Path.home() / ".cache" / "dialeval", "the default"


def cache_dir() -> Path:
    """The cache folder (:func:`cache_location`), created when missing."""
    d = cache_location()[0]
    d.mkdir(parents=True, exist_ok=True)
    return d


def shared_data_dir() -> Path:
    env = os.environ.get("DIALEVAL_SHARED_DATA")
    if env:
        return Path(env)
    here = Path.cwd().resolve()
    for d in (here, *here.parents):
        if (d / "shared" / "data").is_dir():
            return d / "shared" / "data"
    return _SOURCE_ROOT.parent / "shared" / "data"


def shared_eval_file(name: str) -> Path:
    """A human-rated set of ``shared/data/eval`` by its name (``usr-topical`` -> ``eval/usr-topical.jsonl``)."""
    return shared_data_dir() / "eval" / f"{name}.jsonl"


def threads() -> int:
    raw = os.environ.get("DIALEVAL_THREADS", "").strip()
    if not raw:
        return os.cpu_count() or 1
    try:
        n = int(raw)
    except ValueError:
        raise SettingError(f"DIALEVAL_THREADS must be a whole number of threads, got {raw!r}") from None
    if n < 0:
        raise SettingError(f"DIALEVAL_THREADS must be 0 (all cores) or more, got {n}")
    return n or os.cpu_count() or 1


MINILM_PRECISIONS = ("float32", "bfloat16")
_PRECISION_ALIASES = {"fp32": "float32", "float32": "float32", "bf16": "bfloat16", "bfloat16": "bfloat16"}


def minilm_precision() -> str:
    """``float32`` (default) or ``bfloat16``: how MiniLM's sentence encodings are computed
    (``core.models.encoders.minilm_forward``: υBLEU's retrieval queries and rater, BERT-RUBER, ADEM, MME's
    relevance and engagement inputs). From ``$DIALEVAL_PRECISION`` (``fp32`` and ``bf16`` are accepted too).
    On this project's AVX-512 BF16 CPU (2 cores) bfloat16 ran the MiniLM-bound metrics 2.6 to 3.0 times as fast,
    moved their per-row scores by at most 7.5 % of their spread (υBLEU and RUBER+υBLEU more where a near tie in the
    retrieval brings another reference) and their mean agreement with people by at most 0.0003
    (benchmarks/PRECISION.md); its results are kept apart from float32's in every cache
    (``core.models.device.device_key``). On a CPU without bfloat16 kernels it is slower than float32
    (``core.models.device.native_bfloat16``). Training and the scripts that record shipped numbers run in float32
    whatever it says (:func:`use_float32_encodings`)."""
    raw = os.environ.get("DIALEVAL_PRECISION", "").strip().lower()
    if not raw:
        return "float32"
    if raw not in _PRECISION_ALIASES:
        raise SettingError(f"DIALEVAL_PRECISION must be one of {', '.join(MINILM_PRECISIONS)} (or fp32, bf16), "
                           f"got {raw!r}")
    return _PRECISION_ALIASES[raw]


def use_float32_encodings(task: str) -> None:
    """Make ``task`` (a trainer, a script that records shipped numbers) run MiniLM in float32 whatever
    ``$DIALEVAL_PRECISION`` says, saying so on stderr when it said otherwise: checkpoints are trained, and golden
    and precomputed numbers recorded, on float32 encodings, the default every test checks."""
    import sys
    if minilm_precision() != "float32":
        print(f"{task}: DIALEVAL_PRECISION={os.environ.get('DIALEVAL_PRECISION', '').strip()} applies to scoring; "
              "this runs MiniLM in float32", file=sys.stderr)
        os.environ["DIALEVAL_PRECISION"] = "float32"
