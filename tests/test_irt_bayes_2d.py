"""2-D ability quadrature (grid_ability_draws_2d) and irt-bayes with dims=2."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.special import expit

from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError
from coreval.irt.logistic import grid_ability_draws, grid_ability_draws_2d
from coreval.methods import get_method
from coreval.pipeline import fit_method


def test_grid_2d_recovers_abilities_with_known_items() -> None:
    rng = np.random.default_rng(0)
    n, k, s = 40, 300, 8
    theta = rng.normal(size=(n, 2))
    a = rng.normal(0.0, 1.2, size=(k, 2))
    d = rng.normal(size=k)
    x = (rng.random((n, k)) < expit(theta @ a.T + d)).astype(float)
    x[0, :10] = np.nan  # unanswered items are skipped
    draws = grid_ability_draws_2d(x, np.repeat(a[None], s, 0), np.repeat(d[None], s, 0),
                                  rng=rng)
    assert draws.shape == (n, s, 2) and np.isfinite(draws).all()
    est = draws.mean(axis=1)
    for j in range(2):
        assert np.corrcoef(est[:, j], theta[:, j])[0, 1] > 0.9


def test_grid_2d_matches_1d_when_the_second_loading_is_zero() -> None:
    rng = np.random.default_rng(1)
    k, s = 60, 400
    a1 = np.exp(rng.normal(0.0, 0.3, size=k))
    d = rng.normal(size=k)
    x = (rng.random((1, k)) < expit(0.8 * a1 + d)).astype(float)
    a2 = np.stack([a1, np.zeros(k)], axis=1)
    two = grid_ability_draws_2d(x, np.repeat(a2[None], s, 0), np.repeat(d[None], s, 0), rng=rng)
    one = grid_ability_draws(x, np.repeat(a1[None, :, None], s, 0), np.repeat(d[None], s, 0),
                             rng=rng)
    assert abs(two[0, :, 0].mean() - one[0].mean()) < 0.1
    assert abs(two[0, :, 0].std() - one[0].std()) < 0.1
    assert abs(two[0, :, 1].mean()) < 0.15 and abs(two[0, :, 1].std() - 1.0) < 0.15


def test_grid_2d_rejects_other_dimensions() -> None:
    with pytest.raises(ValidationError, match="2-D loadings"):
        grid_ability_draws_2d(np.zeros((1, 3)), np.ones((2, 3, 1)), np.zeros((2, 3)),
                              rng=np.random.default_rng(0))


def test_irt_bayes_two_dimensions_end_to_end() -> None:
    rng = np.random.default_rng(2)
    theta = rng.normal(size=(50, 2))
    a = np.abs(rng.normal(1.0, 0.3, size=(80, 2))) * np.array([1.0, 0.0])
    a[40:, 1] = rng.normal(0.0, 1.5, size=40)
    d = rng.normal(size=80)
    y = (rng.random((50, 80)) < expit(theta @ a.T + d)).astype(float)
    source, target = ScoreMatrix(y[:40]), y[40:]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        fm = fit_method(get_method("irt-bayes"), source, 16, seed=0, dims=2, num_steps=500,
                        misfit="none")
    pred = fm.predict_array(target[:, fm.coreset.indices])
    assert pred.draws.shape == (200, 10) and np.isfinite(pred.mean).all()
    assert np.sqrt(np.mean((pred.mean - target.mean(axis=1)) ** 2)) < 0.1
    # each model's draws come from its own stream: the same alone as in the batch
    alone = fm.predict_array(target[3:4, fm.coreset.indices])
    np.testing.assert_array_equal(alone.draws[:, 0], pred.draws[:, 3])


@pytest.mark.slow  # the Fisher coreset's checked selection refits per fold: ~4-5 min
def test_fisher_coreset_with_a_two_dimensional_spec_bins_a_one_dimensional_fit() -> None:
    rng = np.random.default_rng(3)
    theta = rng.normal(size=40)
    a = np.exp(rng.normal(0.0, 0.3, size=60))
    y = (rng.random((40, 60)) < expit(np.outer(theta, a) + rng.normal(size=60))).astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        fm = fit_method(get_method("irt-bayes"), ScoreMatrix(y), 12, seed=0, coreset="fisher",
                        dims=2, num_steps=300, misfit="none", selection="method")
    assert len(fm.coreset) == 12
    assert fm.selector.fit_.dims == 1 and fm.predictor.irt_fit_.dims == 2
