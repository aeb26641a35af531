"""Baseline selectors and predictors against scikit-learn / kmedoids / closed forms."""

from __future__ import annotations

import warnings

import kmedoids
import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.kernel_ridge import KernelRidge
from sklearn.linear_model import Lasso, Ridge, RidgeCV
from sklearn.model_selection import GridSearchCV, LeaveOneOut

import coreval
from coreval.base import Coreset, FitCache
from coreval.base.conformal import jackknife_plus_interval
from coreval.data.matrix import ScoreMatrix
from coreval.errors import UnknownMethodError, ValidationError
from coreval.prediction.lasso import LassoPredictor
from coreval.prediction.mean import MeanPredictor
from coreval.prediction.ridge import KernelRidgePredictor, RidgePredictor
from coreval.regression import kernel_ridge_loo_batch, ridge_loo_batch
from coreval.selection.anchor_points import AnchorPointsSelector
from coreval.selection.lasso import LassoSelector, reference_choice
from coreval.selection.random import RandomSelector
from coreval.selection.random_search import RandomSearchSelector

BINARY_GRID = np.logspace(-1, 1, 5)
CONT_GRID = np.logspace(-2, 2, 9)


def binary_matrix(rng, n_models=40, n_items=60) -> ScoreMatrix:
    """2PL-like binary responses (exchangeable models)."""
    theta = rng.normal(size=(n_models, 1))
    a = rng.uniform(0.5, 2.0, size=(1, n_items))
    b = rng.normal(size=(1, n_items))
    p = 1 / (1 + np.exp(-(a * theta - b)))
    return ScoreMatrix((rng.uniform(size=p.shape) < p).astype(float))


def continuous_matrix(rng, n_models=50, n_items=20) -> ScoreMatrix:
    theta = rng.normal(size=(n_models, 2))
    return ScoreMatrix(theta @ rng.normal(size=(2, n_items))
                       + rng.normal(scale=0.5, size=(n_models, n_items)))


# ------------------------------------------------------------------ selectors
def test_random_selector_is_legacy_permutation():
    data = ScoreMatrix(np.zeros((3, 50)) + np.arange(50))
    sel = RandomSelector(k=7, seed=3).fit(data)
    want = np.random.RandomState(3).permutation(50)[:7]
    np.testing.assert_array_equal(sel.selected_, want)
    assert sel.coreset_.uses_source_models is False
    np.testing.assert_array_equal(RandomSelector(k=7, seed=3).fit(data).selected_, want)
    assert not np.array_equal(RandomSelector(k=7, seed=4).fit(data).selected_, want)


def test_anchor_points_matches_kmedoids_reference_call(rng):
    data = binary_matrix(rng, 30, 80)
    sel = AnchorPointsSelector(k=9, seed=5).fit(data)
    # The reference: seed the global legacy stream, then kmedoids' own random init.
    with np.errstate(divide="ignore", invalid="ignore"):
        corr = np.corrcoef(data.values, rowvar=False)
    corr[np.isnan(corr)] = 0.0
    state = np.random.get_state()  # noqa: NPY002
    try:
        np.random.seed(5)  # noqa: NPY002
        ref = kmedoids.fasterpam(1 - corr, 9, init="random")
    finally:
        np.random.set_state(state)  # noqa: NPY002
    assert set(sel.selected_.tolist()) == set(np.asarray(ref.medoids).tolist())
    members = np.argmax(corr[sel.selected_], axis=0)
    np.testing.assert_allclose(sel.weights_, np.bincount(members, minlength=9) / 80)
    assert sel.weights_.sum() == pytest.approx(1.0)
    np.testing.assert_array_equal(AnchorPointsSelector(k=9, seed=5).fit(data).selected_,
                                  sel.selected_)


