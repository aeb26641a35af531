"""Benchmark-level Gaussian selection (Smola, "Submodular Benchmark Selection", 2026).

* :mod:`.covariance` — standardisation, pairwise PSD estimate, EM with missing entries,
  shrinkage, the reference's correlation estimate;
* :mod:`.greedy` — greedy entropy (pivoted Cholesky) and greedy mutual information, costs,
  mandatory benchmarks, lazy greedy;
* :mod:`.diagnostics` — Shapiro-Wilk with Benjamini-Hochberg, Mardia's test.
"""

from coreval.selection.gaussian.covariance import (
    CorrelationEstimate,
    EMResult,
    Standardization,
    em_covariance,
    em_covariance_per_row,
    estimate_correlation,
    fit_standardization,
    pairwise_covariance,
    project_psd,
    protocol_em_options,
    shrink,
)
from coreval.selection.gaussian.diagnostics import (
    MardiaResult,
    mardia_test,
    shapiro_wilk_columns,
)
from coreval.selection.gaussian.greedy import (
    GreedyResult,
    greedy_entropy,
    greedy_mi,
    greedy_mi_direct,
    residual_variance,
    set_value,
)

__all__ = [
    "CorrelationEstimate",
    "EMResult",
    "GreedyResult",
    "MardiaResult",
    "Standardization",
    "em_covariance",
    "em_covariance_per_row",
    "estimate_correlation",
    "fit_standardization",
    "greedy_entropy",
    "greedy_mi",
    "greedy_mi_direct",
    "mardia_test",
    "pairwise_covariance",
    "project_psd",
    "protocol_em_options",
    "residual_variance",
    "set_value",
    "shapiro_wilk_columns",
    "shrink",
]
