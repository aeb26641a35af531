"""Gaussian selectors + conditional imputation: closed forms, coverage, registry, reference."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

from coreval.base import Coreset, FitCache
from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError
from coreval.methods import get_method
from coreval.prediction.gaussian_imputer import GaussianImputer
from coreval.selection.gaussian_selector import (
    GaussianEntropySelector,
    GaussianMISelector,
    GaussianRandomSelector,
    GaussianVarianceSelector,
)


def _gaussian_matrix(rng: np.random.Generator, m: int, n: int) -> tuple[ScoreMatrix, np.ndarray]:
    a = rng.normal(size=(n, 3))
    cov = a @ a.T + 0.3 * np.eye(n)
    mean = rng.uniform(20, 80, n)
    x = rng.multivariate_normal(mean, cov, size=m)
    return ScoreMatrix(x, level="benchmark", name="sim"), cov


def test_conditional_mean_and_interval_closed_form(rng):
    source, _ = _gaussian_matrix(rng, 400, 6)
    selector = GaussianMISelector(2).fit(source)
    imp = GaussianImputer(ridge=0.0, clip=None).fit(source, selector.coreset_)
    target = rng.normal(50, 5, size=(3, 6))
    sel = selector.selected_
    pred = imp.predict(target[:, sel])
    # closed form in standardised space with the estimated correlation
    est = imp.estimate_
    r, mu, sd = est.correlation, est.standardization.mean, est.standardization.std
    z_a = (target[:, sel] - mu[sel]) / sd[sel]
    rest = np.setdiff1d(np.arange(6), sel)
    w = r[np.ix_(rest, sel)] @ np.linalg.inv(r[np.ix_(sel, sel)])
    expect = mu[rest] + sd[rest] * (z_a @ w.T)
    np.testing.assert_allclose(pred.mean[:, rest], expect, rtol=1e-10)
    cond_sd = np.sqrt(1 - np.sum(w * r[np.ix_(rest, sel)], axis=1))
    np.testing.assert_allclose(pred.upper[:, rest] - pred.mean[:, rest],
                               np.broadcast_to(norm.ppf(0.95) * sd[rest] * cond_sd, (3, 4)),
                               rtol=1e-8)
    np.testing.assert_array_equal(pred.mean[:, sel], target[:, sel])
    assert pred.interval == "gaussian-conditional" and pred.mean.shape == (3, 6)
    assert list(pred.columns) == list(source.items)


def test_intervals_cover_90_percent_on_gaussian_data():
    rng = np.random.default_rng(5)
    data, _ = _gaussian_matrix(rng, 3000, 8)
    source, target = data.take(np.arange(1000)), data.take(np.arange(1000, 3000))
    sel = GaussianEntropySelector(3).fit(source)
    imp = GaussianImputer(ridge=0.0).fit(source, sel.coreset_)
    pred = imp.predict(target.values[:, sel.selected_])
    rest = np.setdiff1d(np.arange(8), sel.selected_)
    y = target.values[:, rest]
    cover = ((y >= pred.lower[:, rest]) & (y <= pred.upper[:, rest])).mean()
    assert abs(cover - 0.9) < 0.02  # 10000 cells: binomial sd 0.003, plus estimation error


def test_missing_selected_responses(rng):
    source, _ = _gaussian_matrix(rng, 200, 5)
    coreset = Coreset.from_indices(source, [0, 3])
    imp = GaussianImputer().fit(source, coreset)
    x = np.array([[50.0, np.nan], [np.nan, np.nan], [np.nan, 40.0]])
    pred = imp.predict(x)
    assert np.isnan(pred.mean[1]).all()  # none of the selected benchmarks: skipped
    assert pred.mean[0, 0] == 50.0 and np.isfinite(pred.mean[0, 3])  # 3 is imputed
    assert pred.lower[0, 3] < pred.mean[0, 3] < pred.upper[0, 3]
    assert pred.mean[2, 3] == 40.0 and np.isfinite(pred.mean[2, 0])


def test_estimate_is_shared_between_selector_and_imputer(rng):
    source, _ = _gaussian_matrix(rng, 100, 6)
    values = source.values.copy()
    values[rng.random(values.shape) < 0.3] = np.nan
    source = ScoreMatrix(values, level="benchmark")
    cache = FitCache()
    sel = GaussianMISelector(3).fit(source, cache=cache)
    imp = GaussianImputer().fit(source, sel.coreset_, cache=cache)
    assert cache.misses == 1 and cache.hits == 1  # one EM run, shared
    assert sel.coreset_.details["em_iter"] >= 2
    alone = GaussianImputer().fit(source, sel.coreset_)  # no cache: its own, equal estimate
    assert alone.estimate_ is not imp.estimate_
    np.testing.assert_array_equal(alone.estimate_.correlation, imp.estimate_.correlation)
    other = GaussianImputer(unit_diagonal=True).fit(source, sel.coreset_, cache=cache)
    assert cache.misses == 2 and other.estimate_ is not imp.estimate_  # other options: new fit


def test_logit_transform_keeps_predictions_in_unit_interval(rng):
    source, _ = _gaussian_matrix(rng, 150, 5)
    probs = 1 / (1 + np.exp(-(source.values - 50) / 10))
    src = ScoreMatrix(probs, level="benchmark")
    sel = GaussianMISelector(2, transform="logit").fit(src)
    imp = GaussianImputer(transform="logit").fit(src, sel.coreset_)
    pred = imp.predict(probs[:5, sel.selected_])
    assert ((pred.lower > 0) & (pred.upper < 1)).all()
    assert (pred.lower <= pred.mean).all() and (pred.mean <= pred.upper).all()


def test_selector_options_and_errors(rng):
    source, _ = _gaussian_matrix(rng, 100, 6)
    ids = list(source.items)
    sel = GaussianEntropySelector(3, mandatory=[ids[4]]).fit(source)
    assert sel.selected_[0] == 4
    costs = {c: 1.0 for c in ids}
    assert len(GaussianMISelector(6, costs=costs, budget=2.0).fit(source).selected_) <= 2
    with pytest.raises(ValidationError, match="lack"):
        GaussianMISelector(2, costs={ids[0]: 1.0}, budget=1.0).fit(source)
    with pytest.raises(ValidationError, match="k=7"):
        GaussianMISelector(7).fit(source)
    with pytest.raises(ValidationError, match="responses have shape"):
        GaussianImputer().fit(source, sel.coreset_).predict(np.ones((2, 5)))


def test_random_selector_reproduces_protocol_seed():
    source = ScoreMatrix(np.random.default_rng(0).normal(size=(10, 30)), level="benchmark")
    for fold in (0, 3):
        got = GaussianRandomSelector(7, seed=fold).fit(source).selected_
        expect = np.random.default_rng((49, fold, 1000)).permutation(30)[:7]
        np.testing.assert_array_equal(got, expect)
    with pytest.raises(ValidationError, match="holdout must be a fraction"):
        GaussianRandomSelector(7, holdout=-0.1).fit(source)


def test_registry_methods():
    for name, cls in (("gauss-entropy", GaussianEntropySelector),
                      ("gauss-mi", GaussianMISelector), ("gauss-random", GaussianRandomSelector),
                      ("gauss-variance", GaussianVarianceSelector)):
        method = get_method(name)
        assert method.task == "impute"
        assert isinstance(method.make_selector(4, seed=2, release="prev"), cls)
        pred = method.make_predictor(seed=0, release="prev", ridge=0.02)
        assert isinstance(pred, GaussianImputer) and pred.release == "prev" and pred.ridge == 0.02


@pytest.mark.shared
def test_mteb_fold0_r2_matches_reference(load_shared, anchors_dir):
    """Protocol section 6 on MTEB fold 0, k = 5: MI and random R² equal the peer's."""
    matrix = load_shared("mteb")
    m = matrix.n_models
    folds = np.array_split(np.random.default_rng(42).permutation(m), 10)
    train, test = matrix.take(np.concatenate(folds[1:])), matrix.take(folds[0])
    ref = pd.read_csv(anchors_dir / "benchmark_selection" / "results_per_fold.csv")
    for selector in (GaussianMISelector(5, min_observed=1), GaussianRandomSelector(5, seed=0)):
        selector.fit(train)
        imp = GaussianImputer(min_observed=1).fit(train, selector.coreset_)
        pred = imp.predict(test.values[:, selector.selected_])
        truth = np.clip((test.values - imp.mean_) / imp.scale_, -10, 10)
        pz = (pred.mean - imp.mean_) / imp.scale_
        cells = ~np.isnan(test.values) & ~np.isnan(pz)
        cells[:, selector.selected_] = False
        r2 = 1 - ((truth - pz)[cells] ** 2).sum() / (truth[cells] ** 2).sum()
        method = "mi" if isinstance(selector, GaussianMISelector) else "random"
        row = ref[(ref.dataset == "mteb") & (ref.method == method) & (ref.k == 5)
                  & (ref.fold == 0)]
        assert r2 == pytest.approx(float(row.r2.iloc[0]), abs=1e-4)


