"""Statistics you can trust: correlations with bootstrap intervals, paired significance tests, win rates.

Everything here works on plain float arrays (one value per example), so resampling never re-runs a
metric (sacrebleu's design). All resampling is vectorized with numpy and seeded (``seed=13`` default).

Choices, fixed and tested (tests/test_stats.py):

- **Intervals** are percentile bootstrap intervals (Efron & Tibshirani 1993, ch. 13) at ``level``.
  Every bootstrap replicate draws a sample *of the full size* (n of n rows, or G of G clusters), never
  half the data (compare-mt's paired bootstrap draws half).
- **Clusters** (``groups=``, e.g. one id per dialogue context): when several rows share a context the
  rows are not independent, so the bootstrap resamples whole clusters (the cluster bootstrap, Field &
  Welsh 2007) and randomization flips whole clusters. With clusters the interval is wider, as it should
  be (tested on simulated clustered data).
- **Correlation p-values**: without clusters, scipy's (Pearson: exact t / beta distribution; Spearman:
  t approximation; Kendall: exact for small n without ties, else normal); these assume independent rows.
  With clusters they would be too small, so the p-value is the bootstrap one instead:
  ``p = min(1, 2 * min(P*(r <= 0), P*(r >= 0)))`` over the cluster replicates (consistent with the
  interval: p < 1 - level exactly when the interval excludes 0), and never below, nor the interval narrower
  than, the bootstrap's spread read with the small-sample t (:func:`clustered_t`) or Fisher's z on the rows as
  if independent (:func:`fisher_z`): a percentile bootstrap over few contexts runs liberal.
  ``Correlation.p_method`` says which.
- **Paired comparison** of systems A and B on the same inputs: ``diff = mean_a - mean_b``.
  *Paired bootstrap*: resample pairs (or clusters) n of n, percentile interval of the mean difference,
  two-sided p-value by the shift method ``p = (1 + #{|d* - d| >= |d|}) / (B + 1)`` (the bootstrap
  distribution centred under H0; Berg-Kirkpatrick et al. 2012 use the one-sided ``d* > 2d``).
  *Approximate randomization* (Noreen 1989; Riezler & Maxwell 2005): swap A and B within each pair (each
  cluster) with probability 1/2; ``p = (1 + #{|mean(d_perm)| >= |d|}) / (R + 1)``, or, when the G units
  have no more than R sign flips (``2^G <= R``), all of them enumerated: the exact test.
- **Ties** (``|a_i - b_i| <= tie_tol``) are ties, never wins. ``win_rate = wins / (wins + losses)``
  (ties excluded), its Wilson score interval, and the two-sided exact **sign test** on the same
  ``wins`` out of ``wins + losses`` (the standard way to treat zero differences, Dixon & Mood 1946).
  ``win_rate_ties_split = (wins + ties / 2) / n`` is also reported for readers who want ties counted.
- **Verdict**: "A better" / "B better" only when the randomization p-value is below ``alpha`` *and* the
  bootstrap interval excludes 0 (the two agree almost always; requiring both is the conservative reading);
  else "no significant difference". With ``higher_is_better=False`` (e.g. perplexity) the lower mean wins.
- Rows where either value is NaN (a metric that cannot apply) are dropped and counted in ``n_dropped``.
- **Too few units to resample**: a bootstrap over fewer than ``MIN_RESAMPLED`` = 5 units (contexts when they
  repeat, else rows) has at most a handful of distinct resamples (one context: every resample is the data
  itself, which gave a zero-width interval and p = 1/(B+1), "p < 0.001", from a single context). There is then
  no bootstrap interval and no bootstrap p-value (NaN, shown as "-"), so no verdict names a winner; the
  randomization p-value (exact in its coarseness: 2^G sign flips) and scipy's unclustered correlation p stay.

Pure functions on arrays: the verdict that uses them is ``core/verdict.py``. scipy.stats is imported only where it
is needed (correlations; a sign test over more than 20,000 pairs): importing it took 1.2 s of the demo's first visit
on 2 AVX2 cores, so the verdict's Wilson bound and sign test use the standard library (:func:`wilson_bounds`,
:func:`sign_test`).

The modules: ``bootstrap`` (settings, cluster codes, the percentile bootstrap, :func:`mean_ci`), ``correlation``
(row- and system-level correlations), ``paired`` (paired bootstrap, approximate randomization, the paired verdict,
detectable differences, Holm), ``win_rates`` (Wilson, sign test, clustered and length-controlled win rates),
``bradley_terry`` (Bradley-Terry ratings). Every public name is importable from ``core.stats``.
"""
from __future__ import annotations

from core.stats.bootstrap import (LEVEL, MAX_RESAMPLES, MIN_BOOT, N_BOOT, N_PERM, MIN_RESAMPLED, RESAMPLE_CHUNK, bootstrap_means,
                                  canonical_rows, check_settings, cluster_counts, finite_pairs, group_codes, has_repeats, mean_ci,
                                  n_units, percentile_interval)
from core.stats.correlation import (FEW_SYSTEMS, METHODS, Correlation, SystemCorrelation, bootstrap_correlations,
                                    clustered_t, correlate, exact_permutation_p, fisher_z, point_correlation,
                                    system_correlation, weighted_midranks, weighted_pearson)
from core.stats.paired import (NO_DIFF, POWER, PairedResult, approximate_randomization, can_be_significant,
                               detectable_difference, fewest_differing, holm, paired_bootstrap, paired_comparison)
from core.stats.win_rates import (EQUAL_LENGTH_SHARE, EXACT_SIGN_TEST, FIT_FLOATS, LengthControlled, WinStats,
                                  clustered_win_stats, length_controlled_win_rate, logistic_fits, sign_test,
                                  wilson_bounds, wilson_interval, win_stats)
from core.stats.bradley_terry import (BT_RIDGE, ELO_BASE, ELO_SCALE, BradleyTerry, bradley_terry,
                                      bradley_terry_ratings, connected_replicates)

__all__ = ["BT_RIDGE", "BradleyTerry", "Correlation", "ELO_BASE", "ELO_SCALE", "EQUAL_LENGTH_SHARE", "EXACT_SIGN_TEST",
           "FEW_SYSTEMS", "FIT_FLOATS", "LengthControlled", "LEVEL", "MAX_RESAMPLES", "METHODS", "MIN_BOOT", "N_BOOT", "N_PERM", "MIN_RESAMPLED",
           "NO_DIFF", "POWER", "PairedResult", "RESAMPLE_CHUNK", "SystemCorrelation", "WinStats",
           "approximate_randomization", "bootstrap_correlations", "bootstrap_means", "bradley_terry",
           "bradley_terry_ratings", "can_be_significant", "connected_replicates", "canonical_rows", "check_settings", "cluster_counts", "clustered_win_stats",
           "clustered_t", "correlate", "exact_permutation_p", "fisher_z", "detectable_difference", "fewest_differing", "finite_pairs", "group_codes", "has_repeats", "holm",
           "length_controlled_win_rate", "logistic_fits", "mean_ci", "n_units", "paired_bootstrap",
           "paired_comparison", "percentile_interval", "point_correlation", "sign_test", "system_correlation",
           "weighted_midranks", "weighted_pearson", "wilson_bounds", "wilson_interval", "win_stats"]
