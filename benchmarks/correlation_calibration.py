"""Are meta-eval's turn-level p-values and intervals honest when rows share contexts? False positives under no
correlation at all.

Each simulation draws G contexts of 5 rows; x (a metric) and y (people's rating) are independent normal noise plus,
in the "shared context effect" rows, an effect per context as large as the noise, drawn separately for x and y (so
rows of one context move together but x and y stay unrelated). ``core.stats.correlate`` is run with the contexts as
clusters (1,000 resamples at meta-eval's default, here 500 to keep it short); the table gives the share of
simulations it calls significant at p < 0.05 (5 % is honest) and how often its 95 % interval holds 0, beside the
plain cluster bootstrap's p (``correlate`` without its floors, ``stats.clustered_t`` and ``stats.fisher_z``) and
scipy's p on the rows as if independent.

    .venv/bin/python benchmarks/correlation_calibration.py             # prints the table
    .venv/bin/python benchmarks/correlation_calibration.py --out F.md  # and writes it
"""
from __future__ import annotations

import argparse

import numpy as np
from common import emit

from core.stats import bootstrap_correlations, correlate, point_correlation

ROWS_PER_CONTEXT = 5


def bootstrap_p(reps: np.ndarray) -> float:
    """The cluster bootstrap's two-sided p alone, floored at 1/(B+1)."""
    fin = reps[np.isfinite(reps)]
    return max(min(1.0, 2 * min((fin <= 0).mean(), (fin >= 0).mean())), 1 / (len(fin) + 1))


def simulate(contexts: int, method: str, effect: float, sims: int, n_boot: int, seed: int) -> tuple[float, ...]:
    rng = np.random.default_rng(seed)
    groups = np.repeat(np.arange(contexts), ROWS_PER_CONTEXT)
    hits = np.zeros(4)
    for s in range(sims):
        x = rng.normal(size=groups.size) + effect * rng.normal(size=contexts)[groups]
        y = rng.normal(size=groups.size) + effect * rng.normal(size=contexts)[groups]
        c = correlate(x, y, method, groups=groups, n_boot=n_boot, seed=s)
        plain = bootstrap_p(bootstrap_correlations(x, y, method, groups, n_boot, s))
        hits += [c.p < 0.05, c.low <= 0 <= c.high, plain < 0.05, point_correlation(x, y, method)[1] < 0.05]
    return tuple(hits / sims)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sims", type=int, default=500)
    ap.add_argument("--n-boot", type=int, default=500)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    lines = [f"{a.sims} simulations per row, {ROWS_PER_CONTEXT} rows per context, {a.n_boot} resamples, seed 13.",
             "", "| method | contexts | shared context effect | significant at p < 0.05 | 95 % interval holds 0 | "
             "cluster bootstrap's p alone < 0.05 | scipy's p (rows as if independent) < 0.05 |",
             "|---|---|---|---|---|---|---|"]
    for method in ("spearman", "pearson"):
        for effect in (0.0, 1.0):
            for contexts in (6, 12, 30, 60):
                sig, holds, plain, scipy_p = simulate(contexts, method, effect, a.sims, a.n_boot, 13)
                lines.append(f"| {method} | {contexts} | {'yes' if effect else 'no'} | {sig:.1%} | {holds:.1%} | "
                             f"{plain:.1%} | {scipy_p:.1%} |")
    emit("\n".join(lines), a.out)


if __name__ == "__main__":
    main()
