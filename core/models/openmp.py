"""OpenMP threads that spin only briefly before they sleep: SmolLM2 stays fast when the machine is busy.

torch's CPU kernels run on OpenMP (libgomp), whose waiting threads spin for 300,000 rounds before they sleep.
SmolLM2's passes always run on ``SMOLLM_THREADS`` = 2 threads (``core.models.encoders``: its bfloat16 kernels
round differently on other counts), and a forward pass is hundreds of short parallel regions, each ending at a
barrier. When another program keeps one of the cores busy (a browser, a test run, a second worker), the thread
that shares that core runs only when the scheduler gives it a slice, while its partner spins at the barrier on
the other core instead of yielding it (our reading of the numbers below).

``python benchmarks/openmp_wait.py`` (benchmarks/OPENMP_WAIT.md; 2 cores, one SM pass over 300 replies and
MiniLM vectors of 2,000 texts, each in a fresh process, the same bytes in every cell; "no load added" ran at a
load average of about 2 from other jobs, so it is not a perfectly idle machine):

| spin before sleeping | no load added: SM replies/s, MiniLM texts/s | one busy process added |
|---|---|---|
| 300,000 rounds (libgomp's default) | 62.8, 380 | 3.0, 43 |
| 30,000 | 60.7, 392 | 16.0, 120 |
| **3,000 (set by ``import core``)** | 57.8, 357 | 31.7, 184 |
| 0 (``OMP_WAIT_POLICY=PASSIVE``) | 43.6, 303 | 37.5, 208 |

3,000 rounds keeps 92-94 % of the speed without added load and is 10 times faster for SmolLM2 (4 times for
MiniLM) beside a busy process; sleeping at once wins a little more when busy but costs 20-30 % without added
load. The wait changes how threads wait, never how work is split, so no number moves.

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
