"""Item features from ``ScoreMatrix.item_meta`` (item-centric, cold-start methods).

Features come from ``item_meta`` columns whose names start with a prefix (default
``"feat_"``, e.g. the 16 General-Scales demand levels of Scales++), or from an
explicit items × features array. Scales++ Lite takes text-embedding columns
(``"emb_"``) for every item and annotations for a labelled subset, and predicts
the missing annotations with a kNN regressor.

References
----------
Bean, Seedat, Chen & Schwarz, "Scales++: Compute Efficient Evaluation Subset
Selection with Cognitive Scales Embeddings" (arXiv:2510.26384).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.neighbors import KNeighborsRegressor

from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError, preview


def item_features(source: ScoreMatrix, features=None, prefix: str = "feat_",
                  allow_missing: bool = False) -> tuple[np.ndarray, list[str]]:
    """The items × features matrix of ``source`` (explicit array or ``item_meta`` columns).

    Returns
    -------
    F : ndarray of shape (n_items, n_features)
    names : list of str
    """
    if features is not None:
        try:
            F = np.asarray(features, dtype=float)
        except (TypeError, ValueError):
            raise ValidationError("features must be numbers") from None
        if F.ndim != 2 or F.shape[0] != source.n_items:
            raise ValidationError(f"features must have shape ({source.n_items}, n_features), "
                                  f"got {F.shape}")
        names = [f"f{j}" for j in range(F.shape[1])]
    else:
        meta = source.item_meta
        cols = [] if meta is None else [c for c in meta.columns if str(c).startswith(prefix)]
        if not cols:
            raise ValidationError(f"no item features: pass `features` or add item_meta columns "
                                  f"prefixed {prefix!r} (this matrix has no item text)")
        numeric = meta[cols].apply(pd.to_numeric, errors="coerce")
        bad = [c for c in cols if (numeric[c].isna() & meta[c].notna()).any()]
        if bad:
            raise ValidationError(f"item feature columns {preview(bad, 5)} hold non-numeric "
                                  "values")
        F = numeric.to_numpy(dtype=float, na_value=np.nan)
        names = [str(c) for c in cols]
    n_inf, n_nan = int(np.isinf(F).sum()), int(np.isnan(F).sum())
    if n_inf or (not allow_missing and n_nan):
        raise ValidationError(f"item features contain {n_inf} inf and {n_nan} NaN values")
    return F, names


def drop_constant(F: np.ndarray) -> np.ndarray:
    """Boolean mask of the non-constant feature columns."""
    keep = np.nanmax(F, axis=0) > np.nanmin(F, axis=0)
    if not keep.any():
        raise ValidationError("every item feature is constant; nothing to cluster on")
    return keep


def impute_annotations(embeddings: np.ndarray, annotations: np.ndarray, *,
                       n_neighbors: int = 5) -> np.ndarray:
    """Scales++ Lite: predict missing annotation rows from text embeddings with kNN.

    Parameters
    ----------
    embeddings : array (n_items, d)
        Text embeddings of every item.
    annotations : array (n_items, n_scales)
        Annotations of a labelled subset (rows without NaN); other rows NaN.

    Returns
    -------
    ndarray (n_items, n_scales) — labelled rows unchanged, the rest predicted.
    """
    E = np.asarray(embeddings, dtype=float)
    A = np.asarray(annotations, dtype=float)
    labelled = ~np.isnan(A).any(axis=1)
    if labelled.sum() < 1:
        raise ValidationError("Scales++ Lite needs at least one labelled item")
    if not np.isfinite(E).all():
        raise ValidationError("item embeddings contain NaN or inf")
    out = A.copy()
    if (~labelled).any():
        knn = KNeighborsRegressor(n_neighbors=min(n_neighbors, int(labelled.sum())),
                                  weights="distance")
        out[~labelled] = knn.fit(E[labelled], A[labelled]).predict(E[~labelled])
    return out


def lite_features(source: ScoreMatrix, features, feature_prefix: str, embedding_prefix: str,
                  knn_neighbors: int) -> np.ndarray:
    """Annotations with unlabelled rows filled in from text embeddings (Scales++ Lite)."""
    A, _ = item_features(source, features, feature_prefix, allow_missing=True)
    E, _ = item_features(source, None, embedding_prefix)
    return impute_annotations(E, A, n_neighbors=knn_neighbors)
