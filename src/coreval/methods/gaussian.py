"""Benchmark-level Gaussian methods of Smola, "Submodular Benchmark Selection" (2026).

``gauss-entropy`` (Algorithm 1), ``gauss-mi`` (Algorithm 2), ``gauss-random`` (the
protocol's random baseline) and ``gauss-variance`` (greedy variance reduction, the expected
imputation R^2) select benchmarks on the source correlation; all of them impute the
unselected benchmarks of a new model with :class:`GaussianImputer` (task ``"impute"``).
Options (e.g. ``release="prev"``, ``unit_diagonal=True``, ``transform="logit"``) go to
every component that accepts them.

``gpr-entropy``, ``gpr-mi``, ``gpr-variance`` and ``gpr-random`` pair them with
:class:`GPImputer`: the Gaussian conditional mean plus one Gaussian-process correction per
unselected benchmark on the selected ones (ARD RBF kernel, hyperparameters by marginal
likelihood, intervals scaled by a leave-one-out conformal factor).

``factor-entropy``, ``factor-mi``, ``factor-variance`` and ``factor-random`` pair the same selectors with the
Bayesian low-rank factor-model imputer :class:`FactorImputer` (NumPyro SVI, posterior
predictive intervals; option ``rank``, default 3), so the harness compares both imputers on
the same folds and coresets.
"""

from __future__ import annotations

from coreval.methods.registry import declare
from coreval.prediction.factor_imputer import FactorImputer
from coreval.prediction.gaussian_imputer import GaussianImputer
from coreval.prediction.gp_imputer import GPImputer
from coreval.selection.gaussian_selector import GAUSSIAN_SELECTORS

REFERENCE = "Smola (2026), Submodular Benchmark Selection"
GP_REFERENCE = "Rasmussen & Williams (2006); selection: " + REFERENCE
FACTOR_REFERENCE = "Tipping & Bishop (1999); selection: " + REFERENCE

for _name, _selector, _text in GAUSSIAN_SELECTORS:
    declare(f"gauss-{_name}", _selector, GaussianImputer, task="impute",
            description=f"{_text}, Gaussian imputation", reference=REFERENCE)
    declare(f"gpr-{_name}", _selector, GPImputer, task="impute",
            description=f"{_text}, Gaussian-process regression imputation",
            reference=GP_REFERENCE)
    declare(f"factor-{_name}", _selector, FactorImputer, task="impute",
            description=f"{_text}, Bayesian factor-model imputation",
            reference=FACTOR_REFERENCE)
