"""IRT anchor points of tinyBenchmarks (Polo et al. 2024), as used by gp-IRT in the mRMR paper.

The selector fits a 2PL IRT model on the source models, clusters the items by
their parameter vectors ``(a_1..a_D, d)`` with k-means and takes the item
nearest to each centre as an anchor, weighted by its cluster's share of items.

The fit goes through the caller's :class:`~coreval.base.FitCache`
(:func:`coreval.irt.source_fit.fit_source_irt`), where the IRT predictors (p-IRT,
gp-IRT, irt-bayes, metabench's GAM) find it when they ask for the same fit.

References
----------
Polo, F. M. et al. (2024). tinyBenchmarks: evaluating LLMs with fewer examples. ICML.
Bowyer, S. et al. Efficient Benchmarking Is Just Feature Selection and Multiple
Regression (mRMR paper), appendix G.1 and the ``gpirt`` method of its reference code.
"""

from __future__ import annotations

import numpy as np
from sklearn.cluster import KMeans
from sklearn.metrics import pairwise_distances

from coreval.base import Coreset, Selector
from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError
from coreval.irt.fit_spec import IRTFitSpec
from coreval.irt.source_fit import (
    TINYBENCH_FIT,
    fit_source_irt,
    logistic_item_params,
    resolve_irt_model,
    resolved_choice,
)


def kmeans_anchors(params: np.ndarray, k: int, *, seed: int = 0,
                   n_init: int | str = "auto",
                   item_weights: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Anchor items of tinyBenchmarks from per-item parameter vectors.

    ``KMeans(k, random_state=seed)`` on the rows of ``params``; the anchor of a
    cluster is the item nearest (Euclidean) to its centre, its weight the
    cluster's share of items, or of ``item_weights`` (the summary score's weights of
    grouped items, as tinyBenchmarks' ``balance_weights``). Two centres whose nearest
    item coincides are
    merged into one anchor (weights added), so fewer than ``k`` anchors can
    come back and the weights always sum to 1.

    Parameters
    ----------
    params : ndarray, shape (n_items, p)
        Item parameter vectors, e.g. ``(a_1..a_D, d)``. The reference clusters
        ``(a, difficulty)`` with its difficulty ``= -d``; flipping the sign of a
        coordinate leaves Euclidean k-means unchanged.
    k : int
        Number of clusters.
    seed : int
        ``random_state`` of KMeans.
    n_init : int or "auto"
        KMeans restarts (the reference uses ``"auto"``).
    item_weights : ndarray (n_items,), optional
        Weights of the items summing to 1 (default: ``1 / n_items`` each).

    Returns
    -------
    anchors : ndarray of int
        Item positions, in cluster order (duplicates removed).
    weights : ndarray of float
        Each cluster's sum of item weights (its share of items by default).
    """
    params = np.asarray(params, dtype=float)
    if not np.isfinite(params).all():
        raise ValidationError("IRT item parameters contain NaN or inf; the IRT fit failed")
    n_items = params.shape[0]
    km = KMeans(n_clusters=k, n_init=n_init, random_state=seed).fit(params)
    nearest = pairwise_distances(km.cluster_centers_, params).argmin(axis=1)
    sizes = (np.bincount(km.labels_, minlength=k).astype(float) / n_items
             if item_weights is None else
             np.bincount(km.labels_, weights=np.asarray(item_weights, float), minlength=k))
    anchors: list[int] = []
    weights: list[float] = []
    for item, w in zip(nearest, sizes, strict=True):
        if item in anchors:
            weights[anchors.index(item)] += w
        else:
            anchors.append(int(item))
            weights.append(float(w))
    return np.asarray(anchors, dtype=np.intp), np.asarray(weights)


class IRTAnchorSelector(Selector):
    """tinyBenchmarks IRT anchor points: k-means on fitted IRT item parameters ``(a, d)``.

    Parameters
    ----------
    k : int
        Number of anchors (fewer when two centres share their nearest item).
    irt : IRTFitSpec
        The IRT fit of the source models (default
        :data:`coreval.irt.source_fit.TINYBENCH_FIT`: the 3PL by SVI under hierarchical
        priors; the mRMR paper's ``gpirt1`` uses ``dims=1``, ``gpirt`` 10). Its
        ``model`` is a logistic model or ``"auto"``, which picks the 2PL or the 3PL by
        validation error on held-out source models
        (:func:`coreval.irt.source_fit.resolve_irt_model`). The 3PL's guessing level is
        learnt only under ``priors="hierarchical"``; with ``priors="weak"`` every
        ``c`` has the fixed prior Beta(1, 4), which biases benchmarks without a
        chance floor, so use ``model="2pl"`` there.
    seed : int
        Seed of the IRT fit and of KMeans' ``random_state``.
    n_init : int or "auto"
        KMeans restarts.
    show_progress : bool, optional
        Progress bar of the IRT fit.

    Attributes
    ----------
    fit_ : IRTFit
        The IRT fit on the source models (in the caller's fit cache too, where
        the IRT predictors with the same fit options pick it up).
    model_ : str
        The IRT model fitted (the choice of ``model="auto"``).
    validation_errors_ : dict
        Validation error per candidate model (``model="auto"``; else empty).

    References
    ----------
    Polo et al. (2024), tinyBenchmarks (IRT anchor points).
    """

    needs_binary = True

    def __init__(self, k: int = 10, *, irt: IRTFitSpec = TINYBENCH_FIT, seed: int = 0,
                 n_init: int | str = "auto", show_progress: bool | None = None) -> None:
        self.k = k
        self.irt = irt
        self.seed = seed
        self.n_init = n_init
        self.show_progress = show_progress

    def resolved_options(self) -> dict[str, str]:
        """``model`` / ``priors`` as ``model="auto"`` / ``priors="auto"`` chose them."""
        return resolved_choice(self.irt, self.irt_spec_)

    def _select(self, source: ScoreMatrix, k: int) -> Coreset:
        spec, self.validation_errors_ = resolve_irt_model(
            source, self.irt, seed=self.seed, cache=self.cache_, show_progress=self.show_progress)
        self.model_ = spec.model
        self.irt_spec_ = spec
        irt_fit = fit_source_irt(source, spec, seed=self.seed, cache=self.cache_,
                                 show_progress=self.show_progress)
        a, d, _ = logistic_item_params(irt_fit)
        anchors, weights = kmeans_anchors(
            np.column_stack([a, d]), k, seed=self.seed, n_init=self.n_init,
            item_weights=source.item_weights())
        self.fit_ = irt_fit
        return Coreset.from_indices(source, anchors, weights=weights, method="irt-anchors",
                                    irt_model=self.model_,
                                    validation_errors=self.validation_errors_)
