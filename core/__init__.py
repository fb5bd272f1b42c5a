"""dialeval's scoring engine: which of two dialogue systems is better, and why.

One-call API (like ``bert_score.score``), the same engine the CLI and the dashboard use::

    import core
    out = core.score(["sure, see you then"], contexts=[["lunch tomorrow?"]], references=[["ok, see you"]],
                     metrics="bleu,ubleu")
    out["ubleu"]                        # numpy array, one value per response
    p = core.judge([["lunch tomorrow?"]], ["sure, see you then"], ["no."]).p_a
    verdict = core.compare("v1.jsonl", "v2.jsonl", metrics="bleu,mme", judge=True)

Models load once per process; for repeated use keep metric instances (``core.scoring.get_metric``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from core.version import __version__

if TYPE_CHECKING:
    from core.compare import Verdict
    from core.progress import Progress
    from core.scoring import JudgeOutput, Options

__all__ = ["score", "judge", "compare", "__version__"]


def _as_list(values: Any, name: str) -> list:
    """A list from a list, tuple, numpy array or pandas Series (by position); a bare string is refused."""
    if isinstance(values, (str, bytes)):
        raise TypeError(f"{name} must be a sequence (one item per example), got a single string")
    if hasattr(values, "tolist") and callable(values.tolist):  # numpy arrays, pandas Series (positional)
        values = values.tolist()
    try:
        return list(values)
    except TypeError:
        raise TypeError(f"{name} must be a sequence (one item per example), got {type(values).__name__}") from None


def _turns(value: Any, name: str, i: int) -> list[str]:
    if isinstance(value, str):
        return value.split("\n")
    turns = _as_list(value, f"{name}[{i}]")
    bad = [j for j, t in enumerate(turns) if not isinstance(t, str)]
    if bad:
        raise TypeError(f"{name}[{i}][{bad[0]}] must be a string, got {type(turns[bad[0]]).__name__}")
    return turns


def score(responses: Sequence[str], contexts: Sequence[Sequence[str] | str],
          references: Sequence[Sequence[str] | str] | None = None, metrics: str | Sequence[str] | None = None,
          system: str = "system", options: "Options | None" = None, progress: "Progress | None" = None) -> dict:
    """Score responses; returns ``{metric: np.ndarray}`` plus ``"_signatures"`` and ``"_details"``.

    ``contexts[i]`` is a list of turns (oldest first) or one string with turns separated by newlines;
    ``references[i]`` a list of references or one string. ``metrics`` None: the default metrics."""
    from core.data import Example
    from core.engine import score_examples
    responses = _as_list(responses, "responses")
    contexts = _as_list(contexts, "contexts")
    refs = None if references is None else _as_list(references, "references")
    if len(contexts) != len(responses) or (refs is not None and len(refs) != len(responses)):
        raise ValueError(f"responses ({len(responses)}), contexts ({len(contexts)})"
                         + (f" and references ({len(refs)})" if refs is not None else "")
                         + " must have the same length")
    exs = []
    for i, resp in enumerate(responses):
        if not isinstance(resp, str):
            raise TypeError(f"responses[{i}] must be a string, got {type(resp).__name__}")
        r = [] if refs is None else ([refs[i]] if isinstance(refs[i], str) else _turns(refs[i], "references", i))
        exs.append(Example(id=str(i), system=system, context=_turns(contexts[i], "contexts", i), response=resp,
                           references=r))
    table = score_examples(exs, metrics, options, progress=progress)
    out: dict = {m: table.column(m) for m in table.metrics}
    out["_signatures"] = table.signatures()
    out["_details"] = {m: table.results[m].details for m in table.metrics}
    return out


def judge(contexts: Sequence[Sequence[str] | str], replies_a: Sequence[str], replies_b: Sequence[str],
          checkpoint: str | None = None, progress: "Progress | None" = None) -> "JudgeOutput":
    """P(a person prefers reply A) for each (context, A, B), both orders combined (the shipped A/B judge)."""
    from core.engine import judge_pairs
    contexts = _as_list(contexts, "contexts")
    a, b = _as_list(replies_a, "replies_a"), _as_list(replies_b, "replies_b")
    if not len(contexts) == len(a) == len(b):
        raise ValueError(f"contexts ({len(contexts)}), replies_a ({len(a)}) and replies_b ({len(b)}) "
                         "must have the same length")
    return judge_pairs([_turns(c, "contexts", i) for i, c in enumerate(contexts)], a, b,
                       checkpoint=checkpoint, progress=progress)


def compare(input_a: str, input_b: str | None = None, system_a: str | None = None, system_b: str | None = None,
            metrics: str | Sequence[str] | None = None, judge: bool = False, options: "Options | None" = None,
            progress: "Progress | None" = None, **settings: Any) -> "Verdict":
    """The verdict on two systems: two files (one system each) or one multi-system file with two chosen;
    ``settings`` go to ``core.compare.build_verdict`` (``n_boot``, ``n_perm``, ``level``, ``seed``, ``human``)."""
    from core.compare import build_verdict, summarize_judge
    from core.data import load_comparison
    from core.engine import judge_comparison, score_comparison
    comp = load_comparison(input_a, input_b, system_a, system_b)
    cs = score_comparison(comp, metrics, options, progress)
    summary = summarize_judge(comp, judge_comparison(comp, progress=progress)) if judge else None
    return build_verdict(comp, cs, summary, **settings)
