"""Choosing probe benchmarks for a new model from a completed low-rank matrix.

A probe set ``A`` is run on a new model; the rest of its profile is predicted. With a
completed, standardised matrix ``Z_hat`` (:func:`coreval.lowrank.complete_als`), the
benchmarks' covariance over models is

    Sigma = Cov_models(Z_hat) + diag(s_j^2),

the covariance of the completed scores plus each column's residual variance on its observed
cells (:func:`completed_covariance`). A new model's unrevealed benchmarks are then Gaussian
given its revealed ones, and :func:`coreval.gaussian.greedy.greedy_variance` with the known
models' observation mask adds, one at a time, the benchmark that most lowers the expected
posterior variance summed over the observed, unrevealed cells of the known models, each
model revealing only the probes it has: the probe's coverage counts, not only its
correlations. The entropy and mutual-information selectors of :mod:`coreval.gaussian.greedy`
take the same ``Sigma``.
"""

from __future__ import annotations

import numpy as np


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
