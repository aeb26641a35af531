"""Normality diagnostics for the Gaussian model of benchmark scores.

Smola, "Submodular Benchmark Selection" (2026), Section 6.3: per-column Shapiro-Wilk tests
with Bonferroni and Benjamini-Hochberg corrections, and Mardia's multivariate skewness and
kurtosis. The tests come from scipy (``scipy.stats.shapiro``,
``scipy.stats.false_discovery_control``, ``chi2``/``norm`` tails); Mardia's statistics are
two lines of linear algebra and are written out (scipy has no Mardia test).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from coreval.errors import ValidationError


def shapiro_wilk_columns(values: np.ndarray, *, alpha: float = 0.05,
                         names: np.ndarray | None = None) -> pd.DataFrame:
    """Shapiro-Wilk test of each column on its observed entries, with multiple-testing control.

    Parameters
    ----------
    values : ndarray of shape (n_models, n_columns)
        Scores (NaN = missing); each column is tested on its observed entries.
    alpha : float
        Level of the rejection decisions.
    names : array of str, optional
        Column ids (the DataFrame index).

    Returns
    -------
    DataFrame
        Columns ``n``, ``W``, ``p``, ``p_bonferroni``, ``p_bh`` (Benjamini-Hochberg adjusted,
        ``scipy.stats.false_discovery_control``), ``reject_bonferroni``, ``reject_bh``.
        Columns with fewer than 3 observed entries get NaN and are excluded from the
        corrections.

    References
    ----------
    Shapiro, S. S. & Wilk, M. B. (1965). Biometrika 52, 591-611.
    Benjamini, Y. & Hochberg, Y. (1995). JRSS-B 57, 289-300.
    """
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 2:
        raise ValidationError(f"values must be 2-D, got shape {x.shape}")
    n_cols = x.shape[1]
    w_stat = np.full(n_cols, np.nan)
    pval = np.full(n_cols, np.nan)
    counts = np.zeros(n_cols, dtype=int)
    for j in range(n_cols):
        col = x[~np.isnan(x[:, j]), j]
        counts[j] = len(col)
        if len(col) >= 3 and np.ptp(col) > 0:
            res = stats.shapiro(col)
            w_stat[j], pval[j] = res.statistic, res.pvalue
    tested = ~np.isnan(pval)
    p_bonf = np.full(n_cols, np.nan)
    p_bh = np.full(n_cols, np.nan)
    if tested.any():
        p_bonf[tested] = np.minimum(pval[tested] * tested.sum(), 1.0)
        p_bh[tested] = stats.false_discovery_control(pval[tested], method="bh")
    index = pd.Index(np.arange(n_cols) if names is None else np.asarray(names), name="column")
    return pd.DataFrame({"n": counts, "W": w_stat, "p": pval, "p_bonferroni": p_bonf,
                         "p_bh": p_bh, "reject_bonferroni": p_bonf < alpha,
                         "reject_bh": p_bh < alpha}, index=index)


@dataclass(frozen=True)
class MardiaResult:
    """Mardia's multivariate skewness and kurtosis (Mardia 1970).

    Attributes
    ----------
    skewness : float
        ``b_1 = (1/M^2) sum_ij d_ij^3``.
    kurtosis : float
        ``b_2 = (1/M) sum_i d_ii^2``.
    skew_statistic, skew_df, skew_pvalue : float, int, float
        ``M b_1 / 6 ~ chi^2(N(N+1)(N+2)/6)`` under normality.
    kurt_statistic, kurt_pvalue : float
        ``(b_2 - N(N+2)) / sqrt(8 N (N+2) / M) ~ N(0, 1)``; two-sided p-value.
    n_rows, n_dims : int
        Rows used (complete rows only) and dimension.
    """

    skewness: float
    kurtosis: float
    skew_statistic: float
    skew_df: int
    skew_pvalue: float
    kurt_statistic: float
    kurt_pvalue: float
    n_rows: int
    n_dims: int


def mardia_test(values: np.ndarray) -> MardiaResult:
    """Mardia's test of multivariate normality on the complete rows of ``values``.

    ``d_ij = (x_i - xbar)^T S^{-1} (x_j - xbar)`` with the ML covariance ``S`` (divisor M).

    Parameters
    ----------
    values : ndarray of shape (n_models, n_dims)
        Data; rows containing NaN are dropped.

    Returns
    -------
    MardiaResult

    References
    ----------
    Mardia, K. V. (1970). Measures of multivariate skewness and kurtosis with applications.
    Biometrika 57(3), 519-530, Eqs. (2.5), (2.6), (2.23)-(2.24).
    """
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 2:
        raise ValidationError(f"values must be 2-D, got shape {x.shape}")
    x = x[~np.isnan(x).any(axis=1)]
    m, n = x.shape
    if m <= n:
        raise ValidationError(f"Mardia's test needs more complete rows ({m}) than "
                              f"dimensions ({n})")
    xc = x - x.mean(axis=0)
    s = xc.T @ xc / m
    # A covariance singular in exact arithmetic (a column that is a sum of others) is
    # rarely singular in floating point, and solving with it gives distances of the
    # wrong rank and a confident wrong test: refuse it by its numerical rank.
    rank = int(np.linalg.matrix_rank(xc))
    if rank < n:
        raise ValidationError(f"sample covariance is singular (rank {rank} of {n} dimensions: "
                              "some columns are linear combinations of others); Mardia's "
                              "test is undefined")
    d = xc @ np.linalg.solve(s, xc.T)
    b1 = float((d**3).sum() / m**2)
    b2 = float((np.diag(d) ** 2).sum() / m)
    df = n * (n + 1) * (n + 2) // 6
    skew_stat = m * b1 / 6.0
    kurt_stat = (b2 - n * (n + 2)) / np.sqrt(8.0 * n * (n + 2) / m)
    return MardiaResult(skewness=b1, kurtosis=b2, skew_statistic=skew_stat, skew_df=df,
                        skew_pvalue=float(stats.chi2.sf(skew_stat, df)),
                        kurt_statistic=float(kurt_stat),
                        kurt_pvalue=float(2.0 * stats.norm.sf(abs(kurt_stat))),
                        n_rows=m, n_dims=n)


def eigenvalue_tail(cov: np.ndarray) -> np.ndarray:
    """Spectral lower bound on the residual variance of any k-subset, for k = 0..N.

    ``tail[k] = sum_{i > k} lambda_i / tr(Sigma)`` with eigenvalues in decreasing
    order. Conditioning on k columns leaves a residual covariance of rank ≤ N − k
    whose trace is at least the sum of the N − k smallest eigenvalues (Eckart–Young
    for the column-subset approximation), so ``tail[k]`` bounds the greedy residual
    trace (:attr:`GreedyResult.residual_variance`) from below. The gap between the
    two curves is what greedy selection leaves on the table compared with the best
    rank-k projection (Smola, "Submodular Benchmark Selection", spectral diagnostic).

    Negative eigenvalues (a pairwise-estimated covariance need not be positive
    semidefinite) are set to 0, so ``tr(Sigma)`` is taken as the sum of the clipped
    eigenvalues and the tail stays within [0, 1].
    """
    cov = np.asarray(cov, dtype=np.float64)
    if cov.ndim != 2 or cov.shape[0] != cov.shape[1]:
        raise ValidationError(f"covariance must be square, got shape {cov.shape}")
    lam = np.clip(np.linalg.eigvalsh(cov)[::-1], 0.0, None)
    total = lam.sum()
    if total <= 0:
        raise ValidationError("covariance has zero trace")
    return np.concatenate([[1.0], 1.0 - np.cumsum(lam) / total])
