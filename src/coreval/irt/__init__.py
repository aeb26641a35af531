"""Bayesian item response theory in NumPyro: models, inference, fitted results, scoring.

>>> from coreval.irt import fit, score_new_model
>>> result = fit("2pl", matrix, method="svi", settings={"num_steps": 1000})  # doctest: +SKIP
>>> posterior = score_new_model(result, responses)        # doctest: +SKIP

Models (:mod:`coreval.irt.models`): ``"1pl"``, ``"2pl"``, ``"3pl"``, ``"beta"``,
``"lego"``, ``"hetero"``, ``"beta3"``. Inference: ``"map"`` (with a Laplace
approximation), ``"svi"``, ``"nuts"``, ``"mml"``.

The exports below are imported on first use (PEP 562), so that the estimators
can import the engine's light modules (:mod:`coreval.irt.logistic`,
:mod:`coreval.irt.source_fit`) without loading JAX.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "AbilityPosterior": "coreval.irt.scoring",
    "IRTFit": "coreval.irt.result",
    "IRTFitSpec": "coreval.irt.fit_spec",
    "IRTModel": "coreval.irt.spec",
    "MAPSettings": "coreval.irt.inference.settings",
    "MMLSettings": "coreval.irt.inference.settings",
    "NUTSSettings": "coreval.irt.inference.settings",
    "SVISettings": "coreval.irt.inference.settings",
    "fit": "coreval.irt.inference",
    "register_model": "coreval.irt.spec",
    "score_new_model": "coreval.irt.scoring",
}

__all__ = ["AbilityPosterior", "IRTFit", "IRTFitSpec", "IRTModel", "MAPSettings", "MMLSettings",
           "NUTSSettings", "SVISettings", "fit", "models", "register_model", "score_new_model"]


def __getattr__(name: str) -> Any:
    if name == "models":
        return importlib.import_module("coreval.irt.models")
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'coreval.irt' has no attribute {name!r}")
