"""Scales++ score prediction from the responses on item-centric anchors.

Two estimators of a model's mean score over all ``N`` items, from its scores
``x_c`` on the ``k`` anchor items chosen by :class:`~coreval.selection.item_centric.ScalesSelector`
(Bean et al. 2025, "Scales++", arXiv:2510.26384, Sec. 3.3):

1. **cluster-size-weighted mean** ``ŷ₁ = Σ_c w_c x_c`` (``w_c`` = share of items
   in the anchor's cluster); unbiased under cluster homogeneity, variance
   ``v₁ ≈ ŷ₁(1 − ŷ₁) Σ_c w_c²`` (plug-in binomial variance).
2. **per-feature logistic regressions** of correctness on the feature level:
   for every feature ``f``, ``P(correct | level z_f)`` is fitted on the anchors
   plus a pseudo-point (``z_f = 20`` → score 0: an item far beyond every 0–5
   demand level is failed), each unobserved item is predicted by the average of
   the per-feature probabilities at its levels, and
   ``ŷ₂ = (Σ_anchors x_i + Σ_unobserved p̂_i) / N``. Fractional scores in [0, 1]
   are fitted as weighted 0/1 rows. With item groups (subtasks) the full score is the
   mean of the group means, so ``ŷ₂ = Σ_i w_i s_i`` with the benchmark's item weights
   ``w_i`` (:meth:`~coreval.data.matrix.ScoreMatrix.item_weights`, ``1/N`` without
   groups) and ``s_i`` the anchor score or ``p̂_i``.

They are combined as ``ŷ = λ ŷ₁ + (1 − λ) ŷ₂`` with ``λ = b₂² / (b₂² + v₁)``:
the weight on the unbiased but noisy ``ŷ₁`` grows with the bias ``b₂`` of the
smooth ``ŷ₂``. ``b₂²`` is estimated as ``max((ŷ₂ − ŷ₁)² − v₁, 0)``, because
``E(ŷ₂ − ŷ₁)² ≈ b₂² + v₁`` when ``ŷ₁`` is unbiased (our choice; the paper gives
the λ formula but the estimate of ``b₂`` is ours). The interval is the plug-in
normal interval with variance ``λ²v₁ + (1 − λ)²b₂² + v₂``, ``v₂ = Σ w_i² p̂_i(1 − p̂_i)``
over the unobserved items (their binomial variance); it is labelled ``"binomial"``.

References
----------
Bean, A. M., Seedat, N., Chen, S. & Schwarz, J. R. (2025). Scales++: Compute
efficient evaluation subset selection with cognitive scales embeddings.
arXiv:2510.26384.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from scipy.special import expit
from scipy.stats import norm

from coreval.base import Coreset, Prediction, Predictor
from coreval.data.item_features import drop_constant, item_features, lite_features
from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError


def logistic_fits(Z: np.ndarray, y: np.ndarray, w: np.ndarray, *, C: float = 1.0,
                  n_iter: int = 50) -> tuple[np.ndarray, np.ndarray]:
    """Weighted 1-D logistic regressions of ``y`` on each column of ``Z``, all at once.

    Minimises ``Σ_r w_r·logloss(y_r, σ(b0 + b1·z_r)) + b1²/(2C)`` per column (the
    objective of scikit-learn's ``LogisticRegression(C=C)``, intercept unpenalised)
    by Newton's method. Hand-written and vectorised over columns because thousands
    of two-parameter fits (models × features) are dominated by scikit-learn's
    per-call overhead.

    Returns
    -------
    b0, b1 : ndarray of shape (n_columns,)
    """
    n_cols = Z.shape[1]
    b0 = np.zeros(n_cols)
    b1 = np.zeros(n_cols)
    lam = 1.0 / C
    for _ in range(n_iter):
        p = expit(b0[None, :] + b1[None, :] * Z)
        r = w[:, None] * (p - y[:, None])
        g0 = r.sum(axis=0)
        g1 = (r * Z).sum(axis=0) + lam * b1
        h = w[:, None] * p * (1 - p)
        h00 = h.sum(axis=0) + 1e-10
        h01 = (h * Z).sum(axis=0)
        h11 = (h * Z * Z).sum(axis=0) + lam
        det = h00 * h11 - h01**2
        step0 = (h11 * g0 - h01 * g1) / det
        step1 = (h00 * g1 - h01 * g0) / det
        b0 -= step0
        b1 -= step1
        if max(np.abs(step0).max(), np.abs(step1).max()) < 1e-10:
            break
    return b0, b1


class ScalesPredictor(Predictor):
    """Scales++ hybrid estimator (cluster-weighted mean + per-feature logistic fits).

    Parameters
    ----------
    features : array (n_items, n_features), optional
        Item features; default ``item_meta`` columns prefixed ``feature_prefix``.
    feature_prefix : str
        Prefix of the feature columns.
    estimator : {"hybrid", "weighted-mean", "logistic"}
        The combined estimator or one of its two parts.
    pseudo_level : float or None
        Feature level of the pseudo-point with score 0 (20 for 0–5 demand scales);
        None for features that are not demand levels (e.g. text embeddings).
    C : float
        Inverse L2 strength of each logistic regression (scikit-learn's default 1).
    lite : bool
        Fill unlabelled annotations from text embeddings (Scales++ Lite).
    embedding_prefix, knn_neighbors :
        As in :class:`~coreval.selection.item_centric.ScalesLiteSelector`.
    level : float
        Nominal interval coverage.
    """

    min_source_models = 0

    def __init__(self, *, features=None, feature_prefix: str = "feat_",
                 estimator: Literal["hybrid", "weighted-mean", "logistic"] = "hybrid",
                 pseudo_level: float | None = 20.0, C: float = 1.0, lite: bool = False,
                 embedding_prefix: str = "emb_", knn_neighbors: int = 5,
                 level: float = 0.9) -> None:
        self.features = features
        self.feature_prefix = feature_prefix
        self.estimator = estimator
        self.pseudo_level = pseudo_level
        self.C = C
        self.lite = lite
        self.embedding_prefix = embedding_prefix
        self.knn_neighbors = knn_neighbors
        self.level = level

    def _fit(self, source: ScoreMatrix, coreset: Coreset) -> None:
        if self.estimator not in ("hybrid", "weighted-mean", "logistic"):
            raise ValidationError(f"estimator must be 'hybrid', 'weighted-mean' or 'logistic', "
                                  f"got {self.estimator!r}")
        if not 0 < self.level < 1:
            raise ValidationError(f"level must be in (0, 1), got {self.level}")
        if self.lite:
            F = lite_features(source, self.features, self.feature_prefix,
                              self.embedding_prefix, self.knn_neighbors)
        else:
            F, _ = item_features(source, self.features, self.feature_prefix)
        self.features_ = F[:, drop_constant(F)]
        k = len(coreset)
        w = coreset.weights
        self.weights_ = np.full(k, 1.0 / k) if w is None else np.asarray(w, float) / np.sum(w)
        self.anchors_ = coreset.indices
        self.item_weights_ = source.item_weights()
        unobserved = np.ones(source.n_items, bool)
        unobserved[coreset.indices] = False
        self.unobserved_ = np.flatnonzero(unobserved)

    def _item_probabilities(self, x: np.ndarray) -> np.ndarray:
        """Per-feature logistic fits of one model's anchor scores → p̂ for unobserved items."""
        Fa = self.features_[self.anchors_]
        Fu = self.features_[self.unobserved_]
        # Fractional scores as weighted 0/1 rows; the pseudo-point is one more 0 row.
        y = np.concatenate([np.ones(len(x)), np.zeros(len(x))])
        sw = np.concatenate([x, 1.0 - x])
        Z = np.vstack([Fa, Fa])
        if self.pseudo_level is not None:
            y = np.append(y, 0.0)
            sw = np.append(sw, 1.0)
            Z = np.vstack([Z, np.full((1, Fa.shape[1]), float(self.pseudo_level))])
        b0, b1 = logistic_fits(Z, y, sw, C=self.C)
        return expit(b0[None, :] + b1[None, :] * Fu).mean(axis=1)

    def _predict(self, x: np.ndarray) -> Prediction:
        w_anchor = self.item_weights_[self.anchors_]
        w_unobserved = self.item_weights_[self.unobserved_]
        y1 = x @ self.weights_
        v1 = np.clip(y1 * (1 - y1), 1e-6, None) * np.sum(self.weights_**2)
        y2 = np.empty(len(x))
        v2 = np.empty(len(x))
        for i, xi in enumerate(x):
            p = self._item_probabilities(xi)
            y2[i] = xi @ w_anchor + p @ w_unobserved
            v2[i] = np.sum(w_unobserved**2 * p * (1 - p))
        b2sq = np.clip((y2 - y1) ** 2 - v1, 0.0, None)
        lam = b2sq / (b2sq + v1)
        if self.estimator == "weighted-mean":
            mean, var = y1, v1
        elif self.estimator == "logistic":
            mean, var = y2, b2sq + v2
        else:
            mean = lam * y1 + (1 - lam) * y2
            var = lam**2 * v1 + (1 - lam) ** 2 * b2sq + v2
        self.lambda_ = lam
        z = norm.ppf(0.5 + self.level / 2)
        sd = np.sqrt(var)
        return Prediction(mean=np.clip(mean, 0, 1), lower=np.clip(mean - z * sd, 0, 1),
                          upper=np.clip(mean + z * sd, 0, 1), level=self.level,
                          interval="binomial")
