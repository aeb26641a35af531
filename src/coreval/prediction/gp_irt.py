"""p-IRT and gp-IRT predictors of tinyBenchmarks (Polo et al. 2024).

p-IRT fills the items a new model did not answer with the IRT model's predicted
correctness at the model's ability (estimated by maximum likelihood on the
coreset items); gp-IRT mixes p-IRT with the weighted anchor-point estimate.
Both reuse the IRT fit stored by :class:`coreval.selection.irt_anchors.IRTAnchorSelector`
in ``coreset.info["irt_fit"]`` and fit one only when the coreset came from
elsewhere.

References
----------
Polo, F. M. et al. (2024). tinyBenchmarks: evaluating LLMs with fewer examples. ICML
(the p-IRT and gp-IRT estimators).
Bowyer, S. et al. Efficient Benchmarking Is Just Feature Selection and Multiple
Regression, appendix G.1 (the gp-IRT weight λ).
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit

from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError
from coreval.prediction.base import Prediction, Predictor
from coreval.prediction.conformal import split_conformal_interval
from coreval.selection.base import Coreset
from coreval.selection.irt_anchors import (
    ANCHOR_MODEL,
    AUTO_MODELS,
    fit_matches,
    fit_source_irt,
    irt_options,
    logistic_item_params,
    resolve_irt_model,
    reuse_or_fit_irt,
)

#: Logits are clipped to this range, as in the tinyBenchmarks code (keeps the MLE finite).
LOGIT_CLIP = 30.0
_EPS = 1e-10


def logistic_icc(theta: np.ndarray, a: np.ndarray, d: np.ndarray,
                 c: np.ndarray | None = None) -> np.ndarray:
    """Probability of a correct answer, ``c + (1 - c) σ(clip(θ·a + d))``.

    Parameters
    ----------
    theta : ndarray, shape (n, D)
    a : ndarray, shape (n_items, D)
    d : ndarray, shape (n_items,)
    c : ndarray, shape (n_items,), optional
        Guessing parameters (3PL).

    Returns
    -------
    ndarray, shape (n, n_items)
    """
    z = np.clip(np.atleast_2d(theta) @ np.atleast_2d(a).T + d, -LOGIT_CLIP, LOGIT_CLIP)
    p = expit(z)
    return p if c is None else c + (1.0 - c) * p


def estimate_abilities(y: np.ndarray, a: np.ndarray, d: np.ndarray, c: np.ndarray | None = None,
                       *, bounds: tuple[float, float] | None = None,
                       prior_sd: float | None = None) -> np.ndarray:
    """Maximum-likelihood (or MAP) abilities of models from their item responses.

    Maximises the Bernoulli log-likelihood ``Σ_i y_i log p_i + (1 - y_i) log(1 - p_i)``
    of each row, ``p = c + (1 - c) σ(clip(θ·a + d, ±30))``; NaN responses are
    skipped. The rows are independent, so all abilities are found in one
    L-BFGS-B run on the summed objective with its analytic gradient (the
    tinyBenchmarks code runs BFGS per model from θ = 0; this is the same
    optimum, computed once for all rows). Fractional scores in [0, 1] are used
    as soft labels (Bernoulli quasi-likelihood).

    Parameters
    ----------
    y : ndarray, shape (n_models, n_items)
        Responses on the items whose parameters are given.
    a, d, c : item parameters (see :func:`logistic_icc`).
    bounds : (low, high), optional
        Box bounds on each ability coordinate (metabench uses (-4, 4)). Without
        bounds and without a prior, an all-correct row stops where the clipped
        logits make the gradient vanish, like the reference.
    prior_sd : float, optional
        Standard deviation of an N(0, sd²) prior on each coordinate (MAP).

    Returns
    -------
    ndarray, shape (n_models, D)
    """
    y = np.atleast_2d(np.asarray(y, dtype=float))
    a = np.atleast_2d(np.asarray(a, dtype=float))
    d = np.asarray(d, dtype=float).reshape(-1)
    n_models, n_items = y.shape
    dims = a.shape[1]
    if a.shape[0] != n_items or d.shape[0] != n_items:
        raise ValidationError(
            f"responses on {n_items} items but parameters for {a.shape[0]} items"
        )
    observed = ~np.isnan(y)
    y0 = np.where(observed, y, 0.0)

    def objective(flat: np.ndarray) -> tuple[float, np.ndarray]:
        theta = flat.reshape(n_models, dims)
        z_raw = theta @ a.T + d
        inside = np.abs(z_raw) < LOGIT_CLIP
        s = expit(np.clip(z_raw, -LOGIT_CLIP, LOGIT_CLIP))
        if c is None:
            p = s
            dp_dz = s * (1.0 - s)
        else:
            p = c + (1.0 - c) * s
            dp_dz = (1.0 - c) * s * (1.0 - s)
        p = np.clip(p, _EPS, 1.0 - _EPS)
        nll = -np.sum(observed * (y0 * np.log(p) + (1.0 - y0) * np.log1p(-p)))
        dnll_dp = -(y0 / p - (1.0 - y0) / (1.0 - p))
        grad_z = observed * inside * dnll_dp * dp_dz
        grad = grad_z @ a
        if prior_sd is not None:
            nll += 0.5 * np.sum(theta**2) / prior_sd**2
            grad = grad + theta / prior_sd**2
        return float(nll), grad.ravel()

    box = None if bounds is None else [tuple(bounds)] * (n_models * dims)
    res = minimize(objective, np.zeros(n_models * dims), jac=True, method="L-BFGS-B",
                   bounds=box, options={"maxiter": 1000, "ftol": 1e-14, "gtol": 1e-7})
    return res.x.reshape(n_models, dims)


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


def validation_bias(source: ScoreMatrix, *, theta_bounds: tuple[float, float] | None = None,
                    **fit_options) -> float:
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
    **fit_options
        Options of :func:`coreval.selection.irt_anchors.fit_source_irt`.

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
    a, d, c = logistic_item_params(fit_source_irt(source.take(train_rows), **fit_options))
    seen = np.arange(0, source.n_items, 2)
    unseen = np.arange(1, source.n_items, 2)
    c_seen = None if c is None else c[seen]
    c_unseen = None if c is None else c[unseen]
    theta = estimate_abilities(values[np.ix_(val_rows, seen)], a[seen], d[seen], c_seen,
                               bounds=theta_bounds)
    predicted = logistic_icc(theta, a[unseen], d[unseen], c_unseen).mean(axis=1)
    observed = np.nanmean(values[np.ix_(val_rows, unseen)], axis=1)
    return float(np.mean(np.abs(predicted - observed)))


class PIRTPredictor(Predictor):
    """p-IRT: observed coreset scores plus IRT-predicted correctness elsewhere.

    The score of a new model is ``Σ_{i∈C} w_i y_i + Σ_{i∉C} w_i p_i(θ̂)`` with
    ``w`` the summary-score weights of the items (``1/N`` without item groups,
    which gives the paper's ``(k/N)·mean(coreset) + (1 - k/N)·mean_{unseen} p̂``)
    and ``θ̂`` the maximum-likelihood ability on the coreset items.

    Parameters
    ----------
    model, dims, fit_method, priors, num_steps, learning_rate, num_draws
        IRT fit used when the coreset does not carry one (see
        :func:`coreval.selection.irt_anchors.fit_source_irt`); the default model
        is :data:`coreval.selection.irt_anchors.ANCHOR_MODEL`. ``model="auto"``
        takes the IRT anchor selector's choice between the 2PL and the 3PL, or
        makes it (:func:`coreval.selection.irt_anchors.resolve_irt_model`);
        measured in benchmarks/results/gpirt_model_choice.md.
    theta_bounds : (low, high), optional
        Box bounds of the ability MLE (None: unbounded, as the reference).
    level : float
        Nominal coverage of the interval.
    seed : int
        Seed of an IRT fit made here.
    show_progress : bool, optional

    Attributes
    ----------
    irt_options_ : dict
        The IRT fit options used (``model`` resolved).
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

    def __init__(self, *, model: str = ANCHOR_MODEL, dims: int = 1, fit_method: str = "svi",
                 priors: str = "hierarchical", num_steps: int = 2000, learning_rate: float = 0.1,
                 num_draws: int = 200, theta_bounds: tuple[float, float] | None = None,
                 level: float = 0.9, seed: int = 0, show_progress: bool | None = None) -> None:
        self.model = model
        self.dims = dims
        self.fit_method = fit_method
        self.priors = priors
        self.num_steps = num_steps
        self.learning_rate = learning_rate
        self.num_draws = num_draws
        self.theta_bounds = theta_bounds
        self.level = level
        self.seed = seed
        self.show_progress = show_progress

    def _fit(self, source: ScoreMatrix, coreset: Coreset) -> None:
        options = irt_options(self)
        stored = coreset.info.get("irt_options", {})
        if (options["model"] == "auto" and stored.get("model") in AUTO_MODELS
                and fit_matches(coreset.info.get("irt_fit"), source)):
            options = {**options, "model": stored["model"]}  # the selector's choice
        self.irt_options_, _ = resolve_irt_model(source, options)
        self.irt_fit_ = reuse_or_fit_irt(source, coreset, **self.irt_options_)
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

    def _fit_extra(self, source: ScoreMatrix, coreset: Coreset) -> None:
        self.bias_ = validation_bias(source, theta_bounds=self.theta_bounds, **self.irt_options_)
        self.anchor_variance_ = anchor_variance(source.values, len(coreset))
        self.lambda_ = gp_irt_lambda(self.bias_, self.anchor_variance_)
        k = len(coreset)
        w = coreset.weights
        self.anchor_weights_ = np.full(k, 1.0 / k) if w is None else np.asarray(w, dtype=float)

    def _point(self, x: np.ndarray) -> np.ndarray:
        anchor = x @ self.anchor_weights_
        return self.lambda_ * anchor + (1.0 - self.lambda_) * self.pirt(x)
