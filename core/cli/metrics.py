"""``dialeval metrics``: the registered metrics, one line each."""
from __future__ import annotations

import argparse

from core.cli import register_command
from core.engine import DEFAULT_METRICS
from core.scoring import available_metrics


@register_command("metrics", "list the registered metrics (* = a default metric)", lambda p: None)
def list_metrics(a: argparse.Namespace) -> int:
    for name, desc in available_metrics().items():
        print(f"{'*' if name in DEFAULT_METRICS else ' '} {name:<16} {desc}")
    return 0
