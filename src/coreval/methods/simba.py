"""SimBA methods (Subramani et al. 2025): ``simba-<similarity>`` for the nine measures.

Each method selects ``k`` benchmarks with SimBA's prowl phase under one similarity
(:class:`~coreval.selection.simba_selector.SimbaSelector`) and imputes every benchmark of a
new model with the pounce regressor (:class:`~coreval.prediction.simba.SimbaPredictor`,
option ``predictor="ridge" | "knn" | "mlp" | "mlp2"``, split-conformal intervals); task
``"impute"``.
"""

from __future__ import annotations

from coreval.methods.registry import Component, declare
from coreval.prediction.simba import SimbaPredictor
from coreval.selection.simba_selector import SimbaSelector
from coreval.simba.similarity import SIMILARITIES

REFERENCE = ("Subramani, Gomez & Diab (2025), SimBA: Simplifying Benchmark Analysis Using "
             "Performance Matrices Alone (Findings of EMNLP)")

for _measure in SIMILARITIES:
    declare(f"simba-{_measure}", Component(SimbaSelector, fixed={"similarity": _measure}),
            SimbaPredictor, task="impute",
            description=f"SimBA prowl ({_measure} similarity), pounce regression (ridge)",
            reference=REFERENCE)
