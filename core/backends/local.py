"""``--backend local`` (the default): every block scored in this process, one after another, in input order;
the models load once (``core.scoring.get_metric`` keeps them)."""
from __future__ import annotations

from typing import Iterator, Sequence

from core.backends import Backend, BackendError, BlockResult, ScoreJob, Within, register_backend, score_block
from core.data import Example


@register_backend("local")
class LocalBackend(Backend):
    """Blocks scored in this process, in order (no buffering: each is written as soon as it is scored)."""

    description = "this process, block after block (the default)"

    def __init__(self, workers: int | None = None, address: str | None = None, pass_threads: int | None = None):
        if workers is not None or address is not None:
            raise BackendError("--workers and --address are for --backend ray; --backend local scores in this "
                               "process (DIALEVAL_THREADS sets its torch threads)")
        super().__init__(workers, address, pass_threads)

    def run(self, parts: Sequence[Sequence[Example]], job: ScoreJob,
            within: Within | None = None) -> Iterator[tuple[int, BlockResult]]:
        for index, part in enumerate(parts):
            yield index, score_block(part, job, within(index) if within else None)
