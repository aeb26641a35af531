"""Covariance estimation for benchmark-level selection (standardisation, PSD, EM, shrinkage)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import ConvergenceWarning

from coreval.errors import ValidationError
from coreval.gaussian.correlation import estimate_correlation, protocol_em_options
from coreval.gaussian.covariance import (
    auto_shrinkage,
    pairwise_covariance,
    project_psd,
    shrink,
)
from coreval.gaussian.em import em_covariance
from coreval.gaussian.standardize import apply_transform, fit_standardization
from reference_em import em_covariance_per_row  # tests/reference_em.py, not in the package


def _random_cov(rng: np.random.Generator, n: int) -> np.ndarray:
    a = rng.normal(size=(n, n))
    return a @ a.T / n + 0.2 * np.eye(n)


def _mask(rng: np.random.Generator, shape: tuple[int, int], missing: float) -> np.ndarray:
    obs = rng.random(shape) >= missing
    obs[np.arange(shape[0]), rng.integers(0, shape[1], shape[0])] = True  # >= 1 per row
    return obs


def test_standardization_matches_numpy_and_floor(rng):
    x = rng.normal(3.0, 2.0, size=(40, 5))
    x[rng.random(x.shape) < 0.3] = np.nan
    x[:, 4] = 7.0  # constant column -> floored std 0.01 * (|7| + 1)
    st = fit_standardization(x)
    np.testing.assert_allclose(st.mean, np.nanmean(x, axis=0))
    np.testing.assert_allclose(st.std[:4], np.nanstd(x[:, :4], axis=0, ddof=1))
    assert st.std[4] == pytest.approx(0.08)
    np.testing.assert_allclose(st.inverse(st.forward(x)), x)


def test_pairwise_covariance_complete_data_is_sample_covariance(rng):
    x = rng.normal(size=(30, 4))
    np.testing.assert_allclose(pairwise_covariance(x, np.ones_like(x, bool)), np.cov(x.T))


def test_project_psd_floors_eigenvalues(rng):
    s = rng.normal(size=(6, 6))
    s = s + s.T
    p = project_psd(s, eps=1e-3)
    assert np.linalg.eigvalsh(p).min() >= 1e-3 - 1e-12
    pd_mat = _random_cov(rng, 5)
    np.testing.assert_allclose(project_psd(pd_mat, 1e-9), pd_mat, atol=1e-12)


def test_shrinkage_rule():
    assert auto_shrinkage(106, 114) == pytest.approx(8 / 114)
    assert auto_shrinkage(200, 114) == 0.0
    s = np.diag([1.0, 3.0])
    np.testing.assert_allclose(shrink(s, 0.5), [[1.5, 0.0], [0.0, 2.5]])


@pytest.mark.parametrize("missing, bound", [(0.3, 0.06), (0.7, 0.2)])
def test_em_recovers_known_covariance(missing, bound):
    rng = np.random.default_rng(7)
    n, m = 5, 4000
    cov = _random_cov(rng, n)
    x = rng.multivariate_normal(np.zeros(n), cov, size=m)
    obs = _mask(rng, x.shape, missing)
    res = em_covariance(np.where(obs, x, np.nan), max_iter=500, tol=1e-6, eps=1e-9)
    err = np.linalg.norm(res.covariance - cov) / np.linalg.norm(cov)
    assert res.converged
    assert err < bound
    # EM beats the pairwise-complete starting point
    pw = pairwise_covariance(np.where(obs, x, 0.0), obs)
    assert err <= np.linalg.norm(pw - cov) / np.linalg.norm(cov) + 1e-3


def test_grouped_em_equals_direct_per_row_em():
    rng = np.random.default_rng(3)
    n, m = 6, 40
    x = rng.multivariate_normal(np.zeros(n), _random_cov(rng, n), size=m)
    obs = rng.random(x.shape) > 0.4
    obs[0] = True  # a complete row
    obs[1] = False  # an empty row
    obs[2:10] = obs[2]  # a repeated pattern
    z = np.where(obs, x, np.nan)
    for kwargs in ({"eps": 1e-6, "shrinkage": 0.0}, {"eps": 1e-3, "shrinkage": 0.2}):
        ours = em_covariance(z, max_iter=25, tol=1e-5, warn=False, **kwargs)
        ref = em_covariance_per_row(z, max_iter=25, tol=1e-5, **kwargs)
        assert ours.n_iter == ref.n_iter
        np.testing.assert_allclose(ours.covariance, ref.covariance, rtol=1e-9, atol=1e-11)
        np.testing.assert_allclose(ours.mean, ref.mean, atol=1e-10)
        # ours[t] is the log-likelihood at the parameters entering iteration t + 1
        np.testing.assert_allclose(ours.loglik, ref.loglik[: len(ours.loglik)], rtol=1e-9)


def test_em_loglik_is_monotone_without_active_constraints():
    rng = np.random.default_rng(11)
    n = 6
    x = rng.multivariate_normal(np.zeros(n), _random_cov(rng, n), size=300)
    z = np.where(_mask(rng, x.shape, 0.4), x, np.nan)
    res = em_covariance(z, max_iter=30, tol=1e-12, eps=1e-12, warn=False)
    assert np.all(np.diff(res.loglik) >= -1e-8)


def test_em_warns_on_non_convergence_with_last_change(rng):
    x = rng.normal(size=(30, 4))
    x[rng.random(x.shape) < 0.4] = np.nan
    x[np.isnan(x).all(axis=1), 0] = 0.0
    with pytest.warns(ConvergenceWarning, match="last relative change"):
        res = em_covariance(x, max_iter=2, tol=1e-12)
    assert not res.converged and res.n_iter == 2 and res.last_change > 0


def test_estimate_correlation_drops_single_observation_column(rng):
    x = rng.normal(size=(20, 4))
    x[1:, 2] = np.nan
    with pytest.warns(UserWarning, match="bench_c"):
        est = estimate_correlation(x, names=np.array(["a", "b", "bench_c", "d"]))
    assert list(est.columns) == [0, 1, 3] and list(est.dropped) == [2]
    np.testing.assert_allclose(np.diag(est.correlation), 1.0)
    assert est.estimator == "pairwise"  # the kept columns are complete
    kept = estimate_correlation(x, min_observed=1)
    assert len(kept.columns) == 4


def test_estimate_correlation_validates_input(rng):
    with pytest.raises(ValidationError, match="2-D"):
        estimate_correlation(np.ones(5))
    bad = rng.normal(size=(5, 3))
    bad[0, 0] = np.inf
    with pytest.raises(ValidationError, match="inf"):
        estimate_correlation(bad)
    with pytest.raises(ValidationError, match="non-negative"):
        apply_transform(np.array([[0.5, -1.5]]), "logit")
    # a NaN tolerance used to pass the check and run every iteration; a float count is refused
    with pytest.raises(ValidationError, match="tol > 0"):
        em_covariance(rng.normal(size=(10, 3)), tol=np.nan)
    with pytest.raises(ValidationError, match="max_iter must be a non-negative integer"):
        em_covariance(rng.normal(size=(10, 3)), max_iter=2.5)


def test_pairwise_path_on_complete_data_is_sample_correlation(rng):
    x = rng.normal(size=(50, 4)) @ rng.normal(size=(4, 4))
    est = estimate_correlation(x)
    assert est.estimator == "pairwise"
    np.testing.assert_allclose(est.correlation, np.corrcoef(x.T), atol=1e-5)


def test_protocol_em_options_per_dataset():
    # PROTOCOL.md section 4 and 8
    assert protocol_em_options(237, 56, 0.77) == {"max_iter": 500, "eps": 1e-6,
                                                  "shrinkage": 0.0}
    assert protocol_em_options(106, 114, 0.31) == {"max_iter": 1000, "eps": 1e-3,
                                                   "shrinkage": "auto"}
    assert protocol_em_options(75, 49, 0.34) == {"max_iter": 1000, "eps": 1e-3,
                                                 "shrinkage": 0.0}
    assert protocol_em_options(75, 49, 0.34, "prev") == {"max_iter": 500, "eps": 1e-6,
                                                         "shrinkage": 0.0}


@pytest.mark.shared
def test_em_iterations_match_reference_on_mteb(load_shared, anchors_dir):
    """Fold 0 of MTEB: the peer's EM stopped after 51 iterations (timings.csv)."""
    matrix = load_shared("mteb")
    m = matrix.n_models
    folds = np.array_split(np.random.default_rng(42).permutation(m), 10)
    train = np.concatenate(folds[1:])
    est = estimate_correlation(matrix.values[train], min_observed=1)
    ref = pd.read_csv(anchors_dir / "benchmark_selection" / "timings.csv")
    ref_iters = json.loads(ref.set_index("dataset").loc["mteb", "em_iters"])
    assert est.em.n_iter == ref_iters[0]


