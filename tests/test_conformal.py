"""Jackknife+ and split-conformal intervals: definitions and coverage on exchangeable data."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from coreval.base import Coreset
from coreval.base.conformal import (
    VARIANCE_FUNCTION_MIN_POINTS,
    bernoulli_scale,
    conformal_inflation,
    conformal_rank,
    conformal_scales,
    interval_scores,
    jackknife_plus_interval,
    loo_interval_scores,
    split_conformal_interval,
    variance_function_scale,
)
from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError
from coreval.prediction.mean import MeanPredictor
from coreval.prediction.ridge import KernelRidgePredictor, RidgePredictor


@pytest.mark.parametrize("level", ["0.55", "0.56", "0.68", "0.8", "0.81", "0.9", "0.95"])
def test_conformal_rank_is_the_exact_rational_ceiling(level):
    # (n + 1)·level in exact rationals: for 0.55, 0.56, 0.68 and 0.81 some float products
    # land just above an integer (0.56 · 25 = 14.000000000000002), whose plain ceiling is
    # one rank too high
    exact = Fraction(level)
    ranks = [conformal_rank(n, float(level)) for n in range(1, 400)]
    assert ranks == [math.ceil((n + 1) * exact) for n in range(1, 400)]
    with pytest.raises(ValidationError, match="level"):
        conformal_rank(10, 1.0)


def test_jackknife_plus_matches_sorted_definition(rng):
    n, m, level = 19, 7, 0.8
    mu = rng.normal(size=(m, n))
    r = rng.normal(size=n)  # signs must be dropped
    lower, upper = jackknife_plus_interval(mu, r, level)
    assert level == 0.8
    lo_rank, hi_rank = 4, 16   # floor(0.2 * 20) and ceil(0.8 * 20), exact in rationals
    want_lo = np.sort(mu - np.abs(r), axis=1)[:, lo_rank - 1]
    want_hi = np.sort(mu + np.abs(r), axis=1)[:, hi_rank - 1]
    np.testing.assert_allclose(lower, want_lo)
    np.testing.assert_allclose(upper, want_hi)


def test_jackknife_plus_hand_case():
    # n = 9, level 0.8: ranks floor(0.2 * 10) = 2 and ceil(0.8 * 10) = 8.
    mu = np.arange(9.0)[None, :]
    r = np.ones(9)
    lower, upper = jackknife_plus_interval(mu, r, 0.8)
    assert lower[0] == 0.0    # second smallest of -1..7
    assert upper[0] == 8.0    # eighth smallest of 1..9


def test_jackknife_plus_infinite_when_too_few_points():
    lower, upper = jackknife_plus_interval(np.zeros((2, 5)), np.ones(5), 0.95)
    assert np.all(np.isneginf(lower)) and np.all(np.isposinf(upper))


def test_split_conformal_hand_case():
    residuals = np.array([0.5, -0.1, 0.3, -0.9, 0.2, 0.7, -0.4, 0.6, 0.8])  # n = 9
    lower, upper = split_conformal_interval(np.array([1.0, 2.0]), residuals, 0.8)
    q = np.sort(np.abs(residuals))[math.ceil(0.8 * 10) - 1]  # 8th smallest = 0.8
    np.testing.assert_allclose(lower, [1 - q, 2 - q])
    np.testing.assert_allclose(upper, [1 + q, 2 + q])


def test_split_conformal_pools_repetitions_at_the_rank_of_one():
    residuals = np.array([0.5, -0.1, 0.3, -0.9, 0.2, 0.7, -0.4, 0.6, 0.8])  # n = 9
    # one repetition as a row is the plain interval
    one = split_conformal_interval([0.0], residuals[None, :], 0.8)
    np.testing.assert_allclose(one, split_conformal_interval([0.0], residuals, 0.8))
    # two repetitions: the 2 * ceil(0.8 * 10) = 16th smallest of the 18 pooled values
    other = np.array([0.05, 0.15, 0.25, 0.35, 0.45, 0.55, 0.65, 2.0, 3.0])
    _, upper = split_conformal_interval([0.0], np.stack([residuals, other]), 0.8)
    assert upper[0] == np.sort(np.abs(np.concatenate([residuals, other])))[15] == 0.9
    # too few points for the level: unbounded, as with one repetition
    _, upper = split_conformal_interval([0.0], np.ones((3, 5)), 0.95)
    assert np.isposinf(upper[0])
    with pytest.raises(ValidationError, match="repetition"):
        split_conformal_interval([0.0], np.ones((2, 2, 2)), 0.8)


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1, 1.5])
def test_level_validation(bad):
    with pytest.raises(ValidationError, match="level"):
        split_conformal_interval([0.0], [0.1, 0.2], bad)
    with pytest.raises(ValidationError, match="level"):
        jackknife_plus_interval([[0.0, 0.0]], [0.1, 0.2], bad)


def test_shape_and_nan_validation():
    with pytest.raises(ValidationError, match="residuals"):
        jackknife_plus_interval(np.zeros((3, 4)), np.ones(5))
    with pytest.raises(ValidationError, match="NaN"):
        jackknife_plus_interval(np.zeros((1, 3)), [1.0, np.nan, 1.0])


def test_split_conformal_coverage_iid(rng):
    """Exact finite-sample coverage: ceil(0.9 * 31) / 31 = 0.903 for n = 30."""
    hits = []
    for _ in range(4000):
        calib = rng.standard_t(df=3, size=30)
        new = rng.standard_t(df=3)
        lo, hi = split_conformal_interval(np.array([0.0]), calib, 0.9)
        hits.append(lo[0] <= new <= hi[0])
    assert 0.885 < np.mean(hits) < 0.92


def _simulated_matrix(rng, n_models: int, n_items: int = 40) -> ScoreMatrix:
    """Continuous factor data: exchangeable models, summary score = row mean."""
    theta = rng.normal(size=(n_models, 2))
    loadings = rng.normal(size=(2, n_items))
    values = theta @ loadings + rng.normal(scale=1.0, size=(n_models, n_items))
    return ScoreMatrix(values)


@pytest.mark.parametrize("cls", [RidgePredictor, KernelRidgePredictor])
def test_jackknife_plus_coverage_near_nominal(rng, cls):
    # one λ for kernel ridge keeps GridSearchCV cheap; coverage does not depend on the λ search
    n_draws, options = (40, {}) if cls is RidgePredictor else (12, {"alphas": [1.0]})
    covered = []
    for _ in range(n_draws):
        data = _simulated_matrix(rng, 30 + 60)
        source, target = data.take(np.arange(30)), data.take(np.arange(30, 90))
        coreset = Coreset.from_indices(source, np.arange(6))
        pred = cls(**options).fit(source, coreset).predict(target.values[:, :6])
        truth = target.summary_scores()
        assert pred.interval == "jackknife+"
        covered.append(np.mean((truth >= pred.lower) & (truth <= pred.upper)))
    assert 0.85 <= np.mean(covered) <= 0.97


def test_mean_predictor_split_conformal_coverage(rng):
    covered = []
    for _ in range(150):
        data = _simulated_matrix(rng, 30 + 40)
        source, target = data.take(np.arange(30)), data.take(np.arange(30, 70))
        coreset = Coreset.from_indices(source, np.arange(8))
        pred = MeanPredictor().fit(source, coreset).predict(target.values[:, :8])
        assert pred.interval == "split-conformal"
        truth = target.summary_scores()
        covered.append(np.mean((truth >= pred.lower) & (truth <= pred.upper)))
    assert 0.87 <= np.mean(covered) <= 0.94


def test_conformal_inflation_restores_coverage_of_overconfident_gaussians():
    rng = np.random.default_rng(0)
    z = 1.6448536269514722
    # predictive sd 1 claimed, true errors have sd 2: tau^2 should be about 3
    n_cal, n_new = 400, 20_000
    var_cal, var_new = np.ones(n_cal), np.ones(n_new)
    tau2 = conformal_inflation(rng.normal(0, 2, n_cal) ** 2, var_cal, 0.9)
    assert 2.0 < tau2 < 4.2
    err = rng.normal(0, 2, n_new)
    covered = np.abs(err) <= z * np.sqrt(var_new + tau2)
    assert 0.87 < covered.mean() < 0.94
    # already calibrated (or conservative): no inflation
    assert conformal_inflation(rng.normal(0, 0.5, n_cal) ** 2, var_cal, 0.9) == 0.0


def test_conformal_inflation_hand_case_and_validation():
    # scores r^2/z^2 - v; n = 4, level 0.5: rank ceil(5 * 0.5) = 3 -> third smallest
    z2 = 0.6744897501960817 ** 2
    r2 = np.array([1.0, 4.0, 9.0, 16.0]) * z2
    assert conformal_inflation(r2, np.zeros(4), 0.5) == pytest.approx(9.0)
    with pytest.raises(ValidationError, match="same length"):
        conformal_inflation(r2, np.zeros(3), 0.9)


def test_conformal_inflation_with_scales():
    # the added sd is tau * c_m: scores (r^2/z^2 - v) / c^2
    z2 = 0.6744897501960817 ** 2
    r2 = np.array([1.0, 4.0, 9.0, 16.0]) * z2
    assert conformal_inflation(r2, np.zeros(4), 0.5, scales=np.full(4, 0.5)) == \
        pytest.approx(36.0)
    # heterogeneous scales: the scores are 4, 4, 4, 64 -> third smallest 4
    assert conformal_inflation(r2, np.zeros(4), 0.5, scales=[0.5, 1.0, 1.5, 0.5]) == \
        pytest.approx(4.0)
    with pytest.raises(ValidationError, match="positive finite scale"):
        conformal_inflation(r2, np.zeros(4), 0.5, scales=[1.0, 0.0, 1.0, 1.0])


def test_scaled_split_conformal_hand_case():
    residuals = np.array([0.1, -0.4, 0.3, -0.2])
    scale = np.array([0.5, 1.0, 0.5, 2.0])
    # scores |r| / σ: 0.2, 0.4, 0.6, 0.1; level 0.6 -> ceil(5 * 0.6) = 3rd smallest = 0.4
    lower, upper = split_conformal_interval(np.array([0.5, 0.9]), residuals, 0.6,
                                            pred_scale=np.array([1.0, 0.25]),
                                            residual_scale=scale)
    np.testing.assert_allclose(upper - lower, [0.8, 0.2])
    np.testing.assert_allclose((upper + lower) / 2, [0.5, 0.9])
    with pytest.raises(ValidationError, match="or neither"):
        split_conformal_interval(np.array([0.5]), residuals, 0.6, pred_scale=np.ones(1))
    with pytest.raises(ValidationError, match="residual_scale must be positive"):
        split_conformal_interval(np.array([0.5]), residuals, 0.6, pred_scale=np.ones(1),
                                 residual_scale=np.zeros(4))


def _bernoulli_errors(rng, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Scores in [0, 1] whose prediction errors scale with sqrt(p (1 - p))."""
    p = rng.beta(0.6, 1.5, size=n)
    return p, p + 0.3 * np.sqrt(p * (1 - p)) * rng.standard_normal(n)


