"""The A/B judge page's helpers: whether the shipped judge is there, votes from the upload's human scores, the
learning curve of a re-fit on votes (its sizes and its figure) and the agreement a one-sided judge would reach."""
from __future__ import annotations

import math
from typing import Sequence

from core.data import Comparison
from core.judges.pairs import MIN_VOTES, Pair
from core.verdict import human_tie_margin


def judge_status() -> tuple[bool, str]:
    """(available, message): whether the shipped judge's weights are where the engine looks for them."""
    from core.judges.pairwise import CHECKPOINT
    from core.models.checkpoints import paths
    weights, _ = paths(CHECKPOINT)
    if not weights.exists():
        return False, (f"The A/B judge's trained weights ({weights.name}) are not in {weights.parent}; train them "
                       "with `dialeval train judge` (this page runs the judge as soon as they exist).")
    return True, "ok"


def votes_from_comparison(comp: Comparison, dimension: str) -> list[Pair]:
    """Votes for the loaded pairs whose human scores on ``dimension`` differ by the human tie margin (a quarter
    of the scale, ``core.verdict``); the other pairs get no vote (they are "the rest")."""
    from core.verdict import human_preferences
    votes = []
    for (a, b), h in zip(comp.pairs, human_preferences(comp, dimension)[0]):
        if h in ("A", "B"):
            votes.append(Pair(list(a.context), a.response, b.response, 1.0 if h == "A" else 0.0, a.dataset,
                              a.id, a.scores.get(dimension), b.scores.get(dimension)))
    return votes


def vote_margin(comp: Comparison, dimension: str) -> float:
    """The human tie margin for ``dimension`` (a quarter of its scale, known or observed)."""
    return human_tie_margin(dimension, [e.scores.get(dimension, math.nan) for e in comp.examples()])


def default_vote_dimension(dims: Sequence[str]) -> int:
    """Index of the dimension that stands for overall preference (``core.verdict``), else 0."""
    from core.verdict import PREFERENCE_DIMENSIONS
    for d in PREFERENCE_DIMENSIONS:
        if d in dims:
            return list(dims).index(d)
    return 0


def majority_share(votes: Sequence[Pair]) -> float:
    """The share of the A/B votes that go to the side most of them go to: the agreement of a judge that always
    names that side (NaN without A/B votes). With one-sided votes it, not 50 %, is what agreement must beat."""
    a = sum(v.vote == "A" for v in votes)
    b = sum(v.vote == "B" for v in votes)
    return max(a, b) / (a + b) if a + b else math.nan


def learning_curve_figure(df, title: str = "Learning curve of the A/B judge", majority: float | None = None):
    """Agreement with held-out votes vs number of training votes (min-max band over folds), chance at 50 %,
    the shipped judge (0 votes) as the first point; with ``majority`` (:func:`majority_share`) above 55 % a
    second line where a judge that always names the side most votes name would stand."""
    import plotly.graph_objects as go
    x = list(df["n_train"])
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=x + x[::-1], y=list(df["high"] * 100) + list(df["low"] * 100)[::-1],
                             fill="toself", line={"width": 0}, fillcolor="rgba(31,119,180,0.15)",
                             name="fold min-max", hoverinfo="skip"))
    fig.add_trace(go.Scatter(x=x, y=list(df["agreement"] * 100), mode="lines+markers", name="judge",
                             line={"color": "rgb(31,119,180)"}))
    fig.add_hline(y=50, line_dash="dot", annotation_text="chance")
    if majority is not None and math.isfinite(majority) and majority > 0.55:
        fig.add_hline(y=100 * majority, line_dash="dash", line_color="firebrick",
                      annotation_text=f"always the side most votes name ({majority:.0%})")
    fig.update_layout(title=title, xaxis_title="training votes (0 = shipped judge)",
                      yaxis_title="agreement with held-out votes (%)", yaxis_range=[40, 100])
    return fig


def curve_sizes(n_votes: int, folds: int) -> list[int]:
    """Learning-curve sizes: 100, 200, ... 900 votes, clipped to what the training folds hold;
    for fewer than 200 trainable votes, five even steps instead, none below ``MIN_VOTES`` (a re-fit on fewer is
    refused everywhere: on 2 votes the judge said "A" to every pair)."""
    max_train = int(n_votes * (folds - 1) / folds)
    if max_train >= 200:
        return sorted({s for s in range(100, 1000, 100) if s < max_train} | {min(max_train, 900)})
    return sorted({s for k in range(1, 6) if (s := round(max_train * k / 5)) >= MIN_VOTES} | {max_train})


def vote_count(votes: Sequence[Pair]) -> tuple[bool, str]:
    """(enough to re-fit, where the count stands in words): the rule of ``core.judges.pairs.enough_votes``
    (``MIN_VOTES`` votes for A or B on ``MIN_VOTE_CONTEXTS`` different contexts), said without a count past its
    need ('11 A/B votes (10 needed)', never '11 of the 10 A/B votes needed')."""
    from core.judges.pairs import MIN_VOTE_CONTEXTS, context_key, enough_votes
    ok, _ = enough_votes(votes)
    decided = [v for v in votes if v.vote in ("A", "B")]
    k, c = len(decided), len({context_key(v.context) for v in decided})
    have = (f"{k} of the {MIN_VOTES} A/B votes needed" if k < MIN_VOTES
            else f"{k} A/B vote{'s' * (k != 1)} ({MIN_VOTES} needed)")
    where = (f"on {c} of the {MIN_VOTE_CONTEXTS} different contexts needed" if c < MIN_VOTE_CONTEXTS
             else f"on {c} different contexts ({MIN_VOTE_CONTEXTS} needed)")
    return ok, ("Enough to re-fit: " if ok else "") + f"{have}, {where}; ties do not count"
