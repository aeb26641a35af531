"""Stacking: several predictors on one coreset, combined by weights learnt out of fold.

Every component sees the same coreset, so the budget holds: the new model
answers ``k`` items once, and each component turns those answers into a full
score. The components' predictions of held-out source models, with the
selection re-run in every fold (:func:`coreval.base.out_of_fold`), are the
features of a small meta-regression on the true scores (Wolpert 1992; Breiman
1996):

``ŝ(x) = Σ_j w_j ŝ_j(x)``,  ``w = argmin_{w ≥ 0} Σ_m (y_m − Σ_j w_j ŝ_j^{(−f(m))}(x_m))²``

(``meta="nnls"``, :func:`scipy.optimize.nnls`; ``ŝ_j^{(−f)}`` is component ``j``
fitted without fold ``f``). Non-negative weights without a sum constraint are
Breiman's "stacked regressions"; a component whose held-out predictions are
poor (a misfitting IRT model) gets a weight near zero without being told.
``meta="ridge"`` fits a ridge regression with an intercept instead, λ by
leave-one-out (:class:`sklearn.linear_model.RidgeCV`).

The interval is split conformal (Lei et al. 2018) on the stacked out-of-fold
residuals, with the half-width scaled as ``interval_scale`` says
(:func:`coreval.base.conformal.conformal_scales`). They are cross-fitted: the residual of a model in fold ``f`` uses
weights learnt on the other folds' out-of-fold predictions, so neither the
coreset, nor the components, nor the weights saw the model they are scored on.

References
----------
Wolpert, D. H. (1992). Stacked generalization. *Neural Networks* 5(2), 241-259.
Breiman, L. (1996). Stacked regressions. *Machine Learning* 24, 49-64.
Lei, J., G'Sell, M., Rinaldo, A., Tibshirani, R. J. & Wasserman, L. (2018).
Distribution-free predictive inference for regression. *JASA* 113(523).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
from scipy.optimize import nnls
from sklearn.linear_model import RidgeCV

from coreval.base import Coreset, Prediction, Predictor, out_of_fold
from coreval.base.conformal import (
    CONFORMAL_SCALES,
    conformal_scales,
    resolve_conformal_scale,
    split_conformal_interval,
)
from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError
from coreval.irt.fit_spec import IRTFitSpec
from coreval.irt.source_fit import GPIRT_FIT
from coreval.prediction.gp_irt import GPIRTPredictor
from coreval.prediction.irt_bayes import IRTBayesPredictor
from coreval.prediction.mean import MeanPredictor
from coreval.prediction.ridge import KernelRidgePredictor, RidgePredictor


def _irt_bayes_mean(seed: int, irt: IRTFitSpec) -> Predictor:
    """irt-bayes' posterior mean (no misfit term: only the point prediction is stacked).

    It keeps irt-bayes' own Bayesian fit spec; ``irt`` is gp-IRT's.
    """
    return IRTBayesPredictor(misfit="none", noise=False, check=False, seed=seed)


#: The stackable components by name: ``name -> factory(seed, irt)``, ``irt`` being the
#: stack's IRT fit spec (the gp-IRT component's). Each is fitted on the stack's coreset
#: with its default options, its own interval switched off where it has one to spare the
#: time (only its point prediction is stacked).
COMPONENTS: dict[str, Callable[[int, IRTFitSpec], Predictor]] = {
    "mean": lambda seed, irt: MeanPredictor(),
    "ridge": lambda seed, irt: RidgePredictor(interval="none"),
    "kernel-ridge": lambda seed, irt: KernelRidgePredictor(interval="none"),
    "gp-irt": lambda seed, irt: GPIRTPredictor(irt=irt, seed=seed),
    "irt-bayes": _irt_bayes_mean,
}

#: Components that need binary (0/1) scores; dropped by ``components="auto"`` otherwise.
BINARY_ONLY: frozenset[str] = frozenset({"gp-irt", "irt-bayes"})

#: Accepted ``meta=`` values.
META_LEARNERS: tuple[str, ...] = ("nnls", "ridge", "average")


def stack_weights(predictions: np.ndarray, truth: np.ndarray, meta: str = "nnls"
                  ) -> tuple[np.ndarray, float]:
    """Meta-learner weights and intercept from out-of-fold component predictions.

    Parameters
    ----------
    predictions : ndarray (n_models, n_components)
        Out-of-fold predictions ``ŝ_j^{(−f(m))}(x_m)``.
    truth : ndarray (n_models,)
        True full scores ``y_m``.
    meta : {"nnls", "ridge", "average"}
        ``"nnls"``: ``argmin_{w ≥ 0} ||y − P w||²`` without intercept (Breiman 1996);
        ``"ridge"``: :class:`~sklearn.linear_model.RidgeCV` with intercept;
        ``"average"``: equal weights.

    Returns
    -------
    weights : ndarray (n_components,)
    intercept : float
    """
    p = np.asarray(predictions, dtype=float)
    y = np.asarray(truth, dtype=float)
    if p.ndim != 2 or p.shape[0] != y.shape[0]:
        raise ValidationError(f"stack_weights: predictions {p.shape} do not match truth {y.shape}")
    if meta == "average" or p.shape[0] == 0:
        return np.full(p.shape[1], 1.0 / p.shape[1]), 0.0
    if meta == "nnls":
        w, _ = nnls(p, y)
        if not w.any():  # every component anti-correlated with the truth: fall back to the mean
            w = np.full(p.shape[1], 1.0 / p.shape[1])
        return w, 0.0
    if meta == "ridge":
        model = RidgeCV(alphas=np.logspace(-6, 1, 15), fit_intercept=True).fit(p, y)
        return np.asarray(model.coef_, dtype=float), float(model.intercept_)
    raise ValidationError(f"meta must be one of {META_LEARNERS}, got {meta!r}")


class StackingPredictor(Predictor):
    """Stacked predictions of several predictors on one coreset (module docstring).

    Parameters
    ----------
    components : tuple of str or "auto"
        Names from :data:`COMPONENTS`. ``"auto"``: all of them on binary data, the
        ones that take continuous scores (``mean``, ``ridge``, ``kernel-ridge``)
        otherwise.
    meta : {"nnls", "ridge", "average"}
        The meta-learner (:func:`stack_weights`).
    meta_folds : int
        Folds of the source models for the out-of-fold predictions (the selection is
        re-run in each when fitted by :func:`coreval.pipeline.fit_method`). ``0``
        skips the out-of-fold stage: equal weights and no interval; the folds' own
        fits use it.
    irt : IRTFitSpec
        The gp-IRT component's IRT fit of the source models (gp-irt's by default; its
        fields, e.g. ``model="2pl"``, are options of the stacked methods). In
        ``stack-irt-anchors`` the anchor selector takes the same spec, so the two share
        one fit. The irt-bayes component keeps its own Bayesian fit.
    level : float
        Nominal coverage of the interval.
    interval_scale : {"quadratic", "constant", "bernoulli", "auto"}
        How the interval's half-width varies with the prediction: proportional to a
        quadratic variance function of ``ŷ`` fitted to the stacked out-of-fold residuals
        (the default), the same for every model, or proportional to ``sqrt(ŷ(1 − ŷ))``
        (scores in [0, 1]) (:func:`coreval.base.conformal.conformal_scales`); ``"auto"``
        chooses between the last two from the stacked out-of-fold residuals
        (:func:`coreval.base.conformal.resolve_conformal_scale`).
    seed : int
        Seed of the folds and of the IRT components.
    show_progress : bool, optional

    Attributes
    ----------
    components_ : dict of str to Predictor
        The components fitted on all source models.
    weights_ : ndarray
        Meta-learner weights, in ``components_`` order.
    intercept_ : float
    residuals_ : ndarray
        Cross-fitted stacked out-of-fold residuals (the conformal calibration set).
    oof_means_ : ndarray
        The cross-fitted stacked out-of-fold predictions behind them.
    interval_scale_ : str
        The interval scale used (``"auto"`` resolved).
    oof_rows_ : ndarray of int
        The source rows those residuals belong to.
    component_rmse_ : dict of str to float
        Each component's out-of-fold RMSE on the source models.
    rmse_ : float
        The stack's cross-fitted out-of-fold RMSE.

    Notes
    -----
    Cost: ``meta_folds + 1`` fits of every component, and of the selector when fitted by
    :func:`coreval.pipeline.fit_method`; IRT fits of the same source models are
    shared through the fit cache with other methods and budgets on the same split.
    """

    min_source_models = 6
    #: mRMR or IRT-anchor coresets are compared with a random one by ``selection="auto"``
    #: of :func:`coreval.pipeline.fit_method`, on the stack's own out-of-fold residuals.
    compare_random_coreset = True

    def __init__(self, components: tuple[str, ...] | str = "auto", meta: str = "nnls",
                 meta_folds: int = 5, irt: IRTFitSpec = GPIRT_FIT, level: float = 0.9,
                 interval_scale: str = "quadratic", seed: int = 0,
                 show_progress: bool | None = None) -> None:
        self.components = components
        self.meta = meta
        self.meta_folds = meta_folds
        self.irt = irt
        self.level = level
        self.interval_scale = interval_scale
        self.seed = seed
        self.show_progress = show_progress

    @property
    def selection_aware_interval(self) -> bool:  # type: ignore[override]
        """The stacked out-of-fold residuals re-ran the selection (unless ``meta_folds=0``)."""
        return int(self.meta_folds) != 0

    @property
    def needs_binary(self) -> bool:  # type: ignore[override]
        """Binary scores when an explicitly chosen component needs them."""
        if self.components == "auto":
            return False
        return bool(BINARY_ONLY & set(self.components))

    def _names(self, source: ScoreMatrix) -> tuple[str, ...]:
        if self.components == "auto":
            return tuple(n for n in COMPONENTS if source.is_binary or n not in BINARY_ONLY)
        names = (self.components,) if isinstance(self.components, str) else tuple(self.components)
        unknown = [n for n in names if n not in COMPONENTS]
        if unknown or not names:
            raise ValidationError(f"unknown stacking components {unknown or names}; "
                                  f"known: {', '.join(COMPONENTS)} (or 'auto')")
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValidationError(f"stacking components repeat: {repeated}")
        return names

    def _fit(self, source: ScoreMatrix, coreset: Coreset) -> None:
        if self.meta not in META_LEARNERS:
            raise ValidationError(f"meta must be one of {META_LEARNERS}, got {self.meta!r}")
        if not 0.0 < float(self.level) < 1.0:
            raise ValidationError(f"level must be in (0, 1), got {self.level!r}")
        if self.interval_scale not in (*CONFORMAL_SCALES, "auto"):
            raise ValidationError(f"interval_scale must be one of "
                                  f"{(*CONFORMAL_SCALES, 'auto')}, got {self.interval_scale!r}")
        folds = self.meta_folds
        if (isinstance(folds, bool) or not isinstance(folds, int | np.integer) or folds == 1
                or folds < 0):
            raise ValidationError(f"meta_folds must be 0 (no out-of-fold stage) or at least 2, "
                                  f"got {self.meta_folds!r}")
        names = self._names(source)
        self.clip_ = bool(source.is_binary)
        folds = int(folds)
        self.components_ = {name: COMPONENTS[name](int(self.seed), self.irt).fit(
            source, coreset, cache=self.cache_) for name in names}
        n = len(names)
        self.weights_, self.intercept_ = np.full(n, 1.0 / n), 0.0
        self.residuals_ = np.zeros(0)
        self.oof_means_ = np.zeros(0)
        self.oof_rows_ = np.zeros(0, dtype=np.intp)
        self.interval_scale_ = "constant"
        self.component_rmse_: dict[str, float] = {}
        self.rmse_ = float("nan")
        if folds == 0:
            return
        # the folds' gp-IRT components fit the IRT model and priors chosen here on all
        # source models ("auto"), rather than choosing again (coreval.pipeline, "Choices
        # in the folds")
        params = {"meta_folds": 0, "components": names, **(
            {"irt": self.components_["gp-irt"].irt_spec_} if "gp-irt" in names else {})}
        oof = out_of_fold(source, self.refit_, folds=folds, seed=int(self.seed),
                          complete_only=True, params=params,
                          show_progress=self.show_progress, desc="stacking folds",
                          collect=lambda fold_stack, x: fold_stack.component_predictions(x))
        if len(oof.rows) < 2:
            raise ValidationError("stacking: fewer than 2 source models have complete coreset "
                                  "responses for the out-of-fold stage")
        p, y = oof.collected, oof.truth
        self.component_rmse_ = {name: float(np.sqrt(np.mean((y - p[:, j]) ** 2)))
                                for j, name in enumerate(names)}
        self.weights_, self.intercept_ = stack_weights(p, y, self.meta)
        self.residuals_ = self._cross_fitted_residuals(p, y, oof.fold)
        self.oof_means_ = y - self.residuals_
        self.oof_rows_ = oof.rows
        self.interval_scale_ = resolve_conformal_scale(self.interval_scale, y, self.oof_means_,
                                                       source.score_range(), float(self.level))
        self.rmse_ = float(np.sqrt(np.mean(self.residuals_ ** 2)))

    def _cross_fitted_residuals(self, p: np.ndarray, y: np.ndarray, fold: np.ndarray
                                ) -> np.ndarray:
        """``y_m − ŝ(x_m)`` with the weights learnt without ``m``'s fold."""
        resid = np.empty(len(y))
        if len(np.unique(fold)) == 1:
            warnings.warn("stacking: the source models with complete coreset responses all "
                          "fell in one out-of-fold fold, so the conformal residuals use "
                          "weights learnt on themselves and the interval may be too narrow",
                          UserWarning, stacklevel=3)
        for f in np.unique(fold):
            held = fold == f
            if held.all():  # a single fold: no other folds to learn from
                w, b = self.weights_, self.intercept_
            else:
                w, b = stack_weights(p[~held], y[~held], self.meta)
            stacked = p[held] @ w + b
            if self.clip_:
                stacked = np.clip(stacked, 0.0, 1.0)
            resid[held] = y[held] - stacked
        return resid

    def resolved_options(self) -> dict[str, str]:
        """The gp-IRT component's ``model`` / ``priors`` as ``"auto"`` chose them."""
        gp_irt = self.components_.get("gp-irt")
        return {} if gp_irt is None else gp_irt.resolved_options()

    def out_of_fold_residuals(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The source rows of the out-of-fold stage and their cross-fitted stacked residuals."""
        if len(self.residuals_) == 0:
            return None
        return self.oof_rows_, self.residuals_

    def component_predictions(self, x: np.ndarray) -> np.ndarray:
        """Each component's point prediction, shape ``(n_models, n_components)``."""
        return np.column_stack([np.asarray(c.predict(x).mean, dtype=float)
                                for c in self.components_.values()])

    def _predict(self, x: np.ndarray) -> Prediction:
        mean = self.component_predictions(x) @ self.weights_ + self.intercept_
        if self.clip_:
            mean = np.clip(mean, 0.0, 1.0)
        if len(self.residuals_) == 0:
            nan = np.full_like(mean, np.nan)
            return Prediction(mean=mean, lower=nan, upper=nan, level=float(self.level),
                              interval="none")
        scales = conformal_scales(self.interval_scale_, mean, self.oof_means_, self.residuals_)
        lower, upper = split_conformal_interval(mean, self.residuals_, self.level, **scales)
        if self.clip_:
            lower, upper = np.clip(lower, 0.0, 1.0), np.clip(upper, 0.0, 1.0)
        return Prediction(mean=mean, lower=lower, upper=upper, level=float(self.level),
                          interval="cv-residual")
