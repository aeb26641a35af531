"""Fitting the IRT model on source models, shared by the IRT selectors and predictors.

An IRT selector and its predictor need the same fit of the source models. A method
declares one :class:`~coreval.irt.fit_spec.IRTFitSpec` for both, and both call
:func:`fit_source_irt` with it and the caller's :class:`~coreval.base.FitCache`; the
key is the source's fingerprint, the spec and the seed, so a fit is reused exactly
when everything that defines it is equal. ``model="auto"`` chooses
between the 2PL and the 3PL by the gp-IRT validation error (:func:`validation_bias`),
and the choice is cached the same way.

References
----------
Polo, F. M. et al. (2024). tinyBenchmarks: evaluating LLMs with fewer examples. ICML.
Bowyer, S. et al. Efficient Benchmarking Is Just Feature Selection and Multiple
Regression (mRMR paper), appendix G.1 (the validation error of gp-IRT).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from coreval.base.cache import FitCache, get_or_fit, source_fingerprint
from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError
from coreval.irt.fit_spec import IRTFitSpec
from coreval.irt.logistic import estimate_abilities, logistic_icc
from coreval.irt.spec import get_spec, model_names

#: Default IRT model of the anchor selector and of p-IRT/gp-IRT: the 3PL, whose guessing
#: floor is learnt per benchmark under the hierarchical priors (``mu_c``, see
#: :func:`coreval.irt.priors.guessing`), so it can shrink to no floor on open-ended tasks.
#: On the 16 dataset × budget rows of benchmarks/results/irt_methods.md it is within
#: 0.5 pp of the reference gp-IRT everywhere; the 2PL of tinyBenchmarks (``model="2pl"``)
#: is 1.3 pp behind on HELM commonsense at 5 %, whose near-chance source models it fits by
#: steep discriminations (benchmarks/archive/results/gpirt_model_choice.md).
ANCHOR_MODEL = "3pl"

#: The logistic models ``model="auto"`` chooses between (:func:`resolve_irt_model`).
AUTO_MODELS: tuple[str, ...] = ("2pl", "3pl")

#: The prior families ``priors="auto"`` chooses between (:func:`resolve_irt_model`): the
#: reference's positive discriminations, or discriminations of either sign.
AUTO_PRIORS: tuple[str, ...] = ("hierarchical", "signed")

#: The fit of tinyBenchmarks' anchors and p-IRT/gp-IRT in the mRMR reference code (SVI with
#: Adam at learning rate 0.1 for 2000 steps, hierarchical priors), with :data:`ANCHOR_MODEL`.
TINYBENCH_FIT = IRTFitSpec(model=ANCHOR_MODEL)

#: gp-IRT's default fit: tinyBenchmarks' (:data:`TINYBENCH_FIT`) with the logistic model
#: and the prior family chosen per run by the validation error (``model="auto"``,
#: ``priors="auto"``: :func:`resolve_irt_model`), from the source models alone.
#: Items that stronger models get wrong more often (label noise, adversarial items: 31 %
#: of mrpc's items correlate negatively with the total score) cannot be fitted under
#: positive discriminations; on the LLM matrices, where few are, the validation error
#: keeps the reference priors where they predict as well. A fixed 3PL (the model closest
#: to the reference on the 8 LLM matrices) gives 1.54x random++'s RMSE on sst2 at M = 50
#: (guessing parameters up to 0.82 for near-chance classifiers); chosen per run, 1.04x
#: there, and on the 8 LLM matrices 0.02 pp (M = 30) and 0.14 pp (M = 50) above the fixed
#: 3PL (benchmarks/results/irt_model_auto.md). Cost: four validation fits per choice
#: instead of two.
GPIRT_FIT = TINYBENCH_FIT.replace(model="auto", priors="auto")

#: metabench's fit (Kipnis et al. 2025 fit by marginal ML in R's mirt): the 2PL at its
#: posterior mode under weak priors, Adam at learning rate 0.05 for 2000 steps.
METABENCH_FIT = IRTFitSpec(model="2pl", fit_method="map", priors="weak", learning_rate=0.05,
                           num_draws=1)

#: irt-bayes' fit: the 2PL by SVI under the hierarchical priors, 200 posterior draws.
#: irt-bayes adds the same fit with two latent dimensions when that predicts held-out
#: source models better (``IRTBayesPredictor(choose_dims=True)``). The adaptive tests
#: (``cat-*``) share this spec.
BAYES_FIT = IRTFitSpec(model="2pl")

#: The irt-bayes method's default fit: :data:`BAYES_FIT` with the logistic model chosen per
#: run (``model="auto"``: the 2PL or the 3PL, each with 1 or 2 latent dimensions, by the
#: out-of-fold RMSE of irt-bayes' misfit folds, from the source models alone), as gp-irt
#: chooses its own. On the 8 LLM matrices (binned split, 10 %, seeds 0-2) the choice
#: lowered the σ⁻¹-aggregated RMSE from 3.08 to 3.02 pp at M = 30 and from 2.85 to
#: 2.74 pp at M = 50, coverage 0.90 and 0.94, at about 1.7x the seconds per run; on mrpc
#: and sst2 it stays at or below 1.04x random++'s RMSE
#: (benchmarks/results/irt_model_auto.md).
IRT_BAYES_FIT = BAYES_FIT.replace(model="auto")


def _fit_key(kind: str, source: ScoreMatrix, spec: IRTFitSpec, seed: int) -> tuple:
    """Cache key of a fit: the data's fingerprint, the spec and the seed."""
    return (kind, source_fingerprint(source), spec.key(), int(seed))