def test_scaled_split_conformal_is_valid_and_conditionally_calibrated(rng):
    """With errors that scale with the score, the scaled interval keeps the marginal
    coverage, covers the low scores near nominal where the constant one over-covers,
    and is narrower on average."""
    hits = {"constant": [], "bernoulli": []}
    low_hits = {"constant": [], "bernoulli": []}
    widths = {"constant": [], "bernoulli": []}
    for _ in range(300):
        p_cal, y_cal = _bernoulli_errors(rng, 40)
        p_new, y_new = _bernoulli_errors(rng, 50)
        for name, scales in (("constant", {}),
                             ("bernoulli", {"pred_scale": bernoulli_scale(p_new),
                                            "residual_scale": bernoulli_scale(p_cal)})):
            lo, hi = split_conformal_interval(p_new, y_cal - p_cal, 0.9, **scales)
            covered = (y_new >= lo) & (y_new <= hi)
            hits[name].append(covered.mean())
            low_hits[name].append(covered[p_new < 0.1].mean() if (p_new < 0.1).any() else np.nan)
            widths[name].append(np.mean(hi - lo))
    assert 0.89 < np.mean(hits["bernoulli"]) < 0.93
    assert 0.89 < np.mean(hits["constant"]) < 0.93
    assert np.nanmean(low_hits["constant"]) > 0.97
    assert abs(np.nanmean(low_hits["bernoulli"]) - 0.9) < 0.03
    assert np.mean(widths["bernoulli"]) < 0.95 * np.mean(widths["constant"])