def test_variance_selector_weighs_how_many_models_report_a_benchmark():
    """The best predictor, reported by 3 of 80 models, is first on a full matrix only."""
    rng = np.random.default_rng(3)
    factor = rng.normal(size=(80, 1))
    loading = np.full(8, 0.7)
    loading[0] = 0.99
    values = factor * loading + rng.normal(size=(80, 8)) * np.sqrt(1 - loading**2)
    names = dict(models=[f"m{i}" for i in range(80)], items=[f"b{j}" for j in range(8)])
    full = GaussianVarianceSelector(1).fit(ScoreMatrix(values, **names)).selected_
    assert list(full) == [0]
    sparse = values.copy()
    sparse[3:, 0] = np.nan
    picked = GaussianVarianceSelector(1).fit(ScoreMatrix(sparse, **names)).selected_
    assert list(picked) != [0]


def test_variance_selector_improves_its_greedy_set_by_exchange(rng):
    """exchange=False is plain greedy; the default swaps to a set that explains at least as
    much of the source correlation (the selector's own criterion)."""
    from coreval.gaussian import estimate_correlation, greedy_variance, residual_variance

    source, _ = _gaussian_matrix(rng, 60, 12)
    plain = GaussianVarianceSelector(4, exchange=False).fit(source)
    swapped = GaussianVarianceSelector(4).fit(source)
    corr = estimate_correlation(source.values).correlation
    np.testing.assert_array_equal(plain.selected_, greedy_variance(corr, 4).selected)
    assert swapped.coreset_.details["rule"] == "exchange"
    assert residual_variance(corr, swapped.selected_, ridge=0.0) <= \
        residual_variance(corr, plain.selected_, ridge=0.0) + 1e-12
    with pytest.raises(ValidationError, match="exchange must be True or False"):
        GaussianVarianceSelector(4, exchange="yes").fit(source)


def test_selector_checks_every_cost_and_reads_mixed_mandatory_lists(rng):
    source, _ = _gaussian_matrix(rng, 100, 6)
    values = source.values.copy()
    values[1:, 5] = np.nan  # column 5 is dropped: observed for one model
    sparse = ScoreMatrix(values, models=source.models, items=source.items, level="benchmark")
    with pytest.warns(UserWarning, match="dropping 1 column"):
        with pytest.raises(ValidationError, match="positive and finite"):
            GaussianMISelector(2, costs=[1, 1, 1, 1, 1, -1], budget=3).fit(sparse)
    ids = list(source.items)
    sel = GaussianEntropySelector(3, mandatory=[ids[4], 2]).fit(source)
    assert list(sel.selected_[:2]) == [4, 2]
    with pytest.raises(ValidationError, match="position 9 is out of range"):
        GaussianEntropySelector(3, mandatory=[9]).fit(source)
