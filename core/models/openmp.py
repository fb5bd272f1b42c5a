"""OpenMP threads that sleep while they wait: SmolLM2 stays fast when the machine is busy with other work.

torch's CPU kernels run on OpenMP (libgomp), whose waiting threads spin by default. SmolLM2's passes always run
on ``SMOLLM_THREADS`` = 2 threads (``core.models.encoders``: its bfloat16 kernels round differently on other
counts), and a forward pass is hundreds of short parallel regions, each ending at a barrier. When another
program keeps one of the cores busy (a browser, a test run, a second worker), the thread that shares that core
is scheduled only every few milliseconds, while its partner spins at the barrier on the other core instead of
letting the busy program finish its slice (our reading of it). Measured on 2 cores, one SM pass over 300
replies beside a busy loop and another engineer's jobs (load average 3-6): 107-245 s with libgomp's default
waits, 19-38 s with ``OMP_WAIT_POLICY=PASSIVE`` (the same bytes: the policy
changes how threads wait, never how work is split); the growth benchmark's SmolLM2 floor fell from 15.7 to 2.1
replies/s while other work ran. Both policies, idle and busy: ``python benchmarks/openmp_wait.py``
(benchmarks/OPENMP_WAIT.md).

libgomp reads the policy once, when it is loaded (on ``import torch``), so it is requested when ``core`` is
imported, before torch (the CLI, the dashboard and Ray workers import ``core`` first); a program that imported
torch earlier keeps spinning threads. An ``OMP_WAIT_POLICY`` the user set is respected.
"""
from __future__ import annotations

import os

WAIT_POLICY = "PASSIVE"


def request_sleeping_waits() -> None:
    """Set ``OMP_WAIT_POLICY=PASSIVE`` unless the user chose a policy (read when libgomp loads)."""
    os.environ.setdefault("OMP_WAIT_POLICY", WAIT_POLICY)