def test_bernoulli_scale_values_and_floor():
    np.testing.assert_allclose(bernoulli_scale([0.5, 0.0, 1.0, 0.1]),
                               [0.5, np.sqrt(0.01 * 0.99), np.sqrt(0.01 * 0.99), 0.3])
    with pytest.raises(ValidationError, match="floor"):
        bernoulli_scale([0.5], floor=0.5)


def test_interval_scores_definition():
    s = interval_scores([0.0, 2.0, 0.5], [0.1, 0.0, 0.0], [1.0, 1.0, 1.0], alpha=0.1)
    np.testing.assert_allclose(s, [0.9 + 20 * 0.1, 1.0 + 20 * 1.0, 1.0])


def test_loo_interval_scores_match_a_manual_leave_one_out(rng):
    truth, mean = rng.uniform(size=12), rng.uniform(size=12)
    scale = bernoulli_scale(mean)
    got = loo_interval_scores(truth, mean, scale, 0.8)
    for i in range(12):
        keep = np.arange(12) != i
        scores = np.sort(np.abs(truth - mean)[keep] / scale[keep])
        q = scores[math.ceil(0.8 * 12) - 1]
        lo, hi = mean[i] - q * scale[i], mean[i] + q * scale[i]
        assert got[0, i] == pytest.approx(interval_scores(truth[i], lo, hi, 0.2))


