"""Simple covariance estimates of standardised scores with missing entries.

Smola, "Submodular Benchmark Selection" (2026), Section 4.3 as run by the reference code
(``smolix/benchmark-selection``, ``code/em_cov.py``; protocol sections 3-4): the
pairwise-complete covariance (the EM's initial value and the complete-data estimate), its
projection onto the PSD cone (eigenvalue floor ``eps``), and linear shrinkage to the scaled
identity with the reference's "auto" intensity ``alpha = (N - M) / N`` when there are fewer
rows ``M`` than columns ``N``.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import eigh


def pairwise_covariance(z: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """Pairwise-complete covariance of centred data (reference init, ``Eq. pairwise-cov``).

    ``S_jk = sum_i O_ij O_ik zc_ij zc_ik / max(n_jk - 1, 1)`` with ``zc = O (z - mu)``,
    ``mu`` the observed-entry mean and ``n_jk`` the number of rows observing both columns.

    Parameters
    ----------
    z : ndarray of shape (n_models, n_columns)
        Data; entries where ``observed`` is false are ignored.
    observed : ndarray of bool, same shape
        Observation mask.

    Returns
    -------
    ndarray of shape (n_columns, n_columns)
        Symmetric, not necessarily PSD.
    """
    obs = observed.astype(np.float64)
    mu = (np.where(observed, z, 0.0)).sum(axis=0) / np.maximum(obs.sum(axis=0), 1.0)
    zc = np.where(observed, z - mu, 0.0)
    return (zc.T @ zc) / np.maximum(obs.T @ obs - 1.0, 1.0)


def project_psd(s: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Nearest symmetric matrix with eigenvalues ``>= eps`` (eigenvalue clamp, Frobenius norm).

    Parameters
    ----------
    s : ndarray of shape (n, n)
        Symmetric matrix.
    eps : float
        Eigenvalue floor.

    Returns
    -------
    ndarray of shape (n, n)
        ``V max(Lambda, eps) V^T`` from ``scipy.linalg.eigh``.
    """
    w, v = eigh(s, check_finite=False)
    return (v * np.maximum(w, eps)) @ v.T


def auto_shrinkage(n_rows: int, n_cols: int) -> float:
    """The reference "auto" shrinkage ``alpha = (N - M) / N`` when ``M < N``, else 0."""
    return max(0.0, (n_cols - n_rows) / n_cols) if n_rows < n_cols else 0.0


def shrink(s: np.ndarray, alpha: float) -> np.ndarray:
    """Linear shrinkage to the scaled identity: ``(1 - alpha) S + alpha tr(S)/N I``.

    The Ledoit & Wolf (2004) target ``tr(S)/N I``; the intensity is fixed (no Ledoit-Wolf
    estimate of the optimal intensity), as in the reference code.
    """
    if alpha <= 0:
        return s
    n = s.shape[0]
    return (1.0 - alpha) * s + alpha * (np.trace(s) / n) * np.eye(n)
