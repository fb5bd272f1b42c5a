"""OpenMP threads that spin only briefly before they sleep: SmolLM2 stays fast when the machine is busy.

torch's CPU kernels run on OpenMP (libgomp), whose waiting threads spin for 300,000 rounds before they sleep.
SmolLM2's passes always run on ``SMOLLM_THREADS`` = 2 threads (``core.models.encoders``), and a forward pass is
hundreds of short parallel regions, each ending at a barrier: when another program keeps one core busy, the
thread on the other core spins at every barrier instead of yielding it. ``GOMP_SPINCOUNT`` = :data:`SPIN_ROUNDS`
keeps most of the idle speed and avoids that collapse; the measurements that chose it (``python
benchmarks/openmp_wait.py``) are in benchmarks/OPENMP_WAIT.md. The wait changes how threads wait, never how work
is split, so no number moves.

libgomp reads its settings once, when it is loaded (on ``import torch``), so they are set when ``core`` is
imported, before torch (the CLI, the dashboard and Ray workers import ``core`` first); a program that imported
torch earlier keeps libgomp's default. A ``GOMP_SPINCOUNT`` or ``OMP_WAIT_POLICY`` the user set is respected.
"""
from __future__ import annotations

import os

SPIN_ROUNDS = "3000"


def request_short_spins() -> None:
    """Set ``GOMP_SPINCOUNT`` to :data:`SPIN_ROUNDS` unless the user set it or an ``OMP_WAIT_POLICY``."""
    if "GOMP_SPINCOUNT" not in os.environ and "OMP_WAIT_POLICY" not in os.environ:
        os.environ["GOMP_SPINCOUNT"] = SPIN_ROUNDS
