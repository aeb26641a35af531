"""The Gaussian engine: benchmark-level maths of Smola, "Submodular Benchmark Selection" (2026).

Used by the Gaussian selectors (:mod:`coreval.selection.gaussian_selector`) and the Gaussian
and factor imputers (:mod:`coreval.prediction`); it knows nothing of either.

* :mod:`.standardize` — the one per-column standardisation (observed mean, floored std) and
  the logit transform;
* :mod:`.covariance` — pairwise-complete covariance, PSD projection, shrinkage;
* :mod:`.em` — EM for the covariance of Gaussian rows with missing entries (grouped E-step);
* :mod:`.correlation` — the reference's correlation estimate and its cache-shared form
  (:func:`shared_estimate`, one EM run for a selector and an imputer given one
  :class:`~coreval.base.FitCache`);
* :mod:`.greedy` — greedy entropy (pivoted Cholesky), greedy mutual information and greedy
  variance reduction, costs,
  mandatory benchmarks, lazy greedy;
* :mod:`.diagnostics` — Shapiro-Wilk with Benjamini-Hochberg, Mardia's test, eigenvalue tail.
"""

from coreval.gaussian.correlation import (
    ESTIMATE_OPTIONS,
    CorrelationEstimate,
    estimate_correlation,
    estimate_options,
    protocol_em_options,
    shared_estimate,
)
from coreval.gaussian.covariance import pairwise_covariance, project_psd, shrink
from coreval.gaussian.diagnostics import (
    MardiaResult,
    mardia_test,
    shapiro_wilk_columns,
)
from coreval.gaussian.em import PROTOCOL_TOL, EMResult, em_covariance
from coreval.gaussian.greedy import (
    GreedyResult,
    exchange_variance,
    greedy_entropy,
    greedy_mi,
    greedy_mi_direct,
    greedy_variance,
    residual_variance,
    set_value,
)
from coreval.gaussian.standardize import Standardization, fit_standardization

__all__ = [
    "ESTIMATE_OPTIONS",
    "PROTOCOL_TOL",
    "CorrelationEstimate",
    "EMResult",
    "GreedyResult",
    "MardiaResult",
    "Standardization",
    "em_covariance",
    "estimate_correlation",
    "estimate_options",
    "exchange_variance",
    "fit_standardization",
    "greedy_entropy",
    "greedy_mi",
    "greedy_mi_direct",
    "greedy_variance",
    "mardia_test",
    "pairwise_covariance",
    "project_psd",
    "protocol_em_options",
    "residual_variance",
    "set_value",
    "shapiro_wilk_columns",
    "shared_estimate",
    "shrink",
]
