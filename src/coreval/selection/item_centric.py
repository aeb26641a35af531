"""Item-centric (cold-start) coreset selection: Scales++ and Scales++ Lite.

Scales++ ("Compute efficient evaluation subset selection with cognitive scales
embeddings", Bean, Seedat, Chen & Schwarz, arXiv:2510.26384) chooses items from
their own features, never from source-model scores: each item is described by a
feature vector (the 16 General-Scales demand levels 0–5 annotated per item, or an
embedding of the item text); constant dimensions are dropped, UMAP reduces the
rest to 3 dimensions, k-means forms ``k`` clusters, and the item nearest each
centre is chosen, weighted by its cluster's share of the items.

Item features convention
------------------------
Features come from ``ScoreMatrix.item_meta`` columns whose names start with
``feature_prefix`` (default ``"feat_"``), or from an explicit ``features`` array
(items × features, in column order of the matrix). The binary shared matrices
have no item text or annotations, so Scales++ needs features supplied this way.
Scales++ Lite takes text-embedding columns (prefix ``"emb_"``) for every item and
annotations (``"feat_"``) for a labelled subset (NaN elsewhere), and predicts
the missing annotations with a kNN regressor (the paper uses a small GNN; kNN is
the small model asked for here).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from sklearn.cluster import KMeans

from coreval.base import Coreset, Selector
from coreval.data.item_features import (
    drop_constant,
    item_features,
    lite_features,
)
from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError


class ScalesSelector(Selector):
    """Scales++ selection: UMAP (3-D, seeded) + k-means on item features.

    Parameters
    ----------
    k : int
        Number of items (clusters).
    features : array (n_items, n_features), optional
        Item features; default: ``item_meta`` columns prefixed ``feature_prefix``.
    feature_prefix : str
        Prefix of the feature columns in ``item_meta``.
    reducer : {"umap", "none"}
        "umap" as in the paper; "none" clusters the features directly.
    n_dims : int
        UMAP output dimension (3 in the paper).
    n_neighbors : int
        UMAP neighbourhood size (capped at ``n_items − 1``).
    seed : int
        Seed of UMAP and k-means.

    References
    ----------
    Bean et al. (2025), Scales++, arXiv:2510.26384, Sec. 3 (item selection).
    """

    uses_source_models = False
    min_source_models = 0

    def __init__(self, k: int = 10, *, features=None, feature_prefix: str = "feat_",
                 reducer: Literal["umap", "none"] = "umap", n_dims: int = 3,
                 n_neighbors: int = 15, seed: int = 0) -> None:
        self.k = k
        self.features = features
        self.feature_prefix = feature_prefix
        self.reducer = reducer
        self.n_dims = n_dims
        self.n_neighbors = n_neighbors
        self.seed = seed

    def _features(self, source: ScoreMatrix) -> np.ndarray:
        F, _ = item_features(source, self.features, self.feature_prefix)
        return F

    def _select(self, source: ScoreMatrix, k: int) -> Coreset:
        F = self._features(source)
        F = F[:, drop_constant(F)]
        U = self._reduce(F)
        distinct = len(np.unique(U, axis=0))
        if k > distinct:
            raise ValidationError(f"k={k} is larger than the {distinct} distinct item feature "
                                  "vectors: Scales++ takes one anchor per k-means cluster of the "
                                  "items' features (pass a smaller budget or richer features)")
        km = KMeans(n_clusters=k, n_init=10, random_state=self.seed).fit(U)
        labels = km.labels_
        chosen = np.empty(k, dtype=np.intp)
        for c in range(k):
            members = np.flatnonzero(labels == c)
            dist = np.linalg.norm(U[members] - km.cluster_centers_[c], axis=1)
            chosen[c] = members[np.argmin(dist)]
        sizes = np.bincount(labels, minlength=k).astype(float)
        # each cluster's share of the summary score (of the items, without groups)
        weights = np.bincount(labels, weights=source.item_weights(), minlength=k)
        return Coreset.from_indices(source, chosen, weights=weights,
                                    method=type(self).__name__, labels=labels,
                                    reduced=U, cluster_sizes=sizes)

    def _reduce(self, F: np.ndarray) -> np.ndarray:
        if self.reducer not in ("umap", "none"):
            raise ValidationError(f"reducer must be 'umap' or 'none', got {self.reducer!r}")
        if self.reducer == "none" or F.shape[1] <= self.n_dims:
            return F
        try:
            import umap  # imported lazily: numba compilation is slow
        except ImportError:
            raise ValidationError("reducer='umap' needs umap-learn: pip install 'coreval[umap]' "
                                  "(or pass reducer='none')") from None

        n = F.shape[0]
        reducer = umap.UMAP(n_components=self.n_dims, n_neighbors=max(2, min(self.n_neighbors,
                            n - 1)), random_state=self.seed,
                            init="spectral" if n > self.n_dims + 10 else "random")
        return np.asarray(reducer.fit_transform(F), dtype=float)


class ScalesLiteSelector(ScalesSelector):
    """Scales++ Lite: annotations of unlabelled items predicted from text embeddings (kNN).

    Parameters
    ----------
    embedding_prefix : str
        Prefix of the text-embedding columns in ``item_meta`` (every item).
    knn_neighbors : int
        k of the annotation regressor.
    Other parameters as :class:`ScalesSelector`; ``feature_prefix`` columns hold
    the annotations of the labelled subset and NaN elsewhere.
    """

    def __init__(self, k: int = 10, *, features=None, feature_prefix: str = "feat_",
                 embedding_prefix: str = "emb_", knn_neighbors: int = 5,
                 reducer: Literal["umap", "none"] = "umap", n_dims: int = 3,
                 n_neighbors: int = 15, seed: int = 0) -> None:
        super().__init__(k, features=features, feature_prefix=feature_prefix, reducer=reducer,
                         n_dims=n_dims, n_neighbors=n_neighbors, seed=seed)
        self.embedding_prefix = embedding_prefix
        self.knn_neighbors = knn_neighbors

    def _features(self, source: ScoreMatrix) -> np.ndarray:
        return lite_features(source, self.features, self.feature_prefix, self.embedding_prefix,
                             self.knn_neighbors)