def test_coreset_means_estimate_the_summary_of_grouped_items(rng):
    """Items in groups of 10 hard and 50 easy ones: the summary score is the mean of the
    group means. With every item in the coreset, the weighted mean of a random coreset
    and of anchor points equals it; the plain item mean would not."""
    import pandas as pd

    from coreval.selection.random import RandomSelector

    base = binary_matrix(rng, 40, 60)
    values = base.values.copy()
    values[:, :10] = (rng.random((40, 10)) < 0.2).astype(float)  # the hard group
    groups = np.where(np.arange(60) < 10, "hard", "easy")
    data = ScoreMatrix(values, item_meta=pd.DataFrame({"group": groups}, index=base.items))
    summary = data.summary_scores()
    assert np.abs(values.mean(axis=1) - summary).max() > 0.1  # the premise
    for selector in (RandomSelector(k=60, seed=0), AnchorPointsSelector(k=60, seed=0)):
        coreset = selector.fit(data).coreset_
        pred = MeanPredictor().fit(data, coreset).predict(values[:, coreset.indices])
        np.testing.assert_allclose(pred.mean, summary, atol=1e-12)
    # a partial random coreset weights its items by their group's share
    coreset = RandomSelector(k=12, seed=1).fit(data).coreset_
    w = coreset.weights
    assert w.sum() == pytest.approx(1.0)
    hard = groups[coreset.indices] == "hard"
    if hard.any() and (~hard).any():
        assert w[hard].sum() / hard.sum() > w[~hard].sum() / (~hard).sum()


def test_anchor_points_weighted_mean_recovers_mean_of_duplicated_items(rng):
    base = binary_matrix(rng, 30, 5).values
    data = ScoreMatrix(np.repeat(base, [1, 2, 3, 4, 5], axis=1))  # 5 groups of identical items
    sel = AnchorPointsSelector(k=5, seed=0).fit(data)
    pred = MeanPredictor().fit(data, sel.coreset_).predict(data.values[:, sel.selected_])
    np.testing.assert_allclose(pred.mean, data.summary_scores())


def _reference_lasso(x, y, alphas, k):
    """The reference rule, with plain sklearn fits (intercept included)."""
    best, gap = None, np.inf
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for a in alphas:
            m = Lasso(alpha=a, max_iter=10000).fit(x, y)
            nnz = int((m.coef_ != 0).sum())
            if nnz <= k and abs(nnz - k) < gap:
                best, gap = m, abs(nnz - k)
            if nnz == k:
                break
    return best


def test_lasso_cold_sweep_matches_sklearn_loop(rng):
    data = binary_matrix(rng, 30, 50)
    x, y = data.values, data.summary_scores()
    alphas = np.logspace(-4, 1, 60)
    k = 12
    best = _reference_lasso(x, y, alphas, k)
    sel = LassoSelector(k=k, alphas=alphas, warm_start=False).fit(data)
    np.testing.assert_array_equal(sel.selected_, np.flatnonzero(best.coef_))
    pred = LassoPredictor(interval="none").fit(data, sel.coreset_)
    np.testing.assert_allclose(pred.predict(x[:, sel.selected_]).mean, best.predict(x),
                               atol=1e-6)


def test_lasso_budgets_share_one_cold_sweep(rng):
    """With a cache, every k reads one sweep and picks what the reference loop picks."""
    data = binary_matrix(rng, 30, 50)
    x, y = data.values, data.summary_scores()
    alphas = np.logspace(-4, 1, 60)
    cache = FitCache()
    picked = set()
    for k in (3, 12, 40):  # an early exact match, a later one, none (k > nnz everywhere)
        shared = LassoSelector(k=k, alphas=alphas).fit(data, cache=cache).coreset_
        alone = LassoSelector(k=k, alphas=alphas).fit(data).coreset_
        np.testing.assert_array_equal(shared.indices, alone.indices)
        np.testing.assert_array_equal(shared.linear_fit.coef, alone.linear_fit.coef)
        best = _reference_lasso(x, y, alphas, k)
        np.testing.assert_array_equal(shared.indices, np.flatnonzero(best.coef_))
        assert shared.linear_fit.alpha == pytest.approx(best.alpha)
        picked.add(shared.linear_fit.alpha)
    assert len(picked) == 3 and cache.misses == 1 and cache.hits == 2
    assert reference_choice(np.array([9, 5, 4, 4, 2]), 4) == 2
    assert reference_choice(np.array([9, 3, 2, 3]), 4) == 1  # first of the closest
    assert reference_choice(np.array([9, 8]), 4) is None


