"""The evaluation harness: run methods on a grid, score them, summarise and compare.

:func:`run_grid` evaluates registered methods over datasets × source sizes ×
splits × budgets with resumable, parallel execution; :func:`summarize`,
:func:`format_summary` and :func:`stability_table` aggregate its tidy results;
the metric functions score predictions on held-out target models.
"""

from coreval.harness.grid import run_grid
from coreval.harness.metrics import (
    Standardizer,
    coverage,
    impute_metrics,
    interval_score,
    kendall,
    mae,
    mean_width,
    pearson,
    r2,
    rmse,
    score_metrics,
    score_sigma,
    sigma_weighted,
    sigma_weights,
    spearman,
)
from coreval.harness.stability import hamming_stability, nogueira_stability, selection_matrix
from coreval.harness.store import CONTRACT_COLUMNS, read_results
from coreval.harness.summary import (
    dataset_sigmas,
    format_summary,
    format_table,
    sigma_weighted_summary,
    stability_table,
    summarize,
)

__all__ = [
    "CONTRACT_COLUMNS",
    "Standardizer",
    "coverage",
    "dataset_sigmas",
    "format_summary",
    "format_table",
    "hamming_stability",
    "impute_metrics",
    "interval_score",
    "kendall",
    "mae",
    "mean_width",
    "nogueira_stability",
    "pearson",
    "r2",
    "read_results",
    "rmse",
    "run_grid",
    "score_metrics",
    "score_sigma",
    "selection_matrix",
    "sigma_weighted",
    "sigma_weighted_summary",
    "sigma_weights",
    "spearman",
    "stability_table",
    "summarize",
]
