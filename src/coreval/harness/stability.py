"""Stability of feature (coreset) selection across runs.

References
----------
Nogueira, S., Sechidis, K. & Brown, G. (2018). On the Stability of Feature
Selection Algorithms. *JMLR* 18(174), 1-54 — the estimator Φ̂ (their Definition 4 /
Eq. 4).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.spatial.distance import pdist

from coreval.errors import ValidationError


def _selection_matrix(z) -> np.ndarray:
    arr = np.asarray(z)
    if arr.ndim != 2:
        raise ValidationError(f"selection matrix must be 2-D (runs × features), got {arr.shape}")
    if arr.shape[0] < 2:
        raise ValidationError(f"stability needs at least 2 runs, got {arr.shape[0]}")
    if arr.shape[1] < 1:
        raise ValidationError("selection matrix has no features")
    if not np.isin(arr, (0, 1)).all():
        raise ValidationError("selection matrix must be binary 0/1 (or boolean)")
    return arr.astype(float)


def selection_matrix(selections: Sequence[Sequence[int]], n_features: int) -> np.ndarray:
    """Binary (runs × features) matrix from lists of selected feature positions."""
    z = np.zeros((len(selections), n_features), dtype=bool)
    for i, sel in enumerate(selections):
        idx = np.asarray(sel, dtype=np.intp)
        if idx.size and (idx.min() < 0 or idx.max() >= n_features):
            raise ValidationError(f"run {i} selects positions outside 0..{n_features - 1}")
        z[i, idx] = True
    return z


def nogueira_stability(z) -> float:
    """Stability estimator Φ̂ of Nogueira, Sechidis & Brown (2018).

    ``Φ̂ = 1 - mean_f s_f² / ((k̄/d)(1 - k̄/d))`` with ``s_f² = M/(M-1) p̂_f(1 - p̂_f)``
    the unbiased variance of feature f's selection indicator over the M runs,
    ``p̂_f`` its selection frequency, ``k̄`` the mean number of selected features
    and d the number of features. 1 for identical selections; expectation 0 for
    selections drawn at random. For a constant selection size it equals the mean
    pairwise Kuncheva index.

    Parameters
    ----------
    z : array-like of shape (M, d)
        Binary selection matrix, one row per run.

    Returns
    -------
    float
        Φ̂, NaN when ``k̄`` is 0 or d (every run selects nothing or everything).

    References
    ----------
    Nogueira, Sechidis & Brown (2018), JMLR 18(174), Definition 4.
    """
    z = _selection_matrix(z)
    m, d = z.shape
    p = z.mean(axis=0)
    s2 = m / (m - 1) * p * (1.0 - p)
    kbar = z.sum(axis=1).mean()
    denom = (kbar / d) * (1.0 - kbar / d)
    if denom <= 0:
        return float("nan")
    return float(1.0 - s2.mean() / denom)


def hamming_stability(z) -> float:
    """Mean pairwise Hamming stability ``1 - H(z_i, z_j) / d`` over all pairs of runs.

    Uses ``scipy.spatial.distance.pdist(metric="hamming")``, which already divides
    the Hamming distance by d.
    """
    z = _selection_matrix(z)
    return float(1.0 - np.mean(pdist(z.astype(bool), metric="hamming")))
