"""irt-bayes' coreset-mean blend: precision weights, their out-of-fold choice, and its effect."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.special import expit

from coreval.data import make_split
from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError
from coreval.methods import get_method
from coreval.pipeline import fit_method
from coreval.prediction.irt_bayes import (
    BLEND_TAU2,
    blend_shift,
    blend_weight,
    choose_blend,
    unseen_mean_variance_factor,
)

FAST = {"num_steps": 600}


def test_unseen_mean_variance_factor_matches_sampling_without_replacement() -> None:
    """Var(coreset mean - unseen mean) / S² over random k-subsets of N fixed items."""
    rng = np.random.default_rng(0)
    n_items, k = 200, 20
    items = rng.normal(size=n_items)
    s2 = items.var(ddof=1)
    gaps = []
    for _ in range(20000):
        pick = np.zeros(n_items, dtype=bool)
        pick[rng.choice(n_items, k, replace=False)] = True
        gaps.append(items[pick].mean() - items[~pick].mean())
    f = unseen_mean_variance_factor(np.full(k, 1.0 / k), n_items)
    assert f == pytest.approx(1 / k * n_items / (n_items - k))
    assert np.var(gaps) / s2 == pytest.approx(f, rel=0.03)
    assert unseen_mean_variance_factor(np.ones(5), 5) == 0.0


def test_blend_weight_is_the_normal_normal_precision_weight() -> None:
    v = np.array([0.0, 0.01, 0.04])
    np.testing.assert_allclose(blend_weight(0.0, v), [0.0, 0.0, 0.0])
    np.testing.assert_allclose(blend_weight(0.01, v), [1.0, 0.5, 0.2])
    np.testing.assert_allclose(blend_weight(np.inf, v), [1.0, 1.0, 1.0])


def test_blend_shift_by_hand() -> None:
    # observed part 0.1 from W_C = 0.2, so the coreset mean is 0.5; W_U = 0.8 and the
    # prediction 0.74 says the unseen mean is (0.74 - 0.1) / 0.8 = 0.8: gap -0.3.
    # the coreset's effective size is 20, so its estimate of the mean score is
    # (20 * 0.5 + 0.5) / 21 = 0.5 and v = 0.5 * 0.5 * f
    parts = np.array([[0.1, 0.5, 0.8, 0.05, 20.0]])
    mean = np.array([0.74])
    v = 0.5 * 0.5 * 0.05
    expected = 0.8 * (0.02 / (0.02 + v)) * -0.3
    np.testing.assert_allclose(blend_shift(mean, parts, 0.02), [expected])
    np.testing.assert_allclose(blend_shift(mean, parts, np.inf), [0.8 * -0.3])
    np.testing.assert_allclose(blend_shift(mean, parts, 0.0), [0.0])
    # the coreset mean alone is the prediction with an infinite prior variance
    np.testing.assert_allclose(mean + blend_shift(mean, parts, np.inf), [0.1 + 0.8 * 0.5])


def test_blend_weight_reads_the_coreset_not_the_prediction_it_checks() -> None:
    """λ depends on the coreset's answers only: a biased IRT prediction cannot buy itself
    weight by inflating the coreset mean's variance."""
    k, n_items = 89, 894
    f = unseen_mean_variance_factor(np.full(k, 1.0 / k), n_items)
    # a model with every coreset item wrong; IRT predictions with a guessing floor
    parts = np.array([[0.0, 0.0, 1 - k / n_items, f, float(k)]] * 2)
    mean = np.array([0.03, 0.15])
    shift = blend_shift(mean, parts, 4.8e-4)
    gap = -mean / parts[:, 2]
    weights = shift / (parts[:, 2] * gap)
    assert weights[0] == pytest.approx(weights[1])
    s = 0.5 / (k + 1)  # Jeffreys' estimate of a mean score with 0 of k right
    assert weights[0] == pytest.approx(4.8e-4 / (4.8e-4 + s * (1 - s) * f))
    assert weights[0] > 0.85
    assert mean[0] + shift[0] < 0.005
    # read from the prediction, the variance gives the biased one more of its own weight
    old = blend_shift(mean, parts, 4.8e-4, variance="prediction") / (parts[:, 2] * gap)
    assert old[1] < old[0] < weights[0]
    with pytest.raises(ValidationError, match="blend_variance must be one of"):
        blend_shift(mean, parts, 4.8e-4, variance="model")
    with pytest.raises(ValidationError, match="5 columns"):
        blend_shift(mean, parts[:, :4], 4.8e-4)


def test_choose_blend_recovers_the_variance_that_generated_the_errors() -> None:
    rng = np.random.default_rng(0)
    n = 40
    mean = rng.uniform(0.3, 0.8, n)
    parts = np.column_stack([0.1 * mean, rng.uniform(0.2, 0.9, n), np.full(n, 0.9),
                             np.full(n, 0.02), np.full(n, 50.0)])
    for tau2 in (BLEND_TAU2[0], BLEND_TAU2[12], BLEND_TAU2[-1]):
        residuals = blend_shift(mean, parts, tau2)
        assert choose_blend(residuals, mean, parts) == tau2


def _label_bias_matrix(seed: int) -> ScoreMatrix:
    """2PL classifiers plus 'constant' ones that answer one class whatever the item.

    Half of the items are of each class. A constant classifier gets every item of its
    class right and the others wrong: 50 % in truth, but a 1-D IRT model reads the
    pattern as an ability and mispredicts it (the sst2 failure of irt-bayes).
    """
    rng = np.random.default_rng(seed)
    n_models, n_items = 90, 100
    theta = rng.normal(size=n_models)
    a = np.exp(rng.normal(0.3, 0.3, size=n_items))
    d = rng.normal(0.5, 1.0, size=n_items)
    y = (rng.random((n_models, n_items)) < expit(np.outer(theta, a) + d)).astype(float)
    positive = rng.random(n_items) < 0.5
    constant = rng.random(n_models) < 0.25
    y[constant] = positive.astype(float)
    return ScoreMatrix(y, name="label-bias")


def _rmse(fitted, target) -> float:
    pred = fitted.predict_array(target.values[:, fitted.coreset.indices])
    return float(np.sqrt(np.mean((pred.mean - target.summary_scores()) ** 2)))


def test_blend_repairs_a_one_dimensional_misfit_out_of_fold_and_on_targets() -> None:
    matrix = _label_bias_matrix(0)
    split = make_split(matrix, "random", seed=0, n_source=45)
    source, target = matrix.take(split.source), matrix.take(split.target)
    fits = {}
    for blend in ("cv", "none"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # one candidate model (the 2PL), so that both blends score the same fold fits
            fits[blend] = fit_method(get_method("irt-bayes"), source, 20, seed=0,
                                     model="2pl", choose_dims=False, blend=blend, **FAST)
    blended, plain = fits["cv"].predictor, fits["none"].predictor
    assert blended.blend_tau2_ > 0.0 and plain.blend_tau2_ == 0.0
    # the same fold fits: the IRT model's own out-of-fold error is unchanged, the blend's lower
    assert blended.irt_cv_rmse_ == pytest.approx(plain.irt_cv_rmse_)
    assert blended.cv_rmse_ < 0.8 * plain.cv_rmse_
    assert _rmse(fits["cv"], target) < 0.8 * _rmse(fits["none"], target)


def test_blend_option_is_validated() -> None:
    matrix = _label_bias_matrix(1)
    with pytest.raises(ValidationError, match="blend must be one of"):
        fit_method(get_method("irt-bayes"), matrix, 10, blend="always", **FAST)
