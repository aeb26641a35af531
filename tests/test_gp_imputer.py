"""Gaussian-process regression imputer of unselected benchmarks (``gpr-*`` methods)."""

from __future__ import annotations

import numpy as np
import pytest

from coreval.base import Coreset
from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError
from coreval.harness.metrics import impute_metrics
from coreval.methods import get_method
from coreval.prediction.gaussian_imputer import GaussianImputer
from coreval.prediction.gp_imputer import GPImputer

N_SOURCE, N_TARGET = 200, 300
SELECTED = np.array([0, 1])


def _saturating(seed: int = 0, missing: float = 0.2) -> tuple[np.ndarray, np.ndarray]:
    """Two selected benchmarks and four others, two of which saturate (a score ceiling)."""
    rng = np.random.default_rng(seed)
    n = N_SOURCE + N_TARGET
    skill = rng.normal(size=(n, 2))
    x = np.column_stack([
        skill[:, 0], skill[:, 1],
        np.tanh(2.0 * skill[:, 0]),                 # saturating in one benchmark
        np.maximum(skill[:, 0] + skill[:, 1], 0),   # a floor
        0.8 * skill[:, 0] - 0.5 * skill[:, 1],      # linear
        skill[:, 1] ** 2,                           # not monotone
    ]) + 0.1 * rng.normal(size=(n, 6))
    source = x[:N_SOURCE].copy()
    source[rng.random(source.shape) < missing] = np.nan
    return source, x[N_SOURCE:]


def _fit(predictor, source: np.ndarray):
    matrix = ScoreMatrix(source, level="benchmark")
    coreset = Coreset(indices=SELECTED, items=matrix.items[SELECTED])
    return predictor.fit(matrix, coreset)


def _r2(source, target, pred) -> float:
    return impute_metrics(source, target, pred.mean, selected=SELECTED)["r2"]


def test_beats_the_linear_gaussian_imputer_on_nonlinear_columns_and_covers():
    source, target = _saturating()
    x = target[:, SELECTED]
    gp = _fit(GPImputer(), source).predict(x)
    linear = _fit(GaussianImputer(), source).predict(x)
    assert _r2(source, target, gp) > _r2(source, target, linear) + 0.1
    assert _r2(source, target, gp) > 0.9
    assert gp.interval == "gp-loo-conformal+cross-conformal" and linear.interval == "gaussian-conditional"
    inside = (target >= gp.lower) & (target <= gp.upper)
    coverage = inside[:, 2:].mean()
    assert 0.85 <= coverage <= 0.95
    # the selected benchmarks keep their observed values, with a zero-width interval
    np.testing.assert_array_equal(gp.mean[:, SELECTED], x)
    np.testing.assert_array_equal(gp.upper[:, SELECTED], gp.lower[:, SELECTED])


def test_linear_data_matches_the_gaussian_imputer():
    rng = np.random.default_rng(3)
    z = rng.normal(size=(N_SOURCE + N_TARGET, 2))
    x = np.column_stack([z, z @ [[0.7, -0.2, 0.5], [0.3, 0.9, -0.4]]
                         + 0.3 * rng.normal(size=(len(z), 3))])
    source, target = x[:N_SOURCE], x[N_SOURCE:]
    gp = _fit(GPImputer(), source).predict(target[:, SELECTED])
    linear = _fit(GaussianImputer(), source).predict(target[:, SELECTED])
    assert abs(_r2(source, target, gp) - _r2(source, target, linear)) < 0.02


def test_a_target_missing_a_selected_benchmark_is_predicted_from_the_others():
    source, target = _saturating(seed=1)
    fitted = _fit(GPImputer(), source)
    x = target[:, SELECTED].copy()
    x[:, 1] = np.nan
    pred = fitted.predict(x)
    assert np.isfinite(pred.mean).all()  # the missing selected benchmark too
    # column 2 depends on the first selected benchmark only, and its GP on that one alone
    # (one fit per column and pattern, kept) still bends with it
    assert fitted.gps_[(2, (True, False))] is not None
    linear = _fit(GaussianImputer(), source).predict(x)
    errors = [np.sqrt(np.mean((p.mean[:, 2] - target[:, 2]) ** 2)) for p in (pred, linear)]
    assert errors[0] < 0.7 * errors[1]
    # no selected benchmark reported: a NaN row, as the Gaussian imputer
    assert np.isnan(fitted.predict(np.full((1, 2), np.nan)).mean).all()


