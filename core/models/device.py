"""Where the heavy model passes run: one device per process, chosen by the run's ``Options.device``
(``--device auto|cpu|cuda|mps``; auto picks CUDA, then MPS, then the CPU).

The passes that dominate the cost run there: MiniLM sentence encodings (υBLEU, RUBER, BERT-RUBER, ADEM,
MME's relevance and engagement inputs), the MiniLM classifiers of MME, SmolLM2's passes (MME specificity, the
judge's reader). Their outputs come back to the CPU as numpy arrays, where the small heads run. The CPU is
the tested default (CI has no GPU); on another device a score may differ from the CPU's in the last digits
(different kernels), so the score cache keeps each device's rows apart (``core.engine.metric_namespace``).
"""
from __future__ import annotations

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


def use_device(device: str = "cpu") -> str:
    """Make ``device`` (resolved) the one the model passes run on from now on; returns it."""
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
