"""``--backend local`` (the default): every block scored in this process, one after another, in input order;
the models load once (``core.scoring.get_metric`` keeps them)."""
from __future__ import annotations

from typing import Iterator, Sequence

from core.backends import Backend, BlockResult, ScoreJob, Within, register_backend, score_block
from core.data import Example


@register_backend("local")
class LocalBackend(Backend):
    """Blocks scored in this process, in order (no buffering: each is written as soon as it is scored)."""

    description = "this process, block after block (the default)"

    def run(self, parts: Sequence[Sequence[Example]], job: ScoreJob,
            within: Within | None = None) -> Iterator[tuple[int, BlockResult]]:
        for index, part in enumerate(parts):
            yield index, score_block(part, job, within(index) if within else None)