def resolve_irt_model(source: ScoreMatrix, spec: IRTFitSpec, *, seed: int = 0,
                      cache: FitCache | None = None, show_progress: bool | None = None,
                      ) -> tuple[IRTFitSpec, dict[str, float]]:
    """Resolve ``model="auto"`` and ``priors="auto"`` by predicting held-out source models.

    Every candidate spec (each of :data:`AUTO_MODELS` for ``model="auto"`` times each
    of :data:`AUTO_PRIORS` for ``priors="auto"``) is scored by the gp-IRT validation
    error (:func:`validation_bias`: fitted on 4/5 of the source models, the mean
    absolute error of the predicted score of the other fifth on half of the items),
    and the smallest error wins; ties keep the earlier candidate (the 2PL, the
    reference's hierarchical priors). A guessing floor (3PL) helps on multiple-choice
    benchmarks with near-chance source models and hurts on open-ended ones; metabench
    (Kipnis et al. 2025) likewise chose the IRT model per benchmark. Signed
    discriminations help where items are answered correctly more often by weaker
    models. The choice uses the source models only, inside each run. The validation
    fits and the choice go through ``cache``, so gp-IRT's weight λ reuses the chosen
    spec's fit and a predictor reuses its selector's choice. Cost: one validation fit
    per candidate (the chosen one is then fitted on all source models).

    Parameters
    ----------
    source : ScoreMatrix
    spec : IRTFitSpec
        Returned unchanged unless its ``model`` or ``priors`` is ``"auto"``.
    seed : int
        Seed of the fits.
    cache : FitCache, optional
    show_progress : bool, optional

    Returns
    -------
    spec : IRTFitSpec
        With the chosen model and priors.
    errors : dict
        Validation error of each candidate, keyed ``"model"`` or ``"model/priors"``
        (empty when nothing was chosen).
    """
    models = AUTO_MODELS if spec.model == "auto" else (spec.model,)
    priors = AUTO_PRIORS if spec.priors == "auto" else (spec.priors,)
    if len(models) == 1 and len(priors) == 1:
        return spec, {}
    candidates = {(f"{m}/{p}" if spec.priors == "auto" else m): spec.replace(model=m, priors=p)
                  for m in models for p in priors}

    def choose() -> dict[str, float]:
        return {name: validation_bias(source, cand, seed=seed, cache=cache,
                                      show_progress=show_progress)
                for name, cand in candidates.items()}

    errors = get_or_fit(cache, _fit_key("irt-auto", source, spec, seed), choose)
    return candidates[min(errors, key=errors.__getitem__)], dict(errors)


def resolved_choice(requested: IRTFitSpec, resolved: IRTFitSpec) -> dict[str, str]:
    """The method options that fix ``requested``'s ``"auto"`` fields to ``resolved``'s.

    ``{"model": ..., "priors": ...}`` for the fields :func:`resolve_irt_model` chose
    (empty when ``requested`` had none): what a refit on part of the same source models
    passes to reuse the choice instead of making it again
    (:meth:`coreval.base.Selector.resolved_options`).

    Examples
    --------
    >>> from coreval.irt.fit_spec import IRTFitSpec
    >>> resolved_choice(IRTFitSpec(model="auto", priors="auto"),
    ...                 IRTFitSpec(model="3pl", priors="signed"))
    {'model': '3pl', 'priors': 'signed'}
    >>> resolved_choice(IRTFitSpec(model="2pl"), IRTFitSpec(model="2pl"))
    {}
    """
    return {name: getattr(resolved, name) for name in ("model", "priors")
            if getattr(requested, name) == "auto"}


