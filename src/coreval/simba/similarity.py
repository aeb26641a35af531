"""SimBA's nine dataset-similarity measures on pairwise-complete scores.

Prowl (Subramani et al. 2025, prowl phase) compares two datasets through the vectors of normalised
scores that the models obtained on them. Every measure is computed with SciPy on the models
that have **both** scores (pairwise-complete); a pair with fewer than ``min_overlap`` common
models, or a degenerate pair (e.g. a constant vector for a correlation), gets NaN.

The nine measures are those of the issue spec (the paper's text was not available); the
conversions below are our choice. Distances are turned into similarities in ``[0, 1]``
(1 = identical) as follows; the score vectors live in ``[0, 1]`` after :mod:`.normalise`:

* Manhattan, Euclidean, Minkowski (p = 3): the distance is divided by ``n^(1/p)`` (``n``
  common models), i.e. the power mean of ``|a - b|``, which lies in ``[0, 1]`` and does not
  grow with the overlap (overlaps differ between pairs when entries are missing);
  similarity = ``1 - d / n^(1/p)``.
* Wasserstein-1 between the two empirical score distributions (``scipy.stats``): in
  ``[0, 1]`` for scores in ``[0, 1]``; similarity = ``1 - d``.
* Jensen-Shannon: each vector is normalised to sum 1 over the common models (a distribution
  of performance mass over models), ``scipy.spatial.distance.jensenshannon`` with base 2 is in
  ``[0, 1]``; similarity = ``1 - d``.
* Pearson, Spearman, Kendall (tau-b) and cosine (``1 - scipy`` cosine distance) are used as
  they are (in ``[-1, 1]``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy import stats
from scipy.spatial import distance

from coreval._progress import progress
from coreval.errors import ValidationError


def _corr(fn: Callable) -> Callable[[np.ndarray, np.ndarray], float]:
    def measure(a: np.ndarray, b: np.ndarray) -> float:
        if np.ptp(a) == 0 or np.ptp(b) == 0:
            return np.nan  # correlation undefined for a constant vector
        return float(fn(a, b)[0])

    return measure


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    if not (np.any(a) and np.any(b)):
        return np.nan
    return 1.0 - float(distance.cosine(a, b))


def _power_mean(p: float) -> Callable[[np.ndarray, np.ndarray], float]:
    def measure(a: np.ndarray, b: np.ndarray) -> float:
        return 1.0 - float(distance.minkowski(a, b, p)) / len(a) ** (1.0 / p)

    return measure


def _wasserstein(a: np.ndarray, b: np.ndarray) -> float:
    return 1.0 - float(stats.wasserstein_distance(a, b))


def _jensen_shannon(a: np.ndarray, b: np.ndarray) -> float:
    if a.sum() <= 0 or b.sum() <= 0 or (a < 0).any() or (b < 0).any():
        return np.nan
    return 1.0 - float(distance.jensenshannon(a, b, base=2.0))


#: The nine measures of SimBA's prowl phase, by name.
SIMILARITIES: dict[str, Callable[[np.ndarray, np.ndarray], float]] = {
    "pearson": _corr(stats.pearsonr),
    "spearman": _corr(stats.spearmanr),
    "kendall": _corr(stats.kendalltau),
    "cosine": _cosine,
    "manhattan": _power_mean(1.0),
    "euclidean": _power_mean(2.0),
    "minkowski": _power_mean(3.0),
    "wasserstein": _wasserstein,
    "jensenshannon": _jensen_shannon,
}


def check_similarity(name: str) -> str:
    """Validate a similarity name (one-line error listing the known ones)."""
    if name not in SIMILARITIES:
        raise ValidationError(
            f"unknown similarity {name!r}; expected one of {', '.join(SIMILARITIES)}")
    return name


def similarity(a: np.ndarray, b: np.ndarray, measure: str = "pearson", *,
               min_overlap: int = 3) -> float:
    """Similarity of two score vectors on their pairwise-complete entries.

    Parameters
    ----------
    a, b : ndarray of shape (n_models,)
        Normalised scores (NaN = missing).
    measure : str
        One of :data:`SIMILARITIES`.
    min_overlap : int
        Fewer common observed entries than this gives NaN.

    Returns
    -------
    float
        The similarity (NaN when undefined).

    References
    ----------
    Subramani et al. (2025), SimBA, prowl phase (similarity measures).
    """
    fn = SIMILARITIES[check_similarity(measure)]
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    both = ~(np.isnan(a) | np.isnan(b))
    if both.sum() < max(min_overlap, 1):
        return np.nan
    return fn(a[both], b[both])


def similarity_matrix(values: np.ndarray, measure: str = "pearson", *, min_overlap: int = 3,
                      show_progress: bool | None = None) -> np.ndarray:
    """Symmetric column-by-column similarity matrix (pairwise-complete, NaN when undefined).

    Parameters
    ----------
    values : ndarray of shape (n_models, n_columns)
        Normalised scores.
    measure : str
        One of :data:`SIMILARITIES`.
    min_overlap : int
        Minimum number of models observed on both columns.
    show_progress : bool, optional
        Progress bar over columns (default: ``COREVAL_PROGRESS``).

    Returns
    -------
    ndarray of shape (n_columns, n_columns)
        The diagonal is the self-similarity (1 for every measure on a non-degenerate column).
    """
    check_similarity(measure)
    y = np.asarray(values, dtype=float)
    n = y.shape[1]
    out = np.full((n, n), np.nan)
    for i in progress(range(n), desc=f"similarity ({measure})", total=n, show=show_progress):
        for j in range(i, n):
            out[i, j] = out[j, i] = similarity(y[:, i], y[:, j], measure,
                                               min_overlap=min_overlap)
    return out
