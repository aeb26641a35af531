"""The uncertainty-aware score card (coreval.report.score_card)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm
from sklearn.linear_model import Ridge

from coreval import select
from coreval.api import FittedMethod
from coreval.base import Prediction, Predictor
from coreval.data import ScoreMatrix, simulate
from coreval.errors import ValidationError
from coreval.methods import Component, Method
from coreval.report.score_card import (
    beat_probabilities,
    rank_interval,
    score_card,
    subtask_predictions,
)
from coreval.selection.random import RandomSelector


@pytest.fixture(scope="module")
def data():
    m = simulate(90, 200, n_groups=4, seed=7).matrix
    return m, m.take(np.arange(70)), m.take(np.arange(70, 90))


def test_beat_probabilities_normal_approximation_closed_form():
    z = norm.ppf(0.95)
    pred = Prediction(mean=[0.5], lower=[0.5 - z * 0.1], upper=[0.5 + z * 0.1], level=0.9,
                      interval="jackknife+")
    p, draws, how = beat_probabilities(pred, [0.4, 0.5, 0.7])
    np.testing.assert_allclose(p, [norm.cdf(1.0), 0.5, norm.cdf(-2.0)])
    assert how.startswith("normal approximation")
    assert abs(draws.std() - 0.1) < 0.01


def test_beat_probabilities_from_draws_and_rank():
    draws = np.linspace(0.0, 1.0, 101)[:, None]        # uniform on a grid, one model
    pred = Prediction(mean=[0.5], lower=[0.05], upper=[0.95], interval="posterior", draws=draws)
    p, _, how = beat_probabilities(pred, [0.25, 0.5, 2.0])
    assert how == "posterior draws"
    # P(S > 0.25) = 75/101 above + half of the tie
    np.testing.assert_allclose(p, [75 / 101 + 0.5 / 101, 0.5, 0.0])
    rank = rank_interval(np.full(50, 0.6), [0.9, 0.7, 0.5, 0.1])
    assert rank == {"median": 3, "lower": 3, "upper": 3, "n": 5}
    with pytest.raises(ValidationError):
        beat_probabilities(Prediction(mean=[0.1, 0.2], lower=[0, 0], upper=[1, 1]), [0.3])


def test_subtask_loo_residuals_match_explicit_refits(data):
    _, src, tgt = data
    idx = np.arange(0, 200, 10)
    table = subtask_predictions(src, idx, tgt.values[0, idx], level=0.9)
    assert list(table.subtask) == sorted(set(src.groups))
    assert table["n_items"].sum() == 200 and table["coreset_items"].sum() == len(idx)
    # the RidgeCV leave-one-out residuals used for the interval equal explicit refits
    from sklearn.linear_model import RidgeCV

    g = src.groups == table.subtask[0]
    x, y = src.values[:, idx], src.values[:, g].mean(1)
    ridge = RidgeCV(alphas=np.logspace(-3, 3, 13), store_cv_results=True).fit(x, y)
    col = int(np.flatnonzero(np.isclose(ridge.alphas, ridge.alpha_))[0])
    loo = [y[i] - Ridge(alpha=ridge.alpha_).fit(np.delete(x, i, 0), np.delete(y, i))
           .predict(x[i:i + 1])[0] for i in range(len(y))]
    np.testing.assert_allclose(np.sqrt(ridge.cv_results_[:, col]), np.abs(loo), rtol=1e-6)
    assert subtask_predictions(ScoreMatrix(src.values), idx, tgt.values[0, idx]) is None


def test_subtask_intervals_cover_held_out_models(data):
    _, src, tgt = data
    idx = np.arange(0, 200, 5)
    hits = []
    for j in range(tgt.n_models):
        t = subtask_predictions(src, idx, tgt.values[j, idx], level=0.9)
        truth = [tgt.values[j, tgt.groups == g].mean() for g in t.subtask]
        hits += list((t.lower <= truth) & (truth <= t.upper))
    assert np.mean(hits) >= 0.75


def test_score_card_regression_card_and_files(data, tmp_path):
    _, src, tgt = data
    fitted = select(src, "random+", 30, seed=0)
    full = dict(zip(tgt.items, tgt.values[3], strict=True))  # extra items are ignored
    card = score_card(src, full, fitted=fitted, model_name="m3", out=tmp_path / "c.md")
    expected = fitted.predict(tgt.values[3, fitted.coreset.indices])
    np.testing.assert_allclose(card.prediction.mean, expected.mean)
    np.testing.assert_allclose(card.prediction.upper, expected.upper)
    assert card.uncertainty.startswith("normal approximation")
    assert card.subtasks is not None and len(card.subtasks) == 4
    assert len(card.comparisons) == src.n_models
    assert card.comparisons["score"].is_monotonic_decreasing
    text = (tmp_path / "c.md").read_text()
    assert f"{100 * expected.mean[0]:.1f}%" in text and "## Subtasks" in text
    html = card.save(tmp_path / "c.html").read_text()
    assert html.startswith("<!DOCTYPE html>") and "<table" in html and "m3" in html
    assert "<code>random+</code>" in html and "**" not in html
    before = (tmp_path / "c.md").read_text()
    with pytest.raises(UnicodeEncodeError):  # an unencodable name fails the rewrite ...
        score_card(src, full, fitted=fitted, model_name="m\udcff", out=tmp_path / "c.md")
    assert (tmp_path / "c.md").read_text() == before  # ... and leaves the card intact
    # another level: the predictor is re-run at that level and restored
    card80 = score_card(src, full, fitted=fitted, level=0.8)
    assert card80.prediction.level == 0.8 and fitted.predictor.level == 0.9
    assert np.all(card80.prediction.width < card.prediction.width)
    # same seed, same coreset and numbers without a fitted method
    again = score_card(src, full, method="random+", budget=30, seed=0)
    np.testing.assert_allclose(again.prediction.mean, card.prediction.mean)


def test_score_card_interval_is_the_methods_calibrated_one(data):
    # mrmr+ is calibrated on folds of the source models (calibration="cv"): the card must
    # show that interval, as `fitted.predict` does, not the ridge's own jackknife+
    _, src, tgt = data
    fitted = select(src, "mrmr+", 20, seed=0, selection="method")
    assert fitted.calibration == "cv"
    x = tgt.values[3, fitted.coreset.indices]
    card = score_card(src, x, fitted=fitted)
    expected = fitted.predict(x)
    assert card.prediction.interval == expected.interval == "cv-residual"
    np.testing.assert_allclose([card.prediction.lower, card.prediction.upper],
                               [expected.lower, expected.upper])
    card80 = score_card(src, x, fitted=fitted, level=0.8)
    np.testing.assert_allclose(card80.prediction.upper,
                               fitted.predict_array(x[None], level=0.8).upper)


class _NormalDraws(Predictor):
    """Predicts the coreset mean with normal posterior draws (sd 0.05)."""

    def __init__(self, *, level: float = 0.9, seed: int = 0) -> None:
        self.level = level
        self.seed = seed

    def _fit(self, source, coreset) -> None:
        pass

    def _predict(self, x):
        mean = x.mean(axis=1)
        draws = mean[None] + 0.05 * np.random.default_rng(self.seed).standard_normal(
            (4000, len(mean)))
        lo, hi = np.quantile(draws, [(1 - self.level) / 2, (1 + self.level) / 2], axis=0)
        return Prediction(mean=mean, lower=lo, upper=hi, level=self.level, interval="posterior",
                          draws=draws)


def test_score_card_uses_posterior_draws(data):
    _, src, tgt = data
    sel = RandomSelector(k=40, seed=0).fit(src)
    pred = _NormalDraws().fit(src, sel.coreset_)
    fitted = FittedMethod(Method("normal-draws", Component(RandomSelector), Component(_NormalDraws)),
                          sel, pred, sel.coreset_)
    x = tgt.values[0, sel.coreset_.indices]
    card = score_card(src, x, fitted=fitted)
    assert card.uncertainty == "posterior draws"
    ref = src.summary_scores()
    expected = norm.cdf((x.mean() - ref) / 0.05)
    got = card.comparisons.set_index("reference")["p_beat"].reindex(src.models.astype(str))
    np.testing.assert_allclose(got.to_numpy(), expected, atol=0.03)


def test_score_card_bad_input(data):
    _, src, tgt = data
    fitted = select(src, "random+", 10, seed=0)
    with pytest.raises(ValidationError, match="lack coreset items"):
        score_card(src, {fitted.coreset.items[0]: 1.0}, fitted=fitted)
    with pytest.raises(ValidationError, match="level"):
        score_card(src, tgt.values[0, fitted.coreset.indices], fitted=fitted, level=1.5)
    with pytest.raises(ValidationError):
        score_card(src.values, {}, fitted=fitted)
    with pytest.raises(ValidationError):
        score_card(src, np.zeros(3), fitted=fitted)
