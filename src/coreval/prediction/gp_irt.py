"""p-IRT and gp-IRT predictors of tinyBenchmarks (Polo et al. 2024).

p-IRT fills the items a new model did not answer with the IRT model's predicted
correctness at the model's ability (estimated by maximum likelihood on the
coreset items); gp-IRT mixes p-IRT with the weighted anchor-point estimate.
Both reuse the IRT fit of :class:`coreval.selection.irt_anchors.IRTAnchorSelector`
through the caller's fit cache when their fit options are the same, and fit one
otherwise.

References
----------
Polo, F. M. et al. (2024). tinyBenchmarks: evaluating LLMs with fewer examples. ICML
(the p-IRT and gp-IRT estimators).
Bowyer, S. et al. Efficient Benchmarking Is Just Feature Selection and Multiple
Regression, appendix G.1 (the gp-IRT weight λ).
"""

from __future__ import annotations

import numpy as np

from coreval.base import Coreset, Prediction, Predictor
from coreval.base.conformal import split_conformal_interval
from coreval.data.matrix import ScoreMatrix
from coreval.irt.fit_spec import IRTFitSpec
from coreval.irt.logistic import estimate_abilities, logistic_icc
from coreval.irt.source_fit import (
    TINYBENCH_FIT,
    fit_source_irt,
    logistic_item_params,
    resolve_irt_model,
    resolved_choice,
    validation_bias,
)


def gp_irt_lambda(b: float, v: float) -> float:
    """gp-IRT mixing weight ``λ = b² / (b² + v)`` (mRMR paper, appendix G.1).

    Parameters
    ----------
    b : float
        Mean absolute IRT prediction error on validation models.
    v : float
        Variance of the anchor estimate, ``mean_m Var(S[m, :]) / (4k)``.
    """
    if b == 0.0 and v == 0.0:
        return 0.5
    return float(b**2 / (b**2 + v))


def anchor_variance(scores: np.ndarray, k: int) -> float:
    """``v = mean_m Var(S[m, :]) / (4k)``: the reference's variance of the anchor estimate."""
    return float(np.nanmean(np.nanvar(scores, axis=1)) / (4 * k))


