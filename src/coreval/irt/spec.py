"""One specification per IRT model, in one registry (:func:`register_model`).

Everything the engine and the IRT estimators need to know about a model is in
its :class:`IRTModel`: the NumPyro function, the response distribution and mean
function, which scores it takes, its nuisance parameter, its identification
(latent dimensions, fixed priors, the ability prior), the starting values and
whether it is a logistic model with item parameters ``(a, d[, c])`` (which the
anchor, Fisher and p-IRT methods need). Adding a model is one
:func:`register_model` call; no other module changes.

This module imports no JAX: the built-in specifications are registered by
:mod:`coreval.irt.models` on first use of :func:`get_spec`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from coreval.errors import ValidationError

Scores = Literal["binary", "unit", "real"]


def _no_guessing(params: Mapping[str, Any]) -> Any:
    return params.get("c")


@dataclass(frozen=True, eq=False)
class IRTModel:
    """An IRT model and what every part of the engine needs to know about it.

    Attributes
    ----------
    name : str
        Registry name (``"2pl"``).
    numpyro_fn : callable
        ``f(y, mask, *, n_models, n_items, dims, priors, batch_size)`` defining sites
        ``theta`` (n_models, D), ``a`` (n_items, D) and ``d`` (n_items,).
    response : callable
        ``response(theta, params) -> numpyro Distribution`` of batch shape (n, n_items).
    mean : callable
        ``mean(theta, params) -> E[Y]`` of shape (n, n_items).
    scores : {"binary", "unit", "real"}
        0/1 responses, scores in [0, 1], or any real score.
    clip : bool
        Scores are clipped to ``[eps, 1 - eps]`` (densities on the open interval).
    logistic : bool
        ``P(Y = 1) = c + (1 - c) σ(θ·a + d)``: usable by the anchor, Fisher, p-IRT
        and quadrature code through ``(a, d, c)``.
    guessing : callable
        ``guessing(params) -> c or None``: the lower asymptote from a dict of item
        parameters (draws or point estimates); the site ``c`` by default.
    nuisance : str or None
        Per-model nuisance site of a continuous model (fixed at the population
        median when scoring a new model).
    one_dim : bool
        Only D = 1 exists.
    fixed_priors : bool
        The priors are part of the model (``priors`` must be ``"weak"``).
    log_prior_theta : callable
        Log prior density of abilities ``theta`` (..., D), summed over D.
    ability_prior : callable
        ``() -> numpyro Distribution`` of one ability coordinate (NUTS scoring).
    init : callable or None
        ``init(theta0, col_means, dims) -> dict`` of starting values from the
        standardised logit row means ``theta0`` and the column means; None for the
        default (``theta`` and ``d``).
    mml : str or None
        The model's name in :func:`coreval.irt.mml.fit_mml` (None: no MML).
    """

    name: str
    numpyro_fn: Callable[..., None]
    response: Callable[..., Any]
    mean: Callable[..., Any]
    scores: Scores
    log_prior_theta: Callable[..., Any]
    ability_prior: Callable[[], Any]
    clip: bool = False
    logistic: bool = False
    guessing: Callable[[Mapping[str, Any]], Any] = _no_guessing
    nuisance: str | None = None
    one_dim: bool = False
    fixed_priors: bool = False
    init: Callable[[np.ndarray, np.ndarray, int], dict[str, np.ndarray]] | None = None
    mml: str | None = None

    @property
    def binary(self) -> bool:
        return self.scores == "binary"


_REGISTRY: dict[str, IRTModel] = {}
_BUILTIN = "coreval.irt.models"


def register_model(spec: IRTModel, *, replace: bool = False) -> IRTModel:
    """Add an IRT model to the registry (``replace=True`` to override a name)."""
    if not isinstance(spec, IRTModel):
        raise ValidationError(f"register_model expects an IRTModel, got {type(spec).__name__}")
    if spec.name in _REGISTRY and not replace:
        raise ValidationError(f"IRT model {spec.name!r} is already registered")
    _REGISTRY[spec.name] = spec
    return spec


def model_names() -> tuple[str, ...]:
    """Names of the registered IRT models."""
    importlib.import_module(_BUILTIN)
    return tuple(_REGISTRY)


def get_spec(model: str | IRTModel) -> IRTModel:
    """The registered specification of ``model`` (a name, or a spec passed through)."""
    if isinstance(model, IRTModel):
        return model
    importlib.import_module(_BUILTIN)
    if not isinstance(model, str) or model.lower() not in _REGISTRY:
        raise ValidationError(f"unknown IRT model {model!r}; choose one of "
                              f"{', '.join(_REGISTRY)}")
    return _REGISTRY[model.lower()]