def test_too_few_source_models_keep_the_gaussian_conditional():
    source, target = _saturating(seed=2)
    source[12:, 5] = np.nan  # 12 source models report column 5, fewer than min_rows=20
    fitted = _fit(GPImputer(min_rows=20, calibration_folds=None), source)
    pred = fitted.predict(target[:, SELECTED])
    assert fitted.gps_[(5, (True, True))] is None
    linear = _fit(GaussianImputer(), source).predict(target[:, SELECTED])
    np.testing.assert_allclose(pred.mean[:, 5], linear.mean[:, 5])
    np.testing.assert_allclose(pred.upper[:, 5], linear.upper[:, 5])
    assert fitted.gps_[(2, (True, True))] is not None


def test_same_seed_same_predictions_and_bad_options():
    source, target = _saturating(seed=4)
    a = _fit(GPImputer(seed=5), source).predict(target[:, SELECTED]).mean
    b = _fit(GPImputer(seed=5), source).predict(target[:, SELECTED]).mean
    np.testing.assert_array_equal(a, b)
    with pytest.raises(ValidationError, match="level must be"):
        _fit(GPImputer(level=1.5), source)
    with pytest.raises(ValidationError, match="min_rows must be"):
        _fit(GPImputer(min_rows=1), source)


def test_registered_with_every_gaussian_selector():
    for name in ("gpr-entropy", "gpr-mi", "gpr-variance", "gpr-random"):
        method = get_method(name)
        assert method.task == "impute" and method.predictor.cls is GPImputer


def test_leave_one_out_factor_equals_refits_without_each_model():
    from scipy.stats import norm
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF, WhiteKernel

    from coreval.base.conformal import conformal_quantile
    from coreval.prediction.gp_imputer import _loo_factor

    rng = np.random.default_rng(6)
    x = rng.normal(size=(40, 2))
    y = np.sin(x[:, 0]) + 0.2 * rng.normal(size=40)
    kernel = RBF([1.0, 2.0]) + WhiteKernel(0.05)  # fixed: the refits share it
    gp = GaussianProcessRegressor(kernel, optimizer=None).fit(x, y)
    scores = []
    for i in range(40):
        rest = np.arange(40) != i
        m, s = GaussianProcessRegressor(kernel, optimizer=None).fit(x[rest], y[rest]).predict(
            x[i:i + 1], return_std=True)
        scores.append(abs(y[i] - m[0]) / s[0])
    expected = conformal_quantile(scores, 0.9) / norm.ppf(0.95)
    assert _loo_factor(gp, 0.9) == pytest.approx(expected, rel=1e-6)


def _overfitted(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """25 source models and 400 targets on 30 benchmarks of two skills with heavy-tailed
    noise: a correlation estimated on so few models fits them, and the conditional's own
    intervals under-cover new models."""
    rng = np.random.default_rng(seed)
    skill = rng.normal(size=(425, 2))
    x = skill @ rng.normal(size=(2, 30)) + 0.7 * rng.standard_t(3, size=(425, 30))
    return x[:25], x[25:]


def test_cross_conformal_factor_restores_the_coverage_of_held_out_models():
    selected = np.array([0, 1, 2])
    own, calibrated = [], []
    for seed in range(3):
        source, target = _overfitted(seed)
        matrix = ScoreMatrix(source, level="benchmark")
        coreset = Coreset(indices=selected, items=matrix.items[selected])
        plain = GaussianImputer().fit(matrix, coreset)
        cross = GaussianImputer(calibration_folds=5, seed=seed).fit(matrix, coreset)
        a, b = plain.predict(target[:, selected]), cross.predict(target[:, selected])
        # every source model's unselected cells are scored once, by a fit without it
        assert len(cross.calibration_scores_) == source[:, 3:].size
        assert plain.calibration_factor_ == 1.0 and cross.calibration_factor_ > 1.0
        assert a.interval == "gaussian-conditional"
        assert b.interval == "gaussian-conditional+cross-conformal"
        # the same point predictions, the intervals widened by the factor
        np.testing.assert_allclose(b.mean, a.mean)
        np.testing.assert_allclose((b.upper - b.lower)[:, 3:],
                                   cross.calibration_factor_ * (a.upper - a.lower)[:, 3:])
        for out, pred in ((own, a), (calibrated, b)):
            out.append(((target >= pred.lower) & (target <= pred.upper))[:, 3:].mean())
    assert np.mean(own) < 0.87
    assert 0.88 <= np.mean(calibrated) <= 0.93


def test_cross_conformal_folds_need_enough_source_models():
    source, _ = _overfitted(0)
    matrix = ScoreMatrix(source[:8], level="benchmark")
    coreset = Coreset(indices=SELECTED, items=matrix.items[SELECTED])
    with pytest.raises(ValidationError, match="calibration_folds must be"):
        GaussianImputer(calibration_folds=5).fit(matrix, coreset)
    fitted = GPImputer(calibration_folds=None).fit(matrix, coreset)
    assert fitted.predict(source[:2, SELECTED]).interval == "gp-loo-conformal"
