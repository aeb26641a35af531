"""The low-rank engine: bias-decomposed matrix completion of benchmark-level score matrices.

Whole-benchmark prediction in the manner of BenchPress (Zeng & Papailiopoulos 2026, "You
Don't Need to Run Every Eval"): scores are mapped to a transformed, standardised space, the
matrix is completed there as ``mu + row bias + column bias + U V^T``, and the completion is
mapped back.

* :mod:`.transform` — per-column logit (percentage columns) or identity (ratings) transform
  and z-score, fitted on training cells, and its inverse;
* :mod:`.als` — Bias-ALS by alternating ridge regressions (``als_init`` / ``als_step``);
* :mod:`.bayes` — the same structure as a NumPyro model with priors, fitted by NUTS or SVI, and its
  posterior predictive;
* :mod:`.complete` — completion of a native-scale matrix (point, interval, nested conformal
  calibration and nested choice of rank and lambda on held-out training cells);
* :mod:`.blend` — a convex blend of two completers (e.g. Bias-ALS and the Bayesian posterior
  mean) whose weight and conformal interval come from well-observed rows reduced to a few
  revealed cells, the situation of a new model;
* :mod:`.rank_choice` — the Bayesian model's rank chosen among candidates by PSIS-LOO of the
  training cells;
* :mod:`.foldin` — a new model's bias and factors from its scores on a few benchmarks (ridge,
  or the empirical-Bayes posterior under the fitted rows' distribution);
* :mod:`.probes` — the completed covariance that probe benchmarks are chosen on (greedy
  expected posterior variance, :func:`coreval.gaussian.greedy.greedy_variance`).
"""

from coreval.lowrank.als import ALSState, als_init, als_reconstruct, als_step, complete_als, fit_als
from coreval.lowrank.bayes import (
    cell_log_likelihood,
    fit_lowrank_nuts,
    fit_lowrank_posterior,
    lowrank_model,
    predictive_draws,
    start_values,
)
from coreval.lowrank.blend import complete_blend, reveal_cells
from coreval.lowrank.complete import (
    Completion,
    complete_bayes,
    complete_bias_als,
    conformal_factor,
    conformal_scores,
    inner_folds,
    inner_split,
    select_als,
)
from coreval.lowrank.rank_choice import fit_best_rank, loo_elpd, stack_ranks
from coreval.lowrank.transform import (
    ColumnTransform,
    fit_transform,
    forward,
    forward_observed,
    inverse,
)

__all__ = [
    "ALSState",
    "ColumnTransform",
    "Completion",
    "als_init",
    "als_reconstruct",
    "als_step",
    "cell_log_likelihood",
    "complete_als",
    "complete_bayes",
    "complete_bias_als",
    "complete_blend",
    "conformal_factor",
    "conformal_scores",
    "fit_als",
    "fit_best_rank",
    "fit_lowrank_nuts",
    "fit_lowrank_posterior",
    "fit_transform",
    "forward",
    "forward_observed",
    "inner_folds",
    "inner_split",
    "inverse",
    "loo_elpd",
    "lowrank_model",
    "predictive_draws",
    "reveal_cells",
    "select_als",
    "stack_ranks",
    "start_values",
]
