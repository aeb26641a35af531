"""Mutual-information estimators: closed forms, scikit-learn, and the Ross formula by KD-tree."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, stats
from scipy.spatial import cKDTree
from scipy.special import digamma
from sklearn.metrics import mutual_info_score

from coreval.errors import ValidationError
from coreval.selection.mutual_info import (
    binary_mi,
    ksg_mi,
    lnc_mi,
    mutual_info,
    ross_mi,
)


def _sklearn_private(name: str):
    # The noise-free cores of mutual_info_classif / mutual_info_regression.
    module = pytest.importorskip("sklearn.feature_selection._mutual_info")
    if not hasattr(module, name):
        pytest.skip(f"scikit-learn has no {name}")
    return getattr(module, name)


def _from_table(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Samples (a, b) whose 2×2 contingency table is exactly ``table`` (counts)."""
    a, b = [], []
    for i in range(2):
        for j in range(2):
            a += [i] * int(table[i, j])
            b += [j] * int(table[i, j])
    return np.array(a, float), np.array(b, float)


def _closed_form(table: np.ndarray) -> float:
    p = table / table.sum()
    pa, pb = p.sum(1, keepdims=True), p.sum(0, keepdims=True)
    nz = p > 0
    return float((p[nz] * np.log(p[nz] / (pa @ pb)[nz])).sum())


# ------------------------------------------------------------------ plug-in
@pytest.mark.parametrize("table", [
    [[10, 10], [10, 10]],      # independent: 0
    [[25, 0], [0, 15]],        # identical: entropy of the marginal
    [[12, 3], [5, 20]],
    [[30, 1], [0, 9]],
])
def test_binary_mi_equals_closed_form_of_joint_table(table):
    table = np.array(table, float)
    a, b = _from_table(table)
    expected = _closed_form(table)
    got = binary_mi(a, b)[0]
    assert got == pytest.approx(expected, abs=1e-12)
    if table[0, 1] == table[1, 0] == 0:
        p = table.sum(1) / table.sum()
        assert got == pytest.approx(stats.entropy(p), abs=1e-12)


def test_binary_mi_vectorised_equals_sklearn_mutual_info_score(rng):
    X = (rng.random((50, 200)) < rng.random(200)).astype(float)
    x = X[:, 0] * (rng.random(50) < 0.8)
    expected = [mutual_info_score(X[:, j], x) for j in range(200)]
    np.testing.assert_allclose(binary_mi(X, x), expected, rtol=1e-12, atol=1e-13)


def test_binary_mi_reference_rounding_only_moves_last_digits(rng):
    X = (rng.random((30, 300)) < 0.6).astype(float)
    x = X[:, 5]
    exact = binary_mi(X, x)
    rounded = binary_mi(X, x, reference_rounding=True)
    np.testing.assert_allclose(rounded, exact, rtol=0, atol=1e-6)
    assert not np.array_equal(rounded, exact)  # float32 marginals do change low digits


# --------------------------------------------------------------------- Ross
def _ross_by_kdtree(x: np.ndarray, y: np.ndarray, k: int) -> float:
    """Ross (2014) per sample with SciPy KD-trees, as the mRMR reference code states it."""
    n = len(x)
    y0, y1 = y[x == 0][:, None], y[x == 1][:, None]
    if len(y0) < k + 1 or len(y1) < k + 1:
        return 0.0
    trees = {0: cKDTree(y0), 1: cKDTree(y1)}
    everything = cKDTree(y[:, None])
    m = []
    for i in range(n):
        d, _ = trees[int(x[i])].query([[y[i]]], k=k + 1)
        m.append(everything.query_ball_point([[y[i]]], np.max(d) - 1e-15, return_length=True))
    n0, n1 = len(y0), len(y1)
    value = digamma(n) - (n0 * digamma(n0) + n1 * digamma(n1)) / n + digamma(k)
    return max(0.0, value - np.mean(digamma(np.ravel(m))))


@pytest.mark.parametrize("k", [3, 5])
def test_ross_equals_kdtree_formula_including_distance_ties(rng, k):
    # targets on a float32 grid of counts / N, like mean scores: many distance ties
    n = 40
    X = (rng.random((n, 30)) < rng.random(30)).astype(float)
    y = (rng.integers(0, 25, size=n) / 25).astype(np.float32).astype(float)
    expected = [_ross_by_kdtree(X[:, j], y, k) for j in range(30)]
    np.testing.assert_array_equal(ross_mi(X, y, n_neighbors=k), expected)


def test_ross_equals_sklearn_on_exactly_representable_targets(rng):
    # integer-valued targets keep scikit-learn's brute-force distances exact
    compute_mi_cd = _sklearn_private("_compute_mi_cd")
    n = 60
    X = (rng.random((n, 25)) < 0.5).astype(float)
    y = rng.permutation(1000)[:n].astype(float) + 300 * X[:, 0]
    got = ross_mi(X, y, n_neighbors=5)
    expected = [compute_mi_cd(y, X[:, j].astype(int), 5) for j in range(25)]
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    assert got[0] > 0.1 > np.median(got)  # the informative column


def test_ross_is_zero_when_a_class_is_smaller_than_k_plus_one(rng):
    y = rng.normal(size=30)
    x = np.zeros(30)
    x[:5] = 1  # 5 < k + 1 = 6
    assert ross_mi(x, y + 10 * x, n_neighbors=5)[0] == 0.0
    x[:6] = 1
    assert ross_mi(x, y + 10 * x, n_neighbors=5)[0] > 0.0


