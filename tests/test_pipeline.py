"""fit_method: one code path for API and harness, and selection-aware ("cv") intervals."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.model_selection import KFold

from coreval.data import make_split, simulate
from coreval.errors import ValidationError
from coreval.methods import get_method
from coreval.pipeline import fit_method


def _coverage(fitted, target) -> float:
    pred = fitted.predict_array(target.values[:, fitted.coreset.indices])
    truth = target.summary_scores()
    return float(np.mean((truth >= pred.lower) & (truth <= pred.upper)))


def test_cv_residuals_equal_a_manual_refit_of_the_whole_pipeline():
    m = simulate(n_models=60, n_items=80, seed=1).matrix
    source = m.take(np.arange(30))
    method = get_method("mrmr+")
    fitted = fit_method(method, source, 8, seed=2, calibration="cv", folds=5, repeats=2)
    y = source.summary_scores()
    expected = np.empty((2, 30))
    for r, fold_seed in enumerate([2, int(np.random.default_rng(2).integers(0, 2**31 - 1))]):
        for train, held in KFold(5, shuffle=True, random_state=fold_seed).split(np.arange(30)):
            sub = source.take(train)
            sel = method.make_selector(k=8, seed=2).fit(sub)
            pred = method.make_predictor(seed=2).fit(sub, sel.coreset_)
            expected[r, held] = np.abs(y[held] - pred.predict(
                source.values[np.ix_(held, sel.coreset_.indices)]).mean)
    assert not np.allclose(expected[0], expected[1])  # two assignments to folds
    np.testing.assert_allclose(fitted.cv_residuals, expected)
    out = fitted.predict_array(m.values[30:, fitted.coreset.indices])
    assert out.interval == "cv-residual"
    native = fitted.predictor.predict(m.values[30:, fitted.coreset.indices])
    np.testing.assert_allclose(out.mean, native.mean)


def test_cv_calibration_repairs_undercoverage_of_a_supervised_selector():
    """mRMR picks items with the source models' scores, so jackknife+ residuals are optimistic."""
    native, cv = [], []
    for seed in range(3):
        m = simulate(n_models=240, n_items=300, seed=seed).matrix
        split = make_split(m, "random", seed=seed, n_source=40)
        source, target = m.take(split.source), m.take(split.target)
        for calibration, store in (("native", native), ("cv", cv)):
            fitted = fit_method(get_method("mrmr+"), source, 15, seed=seed,
                                calibration=calibration)
            store.append(_coverage(fitted, target))
    assert np.mean(cv) >= 0.85
    assert np.mean(cv) > np.mean(native) + 0.03


def test_calibration_errors():
    m = simulate(n_models=30, n_items=40, seed=0).matrix
    with pytest.raises(ValidationError, match="calibration must be"):
        fit_method(get_method("random+"), m, 5, calibration="bootstrap")
    for bad in (0, 1.5, True):
        with pytest.raises(ValidationError, match="repeats must be"):
            fit_method(get_method("mrmr+"), m, 5, calibration="cv", repeats=bad)
