"""Adaptive testing over the IRT engine: choose each next item from the posterior, stop
when the full score's interval is narrow enough.

The package follows the algorithm's stages, as a functional core plus one object:

* :mod:`.bank`: :class:`ItemBank`, item-parameter draws of a fitted (or saved) model;
* :mod:`.state`: :func:`init` and :func:`update`, the posterior on (draw, ability) nodes;
* :mod:`.laplace`: the nodes of a D ≥ 2 bank, placed at each update by adaptive
  Gauss-Hermite quadrature around the Laplace approximation;
* :mod:`.select`: :func:`next_items` with the rules ``score`` (expected reduction of the
  full score's variance), ``fisher`` and ``kl``, randomesque and Sympson-Hetter exposure
  control, content balancing and batches;
* :mod:`.estimate`: :func:`estimate`, the full score with its interval;
* :mod:`.stop`: stopping rules (items, θ's SD, the score interval's width, any callable);
* :mod:`.misfit`: the misfit term's shapes, and τ of a width-stopped test, learnt where
  the tests stop;
* :mod:`.adaptive_test`: :class:`AdaptiveTest`, the stateful object for notebooks.
"""

from coreval.adaptive.adaptive_test import AdaptiveTest, calibrate_exposure
from coreval.adaptive.bank import ItemBank
from coreval.adaptive.estimate import estimate, score_moments
from coreval.adaptive.select import (
    RULES,
    fisher_information,
    kl_information,
    next_items,
    score_variance_reduction,
)
from coreval.adaptive.state import AdaptiveState, init, update
from coreval.adaptive.stop import any_of, max_items, score_width, theta_sd

__all__ = ["RULES", "AdaptiveState", "AdaptiveTest", "ItemBank", "any_of",
           "calibrate_exposure", "estimate", "fisher_information", "init", "kl_information",
           "max_items", "next_items", "score_moments", "score_variance_reduction",
           "score_width", "theta_sd", "update"]
