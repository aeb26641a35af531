"""Benchmark-level Gaussian methods of Smola, "Submodular Benchmark Selection" (2026).

``gauss-entropy`` (Algorithm 1), ``gauss-mi`` (Algorithm 2) and ``gauss-random`` (the
protocol's random baseline) select benchmarks on the source correlation; all three impute the
unselected benchmarks of a new model with :class:`GaussianImputer` (task ``"impute"``).
Options (e.g. ``release="prev"``, ``unit_diagonal=True``, ``transform="logit"``) go to
every component that accepts them.

``factor-entropy``, ``factor-mi`` and ``factor-random`` pair the same selectors with the
Bayesian low-rank factor-model imputer :class:`FactorImputer` (NumPyro SVI, posterior
predictive intervals; option ``rank``, default 3), so the harness compares both imputers on
the same folds and coresets.
"""

from __future__ import annotations

from coreval.methods.registry import declare
from coreval.prediction.factor_imputer import FactorImputer
from coreval.prediction.gaussian_imputer import GaussianImputer
from coreval.selection.gaussian_selector import (
    GaussianEntropySelector,
    GaussianMISelector,
    GaussianRandomSelector,
)

REFERENCE = "Smola (2026), Submodular Benchmark Selection"
FACTOR_REFERENCE = "Tipping & Bishop (1999); selection: " + REFERENCE

for _name, _selector, _text in (
    ("entropy", GaussianEntropySelector, "greedy entropy (pivoted Cholesky)"),
    ("mi", GaussianMISelector, "greedy mutual information"),
    ("random", GaussianRandomSelector, "random benchmarks (protocol seed)"),
):
    declare(f"gauss-{_name}", _selector, GaussianImputer, task="impute",
            description=f"{_text}, Gaussian imputation", reference=REFERENCE)
    declare(f"factor-{_name}", _selector, FactorImputer, task="impute",
            description=f"{_text}, Bayesian factor-model imputation",
            reference=FACTOR_REFERENCE)
