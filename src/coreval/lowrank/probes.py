"""Choosing probe benchmarks for a new model from a completed low-rank matrix.

A probe set ``A`` is run on a new model; the rest of its profile is predicted. With a
completed, standardised matrix ``Z_hat`` (:func:`coreval.lowrank.complete_als`), the
benchmarks' covariance over models is

    Sigma = Cov_models(Z_hat) + diag(s_j^2),

the covariance of the completed scores plus each column's residual variance on its observed
cells (:func:`completed_covariance`). A new model's unrevealed benchmarks are then Gaussian
given its revealed ones, and :func:`greedy_posterior_variance` adds, one at a time, the
benchmark that most lowers the expected posterior variance (A-optimal design, Krause &
Guestrin 2005) summed over the observed, unrevealed cells of the known models, each model
revealing only the probes it has: the probe's coverage counts, not only its correlations.
The submodular entropy and mutual-information selectors of :mod:`coreval.gaussian.greedy`
take the same ``Sigma``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from coreval.errors import ValidationError


def completed_covariance(completed: np.ndarray, z: np.ndarray,
                         observed: np.ndarray) -> np.ndarray:
    """``Cov(Z_hat) + diag(residual variance)`` of a completed standardised matrix.

    Parameters
    ----------
    completed : ndarray of shape (n_rows, n_cols)
        Completed z-space matrix (every cell).
    z : ndarray, same shape
        Standardised observed scores (ignored where ``observed`` is false).
    observed : ndarray of bool, same shape

    Returns
    -------
    ndarray of shape (n_cols, n_cols)
    """
    resid = np.where(observed, z - completed, np.nan)
    count = observed.sum(axis=0)
    noise = np.where(count > 0, np.nansum(resid**2, axis=0) / np.maximum(count, 1), 1.0)
    return np.cov(completed, rowvar=False) + np.diag(noise)


def _posterior_variance_sum(cov: np.ndarray, revealed: np.ndarray,
                            targets: np.ndarray) -> float:
    """``sum_t Var(z_t | z_revealed)`` under ``N(0, cov)``."""
    d = np.diag(cov)[targets]
    if revealed.size == 0:
        return float(d.sum())
    s_rr = cov[np.ix_(revealed, revealed)]
    s_rt = cov[np.ix_(revealed, targets)]
    w = np.linalg.solve(s_rr, s_rt)
    return float((d - (s_rt * w).sum(axis=0)).sum())


def greedy_posterior_variance(cov: np.ndarray, observed: np.ndarray, k: int, *,
                              candidates: Sequence[int] | None = None) -> list[int]:
    """Greedy probes minimising the expected posterior variance of the unrevealed cells.

    Parameters
    ----------
    cov : ndarray of shape (n_cols, n_cols)
        Benchmarks' covariance (:func:`completed_covariance`).
    observed : ndarray of bool, shape (n_rows, n_cols)
        Which benchmarks each known model has: a model reveals ``A ∩ observed_i`` and its
        targets are ``observed_i \\ A``.
    k : int
        Number of probes.
    candidates : sequence of int, optional
        Allowed probes (default: every column).

    Returns
    -------
    list of int
        The probes, in the order chosen.
    """
    n_cols = cov.shape[0]
    pool = list(range(n_cols)) if candidates is None else [int(c) for c in candidates]
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or not 1 <= k <= len(pool):
        raise ValidationError(f"k must be an integer in [1, {len(pool)}], got {k!r}")
    if cov.shape != (n_cols, n_cols) or observed.shape[1] != n_cols:
        raise ValidationError(f"cov {cov.shape} and observed {observed.shape} do not match")
    chosen: list[int] = []
    for _ in range(int(k)):
        best, best_value = None, np.inf
        for cand in pool:
            if cand in chosen:
                continue
            probe = np.array([*chosen, cand])
            total = 0.0
            for row in observed:
                revealed = probe[row[probe]]
                targets = np.flatnonzero(row)
                targets = targets[~np.isin(targets, probe)]
                total += _posterior_variance_sum(cov, revealed, targets)
            if total < best_value:
                best, best_value = cand, total
        chosen.append(int(best))
    return chosen