def fit_source_irt(source: ScoreMatrix, spec: IRTFitSpec, *, seed: int = 0,
                   cache: FitCache | None = None, show_progress: bool | None = None) -> Any:
    """Fit an IRT model on the source models with :func:`coreval.irt.fit`.

    Parameters
    ----------
    source : ScoreMatrix
        Source models × items.
    spec : IRTFitSpec
        Model, dimensions, inference algorithm, priors and optimiser settings
        (``model`` must be resolved: see :func:`resolve_irt_model`).
    seed : int
        Seed of the fit.
    cache : FitCache, optional
        The caller's cache: the fit is reused when the data, the spec and the seed
        are equal (the harness shares one cache across the budgets and methods of a
        split, so the IRT model is fitted once per split).
    show_progress : bool, optional

    Returns
    -------
    IRTFit
    """
    from coreval.irt.inference import fit  # imported lazily: the inference pulls in JAX

    if spec.model == "auto" or spec.priors == "auto":
        raise ValidationError("fit_source_irt needs a resolved spec; call resolve_irt_model "
                              "first for model='auto' or priors='auto'")
    return get_or_fit(cache, _fit_key("irt", source, spec, seed), lambda: fit(
        spec.model, source, method=spec.fit_method, dims=spec.dims, priors=spec.priors,
        settings=spec.settings(), seed=seed, show_progress=show_progress))


def logistic_item_params(irt_fit: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Point estimates of the item parameters ``(a (n_items, D), d (n_items,), c or None)``.

    :meth:`coreval.irt.IRTFit.item_point`: the posterior mode (MAP), the guide's
    median (SVI; the reference code's py-irt fit exports its variational
    locations, which is the same point) or the posterior mean (NUTS).

    The engine's parameterisation is slope-intercept, ``logit p = a·θ + d``
    (difficulty ``b = -d/a`` for D = 1); the 1PL has no ``a`` (all ones).

    Raises
    ------
    ValidationError
        The fit is of a continuous-score model (anchors, Fisher information, p-IRT
        and the GAM are defined for the logistic models only).
    """
    link = getattr(irt_fit, "link", "2pl")
    spec = get_spec(link)
    if not spec.logistic:
        logistic = tuple(m for m in model_names() if get_spec(m).logistic)
        raise ValidationError(
            f"IRT anchors, Fisher selection, p-IRT/gp-IRT and metabench need a logistic model "
            f"{logistic}, got {link!r}; irt-bayes takes continuous models")
    point = irt_fit.item_point()
    d = np.asarray(point["d"], dtype=float).reshape(-1)
    a = point.get("a")
    a = np.ones((d.shape[0], 1)) if a is None else np.asarray(a, dtype=float)
    if a.ndim == 1:
        a = a[:, None]
    c = spec.guessing(point)
    c = None if c is None else np.broadcast_to(np.asarray(c, dtype=float), d.shape).copy()
    return a, d, c


def validation_bias(source: ScoreMatrix, spec: IRTFitSpec, *, seed: int = 0,
                    theta_bounds: tuple[float, float] | None = None,
                    cache: FitCache | None = None, show_progress: bool | None = None) -> float:
    """Mean absolute error of IRT score predictions on held-out source models.

    The reference code's procedure (mRMR paper, appendix G.1): fit the IRT model
    on the source models except every 5th (rows 0, 5, 10, ...); for each of those
    validation models, estimate the ability on the even-numbered items and
    compare the mean predicted correctness on the odd-numbered items with the
    observed mean there (both over the items the model answered).

    Parameters
    ----------
    source : ScoreMatrix
        Source models (at least 3).
    spec : IRTFitSpec
        The fit (resolved model).
    seed : int
        Seed of the validation fit.
    theta_bounds : (low, high), optional
        Box bounds of the ability MLE.
    cache : FitCache, optional
        Cache of the validation fit.
    show_progress : bool, optional

    Returns
    -------
    float
        ``b = mean_m |mean_{odd} p̂_m - mean_{odd} y_m|``.
    """
    values = source.values
    val_rows = np.arange(0, source.n_models, 5)
    train_rows = np.setdiff1d(np.arange(source.n_models), val_rows)
    if len(train_rows) < 2:
        raise ValidationError(f"gp-IRT needs at least 3 source models, got {source.n_models}")
    a, d, c = logistic_item_params(fit_source_irt(source.take(train_rows), spec, seed=seed,
                                                  cache=cache, show_progress=show_progress))
    seen = np.arange(0, source.n_items, 2)
    unseen = np.arange(1, source.n_items, 2)
    c_seen = None if c is None else c[seen]
    c_unseen = None if c is None else c[unseen]
    theta = estimate_abilities(values[np.ix_(val_rows, seen)], a[seen], d[seen], c_seen,
                               bounds=theta_bounds)
    truth = values[np.ix_(val_rows, unseen)]
    answered = ~np.isnan(truth)  # both means over the items each model answered
    p_hat = logistic_icc(theta, a[unseen], d[unseen], c_unseen)
    with np.errstate(invalid="ignore", divide="ignore"):
        predicted = np.where(answered, p_hat, 0.0).sum(axis=1) / answered.sum(axis=1)
        observed = np.where(answered, truth, 0.0).sum(axis=1) / answered.sum(axis=1)
    return float(np.nanmean(np.abs(predicted - observed)))