def test_lasso_path_matches_lasso_where_unique(rng):
    data = continuous_matrix(rng, 80, 15)  # n > p: the lasso solution is unique
    sel = LassoSelector(k=6, alphas=np.logspace(-3, 0, 200), tol=1e-10,
                        warm_start=True).fit(data)
    fit = sel.coreset_.linear_fit
    assert len(sel.selected_) <= 6
    ref = Lasso(alpha=fit.alpha, max_iter=100000, tol=1e-10).fit(data.values,
                                                                     data.summary_scores())
    np.testing.assert_array_equal(sel.selected_, np.flatnonzero(ref.coef_))
    np.testing.assert_allclose(fit.coef, ref.coef_[sel.selected_], atol=1e-5)
    pred = LassoPredictor().fit(data, sel.coreset_)
    out = pred.predict(data.values[:, sel.selected_])
    np.testing.assert_allclose(out.mean, ref.predict(data.values), atol=1e-5)
    assert out.interval == "jackknife+" and np.all(out.lower <= out.upper)


def test_ridge_loo_batch_matches_ridgecv(rng):
    data = binary_matrix(rng, 30, 40)
    y = data.summary_scores()
    subsets = [rng.choice(40, 8, replace=False) for _ in range(6)]
    x_tr = np.stack([data.values[:22][:, s] for s in subsets])
    x_ev = np.stack([data.values[22:][:, s] for s in subsets])
    pred, chosen = ridge_loo_batch(x_tr, y[:22], x_ev, BINARY_GRID)
    for b, s in enumerate(subsets):
        ref = RidgeCV(alphas=BINARY_GRID).fit(data.values[:22][:, s], y[:22])
        assert chosen[b] == ref.alpha_
        np.testing.assert_allclose(pred[b], ref.predict(data.values[22:][:, s]), atol=1e-10)


def test_kernel_ridge_loo_batch_matches_gridsearch(rng):
    data = continuous_matrix(rng, 25, 12)
    y = data.summary_scores()
    subsets = [rng.choice(12, 5, replace=False) for _ in range(3)]
    x_tr = np.stack([data.values[:18][:, s] for s in subsets])
    x_ev = np.stack([data.values[18:][:, s] for s in subsets])
    pred, chosen = kernel_ridge_loo_batch(x_tr, y[:18], x_ev, CONT_GRID)
    for b, s in enumerate(subsets):
        ref = GridSearchCV(KernelRidge(kernel="poly", degree=2, coef0=1), {"alpha": CONT_GRID},
                           cv=LeaveOneOut(), scoring="neg_mean_squared_error")
        ref.fit(data.values[:18][:, s], y[:18])
        assert chosen[b] == ref.best_params_["alpha"]
        np.testing.assert_allclose(pred[b], ref.predict(data.values[18:][:, s]), atol=1e-8)


def test_random_search_matches_plain_loop(rng):
    data = binary_matrix(rng, 30, 40)
    x, y = data.values, data.summary_scores()
    rs = np.random.RandomState(11)
    order = rs.permutation(30)
    tr, va = order[:22], order[22:]
    best, best_mae = None, np.inf
    for _ in range(25):
        s = rs.permutation(40)[:6]
        m = RidgeCV(alphas=BINARY_GRID).fit(x[tr][:, s], y[tr])
        mae = np.abs(m.predict(x[va][:, s]) - y[va]).mean()
        if mae < best_mae:
            best, best_mae = s, mae
    sel = RandomSearchSelector(k=6, n_search=25, seed=11, batch_size=7).fit(data)
    np.testing.assert_array_equal(sel.selected_, best)
    assert sel.coreset_.details["best_mae"] == pytest.approx(best_mae)
    # a batch size below 1 used to score no candidate and pick from uninitialised memory
    for bad in (0, -3, 2.5):
        with pytest.raises(ValidationError, match="batch_size must be a positive integer"):
            RandomSearchSelector(k=6, n_search=25, seed=11, batch_size=bad).fit(data)


# ----------------------------------------------------------------- predictors
def test_ridge_predictor_matches_ridgecv_and_jackknife(rng):
    data = binary_matrix(rng, 30, 50)
    coreset = Coreset.from_indices(data, [3, 7, 11, 19, 23, 31])
    x, y = data.values[:, coreset.indices], data.summary_scores()
    pred = RidgePredictor().fit(data, coreset)
    ref = RidgeCV(alphas=BINARY_GRID).fit(x, y)
    assert pred.alpha_ == ref.alpha_
    new = binary_matrix(rng, 10, 50).values[:, coreset.indices]
    out = pred.predict(new)
    np.testing.assert_allclose(out.mean, np.clip(ref.predict(new), 0, 1))
    loo = [Ridge(alpha=ref.alpha_).fit(np.delete(x, i, 0), np.delete(y, i)) for i in range(30)]
    resid = [abs(y[i] - m.predict(x[i:i + 1])[0]) for i, m in enumerate(loo)]
    mu = np.column_stack([m.predict(new) for m in loo])
    lo, hi = jackknife_plus_interval(mu, resid, 0.9)
    np.testing.assert_allclose(out.lower, np.clip(lo, 0, 1))
    np.testing.assert_allclose(out.upper, np.clip(hi, 0, 1))
    assert out.interval == "jackknife+" and out.level == 0.9


