"""dialeval's scoring engine: which of two dialogue systems is better, and why.

One-call API (like ``bert_score.score``)::

    import core
    scores = core.score(["sure, see you then"], contexts=[["lunch tomorrow?"]], references=[["ok, see you"]],
                        metrics="bleu,ubleu")
    scores["ubleu"]  # numpy array, one value per response

For repeated use keep a ``core.engine`` table or metric instance (``core.metrics.get_metric``): models
are loaded once per process either way.
"""
from __future__ import annotations

from typing import Sequence

from core.version import __version__

__all__ = ["score", "__version__"]


def score(responses: Sequence[str], contexts: Sequence[Sequence[str] | str],
          references: Sequence[Sequence[str] | str] | None = None, metrics: str | Sequence[str] = "bleu,ubleu",
          system: str = "system", progress=None) -> dict:
    """Score responses; returns ``{metric: np.ndarray}`` plus ``"_signatures"`` and ``"_details"``."""
    from core.data import Example
    from core.engine import score_examples
    if len(contexts) != len(responses) or (references is not None and len(references) != len(responses)):
        raise ValueError("responses, contexts and references must have the same length")
    exs = []
    for i, resp in enumerate(responses):
        ctx = contexts[i]
        ctx = ctx.split("\n") if isinstance(ctx, str) else list(ctx)
        refs = [] if references is None else references[i]
        refs = [refs] if isinstance(refs, str) else list(refs)
        exs.append(Example(id=str(i), system=system, context=ctx, response=resp, references=refs))
    table = score_examples(exs, metrics, progress=progress)
    out: dict = {m: table.column(m) for m in table.metrics}
    out["_signatures"] = table.signatures()
    out["_details"] = {m: table.results[m].details for m in table.metrics}
    return out
