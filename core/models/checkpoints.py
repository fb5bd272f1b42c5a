"""Save and load trained weights as safetensors with a JSON manifest beside them.

``NAME.safetensors`` holds tensors only (never pickle); ``NAME.json`` says how they were made: the training command, the data, the measured quality, the seed, the library version,
and the model's constructor arguments (``config``), so ``load`` can rebuild the module. The folder is :func:`core.settings.writable_checkpoint_dir` for saving unless a
``directory`` is given (reads: the first of :func:`core.settings.checkpoint_dirs` holding it).
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from core.outputs import atomic_path, write_text
from core.settings import checkpoint_dirs, checkpoint_file, writable_checkpoint_dir
from core.version import __version__


class CheckpointError(RuntimeError):
    pass


def paths(name: str, directory: str | os.PathLike | None = None) -> tuple[Path, Path]:
    """(weights, manifest) of checkpoint ``name``: in ``directory``, else in the first checkpoint folder that
    holds its weights (``core.settings.checkpoint_dirs``). A name given with its file's ending
    (``judge-mine.safetensors``, ``judge-mine.json``) names the same checkpoint."""
    for ending in (".safetensors", ".json"):
        name = name[:-len(ending)] if name.endswith(ending) else name
    if directory:
        d = Path(directory)
    else:
        d = checkpoint_file(f"{name}.safetensors").parent
    return d / f"{name}.safetensors", d / f"{name}.json"


def save(name: str, tensors: dict[str, Any], manifest: dict[str, Any],
         directory: str | os.PathLike | None = None) -> Path:
    """Write ``tensors`` (torch tensors) and the manifest; returns the weights' path."""
    from safetensors.torch import save_file
    wpath, mpath = paths(name, directory or writable_checkpoint_dir())
    wpath.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(wpath) as tmp:  # a training run cut short never leaves half a checkpoint
        save_file({k: v.detach().cpu().contiguous() for k, v in tensors.items()}, str(tmp))
    man = dict(manifest)
    man.setdefault("created", _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))
    man["version"] = __version__
    man["sha256"] = weights_hash(wpath, full=True)
    man["size_bytes"] = wpath.stat().st_size
    write_text(mpath, json.dumps(man, indent=2, ensure_ascii=False) + "\n")
    return wpath


def load(name: str, directory: str | os.PathLike | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """(tensors, manifest); raises ``CheckpointError`` naming the missing file and how to rebuild it."""
    from safetensors.torch import load_file
    wpath, mpath = paths(name, directory)
    if not wpath.exists() or not mpath.exists():
        if directory or not (os.sep in name or name.startswith(".")):
            where = wpath.parent if directory else " or ".join(map(str, checkpoint_dirs()))
            raise CheckpointError(f"checkpoint {name!r} not found in {where} (expected {wpath.name} and "
                                  f"{mpath.name}); train it with `dialeval train ...` or point DIALEVAL_CHECKPOINTS "
                                  "at a folder that holds it")
        missing = " and ".join(str(p) for p in (wpath, mpath) if not p.exists())
        raise CheckpointError(f"checkpoint {name!r} not found: no {missing} (a path names the checkpoint's two "
                              "files without their endings, as `dialeval train judge --out PATH` writes them)")
    return load_file(str(wpath)), load_manifest(name, directory)


def load_manifest(name: str, directory: str | os.PathLike | None = None) -> dict[str, Any]:
    """The JSON manifest of checkpoint ``name``."""
    mpath = paths(name, directory)[1]
    if not mpath.exists():
        raise CheckpointError(f"checkpoint manifest {mpath} not found")
    return json.loads(mpath.read_text(encoding="utf-8"))


def update_manifest(name: str, section: str, value: Any, directory: str | os.PathLike | None = None) -> None:
    """Set one top-level ``section`` of a manifest, leaving the weights (and so their hash) untouched."""
    directory = directory or writable_checkpoint_dir()
    mpath = paths(name, directory)[1]
    man = load_manifest(name, directory)
    man[section] = value
    write_text(mpath, json.dumps(man, indent=2, ensure_ascii=False) + "\n")


def weights_hash(path: str | os.PathLike, full: bool = False) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest() if full else h.hexdigest()[:10]


def short_hash(name: str, directory: str | os.PathLike | None = None) -> str:
    """The first 10 hex digits of the weights' sha256 (for metric signatures), or '-' if absent."""
    wpath, mpath = paths(name, directory)
    if mpath.exists():
        try:
            return json.loads(mpath.read_text())["sha256"][:10]
        except (KeyError, ValueError):
            pass
    return weights_hash(wpath) if wpath.exists() else "-"
