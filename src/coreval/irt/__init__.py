"""Bayesian item response theory in NumPyro: models, inference, fitted results, scoring.

>>> from coreval.irt import fit, score_new_model
>>> result = fit("2pl", matrix, method="svi")            # doctest: +SKIP
>>> posterior = score_new_model(result, responses)        # doctest: +SKIP

Models (:mod:`coreval.irt.models`): ``"1pl"``, ``"2pl"``, ``"3pl"``, ``"beta"``,
``"lego"``, ``"hetero"``, ``"beta3"``. Inference: ``"map"`` (with a Laplace
approximation), ``"svi"``, ``"nuts"``, ``"mml"``.
"""

from coreval.irt import models
from coreval.irt.inference import fit
from coreval.irt.result import IRTFit
from coreval.irt.scoring import AbilityPosterior, score_new_model

__all__ = ["AbilityPosterior", "IRTFit", "fit", "models", "score_new_model"]