def test_ross_recovers_mi_of_a_gaussian_mixture():
    # x ~ Bernoulli(1/2), y | x ~ N(±mu, 1): I = h(y) − h(y | x), h(y | x) = ½ log(2πe)
    mu = 1.0
    rng = np.random.default_rng(7)
    n = 2000
    x = (rng.random(n) < 0.5).astype(float)
    y = rng.normal(size=n) + np.where(x == 1, mu, -mu)

    def density(t):
        return 0.5 * (stats.norm.pdf(t, -mu) + stats.norm.pdf(t, mu))

    h_y = integrate.quad(lambda t: -density(t) * np.log(density(t)), -12, 12)[0]
    truth = h_y - 0.5 * np.log(2 * np.pi * np.e)
    assert ross_mi(x, y, n_neighbors=5)[0] == pytest.approx(truth, abs=0.04)


# ---------------------------------------------------------------- KSG / LNC
def test_ksg_equals_sklearn_compute_mi_cc(rng):
    compute_mi_cc = _sklearn_private("_compute_mi_cc")
    X = rng.normal(size=(80, 15))
    y = X[:, 0] + 0.5 * rng.normal(size=80)
    expected = [compute_mi_cc(X[:, j], y, 5) for j in range(15)]
    np.testing.assert_allclose(ksg_mi(X, y, n_neighbors=5), expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("estimator", [ksg_mi, lnc_mi])
def test_continuous_estimators_match_gaussian_closed_form(estimator):
    rho = 0.8
    z = np.random.default_rng(3).multivariate_normal([0, 0], [[1, rho], [rho, 1]], size=1000)
    truth = -0.5 * np.log(1 - rho**2)
    assert estimator(z[:, 0], z[:, 1])[0] == pytest.approx(truth, abs=0.06)
    independent = np.random.default_rng(4).normal(size=(1000, 2))
    assert estimator(independent[:, 0], independent[:, 1])[0] < 0.03


def test_lnc_corrects_ksg_for_strongly_dependent_gaussians():
    # Gao et al. 2015: KSG underestimates strongly dependent pairs; LNC reduces the bias
    rho = 0.9999
    truth = -0.5 * np.log(1 - rho**2)
    ksg_err, lnc_err = [], []
    for seed in range(4):
        z = np.random.default_rng(seed).multivariate_normal([0, 0], [[1, rho], [rho, 1]], 200)
        ksg_err.append(truth - ksg_mi(z[:, 0], z[:, 1])[0])
        lnc_err.append(truth - lnc_mi(z[:, 0], z[:, 1])[0])
    assert np.mean(ksg_err) > 1.0
    assert abs(np.mean(lnc_err)) < 0.7 * np.mean(ksg_err)


def test_lnc_is_deterministic_and_vectorised(rng):
    X = rng.normal(size=(40, 6))
    y = X[:, 1] + rng.normal(size=40)
    batch = lnc_mi(X, y, n_neighbors=5)
    single = [lnc_mi(X[:, j], y, n_neighbors=5)[0] for j in range(6)]
    np.testing.assert_array_equal(batch, single)
    np.testing.assert_array_equal(batch, lnc_mi(X, y, n_neighbors=5))


# ------------------------------------------------------------- dispatching
def test_mutual_info_picks_estimator_by_data_type(rng):
    Xb = (rng.random((40, 5)) < 0.5).astype(float)
    yb = Xb[:, 0]
    yc = rng.normal(size=40) + Xb[:, 1]
    Xc = rng.normal(size=(40, 3))
    np.testing.assert_array_equal(mutual_info(Xb, yb), binary_mi(Xb, yb))
    np.testing.assert_array_equal(mutual_info(Xb, yc), ross_mi(Xb, yc, n_neighbors=5))
    np.testing.assert_array_equal(mutual_info(Xc, yc), lnc_mi(Xc, yc, n_neighbors=8))
    np.testing.assert_array_equal(mutual_info(Xc, yc, continuous="ksg"),
                                  ksg_mi(Xc, yc, n_neighbors=8))
    np.testing.assert_array_equal(mutual_info(Xc[:, :1], yb), ross_mi(yb, Xc[:, 0]))


@pytest.mark.parametrize("call, message", [
    (lambda: binary_mi(np.array([[0, 2], [1, 0]]), np.array([0, 1])), "binary"),
    (lambda: ross_mi(np.ones((5, 2)), np.array([0.1, np.nan, 0.3, 0.4, 0.5])), "NaN"),
    (lambda: ross_mi(np.ones((5, 2)), np.arange(4.0)), "samples"),
    (lambda: ksg_mi(np.ones((5, 2)), np.arange(5.0), n_neighbors=5), "n_neighbors"),
    (lambda: lnc_mi(np.ones((9, 2)), np.arange(9.0), alpha=1.5), "alpha"),
    (lambda: mutual_info(np.ones((5, 2)) * 0.5, np.arange(5.0), continuous="x"), "continuous"),
])
def test_bad_input_raises_one_line_validation_error(call, message):
    with pytest.raises(ValidationError, match=message) as info:
        call()
    assert "\n" not in str(info.value)


def test_binary_mi_lookup_path_equals_direct_formula(rng):
    # more columns than (n + 1)^2 count pairs: values come from a per-count table
    from coreval.selection.mutual_info import PluginMI

    X = (rng.random((12, 400)) < rng.random(400)).astype(float)
    x = X[:, 3]
    for rounding in (False, True):
        lookup = PluginMI(X, reference_rounding=rounding)
        direct = np.concatenate([PluginMI(X[:, s], reference_rounding=rounding)(x)
                                 for s in np.array_split(np.arange(400), 4)])
        assert lookup._lookup and not PluginMI(X[:, :100])._lookup
        np.testing.assert_array_equal(lookup(x), direct)
        np.testing.assert_array_equal(lookup.column(3), direct)
