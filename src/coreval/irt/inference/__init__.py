"""Fitting IRT models: one module per algorithm, one entry point :func:`fit`.

* :mod:`.map`: MAP with a Laplace approximation; :mod:`.svi`: SVI (and minibatch MAP);
  :mod:`.nuts`: NUTS; :mod:`.mml`: marginal maximum likelihood.
* :mod:`.settings`: one small settings object per algorithm.
* :mod:`.programs`: what the optimisers share; :mod:`.idata`: the InferenceData.

All paths share the NumPyro models of the registered :class:`coreval.irt.spec.IRTModel`
and produce an ArviZ ``InferenceData`` with the same groups, built with
``az.dict_to_dataset`` (rather than ``az.from_numpyro``, whose log-likelihood would count
masked-out entries as observations and whose observed data would show the filler values):

* ``posterior``: latent and deterministic sites (``a``, ``d``, ``b`` (D = 1),
  ``c``, ``theta``, ``sigma``/``k``, hyper-parameters), chain × draw;
* ``log_likelihood``: ``y`` pointwise over the observed entries (dim ``obs``)
  for LOO/WAIC; thinned to at most :data:`.idata.LOGLIK_CAP` numbers;
* ``observed_data``: ``y`` (model, item) with NaN where unobserved;
* ``constant_data``: ``obs_model``, ``obs_item`` (positions of each ``obs``);
* ``sample_stats``: ``loglik_total`` per draw; NUTS adds ``diverging`` and ``lp``.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import asdict
from typing import Any

import numpy as np

from coreval._progress import progress_enabled
from coreval.errors import ValidationError
from coreval.irt._data import initial_values, prepare
from coreval.irt._device import prng_key, to_device
from coreval.irt.fit_spec import FIT_METHODS
from coreval.irt.inference.idata import _DIMS, _card, _to_idata, _with_difficulty
from coreval.irt.inference.map import _run_map
from coreval.irt.inference.mml import _fit_mml
from coreval.irt.inference.nuts import _nuts_diagnostics, _run_nuts
from coreval.irt.inference.programs import _init_strategy, _Spec
from coreval.irt.inference.settings import (
    MAPSettings,
    MMLSettings,
    NUTSSettings,
    Settings,
    SVISettings,
    resolve_settings,
)
from coreval.irt.inference.svi import _run_svi
from coreval.irt.priors import PRIORS
from coreval.irt.result import IRTFit
from coreval.irt.spec import get_spec, model_names

#: Inference methods of :func:`fit`.
METHODS: tuple[str, ...] = FIT_METHODS

__all__ = ["METHODS", "MAPSettings", "MMLSettings", "NUTSSettings", "SVISettings", "fit"]


def fit(model: str | Callable[..., None] = "2pl", data=None, *, method: str = "map",
        dims: int = 1, priors: str = "weak",
        settings: Settings | Mapping[str, Any] | None = None, seed: int = 0,
        show_progress: bool | None = None) -> IRTFit:
    """Fit an IRT model to a score matrix.

    Parameters
    ----------
    model : str or callable
        A registered model (:func:`coreval.irt.spec.model_names`; built in: ``"1pl",
        "2pl", "3pl", "beta", "lego", "hetero", "beta3"``), or a NumPyro model with the signature
        ``f(y, mask, *, n_models, n_items, dims, priors, batch_size)`` that defines
        sites ``theta`` (n_models, D), ``a`` (n_items, D) and ``d`` (n_items,). A
        custom model's response distribution for prediction/scoring is taken from
        its attribute ``irt_kind`` (default ``"2pl"``).
    data : ScoreMatrix or ndarray (n_models, n_items)
        Scores, NaN = unobserved (masked out of the likelihood).
    method : {"map", "svi", "nuts", "mml"}
        ``"map"`` (:mod:`.map`): posterior mode by Adam on the log density in
        unconstrained space, then draws from a Laplace approximation ``N(mode, H^-1)``
        with the exact Hessian when there are at most 5000 parameters; else the point
        estimate only. Minibatched, it is an ``AutoDelta`` fit (point estimate).
        ``"svi"`` (:mod:`.svi`): stochastic variational inference with an
        ``AutoNormal`` (or ``AutoLowRankMultivariateNormal``) guide.
        ``"nuts"`` (:mod:`.nuts`): NumPyro NUTS, chains run sequentially.
        ``"mml"`` (:mod:`.mml`): marginal maximum likelihood
        (:func:`coreval.irt.mml.fit_mml`, 1-D binary models only), the estimate as one
        draw and standard errors.
    dims : int
        Latent dimension D (rotation fixed as documented in :mod:`coreval.irt.priors`).
    priors : {"weak", "hierarchical", "signed"}
        Prior family (mRMR paper appendix G.2 for ``"hierarchical"``).
    settings : MAPSettings, SVISettings, NUTSSettings, MMLSettings, dict or None
        The method's settings (:mod:`coreval.irt.inference.settings`): steps, learning
        rate, draws, minibatch size, guide; warmup, samples and chains for NUTS. A dict
        of fields is accepted; None gives the defaults.
    seed : int
        Seed of every random choice (same seed, same numbers on the same JAX
        version and backend; the fit's random numbers come from JAX's
        ``unsafe_rbg`` keys, see :mod:`coreval.irt._device`).
    show_progress : bool, optional
        Progress bars (default: ``COREVAL_PROGRESS`` environment variable).

    Returns
    -------
    IRTFit
        For MAP and SVI its InferenceData also has a ``point_estimate`` group (the
        posterior mode, or the guide's median), which :meth:`IRTFit.item_point` returns.

    References
    ----------
    Hoffman & Gelman (2014), NUTS; Kingma & Welling (2014) / Hoffman et al. (2013), SVI;
    Bock & Aitkin (1981), MML; mRMR paper appendix G.2 (models and priors).
    """
    name, model_fn, link = _resolve_model(model)
    settings = resolve_settings(method, settings)
    _check_options(name, link, method, dims, priors)
    irt_data = prepare(data, link)
    n_models, n_items = irt_data.shape
    if dims > n_items:
        raise ValidationError(f"dims={dims} exceeds the number of items ({n_items})")
    if method == "mml":
        return _fit_mml(irt_data, name, show_progress, seed=seed)
    batch_size = getattr(settings, "batch_size", None)
    if batch_size is not None and int(batch_size) >= n_models:
        batch_size = None

    spec = _Spec(name if name in model_names() else model_fn, n_models, n_items, dims, priors,
                 batch_size)
    y, mask = to_device(irt_data.y), to_device(irt_data.mask)
    init = initial_values(irt_data, link, dims) if name in model_names() else {}
    init = {k: to_device(v) for k, v in init.items()}
    rng = prng_key(seed)
    show = progress_enabled(show_progress)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*[Ee]xplicit.*")
        point, stats = None, {}
        if method == "nuts":
            samples, stats, diag = _run_nuts(spec.model_fn(batch=False), y, mask,
                                             _init_strategy(init), rng, settings.num_warmup,
                                             settings.num_samples, settings.num_chains, show)
        elif method == "svi" or batch_size is not None:
            guide = getattr(settings, "guide", "normal")
            samples, point, diag = _run_svi(spec, y, mask, init, rng, method, guide,
                                            settings.num_steps, float(settings.learning_rate),
                                            settings.num_draws, show)
        else:
            samples, point, diag = _run_map(spec, y, mask, init, rng, settings.num_steps,
                                            float(settings.learning_rate), settings.num_draws,
                                            show)
    samples = _with_difficulty({k: np.asarray(v) for k, v in samples.items() if k != "y"}, dims)
    if point is not None:
        point = _with_difficulty({k: np.asarray(v) for k, v in point.items() if k in _DIMS},
                                 dims)
    diag["seconds"] = time.perf_counter() - start
    idata, ll_note = _to_idata(samples, stats, irt_data, link, dims, point=point)
    if ll_note:
        diag["log_likelihood"] = ll_note
    if method == "nuts":
        diag.update(_nuts_diagnostics(idata))
    used = dict(asdict(settings), seed=seed)
    if "batch_size" in used:
        used["batch_size"] = batch_size  # None when the batch holds every model
    card = _card(name, method, dims, priors, irt_data, diag, link, used)
    return IRTFit(model=name, method=method, dims=dims, priors=priors, idata=idata, card=card)


def _resolve_model(model) -> tuple[str, Callable[..., None], str]:
    """``(name, NumPyro function, link)``; the link names the registered spec whose
    response distribution, checks and scoring the fit uses."""
    if callable(model):
        link = getattr(model, "irt_kind", "2pl")
        if link not in model_names():
            raise ValidationError(f"custom model's irt_kind {link!r} is not one of "
                                  f"{', '.join(model_names())}")
        return getattr(model, "__name__", "custom"), model, link
    spec = get_spec(model)
    return spec.name, spec.numpyro_fn, spec.name


def _check_options(name: str, link: str, method: str, dims, priors: str) -> None:
    """One-line errors for options the model does not support (its spec decides)."""
    if priors not in PRIORS:
        raise ValidationError(f"unknown priors {priors!r}; choose one of {', '.join(PRIORS)}")
    if isinstance(dims, bool) or not isinstance(dims, int | np.integer) or dims < 1:
        raise ValidationError(f"dims must be a positive integer, got {dims!r}")
    spec = get_spec(link)
    if spec.one_dim and dims != 1:
        raise ValidationError(f"model {name!r} has one latent dimension; got dims={dims}")
    if name == link and spec.fixed_priors and priors != "weak":
        raise ValidationError(f"the {name} model has fixed priors; use priors='weak'")
    if method == "mml":
        if name != link or spec.mml is None:
            with_mml = [m for m in model_names() if get_spec(m).mml is not None]
            raise ValidationError(f"method 'mml' supports the 1-D binary models "
                                  f"{', '.join(with_mml)}, not {name!r}")
        if dims != 1:
            raise ValidationError(f"method 'mml' supports dims=1 only, got dims={dims}")
        if priors == "signed":
            raise ValidationError("method 'mml' has no item priors (its slopes take either "
                                  "sign already); priors='signed' needs method 'map', 'svi' "
                                  "or 'nuts'")
