"""Benchmark-level low-rank completion methods (BenchPress, Zeng & Papailiopoulos 2026).

``bias-als-entropy``, ``-mi``, ``-variance`` and ``-random`` pair the Gaussian selectors of
Smola's submodular benchmark selection (and greedy variance reduction) with :class:`LowRankImputer` (logit Bias-ALS, rank 2,
lambda 0.1; split-conformal intervals); ``bayes-lowrank-entropy``, ``-mi``, ``-variance`` and ``-random``
pair them with :class:`BayesLowRankImputer` (the Bayesian low-rank model by NUTS, posterior
predictive intervals). Options (``rank``, ``lam``, ``df``, ...) go to the component that
accepts them.
"""

from __future__ import annotations

from coreval.methods.registry import declare
from coreval.prediction.lowrank_imputer import BayesLowRankImputer, LowRankImputer
from coreval.selection.gaussian_selector import GAUSSIAN_SELECTORS

REFERENCE = ("Zeng & Papailiopoulos (2026), You Don't Need to Run Every Eval; selection: "
             "Smola (2026), Submodular Benchmark Selection")

for _name, _selector, _text in GAUSSIAN_SELECTORS:
    declare(f"bias-als-{_name}", _selector, LowRankImputer, task="impute",
            description=f"{_text}, logit Bias-ALS imputation", reference=REFERENCE)
    declare(f"bayes-lowrank-{_name}", _selector, BayesLowRankImputer, task="impute",
            description=f"{_text}, Bayesian low-rank imputation (NUTS)", reference=REFERENCE)