def test_ridge_default_grid_depends_on_kind(rng):
    data = continuous_matrix(rng)
    coreset = Coreset.from_indices(data, [0, 1, 2])
    pred = RidgePredictor(interval="none").fit(data, coreset)
    ref = RidgeCV(alphas=CONT_GRID).fit(data.values[:, :3], data.summary_scores())
    assert pred.alpha_ == ref.alpha_
    out = pred.predict(data.values[:5, :3])
    np.testing.assert_allclose(out.mean, ref.predict(data.values[:5, :3]))  # no clipping
    assert out.interval == "none"


@pytest.mark.parametrize("degree", [2, 3])
def test_kernel_ridge_predictor_matches_gridsearch(rng, degree):
    """λ by closed-form leave-one-out is GridSearchCV's choice, over coresets of many sizes."""
    data = binary_matrix(rng, 30, 40)
    chosen = set()
    for size in (2, 5, 9, 15, 25):
        coreset = Coreset.from_indices(data, rng.choice(40, size, replace=False))
        x, y = data.values[:, coreset.indices], data.summary_scores()
        pred = KernelRidgePredictor(degree=degree, interval="none").fit(data, coreset)
        ref = GridSearchCV(KernelRidge(kernel="poly", degree=degree, coef0=1),
                           {"alpha": BINARY_GRID}, cv=LeaveOneOut(),
                           scoring="neg_mean_squared_error").fit(x, y)
        assert pred.alpha_ == ref.best_params_["alpha"], size
        np.testing.assert_allclose(pred.predict(x).mean, np.clip(ref.predict(x), 0, 1))
        chosen.add(pred.alpha_)
    assert len(chosen) >= 2  # the comparison saw more than one λ chosen


def test_kernel_ridge_jackknife_matches_refits(rng):
    data = continuous_matrix(rng, 25, 10)
    coreset = Coreset.from_indices(data, [0, 3, 6])
    x, y = data.values[:, coreset.indices], data.summary_scores()
    pred = KernelRidgePredictor(level=0.8).fit(data, coreset)
    new = continuous_matrix(rng, 6, 10).values[:, coreset.indices]
    out = pred.predict(new)
    loo = [KernelRidge(alpha=pred.alpha_, kernel="poly", degree=2, coef0=1)
           .fit(np.delete(x, i, 0), np.delete(y, i)) for i in range(25)]
    resid = [abs(y[i] - m.predict(x[i:i + 1])[0]) for i, m in enumerate(loo)]
    lo, hi = jackknife_plus_interval(np.column_stack([m.predict(new) for m in loo]), resid, 0.8)
    np.testing.assert_allclose(out.lower, lo, atol=1e-8)
    np.testing.assert_allclose(out.upper, hi, atol=1e-8)
    np.testing.assert_allclose(pred.loo_residuals_, resid, atol=1e-8)


def test_mean_predictor_plain_and_weighted(rng):
    data = binary_matrix(rng, 30, 20)
    plain = Coreset.from_indices(data, [1, 2, 3, 4])
    out = MeanPredictor().fit(data, plain).predict(data.values[:, [1, 2, 3, 4]])
    np.testing.assert_allclose(out.mean, data.values[:, [1, 2, 3, 4]].mean(axis=1))
    w = np.array([0.1, 0.2, 0.3, 0.4])
    weighted = Coreset.from_indices(data, [1, 2, 3, 4], weights=w)
    pred = MeanPredictor(level=0.8).fit(data, weighted)
    out = pred.predict(data.values[:, [1, 2, 3, 4]])
    np.testing.assert_allclose(out.mean, data.values[:, [1, 2, 3, 4]] @ w)
    np.testing.assert_allclose(pred.residuals_, data.summary_scores() - out.mean)
    assert out.interval == "split-conformal" and out.level == 0.8
    assert np.all((out.lower >= 0) & (out.upper <= 1))