class PIRTPredictor(Predictor):
    """p-IRT: observed coreset scores plus IRT-predicted correctness elsewhere.

    The score of a new model is ``Σ_{i∈C} w_i y_i + Σ_{i∉C} w_i p_i(θ̂)`` with
    ``w`` the summary-score weights of the items (``1/N`` without item groups,
    which gives the paper's ``(k/N)·mean(coreset) + (1 - k/N)·mean_{unseen} p̂``)
    and ``θ̂`` the maximum-likelihood ability on the coreset items.

    Parameters
    ----------
    irt : IRTFitSpec
        The IRT fit of the source models (default
        :data:`coreval.irt.source_fit.TINYBENCH_FIT`, the anchor selector's, whose fit
        is reused through the caller's cache). ``model="auto"`` takes the IRT
        anchor selector's choice between the 2PL and the 3PL, or makes it
        (:func:`coreval.irt.source_fit.resolve_irt_model`);
        measured in benchmarks/archive/results/gpirt_model_choice.md.
    theta_bounds : (low, high), optional
        Box bounds of the ability MLE (None: unbounded, as the reference).
    level : float
        Nominal coverage of the interval.
    seed : int
        Seed of an IRT fit made here.
    show_progress : bool, optional

    Attributes
    ----------
    irt_spec_ : IRTFitSpec
        The IRT fit used (``model`` resolved).
    irt_fit_ : IRTFit
        The IRT fit on the source models.

    Notes
    -----
    Interval (``"split-conformal"``): the conformal quantile of the absolute
    residuals of the predictor on the source models, each predicted from its
    own coreset responses. The source rows also fitted the item parameters, so
    these residuals are in-sample and the interval may be somewhat narrow;
    the benchmark (benchmarks/irt_methods.py) reports its measured coverage.

    References
    ----------
    Polo et al. (2024), tinyBenchmarks (the p-IRT estimator).
    """

    needs_binary = True
    #: The split-conformal residuals are in sample (the IRT fit and gp-IRT's λ saw them).
    native_interval_complete = False

    def __init__(self, *, irt: IRTFitSpec = TINYBENCH_FIT,
                 theta_bounds: tuple[float, float] | None = None,
                 level: float = 0.9, seed: int = 0, show_progress: bool | None = None) -> None:
        self.irt = irt
        self.theta_bounds = theta_bounds
        self.level = level
        self.seed = seed
        self.show_progress = show_progress

    def _fit(self, source: ScoreMatrix, coreset: Coreset) -> None:
        # model="auto": the selector's choice when it shared the cache, else made here
        self.irt_spec_, _ = resolve_irt_model(source, self.irt, seed=self.seed,
                                              cache=self.cache_, show_progress=self.show_progress)
        self.irt_fit_ = fit_source_irt(source, self.irt_spec_, seed=self.seed, cache=self.cache_,
                                       show_progress=self.show_progress)
        self.a_, self.d_, self.c_ = logistic_item_params(self.irt_fit_)
        cols = coreset.indices
        self.unseen_ = np.setdiff1d(np.arange(source.n_items), cols)
        self.item_weights_ = source.item_weights()
        self.binary_ = source.is_binary
        self._fit_extra(source, coreset)
        y_true = source.summary_scores()
        x_src = source.values[:, cols]
        ok = ~np.isnan(x_src).any(axis=1)
        self.residuals_ = y_true[ok] - self._point(x_src[ok])

    def _fit_extra(self, source: ScoreMatrix, coreset: Coreset) -> None:
        """Hook for subclasses (gp-IRT's λ)."""

    def resolved_options(self) -> dict[str, str]:
        """``model`` / ``priors`` as ``model="auto"`` / ``priors="auto"`` chose them."""
        return resolved_choice(self.irt, self.irt_spec_)

    def abilities(self, x: np.ndarray) -> np.ndarray:
        """MLE abilities ``(n, D)`` of models with coreset responses ``x``."""
        cols = self.coreset_.indices
        c = None if self.c_ is None else self.c_[cols]
        return estimate_abilities(x, self.a_[cols], self.d_[cols], c, bounds=self.theta_bounds)

    def pirt(self, x: np.ndarray) -> np.ndarray:
        """The p-IRT estimate for coreset responses ``x`` (n, k)."""
        cols, unseen, w = self.coreset_.indices, self.unseen_, self.item_weights_
        theta = self.abilities(x)
        c = None if self.c_ is None else self.c_[unseen]
        p_unseen = logistic_icc(theta, self.a_[unseen], self.d_[unseen], c)
        return x @ w[cols] + p_unseen @ w[unseen]

    def _point(self, x: np.ndarray) -> np.ndarray:
        return self.pirt(x)

    def _predict(self, x: np.ndarray) -> Prediction:
        mean = self._point(x)
        lower, upper = split_conformal_interval(mean, self.residuals_, self.level)
        if self.binary_:
            mean, lower, upper = (np.clip(v, 0.0, 1.0) for v in (mean, lower, upper))
        return Prediction(mean=mean, lower=lower, upper=upper, level=self.level,
                          interval="split-conformal")


class GPIRTPredictor(PIRTPredictor):
    """gp-IRT: ``λ · (weighted anchor mean) + (1 - λ) · p-IRT``.

    ``λ = b² / (b² + v)`` with ``v = mean_m Var(S[m, :]) / (4k)`` over the source
    models and ``b`` the mean absolute error of IRT predictions made exactly as
    in the reference code: a second IRT fit on the source models except every
    5th (rows 0, 5, 10, ...); for each of those validation models, the ability
    is estimated on the even-numbered items and the mean predicted correctness
    on the odd-numbered items is compared with the observed mean there.

    The anchor estimate is ``Σ_j weights_j y_j`` with the coreset weights
    (cluster shares of anchor points); a coreset without weights counts each
    item equally. Parameters and interval as :class:`PIRTPredictor`.

    Attributes
    ----------
    lambda_, bias_, anchor_variance_ : float
        λ, b and v above.

    References
    ----------
    Polo et al. (2024), tinyBenchmarks (gp-IRT); mRMR paper, appendix G.1 (λ).
    """

    #: λ's validation fit holds out every 5th source model and needs two to fit on.
    min_source_models = 3

    def _fit_extra(self, source: ScoreMatrix, coreset: Coreset) -> None:
        self.bias_ = validation_bias(source, self.irt_spec_, seed=self.seed,
                                     theta_bounds=self.theta_bounds, cache=self.cache_,
                                     show_progress=self.show_progress)
        self.anchor_variance_ = anchor_variance(source.values, len(coreset))
        self.lambda_ = gp_irt_lambda(self.bias_, self.anchor_variance_)
        k = len(coreset)
        w = coreset.weights
        self.anchor_weights_ = np.full(k, 1.0 / k) if w is None else np.asarray(w, dtype=float)

    def _point(self, x: np.ndarray) -> np.ndarray:
        anchor = x @ self.anchor_weights_
        return self.lambda_ * anchor + (1.0 - self.lambda_) * self.pirt(x)
