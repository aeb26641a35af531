"""Scoring a new model against a fitted completion: its bias and factors from a few scores.

A new model (a new row) that reports only some benchmarks ``A`` gets its own ``(a, u)``
with the column parameters ``(mu, c, V)`` held fixed, and every benchmark is then predicted
as ``mu + a + c_j + V_j . u``:

* :func:`als_fold_in` — the ridge solve of one Bias-ALS row block (:func:`coreval.lowrank.
  als.als_step`), averaged over the fitted starts; with ``priors`` (:func:`als_row_prior`)
  the ridge is replaced by the Gaussian posterior mean of ``(a, u)`` under the empirical
  distribution of the fitted rows and the fit's residual variance (empirical Bayes,
  Bishop 2006, Eq. 3.53-3.54). A new row revealing only a few columns then shrinks towards
  the known models instead of extrapolating along a weakly determined ``V`` (with the
  fit's lambda, a row of 5 cells and 3 unknowns is nearly unpenalised);
* :func:`bayes_fold_in` — per posterior draw of the column parameters, the conjugate Gaussian
  posterior of ``beta = (a, u)`` under the prior ``a ~ N(0, s_a^2)``, ``u ~ N(0, I)`` and a
  Gaussian likelihood with the draw's noise scales (Bishop 2006, Eq. 3.53-3.54), one draw of
  ``beta`` and of the likelihood noise (Student-t with ``df`` degrees of freedom when given).
  With a Student-t likelihood the conditional is the Gaussian approximation with the same
  scales.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from coreval.lowrank.als import ALSState


class RowPrior(NamedTuple):
    """Gaussian prior of a new row's ``beta = (a, u)`` and the noise of one fitted start.

    Attributes
    ----------
    mean : ndarray of shape (rank + 1,)
        Mean of the fitted rows' ``(a_i, U_i)``.
    precision : ndarray of shape (rank + 1, rank + 1)
        Inverse of their covariance (with a small ridge).
    noise_var : float
        Mean squared residual of the fit on its observed cells.
    """

    mean: np.ndarray
    precision: np.ndarray
    noise_var: float


def als_row_prior(state: ALSState, z: np.ndarray, observed: np.ndarray,
                  jitter: float = 1e-6) -> RowPrior:
    """Empirical prior of a new row from a fitted start: the rows' ``(a, U)`` and residuals.

    Rows with no observed cell are left out of the mean and covariance.

    Parameters
    ----------
    state : ALSState
        A fitted start.
    z : ndarray of shape (n_rows, n_cols)
        The standardised scores it was fitted on.
    observed : ndarray of bool, same shape
    jitter : float
        Added to the covariance's diagonal before inverting.
    """
    beta = np.column_stack([state.row_bias, state.U])
    has = observed.any(axis=1)
    if has.sum() >= 2:  # rows without cells keep their random start: not evidence
        beta = beta[has]
    cov = np.atleast_2d(np.cov(beta, rowvar=False)) + jitter * np.eye(beta.shape[1])
    fit = state.mu + state.row_bias[:, None] + state.col_bias[None, :] + state.U @ state.V.T
    noise = float(np.mean((z - fit)[observed] ** 2)) if observed.any() else 1.0
    return RowPrior(beta.mean(axis=0), np.linalg.inv(cov), max(noise, 1e-6))


def als_fold_in(z_a: np.ndarray, cols: np.ndarray, states: list[ALSState],
                lam: float, priors: list[RowPrior] | None = None) -> np.ndarray:
    """Bias-ALS predictions (z-space) of every column for rows observing ``cols``.

    Parameters
    ----------
    z_a : ndarray of shape (n_rows, |A|)
        Standardised scores of the new rows on the columns ``cols`` (all observed).
    cols : ndarray of int, shape (|A|,)
    states : list of ALSState
        Fitted starts (:func:`coreval.lowrank.als.complete_als`).
    lam : float
        Ridge penalty of the fit (used when ``priors`` is None).
    priors : list of RowPrior, optional
        One per start (:func:`als_row_prior`): ``beta`` is then the posterior mean
        ``(X^T X / s^2 + P)^{-1} (X^T r / s^2 + P m)``.

    Returns
    -------
    ndarray of shape (n_rows, n_cols)
        Mean over starts of ``mu + a + c + V u``.
    """
    out = []
    for i, st in enumerate(states):
        design = np.hstack([np.ones((len(cols), 1)), st.V[cols]])
        resid = z_a - st.mu - st.col_bias[cols]
        if priors is None:
            gram = design.T @ design + lam * np.eye(design.shape[1])
            rhs = design.T @ resid.T
        else:
            pr = priors[i]
            gram = design.T @ design / pr.noise_var + pr.precision
            rhs = design.T @ resid.T / pr.noise_var + (pr.precision @ pr.mean)[:, None]
        beta = np.linalg.solve(gram, rhs).T  # (n_rows, r + 1)
        out.append(st.mu + st.col_bias + beta[:, :1] + beta[:, 1:] @ st.V.T)
    return np.mean(out, axis=0)


def bayes_fold_in(z_a: np.ndarray, cols: np.ndarray, post: dict[str, np.ndarray],
                  rng: np.random.Generator,
                  df: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Posterior predictive of every column for rows observing ``cols`` (z-space).

    Parameters
    ----------
    z_a : ndarray of shape (n_rows, |A|)
        Standardised scores of the new rows on the columns ``cols``.
    cols : ndarray of int, shape (|A|,)
    post : dict
        Draws ``mu`` (D,), ``s_a`` (D,), ``c`` (D, N), ``V`` (D, N, r), ``sigma`` (D, N)
        (:func:`coreval.lowrank.bayes.fit_lowrank_nuts`).
    rng : numpy.random.Generator
    df : float, optional
        Student-t degrees of freedom of the likelihood noise of the draws.

    Returns
    -------
    cond_mean : ndarray of shape (D, n_rows, N)
        ``mu + c + [1, V] E[beta | z_a]`` per draw.
    draws : ndarray of shape (D, n_rows, N)
        Predictive draws (``beta`` uncertainty and likelihood noise).
    """
    mu, s_a, c, V, sigma = post["mu"], post["s_a"], post["c"], post["V"], post["sigma"]
    n_draw, n_cols, r = V.shape
    X_all = np.concatenate([np.ones((n_draw, n_cols, 1)), V], axis=2)  # (D, N, r+1)
    X = X_all[:, cols]  # (D, A, r+1)
    w = 1.0 / sigma[:, cols] ** 2  # (D, A)
    prior = np.ones((n_draw, r + 1))
    prior[:, 0] = 1.0 / s_a**2
    prec = np.einsum("dak,da,dal->dkl", X, w, X) + prior[:, :, None] * np.eye(r + 1)
    cov = np.linalg.inv(prec)
    resid = z_a[None] - (mu[:, None] + c[:, cols])[:, None, :]  # (D, rows, A)
    b_mean = np.einsum("dkl,dal,da,dna->dnk", cov, X, w, resid)  # (D, rows, r+1)
    chol = np.linalg.cholesky(cov)
    b_draw = b_mean + np.einsum("dkl,dnl->dnk", chol, rng.standard_normal(b_mean.shape))
    base = (mu[:, None] + c)[:, None, :]  # (D, 1, N)
    cond_mean = base + np.einsum("dnk,dmk->dnm", b_mean, X_all)
    shape = cond_mean.shape
    eps = rng.standard_normal(shape) if df is None else rng.standard_t(df, size=shape)
    draws = base + np.einsum("dnk,dmk->dnm", b_draw, X_all) + sigma[:, None, :] * eps
    return cond_mean, draws
