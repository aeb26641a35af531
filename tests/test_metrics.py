"""Metrics against scipy / scikit-learn, closed forms and the benchmark-selection protocol."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import mean_absolute_error, mean_squared_error, r2_score

from coreval.errors import ValidationError
from coreval.harness.metrics import (
    Standardizer,
    coverage,
    impute_metrics,
    interval_score,
    kendall,
    mae,
    mean_width,
    pearson,
    r2,
    rmse,
    score_metrics,
    score_sigma,
    sigma_weighted,
    sigma_weights,
    spearman,
)


@pytest.fixture
def pair(rng):
    y = rng.normal(size=50)
    return y, y + rng.normal(scale=0.5, size=50)


def test_errors_match_sklearn(pair):
    y, p = pair
    assert mae(y, p) == pytest.approx(mean_absolute_error(y, p))
    assert rmse(y, p) == pytest.approx(np.sqrt(mean_squared_error(y, p)))
    assert r2(y, p) == pytest.approx(r2_score(y, p))


def test_correlations_match_scipy(pair):
    y, p = pair
    p = np.round(p, 1)  # ties: kendall must be tau-b
    assert kendall(y, p) == pytest.approx(stats.kendalltau(y, p, variant="b")[0])
    assert spearman(y, p) == pytest.approx(stats.spearmanr(y, p)[0])
    assert pearson(y, p) == pytest.approx(stats.pearsonr(y, p)[0])


def test_nan_pairs_are_dropped(pair):
    y, p = pair
    y2, p2 = y.copy(), p.copy()
    y2[3] = np.nan
    p2[7] = np.nan
    keep = np.ones(len(y), bool)
    keep[[3, 7]] = False
    for fn in (mae, rmse, r2, kendall, spearman, pearson):
        assert fn(y2, p2) == pytest.approx(fn(y[keep], p[keep]))


def test_degenerate_inputs_give_nan_without_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        const = np.ones(5)
        x = np.arange(5.0)
        for fn in (kendall, spearman, pearson):
            assert np.isnan(fn(const, x)) and np.isnan(fn(x, const))
            assert np.isnan(fn([1.0], [2.0]))
        assert np.isnan(r2(const, x))
        nan = np.full(3, np.nan)
        for fn in (mae, rmse, r2):
            assert np.isnan(fn(nan, nan))
        assert np.isnan(coverage(nan, nan, nan)) and np.isnan(mean_width(nan, nan))
        assert np.isnan(interval_score(nan, nan, nan))


def test_shape_mismatch_raises():
    with pytest.raises(ValidationError, match="different shapes"):
        mae(np.zeros(3), np.zeros(4))


def test_coverage_and_width():
    y = np.array([0.0, 1.0, 2.0, 3.0])
    lo = np.array([-1.0, 1.0, 2.5, 0.0])
    hi = np.array([1.0, 2.0, 3.0, 2.0])
    assert coverage(y, lo, hi) == pytest.approx(0.5)  # closed interval: y = lo counts
    assert mean_width(lo, hi) == pytest.approx(np.mean(hi - lo))


def test_unbounded_intervals_cover_and_have_infinite_width():
    """Split conformal with too few calibration points gives (-inf, inf): it covers."""
    from coreval.base.conformal import split_conformal_interval

    lo, hi = split_conformal_interval(np.zeros(5), np.ones(8), 0.9)
    assert np.isinf(lo).all() and np.isinf(hi).all()
    y = np.arange(5.0)
    assert coverage(y, lo, hi) == 1.0
    assert mean_width(lo, hi) == np.inf
    assert interval_score(y, lo, hi) == np.inf
    # half unbounded, half finite and missing: the finite half still counts
    lo2 = np.r_[lo[:3], [10.0, 10.0]]
    hi2 = np.r_[hi[:3], [11.0, 11.0]]
    assert coverage(y, lo2, hi2) == pytest.approx(0.6)
    # NaN bounds mean "no interval" and are dropped
    assert coverage(y, np.r_[np.nan, lo2[1:]], hi2) == pytest.approx(0.5)
    assert np.isnan(coverage(y, np.full(5, np.nan), hi2))


def test_interval_score_closed_form():
    # Gneiting & Raftery (2007) Eq. 43 (negated): width + 2/alpha * distance outside.
    y = np.array([0.5, -1.0, 3.0])
    lo = np.zeros(3)
    hi = np.ones(3)
    alpha = 0.1
    expected = np.mean([1.0, 1.0 + 20.0 * 1.0, 1.0 + 20.0 * 2.0])
    assert interval_score(y, lo, hi, alpha) == pytest.approx(expected)
    with pytest.raises(ValidationError):
        interval_score(y, lo, hi, alpha=1.5)


def test_interval_score_is_minimised_by_true_quantiles(rng):
    # Proper scoring rule: for N(0, 1) data the central 90% interval (±1.645) wins.
    y = rng.normal(size=200_000)
    z = stats.norm.ppf(0.95)

    def score(h):
        return interval_score(y, np.full_like(y, -h), np.full_like(y, h), 0.1)

    assert score(z) < score(0.8 * z) and score(z) < score(1.25 * z)


def test_score_metrics_bundle(pair):
    y, p = pair
    m = score_metrics(y, p, p - 1, p + 1)
    assert m["mae"] == pytest.approx(mae(y, p))
    assert m["coverage"] == pytest.approx(coverage(y, p - 1, p + 1))
    assert m["width"] == pytest.approx(2.0)
    m = score_metrics(y, p)
    assert np.isnan(m["coverage"]) and np.isnan(m["width"])


def test_sigma_weighted_hand_example():
    # w_d ∝ 1/σ_d: σ = (1, 2, 4) -> weights (4, 2, 1)/7
    values = {"a": 1.0, "b": 2.0, "c": 4.0}
    sig = {"a": 1.0, "b": 2.0, "c": 4.0}
    w = sigma_weights(sig)
    assert w == pytest.approx({"a": 4 / 7, "b": 2 / 7, "c": 1 / 7})
    assert sigma_weighted(values, sig) == pytest.approx((4 + 4 + 4) / 7)
    # a NaN value drops its dataset and renormalises
    assert sigma_weighted({**values, "c": np.nan}, sig) == pytest.approx((4 + 4) / 6)
    assert np.isnan(sigma_weighted({"a": np.nan}, sig))
    with pytest.raises(ValidationError, match="no sigma"):
        sigma_weighted({"z": 1.0}, sig)
    with pytest.raises(ValidationError, match="positive"):
        sigma_weighted({"a": 1.0}, {"a": 0.0})
    assert score_sigma([1.0, 3.0, np.nan]) == pytest.approx(1.0)  # population std


# ----------------------------------------------------------------------------- impute task
def _protocol_reference(y_tr, y_te, pred, selected):
    """PROTOCOL.md §3/§6 of benchmark-selection written as loops over models and cells."""
    o_tr = ~np.isnan(y_tr)
    b_tr = np.nan_to_num(y_tr)
    cnt = np.maximum(o_tr.sum(0), 1)
    mean = (b_tr * o_tr).sum(0) / cnt
    var = ((o_tr * (b_tr - mean)) ** 2).sum(0) / np.maximum(cnt - 1, 1)
    std = np.sqrt(np.maximum(var, (0.01 * (np.abs(mean) + 1)) ** 2))
    ss_res = ss_tot = 0.0
    n = skipped = 0
    for i in range(y_te.shape[0]):
        if np.isnan(pred[i]).all():
            skipped += 1
            continue
        for j in range(y_te.shape[1]):
            if j in selected or np.isnan(y_te[i, j]):
                continue
            z = np.clip((y_te[i, j] - mean[j]) / std[j], -10, 10)
            zp = (pred[i, j] - mean[j]) / std[j]
            ss_res += (z - zp) ** 2
            ss_tot += z ** 2
            n += 1
    return 1 - ss_res / max(ss_tot, 1e-12), np.sqrt(ss_res / n), skipped, n


def test_impute_metrics_match_protocol(rng):
    y_tr = rng.normal(loc=[0, 100, -5, 3000], scale=[1, 10, 0.5, 300], size=(40, 4))
    y_tr[rng.random(y_tr.shape) < 0.3] = np.nan
    y_tr[:, 2] = -5.0  # constant column: std floored at 0.01 * (5 + 1)
    y_tr[0, 2] = np.nan
    y_te = rng.normal(loc=[0, 100, -5, 3000], scale=[1, 10, 0.5, 300], size=(12, 4))
    y_te[rng.random(y_te.shape) < 0.3] = np.nan
    y_te[1, 3] = 1e6  # far outside: its z is clipped to +10
    pred = y_te + rng.normal(scale=[0.5, 5, 0.2, 100], size=y_te.shape)
    pred = np.where(np.isnan(pred), np.nanmean(y_tr, 0), pred)
    pred[4] = np.nan  # a model without prediction
    selected = np.array([0])
    m = impute_metrics(y_tr, y_te, pred, pred - 1, pred + 1, selected=selected)
    r2_ref, rmse_ref, skipped, n = _protocol_reference(y_tr, y_te, pred, selected)
    assert m["r2"] == pytest.approx(r2_ref)
    assert m["rmse"] == pytest.approx(rmse_ref)
    assert m["n_skipped"] == skipped == 1
    assert m["n_cells"] == n
    assert 0 <= m["coverage"] <= 1 and m["width"] > 0


def test_standardizer_formula():
    y = np.array([[1.0, 10.0, np.nan], [3.0, 10.0, np.nan], [np.nan, 10.0, 4.0]])
    s = Standardizer.fit(y)
    assert s.mean == pytest.approx([2.0, 10.0, 4.0])
    assert s.std[0] == pytest.approx(np.std([1.0, 3.0], ddof=1))
    assert s.std[1] == pytest.approx(0.01 * 11)  # constant column: the floor
    assert s.std[2] == pytest.approx(0.01 * 5)   # one observation: var 0 -> the floor
    z = s.transform(y)
    assert z[0, 0] == pytest.approx(-1 / np.std([1.0, 3.0], ddof=1))


def test_impute_metrics_no_cells_and_bad_shape():
    y = np.array([[1.0, 2.0], [2.0, 3.0]])
    m = impute_metrics(y, y, np.full((2, 2), np.nan), selected=[0])
    assert m["n_cells"] == 0 and m["n_skipped"] == 2 and np.isnan(m["r2"])
    with pytest.raises(ValidationError, match="shape"):
        impute_metrics(y, y, np.zeros((2, 3)), selected=[0])