# --------------------------------------------------------------------- errors
def test_k_larger_than_pool(rng):
    data = binary_matrix(rng, 10, 8)
    for sel in (RandomSelector(k=9), AnchorPointsSelector(k=9), LassoSelector(k=9),
                RandomSearchSelector(k=9, n_search=2)):
        with pytest.raises(ValidationError, match="larger than the pool"):
            sel.fit(data)


def test_nan_responses_rejected(rng):
    data = binary_matrix(rng, 20, 10)
    coreset = Coreset.from_indices(data, [0, 1, 2])
    for pred in (MeanPredictor(), RidgePredictor()):
        pred.fit(data, coreset)
        with pytest.raises(ValidationError, match="NaN"):
            pred.predict([[1.0, np.nan, 0.0]])


@pytest.mark.parametrize("alphas", [[], [0.0], [-1.0, 1.0], [np.nan], "abc"])
def test_bad_penalty_grids_are_named(alphas, rng):
    data = binary_matrix(rng, 20, 10)
    coreset = Coreset.from_indices(data, [0, 1, 2])
    for pred in (RidgePredictor(alphas=alphas), KernelRidgePredictor(alphas=alphas)):
        with pytest.raises(ValidationError, match="alphas"):
            pred.fit(data, coreset)


def test_too_few_source_models(rng):
    data = ScoreMatrix(np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]]))
    coreset = Coreset.from_indices(data, [0, 1])
    with pytest.raises(ValidationError, match="at least 3 source models"):
        RidgePredictor().fit(data, coreset)
    with pytest.raises(ValidationError, match="at least 4 source models"):
        RandomSearchSelector(k=1, n_search=2).fit(data)


def test_missing_source_scores_rejected(rng):
    values = binary_matrix(rng, 20, 10).values.copy()
    values[3, 1] = np.nan
    data = ScoreMatrix(values)
    with pytest.raises(ValidationError, match="missing"):
        RidgePredictor().fit(data, Coreset.from_indices(data, [0, 1]))
    with pytest.raises(ValidationError, match="fully observed"):
        AnchorPointsSelector(k=2).fit(data)


def test_lasso_predictor_needs_lasso_coreset(rng):
    data = binary_matrix(rng, 20, 10)
    with pytest.raises(ValidationError, match="LassoSelector"):
        LassoPredictor().fit(data, Coreset.from_indices(data, [0, 1]))


def test_bad_interval_kind(rng):
    data = binary_matrix(rng, 20, 10)
    with pytest.raises(ValidationError, match="interval"):
        RidgePredictor(interval="bootstrap").fit(data, Coreset.from_indices(data, [0, 1]))


# ------------------------------------------------------------------- registry
def test_registry_names_and_unknown():
    for name in ("random", "random+", "random++", "anchor-points", "anchor-points+",
                 "anchor-points++", "lasso", "search+", "search++"):
        assert name in coreval.available_methods()
    method = coreval.get_method("random++")
    sel = method.make_selector(k=3, seed=1)
    assert isinstance(sel, RandomSelector) and sel.seed == 1
    assert isinstance(method.make_predictor(seed=1), KernelRidgePredictor)
    assert isinstance(coreval.get_method("anchor-points").make_predictor(), MeanPredictor)
    assert isinstance(coreval.get_method("search++").make_selector(k=3).kernel, bool)
    assert coreval.get_method("search++").make_selector(k=3).kernel is True
    with pytest.raises(UnknownMethodError, match="random\\+\\+"):
        coreval.get_method("no-such-method")


def test_method_end_to_end_deterministic(rng):
    data = binary_matrix(rng, 40, 60)
    source, target = data.take(np.arange(30)), data.take(np.arange(30, 40))
    outs = []
    for _ in range(2):
        method = coreval.get_method("anchor-points+")
        sel = method.make_selector(k=6, seed=2).fit(source)
        pred = method.make_predictor(seed=2).fit(source, sel.coreset_)
        outs.append(pred.predict(target.values[:, sel.selected_]).mean)
    np.testing.assert_array_equal(outs[0], outs[1])
    assert np.all((outs[0] >= 0) & (outs[0] <= 1))