def test_loo_interval_scores_prefer_the_scale_the_errors_follow(rng):
    p, y = _bernoulli_errors(rng, 60)
    scaled = loo_interval_scores(y, p, bernoulli_scale(p)).mean()
    constant = loo_interval_scores(y, p, np.ones_like(p)).mean()
    assert scaled < constant
    y_flat = p + 0.1 * rng.standard_normal(60)  # the same spread at every score
    scaled = loo_interval_scores(y_flat, p, bernoulli_scale(p)).mean()
    constant = loo_interval_scores(y_flat, p, np.ones_like(p)).mean()
    assert constant < scaled


def test_variance_function_scale_hand_case_floor_and_clipping():
    mu = np.linspace(0.0, 1.0, 11)
    r = np.sqrt(0.01 + 0.2 * mu - 0.2 * mu**2)  # an exact quadratic variance
    got = variance_function_scale([0.25, 0.5], mu, r)
    np.testing.assert_allclose(got**2, [0.01 + 0.2 * 0.25 * 0.75, 0.06])
    # outside the calibration predictions the quadratic is not extrapolated
    np.testing.assert_allclose(variance_function_scale([-1.0, 2.0], mu, r),
                               variance_function_scale([0.0, 1.0], mu, r))
    # a fitted variance near zero is held at the floor
    low = variance_function_scale([0.0], mu, r, floor=0.5)
    assert low[0] ** 2 == pytest.approx(0.5 * np.mean(r**2))
    # residuals that do not depend on the prediction give a flat scale
    flat = variance_function_scale(mu, mu, np.full(11, 0.1))
    np.testing.assert_allclose(flat, 0.1)
    np.testing.assert_allclose(variance_function_scale([0.3], mu, np.zeros(11)), [1.0])


def test_variance_function_scale_recovers_a_simulated_variance(rng):
    mu = rng.uniform(size=4000)
    sd = np.sqrt(0.02 + 0.3 * (mu - 0.5) ** 2)  # errors largest at the ends
    r = sd * rng.standard_normal(4000)
    grid = np.linspace(0.05, 0.95, 10)
    got = variance_function_scale(grid, mu, r, floor=0.01)
    np.testing.assert_allclose(got, np.sqrt(0.02 + 0.3 * (grid - 0.5) ** 2), rtol=0.08)


def test_variance_function_scale_and_conformal_scales_validation():
    few = VARIANCE_FUNCTION_MIN_POINTS - 1  # too few for three coefficients: constant
    np.testing.assert_allclose(
        variance_function_scale([0.1, 0.5], np.linspace(0, 1, few), np.linspace(0, 1, few)),
        [1.0, 1.0])
    with pytest.raises(ValidationError, match="needs calibration points"):
        variance_function_scale([0.5], [], [])
    with pytest.raises(ValidationError, match="one shape"):
        variance_function_scale([0.5], np.arange(8.0), np.ones(7))
    with pytest.raises(ValidationError, match="finite"):
        variance_function_scale([0.5], np.arange(8.0), [np.nan] + [1.0] * 7)
    with pytest.raises(ValidationError, match="floor"):
        variance_function_scale([0.5], np.arange(8.0), np.ones(8), floor=0.0)
    with pytest.raises(ValidationError, match="conformal scale must be one of"):
        conformal_scales("wide", [0.5], np.arange(8.0), np.ones(8))
    assert conformal_scales("constant", [0.5], np.arange(8.0), np.ones(8)) == {}


def _edge_errors(rng, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Predictions whose errors grow towards both ends of their range (extrapolation)."""
    p = rng.uniform(0.1, 0.9, size=n)
    return p, p + (0.01 + 0.25 * np.abs(p - 0.5)) * rng.standard_normal(n)


@pytest.mark.parametrize("errors", [_bernoulli_errors, _edge_errors])
def test_quadratic_scale_keeps_coverage_and_narrows_where_errors_vary(rng, errors):
    """The variance function is fitted to the calibration residuals it normalises; with
    40 points its marginal coverage stays near nominal, and the interval is narrower on
    average than the constant one whether the errors follow the Bernoulli shape or grow
    towards the ends (which the Bernoulli scale cannot follow)."""
    hits = {"constant": [], "quadratic": []}
    widths = {"constant": [], "quadratic": []}
    for _ in range(300):
        p_cal, y_cal = errors(rng, 40)
        p_new, y_new = errors(rng, 50)
        for name in hits:
            scales = conformal_scales(name, p_new, p_cal, y_cal - p_cal)
            lo, hi = split_conformal_interval(p_new, y_cal - p_cal, 0.9, **scales)
            hits[name].append(np.mean((y_new >= lo) & (y_new <= hi)))
            widths[name].append(np.mean(hi - lo))
    assert 0.88 < np.mean(hits["quadratic"]) < 0.93
    assert 0.89 < np.mean(hits["constant"]) < 0.93
    assert np.mean(widths["quadratic"]) < 0.95 * np.mean(widths["constant"])
