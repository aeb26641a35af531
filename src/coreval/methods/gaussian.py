"""Benchmark-level Gaussian methods of Smola, "Submodular Benchmark Selection" (2026).

``gauss-entropy`` (Algorithm 1), ``gauss-mi`` (Algorithm 2) and ``gauss-random`` (the
protocol's random baseline) select benchmarks on the source correlation; all three impute the
unselected benchmarks of a new model with :class:`GaussianImputer` (task ``"impute"``).
Options (e.g. ``release="prev"``, ``unit_diagonal=True``, ``transform="logit"``) are passed
to both the selector and the imputer; each keeps the ones its ``__init__`` accepts.

``factor-entropy``, ``factor-mi`` and ``factor-random`` pair the same selectors with the
Bayesian low-rank factor-model imputer :class:`FactorImputer` (NumPyro SVI, posterior
predictive intervals; option ``rank``, default 3), so the harness compares both imputers on
the same folds and coresets.
"""

from __future__ import annotations

from typing import Any

from coreval.prediction.base import Predictor
from coreval.registry import Method, register_method
from coreval.selection.base import Selector

REFERENCE = "Smola (2026), Submodular Benchmark Selection"


def _keep(options: dict[str, Any], cls: type) -> dict[str, Any]:
    params = cls._get_param_names()
    return {k: v for k, v in options.items() if k in params}


def entropy_selector(k: int, seed: int = 0, **options: Any) -> Selector:
    """Greedy entropy selector (pivoted Cholesky on the source correlation)."""
    from coreval.selection.gaussian_selector import GaussianEntropySelector

    return GaussianEntropySelector(k, seed=seed, **_keep(options, GaussianEntropySelector))


def mi_selector(k: int, seed: int = 0, **options: Any) -> Selector:
    """Greedy mutual-information selector."""
    from coreval.selection.gaussian_selector import GaussianMISelector

    return GaussianMISelector(k, seed=seed, **_keep(options, GaussianMISelector))


def random_selector(k: int, seed: int = 0, **options: Any) -> Selector:
    """The protocol's random baseline; ``seed`` is the fold index of the seed tuple."""
    from coreval.selection.gaussian_selector import GaussianRandomSelector

    return GaussianRandomSelector(k, seed=seed, **_keep(options, GaussianRandomSelector))


def imputer(seed: int = 0, **options: Any) -> Predictor:
    """Gaussian conditional imputer (ridge 0.01, 90 % intervals)."""
    from coreval.prediction.gaussian_imputer import GaussianImputer

    return GaussianImputer(**_keep(options, GaussianImputer))


for _name, _factory, _text in (
    ("gauss-entropy", entropy_selector, "greedy entropy (pivoted Cholesky), Gaussian imputation"),
    ("gauss-mi", mi_selector, "greedy mutual information, Gaussian imputation"),
    ("gauss-random", random_selector, "random benchmarks (protocol seed), Gaussian imputation"),
):
    register_method(Method(_name, _factory, imputer, task="impute", description=_text,
                           reference=REFERENCE))


def factor_imputer(seed: int = 0, **options: Any) -> Predictor:
    """Bayesian low-rank factor-model imputer (NumPyro SVI, posterior intervals)."""
    from coreval.prediction.factor_imputer import FactorImputer

    return FactorImputer(seed=seed, **_keep(options, FactorImputer))


for _name, _factory, _text in (
    ("factor-entropy", entropy_selector, "greedy entropy, Bayesian factor-model imputation"),
    ("factor-mi", mi_selector, "greedy mutual information, Bayesian factor-model imputation"),
    ("factor-random", random_selector, "random benchmarks, Bayesian factor-model imputation"),
):
    register_method(Method(_name, _factory, factor_imputer, task="impute", description=_text,
                           reference="Tipping & Bishop (1999); selection: " + REFERENCE))
