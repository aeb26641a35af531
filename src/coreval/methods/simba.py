"""SimBA methods (Subramani et al. 2025): ``simba-<similarity>`` for the nine measures.

Each method selects ``k`` benchmarks with SimBA's prowl phase under one similarity
(:class:`~coreval.selection.simba_selector.SimbaSelector`) and imputes every benchmark of a
new model with the pounce regressor (:class:`~coreval.prediction.simba.SimbaPredictor`,
option ``predictor="ridge" | "knn" | "mlp" | "mlp2"``, split-conformal intervals); task
``"impute"``. Options are passed to both factories; each keeps the ones it accepts.
"""

from __future__ import annotations

from typing import Any

from coreval.prediction.base import Predictor
from coreval.registry import Method, register_method
from coreval.selection.base import Selector
from coreval.selection.simba.similarity import SIMILARITIES

REFERENCE = ("Subramani, Gomez & Diab (2025), SimBA: Simplifying Benchmark Analysis Using "
             "Performance Matrices Alone (Findings of EMNLP)")


def _keep(options: dict[str, Any], cls: type) -> dict[str, Any]:
    params = cls._get_param_names()
    return {k: v for k, v in options.items() if k in params}


def simba_selector(k: int, seed: int = 0, **options: Any) -> Selector:
    """Prowl selector (greedy PROXY_COVERAGE under ``options["similarity"]``)."""
    from coreval.selection.simba_selector import SimbaSelector

    return SimbaSelector(k, seed=seed, **_keep(options, SimbaSelector))


def simba_predictor(seed: int = 0, **options: Any) -> Predictor:
    """Pounce predictor (ridge by default), split-conformal intervals."""
    from coreval.prediction.simba import SimbaPredictor

    return SimbaPredictor(seed=seed, **_keep(options, SimbaPredictor))


for _measure in SIMILARITIES:
    register_method(Method(
        f"simba-{_measure}", simba_selector, simba_predictor, task="impute",
        description=f"SimBA prowl ({_measure} similarity), pounce regression (ridge)",
        reference=REFERENCE, options={"similarity": _measure}))
