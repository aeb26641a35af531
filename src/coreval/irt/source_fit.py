"""Fitting the IRT model on source models, shared by the IRT selectors and predictors.

An IRT selector and its predictor need the same fit of the source models. Both
call :func:`fit_source_irt` with the caller's :class:`~coreval.base.FitCache`; the
key is the source's fingerprint and the full fit specification, so a fit is
reused exactly when everything that defines it is equal. ``model="auto"`` chooses
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

#: Keyword arguments of :func:`fit_source_irt`, read off an estimator's attributes.
IRT_FIT_OPTIONS: tuple[str, ...] = ("model", "dims", "fit_method", "priors", "num_steps",
                                    "learning_rate", "num_draws", "seed", "show_progress")


def irt_options(estimator: Any) -> dict[str, Any]:
    """The :func:`fit_source_irt` options of a selector or predictor (``dims`` defaults to 1).

    Every IRT-driven estimator stores these hyperparameters under the same names
    (scikit-learn contract), so one function collects them for the fit's cache key.
    """
    options = {name: getattr(estimator, name) for name in IRT_FIT_OPTIONS
               if hasattr(estimator, name)}
    options.setdefault("dims", 1)
    return options


#: The logistic models ``model="auto"`` chooses between (:func:`resolve_irt_model`).
AUTO_MODELS: tuple[str, ...] = ("2pl", "3pl")


def _spec_key(source: ScoreMatrix, options: dict[str, Any]) -> tuple:
    """Cache key of a fit: the data's fingerprint and every option that defines the fit."""
    spec = {k: v for k, v in options.items() if k != "show_progress"}
    spec.setdefault("dims", 1)
    return (source_fingerprint(source), tuple(sorted(spec.items(), key=lambda kv: kv[0])))


def resolve_irt_model(source: ScoreMatrix, options: dict[str, Any], *,
                      cache: FitCache | None = None,
                      ) -> tuple[dict[str, Any], dict[str, float]]:
    """Replace ``model="auto"`` in fit options by the model that predicts held-out models best.

    Each of :data:`AUTO_MODELS` is scored by the gp-IRT validation error
    (:func:`validation_bias`: fitted on 4/5 of the source models, the mean
    absolute error of the predicted score of the other fifth on half of the
    items), and the smaller error wins. A guessing floor (3PL) helps on
    multiple-choice benchmarks with near-chance source models and hurts on
    open-ended ones; metabench (Kipnis et al. 2025) likewise chose the IRT model
    per benchmark. The validation fits and the choice go through ``cache``, so
    gp-IRT's weight λ reuses the chosen model's fit and a predictor reuses its
    selector's choice.

    Parameters
    ----------
    source : ScoreMatrix
    options : dict
        Options of :func:`fit_source_irt`; returned unchanged unless ``model`` is ``"auto"``.
    cache : FitCache, optional

    Returns
    -------
    options : dict
        With the chosen model.
    errors : dict
        Validation error of each candidate (empty when nothing was chosen).
    """
    if options.get("model") != "auto":
        return options, {}

    def choose() -> dict[str, float]:
        return {m: validation_bias(source, cache=cache, **{**options, "model": m})
                for m in AUTO_MODELS}

    errors = get_or_fit(cache, ("irt-auto", *_spec_key(source, options)), choose)
    return {**options, "model": min(errors, key=errors.__getitem__)}, dict(errors)


def fit_source_irt(source: ScoreMatrix, *, cache: FitCache | None = None, model: str = "2pl",
                   dims: int = 1, fit_method: str = "svi", priors: str = "hierarchical",
                   num_steps: int = 2000, learning_rate: float = 0.1,
                   num_draws: int = 200, seed: int = 0,
                   show_progress: bool | None = None) -> Any:
    """Fit an IRT model on the source models with :func:`coreval.irt.fit`.

    Parameters
    ----------
    source : ScoreMatrix
        Source models × items.
    cache : FitCache, optional
        The caller's cache: the fit is reused when the data and every other
        option are equal (the harness shares one cache across the budgets and
        methods of a split, so the IRT model is fitted once per split).
    model, dims, fit_method, priors, num_steps, learning_rate, num_draws, seed, show_progress
        Passed to :func:`coreval.irt.fit` (``fit_method`` is its ``method``). The
        defaults are the gp-IRT setting of the mRMR reference code: 1-D 2PL,
        hierarchical priors, SVI with Adam at learning rate 0.1 for 2000 steps.

    Returns
    -------
    IRTFit
    """
    from coreval.irt.inference import fit  # imported lazily: the inference pulls in JAX

    options = dict(method=fit_method, dims=dims, priors=priors,
                   num_steps=num_steps, learning_rate=learning_rate, num_draws=num_draws,
                   seed=seed)
    key = ("irt", *_spec_key(source, {"model": model, **options}))
    return get_or_fit(cache, key, lambda: fit(model, source, show_progress=show_progress,
                                              **options))


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


def validation_bias(source: ScoreMatrix, *, theta_bounds: tuple[float, float] | None = None,
                    cache: FitCache | None = None, **fit_options) -> float:
    """Mean absolute error of IRT score predictions on held-out source models.

    The reference code's procedure (mRMR paper, appendix G.1): fit the IRT model
    on the source models except every 5th (rows 0, 5, 10, ...); for each of those
    validation models, estimate the ability on the even-numbered items and
    compare the mean predicted correctness on the odd-numbered items with the
    observed mean there.

    Parameters
    ----------
    source : ScoreMatrix
        Source models (at least 3).
    theta_bounds : (low, high), optional
        Box bounds of the ability MLE.
    cache : FitCache, optional
        Cache of the validation fit.
    **fit_options
        Options of :func:`fit_source_irt`.

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
    a, d, c = logistic_item_params(fit_source_irt(source.take(train_rows), cache=cache,
                                                  **fit_options))
    seen = np.arange(0, source.n_items, 2)
    unseen = np.arange(1, source.n_items, 2)
    c_seen = None if c is None else c[seen]
    c_unseen = None if c is None else c[unseen]
    theta = estimate_abilities(values[np.ix_(val_rows, seen)], a[seen], d[seen], c_seen,
                               bounds=theta_bounds)
    predicted = logistic_icc(theta, a[unseen], d[unseen], c_unseen).mean(axis=1)
    observed = np.nanmean(values[np.ix_(val_rows, unseen)], axis=1)
    return float(np.mean(np.abs(predicted - observed)))