def test_logit_transform_is_the_references_max_normalised_variant():
    # eval_logit.py: f = logit(clip(s / max_j, 1e-3, 1 - 1e-3)), max over the source column
    col = np.array([[0.0], [0.25], [0.5]])
    std = fit_standardization(col, transform="logit")
    np.testing.assert_allclose(std.upper, [0.5])
    f = np.log(999.0)
    np.testing.assert_allclose(apply_transform(col, "logit", std.upper).ravel(), [-f, 0.0, f])
    # any non-negative scale; the inverse undoes the transform where nothing was clipped
    scores = np.array([[12.0, 80.0], [40.0, 55.5], [71.0, 3.0], [np.nan, 20.0]])
    std = fit_standardization(scores, transform="logit")
    np.testing.assert_allclose(std.upper, [71.0, 80.0])
    back = std.inverse(std.forward(scores))
    inside = np.isfinite(scores) & (scores < std.upper)
    np.testing.assert_allclose(back[inside], scores[inside])
    # a target column is normalised by the source's maximum, not its own
    np.testing.assert_allclose(std.forward(np.array([[35.5, 40.0]])),
                               (np.zeros((1, 2)) - std.mean) / std.std, atol=1e-12)


def test_an_unknown_release_is_refused_on_every_path(rng):
    x = rng.normal(size=(30, 3))
    for estimator in ("pairwise", "em"):
        with pytest.raises(ValidationError, match="release must be 'head' or 'prev'"):
            estimate_correlation(x, estimator=estimator, release="bogus")
