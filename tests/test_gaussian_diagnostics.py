"""Normality diagnostics: Shapiro-Wilk + multiple testing, Mardia's test."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from coreval.errors import ValidationError
from coreval.gaussian.diagnostics import mardia_test, shapiro_wilk_columns


def _bh(p: np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values written out (step-up, monotone)."""
    n = len(p)
    order = np.argsort(p)
    adj = np.empty(n)
    running = 1.0
    for rank in range(n, 0, -1):
        i = order[rank - 1]
        running = min(running, p[i] * n / rank)
        adj[i] = running
    return adj


def test_shapiro_columns_match_scipy_and_corrections(rng):
    x = np.column_stack([rng.normal(size=60), rng.exponential(size=60),
                         rng.standard_t(3, size=60), rng.uniform(size=60)])
    x[rng.random(x.shape) < 0.2] = np.nan
    table = shapiro_wilk_columns(x, names=np.array(["a", "b", "c", "d"]))
    for j, name in enumerate("abcd"):
        col = x[~np.isnan(x[:, j]), j]
        res = stats.shapiro(col)
        assert table.loc[name, "W"] == pytest.approx(res.statistic)
        assert table.loc[name, "p"] == pytest.approx(res.pvalue)
        assert table.loc[name, "n"] == len(col)
    np.testing.assert_allclose(table["p_bh"], _bh(table["p"].to_numpy()))
    np.testing.assert_allclose(table["p_bonferroni"], np.minimum(4 * table["p"], 1.0))
    assert table.loc["b", "reject_bh"]  # exponential with n ~ 48


def test_shapiro_skips_short_columns(rng):
    x = rng.normal(size=(10, 2))
    x[2:, 1] = np.nan
    table = shapiro_wilk_columns(x)
    assert np.isnan(table.loc[1, "p"]) and not table.loc[1, "reject_bh"]


def test_mardia_matches_double_sum_formula(rng):
    x = rng.normal(size=(25, 3))
    res = mardia_test(x)
    xc = x - x.mean(axis=0)
    s_inv = np.linalg.inv(xc.T @ xc / 25)
    d = np.array([[xc[i] @ s_inv @ xc[j] for j in range(25)] for i in range(25)])
    assert res.skewness == pytest.approx((d**3).sum() / 625)
    assert res.kurtosis == pytest.approx((np.diag(d) ** 2).sum() / 25)
    assert res.skew_df == 10
    assert res.skew_pvalue == pytest.approx(stats.chi2.sf(25 * res.skewness / 6, 10))


def test_mardia_detects_heavy_tails_and_accepts_gaussian():
    rng = np.random.default_rng(2)
    gauss = mardia_test(rng.normal(size=(500, 4)) @ rng.normal(size=(4, 4)))
    assert gauss.skew_pvalue > 1e-3 and gauss.kurt_pvalue > 1e-3
    heavy = mardia_test(rng.standard_t(3, size=(500, 4)))
    assert heavy.kurt_pvalue < 1e-6


def test_mardia_needs_more_rows_than_dims(rng):
    with pytest.raises(ValidationError, match="more complete rows"):
        mardia_test(rng.normal(size=(3, 5)))


def test_mardia_refuses_a_column_that_is_a_sum_of_others():
    # singular in exact arithmetic, not in floating point: solving gave a confident wrong test
    x3 = np.random.default_rng(5).normal(size=(50, 3))
    x = np.column_stack([x3, x3[:, 0] + x3[:, 1]])
    with pytest.raises(ValidationError, match="rank 3 of 4"):
        mardia_test(x)
    assert mardia_test(x3).n_dims == 3
