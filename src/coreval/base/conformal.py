"""Distribution-free prediction intervals: jackknife+ and split conformal.

Both functions are small and pure (arrays in, arrays out) so that every
predictor can reuse them. The order statistics are written by hand with
:func:`numpy.partition` because no maintained library exposes the jackknife+
quantiles ``q̂⁻`` / ``q̂⁺`` of Barber et al. (2021) on precomputed
leave-one-out predictions (MAPIE refits the estimator itself).

References
----------
Barber, R. F., Candès, E. J., Ramdas, A. & Tibshirani, R. J. (2021).
"Predictive inference with the jackknife+". *Annals of Statistics* 49(1), 486-507.

Davidian, M. & Carroll, R. J. (1987). "Variance function estimation". *JASA* 82(400),
1079-1091.

Lei, J., G'Sell, M., Rinaldo, A., Tibshirani, R. J. & Wasserman, L. (2018).
"Distribution-free predictive inference for regression". *JASA* 113(523), 1094-1111.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import norm

from coreval.errors import ValidationError


def _check_level(level: float) -> float:
    if not (0.0 < float(level) < 1.0):
        raise ValidationError(f"interval level must be in (0, 1), got {level!r}")
    return float(level)


def _kth_smallest(values: np.ndarray, rank: int, axis: int = -1) -> np.ndarray:
    """The ``rank``-th smallest value (1-based) along ``axis``; ±inf outside 1..n."""
    n = values.shape[axis]
    if rank < 1:
        return np.full(np.delete(values.shape, axis % values.ndim), -np.inf)
    if rank > n:
        return np.full(np.delete(values.shape, axis % values.ndim), np.inf)
    return np.take(np.partition(values, rank - 1, axis=axis), rank - 1, axis=axis)


def conformal_rank(n: int, level: float) -> int:
    """The rank ``⌈(n + 1)·level⌉`` (1-based) of the split-conformal quantile among ``n`` scores.

    A new exchangeable score is at most the score of this rank with probability at least
    ``level`` (Lei et al. 2018, Algorithm 2); it exceeds ``n`` when ``n`` is too small for
    the level. A tolerance of 1e-9 keeps a product that round-off puts just above an
    integer, e.g. ``0.56 · 25 = 14.000000000000002``, from rounding up once too often.
    """
    return math.ceil((n + 1) * _check_level(level) - 1e-9)


def conformal_quantile(scores, level: float) -> float:
    """The split-conformal quantile of calibration scores (Lei et al. 2018, Algorithm 2).

    The ``⌈(n + 1)·level⌉``-th smallest of the ``n`` scores, ``inf`` when ``n`` is too
    small for the level: a new exchangeable score is at most this with probability at
    least ``level``.
    """
    level = _check_level(level)
    s = np.asarray(scores, dtype=float).ravel()
    if s.size == 0 or np.isnan(s).any():
        raise ValidationError("conformal_quantile needs at least one score and no NaN")
    return float(_kth_smallest(s, conformal_rank(s.size, level), axis=0))


def normal_sd_factor(scores, level: float) -> float:
    """The factor of a Gaussian predictive SD from standardised scores ``|y − μ| / σ``.

    The conformal quantile of the scores (:func:`conformal_quantile`) over the normal
    quantile ``z`` of ``level``: the interval ``μ ± z · factor · σ`` then covers a new
    exchangeable case with probability at least ``level`` (Lei et al. 2018, sec. 5.2).
    """
    return conformal_quantile(scores, level) / float(norm.ppf(0.5 + _check_level(level) / 2.0))


def jackknife_plus_interval(loo_predictions_at_x, loo_residuals,
                            level: float = 0.9) -> tuple[np.ndarray, np.ndarray]:
    """Jackknife+ interval from leave-one-out fits (Barber et al. 2021, eq. 3).

    With ``n`` training points, ``μ̂₋ᵢ`` the model fitted without point ``i`` and
    ``Rᵢ = |yᵢ − μ̂₋ᵢ(xᵢ)|`` its leave-one-out residual, the interval at a new
    point ``x`` is

    ``[ q̂⁻_α{ μ̂₋ᵢ(x) − Rᵢ },  q̂⁺_α{ μ̂₋ᵢ(x) + Rᵢ } ]``

    where ``q̂⁺_α`` is the ⌈(1−α)(n+1)⌉-th smallest value and ``q̂⁻_α`` the
    ⌊α(n+1)⌋-th smallest value of the ``n`` numbers, ``α = 1 − level``. It covers
    with probability at least ``1 − 2α`` for exchangeable data (Theorem 1), and
    typically close to ``1 − α``. When ``n`` is too small for the requested level
    the missing side is infinite (as in the paper).

    Parameters
    ----------
    loo_predictions_at_x : array-like, shape (n_points, n) or (n,)
        ``μ̂₋ᵢ(x)`` for each test point (rows) and each left-out training point.
    loo_residuals : array-like, shape (n,)
        ``|yᵢ − μ̂₋ᵢ(xᵢ)|`` (absolute values are taken).
    level : float
        Nominal coverage ``1 − α``.

    Returns
    -------
    lower, upper : ndarray, shape (n_points,)
    """
    level = _check_level(level)
    mu = np.atleast_2d(np.asarray(loo_predictions_at_x, dtype=float))
    r = np.abs(np.asarray(loo_residuals, dtype=float)).ravel()
    if mu.shape[1] != r.shape[0]:
        raise ValidationError(
            f"jackknife+ got {mu.shape[1]} leave-one-out predictions per point but "
            f"{r.shape[0]} residuals"
        )
    if not (np.isfinite(mu).all() and np.isfinite(r).all()):
        raise ValidationError("jackknife+ inputs contain NaN or inf")
    n = r.shape[0]
    alpha = 1.0 - level
    upper_rank = conformal_rank(n, level)
    # the same tolerance as conformal_rank's, on the other side
    lower_rank = math.floor(alpha * (n + 1) + 1e-9)
    lower = _kth_smallest(mu - r[None, :], lower_rank, axis=1)
    upper = _kth_smallest(mu + r[None, :], upper_rank, axis=1)
    return lower, upper


def split_conformal_interval(pred, residuals, level: float = 0.9, *, pred_scale=None,
                             residual_scale=None) -> tuple[np.ndarray, np.ndarray]:
    """Split-conformal interval ``pred ± q`` (Lei et al. 2018, Algorithm 2).

    ``q`` is the ⌈(n+1)·level⌉-th smallest absolute calibration residual; the
    interval covers a new exchangeable point with probability at least ``level``.
    With too few calibration points for the level, ``q = inf``.

    With scales (normalised nonconformity scores, Papadopoulos et al. 2008; Lei et
    al. 2018, sec. 5.2), ``q`` is that quantile of ``|rᵢ| / σᵢ`` and the interval is
    ``pred ± q · σ(pred)``: as valid, and narrower where the scale says errors are
    small.

    Residuals of ``R`` repetitions of a cross-validation of the same ``n`` points
    (shape ``(R, n)``) are pooled: ``q`` is the ``R·⌈(n+1)·level⌉``-th smallest of
    the ``R·n``, the same rank of the residuals' distribution averaged over the
    repetitions. The finite-sample correction stays that of ``n`` points, as the
    repetitions re-split the same models rather than add new ones; what they remove
    is the spread that one random assignment of models to folds puts into ``q``.

    Parameters
    ----------
    pred : array-like
        Point predictions at the new points.
    residuals : array-like, shape (n,) or (R, n)
        Calibration residuals ``yᵢ − ŷᵢ`` of points not used to fit the predictor
        (one row per repetition).
    level : float
        Nominal coverage.
    pred_scale, residual_scale : array-like, optional
        Positive scales ``σ`` of the new points (shape of ``pred``) and of the
        calibration points (shape of ``residuals``); both or neither.

    Returns
    -------
    lower, upper : ndarray, same shape as ``pred``
    """
    level = _check_level(level)
    pred = np.asarray(pred, dtype=float)
    r = np.abs(np.asarray(residuals, dtype=float))
    if r.ndim > 2 or r.size == 0 or not np.isfinite(r).all():
        raise ValidationError("split conformal needs finite calibration residuals, one row "
                              "per repetition")
    if (pred_scale is None) != (residual_scale is None):
        raise ValidationError("split conformal needs the scales of both the new and the "
                              "calibration points, or neither")
    half = 1.0
    if pred_scale is not None:
        half = _positive_scale(pred_scale, pred.shape, "pred_scale")
        r = r / _positive_scale(residual_scale, r.shape, "residual_scale")
    r = np.atleast_2d(r)
    repeats, n = r.shape
    rank = conformal_rank(n, level)
    q = float(_kth_smallest(r.ravel(), repeats * rank, axis=0))
    return pred - q * half, pred + q * half


def _positive_scale(scale, shape: tuple[int, ...], name: str) -> np.ndarray:
    s = np.asarray(scale, dtype=float)
    if s.shape != shape or not (np.isfinite(s).all() and (s > 0).all()):
        raise ValidationError(f"{name} must be positive and finite with shape {shape}, got "
                              f"shape {s.shape}")
    return s


#: Smallest score the Bernoulli scale is evaluated at (and 1 minus it the largest).
BERNOULLI_SCALE_FLOOR = 0.01


def bernoulli_scale(mean, floor: float = BERNOULLI_SCALE_FLOOR) -> np.ndarray:
    """``σ(ŷ) = sqrt(c (1 − c))``, ``c = clip(ŷ, floor, 1 − floor)``: the error scale of a score in [0, 1].

    The standard deviation of a mean of Bernoulli answers with success rate ``ŷ``, up to
    a factor that a conformal quantile absorbs: predicting a benchmark's mean accuracy
    from a subset errs less for a model near 0 or 1 than for one near 0.5. The floor
    keeps the interval of a model predicted at 0 from collapsing to a point.
    """
    if not 0.0 < floor < 0.5:
        raise ValidationError(f"floor must be in (0, 0.5), got {floor!r}")
    c = np.clip(np.asarray(mean, dtype=float), floor, 1.0 - floor)
    return np.sqrt(c * (1.0 - c))


#: Smallest variance :func:`variance_function_scale` fits, as a fraction of the mean
#: squared calibration residual (so no interval is narrower than half the constant one).
VARIANCE_FUNCTION_FLOOR = 0.25
#: Fewest calibration points a variance function is fitted to (three coefficients).
VARIANCE_FUNCTION_MIN_POINTS = 6


def variance_function_scale(mean, calibration_mean, calibration_residuals,
                            floor: float = VARIANCE_FUNCTION_FLOOR) -> np.ndarray:
    """``σ(ŷ)`` from a quadratic variance function fitted to calibration residuals.

    ``σ²(ŷ) = max(a + b ŷ + c ŷ², floor · mean(r²))``, with ``(a, b, c)`` the least-squares
    fit of the squared residuals ``rᵢ²`` on ``(1, ŷᵢ, ŷᵢ²)`` at the calibration points'
    predictions (variance-function estimation from squared residuals, Davidian & Carroll
    1987). The family holds the constant variance (``b = c = 0``) and the Bernoulli one
    (``a = 0``, ``b = −c``), so the data decide between them and anything in between; a
    score range other than [0, 1] works as well. ``ŷ`` is clipped to the calibration
    predictions' range, so the quadratic is never extrapolated, and the floor keeps a
    fitted variance near zero from collapsing an interval.

    Used as the scale of normalised conformal scores (Lei et al. 2018, sec. 5.2), it is
    fitted on the same residuals it normalises rather than on a separate split: three
    coefficients, whose optimism the benchmarks measure
    (``benchmarks/results/interval_scale.md``). With fewer than
    :data:`VARIANCE_FUNCTION_MIN_POINTS` calibration points no variance function is
    fitted and the scale is constant.

    Parameters
    ----------
    mean : array-like
        Predictions at which to evaluate the scale.
    calibration_mean, calibration_residuals : array-like, same shape
        The calibration points' predictions and residuals (any shape, e.g. ``(R, n)``
        repetitions; pooled).
    floor : float
        Smallest variance as a fraction of the mean squared residual, in (0, 1].

    Returns
    -------
    ndarray, shape of ``mean``
        Positive scales.
    """
    if not 0.0 < floor <= 1.0:
        raise ValidationError(f"floor must be in (0, 1], got {floor!r}")
    mu = np.asarray(calibration_mean, dtype=float).ravel()
    r2 = np.asarray(calibration_residuals, dtype=float).ravel() ** 2
    if mu.shape != r2.shape or not (np.isfinite(mu).all() and np.isfinite(r2).all()):
        raise ValidationError("a variance function needs finite calibration predictions and "
                              "residuals of one shape")
    if mu.size == 0:
        raise ValidationError("a variance function needs calibration points")
    smallest = floor * r2.mean()
    if smallest == 0.0 or mu.size < VARIANCE_FUNCTION_MIN_POINTS:
        # all residuals zero, or too few points for three coefficients: a constant scale
        return np.ones(np.shape(mean))
    lo, hi = mu.min(), mu.max()
    x = np.clip(np.asarray(mean, dtype=float), lo, hi)
    if hi - lo < 1e-12 * max(1.0, abs(hi)):  # one prediction: nothing to regress on
        return np.sqrt(np.full(x.shape, r2.mean()))
    poly = np.polynomial.Polynomial.fit(mu, r2, deg=2)
    return np.sqrt(np.maximum(poly(x), smallest))


#: Accepted kinds of a conformal interval's half-width (:func:`conformal_scales`).
CONFORMAL_SCALES: tuple[str, ...] = ("constant", "bernoulli", "quadratic")


def conformal_scales(kind: str, mean, calibration_mean, calibration_residuals) -> dict:
    """``pred_scale`` / ``residual_scale`` of :func:`split_conformal_interval` for a scale kind.

    ``"constant"``: none (the interval is ``ŷ ± q``); ``"bernoulli"``:
    :func:`bernoulli_scale`; ``"quadratic"``: :func:`variance_function_scale` fitted to
    the calibration residuals. ``mean`` holds the new points' predictions and
    ``calibration_mean`` / ``calibration_residuals`` the calibration points' (same shape
    as the residuals given to :func:`split_conformal_interval`).
    """
    if kind == "constant":
        return {}
    if kind == "bernoulli":
        return {"pred_scale": bernoulli_scale(mean),
                "residual_scale": bernoulli_scale(calibration_mean)}
    if kind == "quadratic":
        fit = (calibration_mean, calibration_residuals)
        return {"pred_scale": variance_function_scale(mean, *fit),
                "residual_scale": variance_function_scale(calibration_mean, *fit)}
    raise ValidationError(f"conformal scale must be one of {CONFORMAL_SCALES}, got {kind!r}")


def resolve_conformal_scale(kind: str, truth, oof_mean, score_range: tuple[float, float],
                            level: float = 0.9) -> str:
    """The scale kind to use, with ``"auto"`` chosen from the calibration points alone.

    ``"auto"`` is ``"bernoulli"`` when the Bernoulli scale's leave-one-out interval scores
    (:func:`loo_interval_scores`) of the calibration points have a lower mean than the
    constant scale's, and ``"constant"`` otherwise, also where the scores are not in
    [0, 1] (``score_range``) or there are fewer than three points. ``"bernoulli"`` is
    checked against the data: it needs scores in [0, 1]. ``"quadratic"`` is
    ``"constant"`` with fewer than :data:`VARIANCE_FUNCTION_MIN_POINTS` points (as
    :func:`variance_function_scale` would be).

    Parameters
    ----------
    kind : {"constant", "bernoulli", "quadratic", "auto"}
    truth, oof_mean : array-like, shape (n,) or (R, n)
        The calibration points' true scores and out-of-fold predictions.
    score_range : (float, float)
        The range a score can take.
    level : float
        Nominal coverage at which ``"auto"`` compares the intervals.
    """
    if kind not in (*CONFORMAL_SCALES, "auto"):
        raise ValidationError(f"interval_scale must be one of {(*CONFORMAL_SCALES, 'auto')}, "
                              f"got {kind!r}")
    y, mu = (np.atleast_2d(np.asarray(a, dtype=float)) for a in (truth, oof_mean))
    if kind == "quadratic" and y.size < VARIANCE_FUNCTION_MIN_POINTS:
        return "constant"
    lo, hi = (float(v) for v in score_range)
    in_unit = lo >= 0.0 and hi <= 1.0
    if kind == "bernoulli" and not in_unit:
        raise ValidationError(f"interval_scale='bernoulli' needs scores in [0, 1]; the "
                              f"scores span [{lo:g}, {hi:g}]")
    if kind != "auto":
        return kind
    if not in_unit or y.shape[-1] < 3:
        return "constant"
    constant = loo_interval_scores(y, mu, np.ones_like(mu), level).mean()
    scaled = loo_interval_scores(y, mu, bernoulli_scale(mu), level).mean()
    return "bernoulli" if scaled < constant else "constant"


def interval_scores(y, lower, upper, alpha: float = 0.1) -> np.ndarray:
    """Interval score of each central ``(1 − alpha)`` interval (lower is better).

    ``S = (u − l) + (2/α)(l − y)·1{y < l} + (2/α)(y − u)·1{y > u}``, the negatively
    oriented form of Gneiting & Raftery (2007), Eq. 43.
    """
    if not 0.0 < alpha < 1.0:
        raise ValidationError(f"alpha must be in (0, 1), got {alpha}")
    y, lo, hi = (np.asarray(a, dtype=float) for a in (y, lower, upper))
    return (hi - lo) + (2.0 / alpha) * (np.clip(lo - y, 0, None) + np.clip(y - hi, 0, None))


def loo_interval_scores(truth, oof_mean, scale, level: float = 0.9) -> np.ndarray:
    """Interval score of each calibration point under the others' split-conformal interval.

    Point ``i`` is predicted at ``oof_mean[i]`` with the interval that
    :func:`split_conformal_interval` makes from the other points' residuals, scaled by
    ``scale`` (ones for constant width). Comparing the mean over points between scales
    chooses one from the calibration points alone; ``truth``, ``oof_mean`` and ``scale``
    have shape ``(n,)`` or ``(R, n)`` (repetitions; point ``i`` then leaves out its own
    column in every repetition).
    """
    level = _check_level(level)
    y, mu, s = (np.atleast_2d(np.asarray(a, dtype=float)) for a in (truth, oof_mean, scale))
    if not (y.shape == mu.shape == s.shape) or y.shape[1] < 2:
        raise ValidationError("loo_interval_scores needs truths, predictions and scales of one "
                              "shape, with at least two points")
    n = y.shape[1]
    out = np.empty(y.shape)
    for i in range(n):
        keep = np.arange(n) != i
        lo, hi = split_conformal_interval(mu[:, i], (y - mu)[:, keep], level,
                                          pred_scale=s[:, i], residual_scale=s[:, keep])
        out[:, i] = interval_scores(y[:, i], lo, hi, 1.0 - level)
    return out


def conformal_inflation(squared_errors, variances, level: float = 0.9,
                        scales=None) -> float:
    """Smallest added variance ``τ²`` whose Gaussian intervals cover ``level`` of calibration points.

    With calibration residuals ``r_m`` and predictive variances ``v_m``, the interval
    ``ŷ_m ± z sqrt(v_m + τ²)`` (``z`` the standard normal ``(1 + level)/2`` quantile)
    covers ``y_m`` exactly when the nonconformity score ``s_m = r_m² / z² − v_m`` is at
    most ``τ²``. With ``scales`` ``c_m``, the added variance is ``τ² c_m²`` and the score
    ``s_m = (r_m² / z² − v_m) / c_m²``. ``τ²`` is the ⌈(n+1)·level⌉-th smallest ``s_m``
    (split conformal on
    ``s``, Lei et al. 2018, Algorithm 2; the largest when ``n`` is too small for the
    level), floored at 0. So a new exchangeable point is covered with probability at
    least ``level`` by the Gaussian interval (at least ``n / (n + 1)`` when ``n`` is too
    small and the largest score is used), and close to it by a predictive
    distribution that is near-Gaussian.

    Parameters
    ----------
    squared_errors : array-like, shape (n,)
        ``r_m²`` of points not used to fit the predictor (e.g. out of fold).
    variances : array-like, shape (n,)
        Their predictive variances ``v_m``.
    level : float
        Nominal coverage.
    scales : array-like, shape (n,), optional
        Positive factors ``c_m`` of the added standard deviation (1 by default).

    Returns
    -------
    float
        ``τ² ≥ 0``.
    """
    from scipy.stats import norm

    level = _check_level(level)
    r2 = np.asarray(squared_errors, dtype=float).ravel()
    v = np.asarray(variances, dtype=float).ravel()
    if r2.shape != v.shape or r2.size == 0 or not (np.isfinite(r2).all() and np.isfinite(v).all()):
        raise ValidationError("conformal_inflation needs finite squared errors and variances "
                              "of the same length")
    c = np.ones_like(r2) if scales is None else np.asarray(scales, dtype=float).ravel()
    if c.shape != r2.shape or not (np.isfinite(c).all() and (c > 0).all()):
        raise ValidationError("conformal_inflation needs one positive finite scale per point")
    z = float(norm.ppf(0.5 + level / 2.0))
    scores = (r2 / z**2 - v) / c**2
    rank = min(conformal_rank(r2.size, level), r2.size)
    return float(max(0.0, _kth_smallest(scores, rank, axis=0)))
