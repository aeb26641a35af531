"""Scales++ item-centric selection and prediction on constructed feature-score data."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit
from sklearn.linear_model import LogisticRegression

from coreval.data.item_features import drop_constant, impute_annotations
from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError
from coreval.methods import get_method
from coreval.prediction.item_centric import ScalesPredictor, logistic_fits
from coreval.selection.item_centric import ScalesLiteSelector, ScalesSelector
from coreval.selection.random import RandomSelector


def demand_matrix(rng, n_models=30, n_items=400, n_scales=4):
    """Items with demand levels 0–5; P(correct) = σ(θ_model − demand of item).

    Item demand is the mean of its scale levels; an extra constant scale checks
    that constant dimensions are dropped.
    """
    levels = rng.integers(0, 6, size=(n_items, n_scales)).astype(float)
    demand = levels.mean(axis=1)
    theta = rng.uniform(0.5, 4.5, n_models)
    p = expit(2.0 * (theta[:, None] - demand[None, :]))
    Y = (rng.random(p.shape) < p).astype(float)
    meta = pd.DataFrame(levels, columns=[f"feat_s{j}" for j in range(n_scales)])
    meta["feat_const"] = 3.0
    meta.index = [f"i{j}" for j in range(n_items)]
    return ScoreMatrix(Y, items=meta.index, item_meta=meta), p.mean(axis=1)


def test_selector_is_cold_start_and_weights_are_cluster_shares(rng):
    M, _ = demand_matrix(rng)
    sel = ScalesSelector(k=12, reducer="none", seed=0).fit(M)
    assert sel.coreset_.uses_source_models is False
    assert ScalesSelector.uses_source_models is False
    sizes = sel.coreset_.details["cluster_sizes"]
    np.testing.assert_allclose(sel.weights_, sizes / M.n_items)
    assert sizes.sum() == M.n_items
    # scores are never read: a matrix with scrambled scores gives the same items
    scrambled = ScoreMatrix(rng.permutation(M.values.ravel()).reshape(M.shape), items=M.items,
                            item_meta=M.item_meta)
    again = ScalesSelector(k=12, reducer="none", seed=0).fit(scrambled)
    np.testing.assert_array_equal(sel.selected_, again.selected_)


@pytest.mark.slow  # numba compiles UMAP on first use: ~1-2 min on a loaded machine
def test_umap_selection_is_seeded_and_valid(rng):
    M, _ = demand_matrix(rng, n_items=150)
    a = ScalesSelector(k=6, seed=3, n_neighbors=10).fit(M)
    b = ScalesSelector(k=6, seed=3, n_neighbors=10).fit(M)
    np.testing.assert_array_equal(a.selected_, b.selected_)
    assert a.coreset_.details["reduced"].shape == (150, 3)
    assert len(np.unique(a.selected_)) == 6


def test_drop_constant():
    F = np.array([[1.0, 2.0, 3.0], [1.0, 5.0, 3.0]])
    np.testing.assert_array_equal(drop_constant(F), [False, True, False])
    with pytest.raises(ValidationError, match="constant"):
        drop_constant(np.ones((3, 2)))


def test_estimators_beat_random_sample_mean(rng):
    """Known feature-score structure: stratified anchors + logistic fits beat random items."""
    M, truth = demand_matrix(rng, n_models=40, n_items=600)
    k = 12
    sel = ScalesSelector(k=k, reducer="none", seed=0).fit(M)
    x = M.values[:, sel.selected_]
    err = {}
    for est in ("weighted-mean", "logistic", "hybrid"):
        pred = ScalesPredictor(estimator=est).fit(M, sel.coreset_).predict(x)
        err[est] = np.mean(np.abs(pred.mean - truth))
    rand = []
    for seed in range(10):
        r = RandomSelector(k=k, seed=seed).fit(M)
        rand.append(np.mean(np.abs(M.values[:, r.selected_].mean(axis=1) - truth)))
    assert err["logistic"] < np.mean(rand)
    assert err["hybrid"] < np.mean(rand)


def test_logistic_fits_match_scikit_learn(rng):
    Z = rng.integers(0, 6, size=(30, 3)).astype(float)
    y = (rng.random(30) < expit(1.0 - 0.5 * Z[:, 0])).astype(float)
    w = rng.uniform(0.2, 1.0, 30)
    b0, b1 = logistic_fits(Z, y, w, C=1.0)
    for f in range(3):
        ref = LogisticRegression(C=1.0, tol=1e-10, max_iter=1000).fit(Z[:, f:f + 1], y,
                                                                     sample_weight=w)
        assert b0[f] == pytest.approx(ref.intercept_[0], abs=1e-4)
        assert b1[f] == pytest.approx(ref.coef_[0, 0], abs=1e-4)


def test_weighted_mean_is_closed_form(rng):
    M, _ = demand_matrix(rng, n_items=200)
    sel = ScalesSelector(k=8, reducer="none").fit(M)
    x = M.values[:, sel.selected_]
    pred = ScalesPredictor(estimator="weighted-mean").fit(M, sel.coreset_).predict(x)
    np.testing.assert_allclose(pred.mean, x @ sel.weights_)


def test_lambda_formula(rng):
    M, _ = demand_matrix(rng, n_items=200)
    sel = ScalesSelector(k=8, reducer="none").fit(M)
    x = M.values[:, sel.selected_]
    parts = {e: ScalesPredictor(estimator=e).fit(M, sel.coreset_).predict(x).mean
             for e in ("weighted-mean", "logistic")}
    hyb = ScalesPredictor().fit(M, sel.coreset_)
    mean = hyb.predict(x).mean
    y1, y2 = parts["weighted-mean"], parts["logistic"]
    v1 = np.clip(y1 * (1 - y1), 1e-6, None) * np.sum(sel.weights_**2)
    b2 = np.clip((y2 - y1) ** 2 - v1, 0, None)
    lam = b2 / (b2 + v1)
    np.testing.assert_allclose(mean, np.clip(lam * y1 + (1 - lam) * y2, 0, 1), atol=1e-12)


def test_lite_imputes_annotations_from_embeddings(rng):
    M, _ = demand_matrix(rng, n_items=300)
    F = M.item_meta[[c for c in M.item_meta if c.startswith("feat_s")]].to_numpy()
    E = F + 0.05 * rng.normal(size=F.shape)  # an "embedding" that encodes the demands
    filled = impute_annotations(E, np.where(np.arange(300)[:, None] < 60, F, np.nan))
    assert np.mean(np.abs(filled[60:] - F[60:])) < 0.6
    meta = M.item_meta.copy()
    meta.loc[meta.index[60:], [c for c in meta if c.startswith("feat_")]] = np.nan
    for j in range(E.shape[1]):
        meta[f"emb_{j}"] = E[:, j]
    L = ScoreMatrix(M.values, items=M.items, item_meta=meta)
    method = get_method("scales-lite")
    sel = method.make_selector(k=8, seed=0, reducer="none").fit(L)
    assert isinstance(sel, ScalesLiteSelector)
    pred = method.make_predictor().fit(L, sel.coreset_).predict(L.values[:, sel.selected_])
    assert np.all((pred.lower <= pred.mean) & (pred.mean <= pred.upper))


def test_registered_method_and_errors(rng):
    M, _ = demand_matrix(rng, n_items=100)
    method = get_method("scales")
    sel = method.make_selector(k=5, seed=0, reducer="none").fit(M)
    pred = method.make_predictor().fit(M, sel.coreset_).predict(M.values[:3, sel.selected_])
    assert pred.mean.shape == (3,)
    bare = ScoreMatrix(M.values)
    with pytest.raises(ValidationError, match="no item features"):
        ScalesSelector(k=5).fit(bare)
    with pytest.raises(ValidationError, match="k=101 is larger"):
        ScalesSelector(k=101, reducer="none").fit(M)
    with pytest.raises(ValidationError, match="features must have shape"):
        ScalesSelector(k=3, features=np.ones((5, 2))).fit(M)
    three_kinds = np.repeat(np.eye(3), [34, 33, 33], axis=0)  # 3 distinct feature vectors
    assert len(ScalesSelector(k=3, features=three_kinds, reducer="none").fit(M).selected_) == 3
    with pytest.raises(ValidationError, match="k=4 is larger than the 3 distinct"):
        ScalesSelector(k=4, features=three_kinds, reducer="none").fit(M)
    with pytest.raises(ValidationError, match="reducer must be"):
        ScalesSelector(k=3, features=three_kinds, reducer="pca").fit(M)


@pytest.mark.parametrize("estimator", ["weighted-mean", "logistic", "hybrid"])
def test_full_coreset_recovers_the_mean_of_subtask_means(estimator, rng):
    # subtasks of 10 and 30 items: the full score is the mean of the two subtask means
    # (0.5 * 1 + 0.5 * 5/30), not the plain item mean 15/40; with every item in the
    # coreset nothing is predicted, so every estimator must return it exactly
    n_items = 40
    items = [f"i{j}" for j in range(n_items)]
    meta = pd.DataFrame({"group": ["A"] * 10 + ["B"] * 30,
                         **{f"feat_{j}": rng.integers(0, 6, n_items).astype(float)
                            for j in range(3)}}, index=items)
    Y = np.zeros((6, n_items))
    Y[:, :15] = 1.0
    source = ScoreMatrix(Y, models=[f"m{i}" for i in range(6)], items=items, item_meta=meta)
    coreset = RandomSelector(k=n_items, seed=0).fit(source).coreset_
    pred = ScalesPredictor(estimator=estimator).fit(source, coreset).predict(
        Y[:1, coreset.indices])
    assert pred.mean[0] == pytest.approx(0.5 + 0.5 * 5 / 30, abs=1e-9)
