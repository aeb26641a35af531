"""SimBA pounce: predict the remaining datasets of held-out models from the selected ones.

Subramani et al. (2025), "SimBA", pounce phase. Regressors from scikit-learn map a model's
normalised scores on the selected datasets to its scores on every other dataset: ridge, k-nearest
neighbours and multilayer perceptrons with one and two hidden layers. Quality is the mean
squared error on held-out models; the AUC-MSE is its normalised area over subset sizes.
Noise robustness adds Gaussian noise of variance ``sigma^2`` (0.05 and 0.1, the values of the
issue spec) to the selected-dataset scores (the regressor inputs) of training and held-out
models. The four regressors, AUC-MSE and the noise levels come from the issue spec (the paper's
text was not available; its abstract only says held-out models are predicted with near-zero
MSE); the AUC normalisation, where the noise is added and the hyperparameters are our choices.

**Missing entries.** Input features are imputed with the training models' column means
(``SimpleImputer``); each target dataset is learnt from the training models that have it
(target datasets with the same set of training models share one multi-output fit), and the MSE
is over the held-out entries that are observed.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.impute import SimpleImputer
from sklearn.linear_model import RidgeCV
from sklearn.neighbors import KNeighborsRegressor
from sklearn.neural_network import MLPRegressor
from sklearn.pipeline import Pipeline, make_pipeline

from coreval._progress import progress
from coreval.base.checks import check_positive_int
from coreval.errors import ValidationError

#: Pounce regressors by name.
REGRESSORS: tuple[str, ...] = ("ridge", "knn", "mlp", "mlp2")

#: Ridge penalties searched by leave-one-out (RidgeCV's efficient LOO).
RIDGE_ALPHAS = tuple(np.logspace(-3, 3, 13))


def make_regressor(name: str = "ridge", *, seed: int = 0, n_neighbors: int = 5,
                   hidden: int = 64, n_train: int | None = None) -> Pipeline:
    """A mean-imputing scikit-learn pipeline for one of :data:`REGRESSORS`.

    Parameters
    ----------
    name : {"ridge", "knn", "mlp", "mlp2"}
        ``ridge``: RidgeCV (alpha by leave-one-out); ``knn``: KNeighborsRegressor (distance
        weights); ``mlp`` / ``mlp2``: MLPRegressor with one / two hidden ReLU layers.
    seed : int
        Random state of the MLP.
    n_neighbors : int
        Neighbours of kNN (capped at ``n_train``).
    hidden : int
        Width of each hidden layer.
    n_train : int, optional
        Number of training models (caps ``n_neighbors``).
    """
    if name == "ridge":
        est: RegressorMixin = RidgeCV(alphas=RIDGE_ALPHAS)
    elif name == "knn":
        n_neighbors = check_positive_int("n_neighbors", n_neighbors)
        k = n_neighbors if n_train is None else max(1, min(n_neighbors, n_train))
        est = KNeighborsRegressor(n_neighbors=k, weights="distance")
    elif name in ("mlp", "mlp2"):
        hidden = check_positive_int("hidden", hidden)
        layers = (hidden,) if name == "mlp" else (hidden, hidden)
        est = MLPRegressor(hidden_layer_sizes=layers, alpha=1e-3, max_iter=2000,
                           random_state=seed)
    else:
        raise ValidationError(
            f"unknown predictor {name!r}; expected one of {', '.join(REGRESSORS)}")
    return make_pipeline(SimpleImputer(strategy="mean", keep_empty_features=True), est)


class ColumnwiseRegressor:
    """Fit one template regressor per group of targets that share observed training rows.

    Parameters
    ----------
    template : sklearn estimator
        Cloned for each group.
    min_rows : int
        Targets with fewer observed training rows are predicted by their training mean (or
        NaN without any).
    """

    def __init__(self, template: BaseEstimator, min_rows: int = 3) -> None:
        self.template = template
        self.min_rows = min_rows

    def fit(self, x: np.ndarray, y: np.ndarray) -> ColumnwiseRegressor:
        obs = ~np.isnan(y)
        self.n_targets_ = y.shape[1]
        self.groups_ = []
        self.fallback_ = np.full(y.shape[1], np.nan)
        patterns, inverse = np.unique(obs.T, axis=0, return_inverse=True)
        for g, pattern in enumerate(patterns):
            cols = np.flatnonzero(inverse.ravel() == g)
            rows = np.flatnonzero(pattern)
            if len(rows) < self.min_rows or np.isnan(x[rows]).all(axis=0).all():
                if len(rows):
                    self.fallback_[cols] = np.nanmean(y[np.ix_(rows, cols)], axis=0)
                continue
            target = y[np.ix_(rows, cols)]
            model = clone(self.template)
            est = model[-1] if isinstance(model, Pipeline) else model
            if isinstance(est, KNeighborsRegressor) and est.n_neighbors > len(rows):
                est.set_params(n_neighbors=len(rows))  # fewer training rows than neighbours
            model = model.fit(x[rows], target if len(cols) > 1 else target[:, 0])
            self.groups_.append((cols, model))
        return self

    def predict(self, x: np.ndarray) -> np.ndarray:
        out = np.tile(self.fallback_, (x.shape[0], 1))
        for cols, model in self.groups_:
            out[:, cols] = np.asarray(model.predict(x)).reshape(x.shape[0], len(cols))
        return out


def pounce_mse(z: np.ndarray, selected: Sequence[int], train: np.ndarray, test: np.ndarray, *,
               predictor: str = "ridge", noise_var: float = 0.0, seed: int = 0) -> float:
    """Held-out MSE of predicting the unselected datasets from the selected ones.

    Parameters
    ----------
    z : ndarray of shape (n_models, n_columns)
        Normalised scores (NaN = missing).
    selected : sequence of int
        Selected datasets (inputs); every other dataset is a target.
    train, test : ndarray of int
        Row indices of training and held-out models.
    predictor : str
        One of :data:`REGRESSORS`.
    noise_var : float
        Variance of Gaussian noise added to the inputs (0 = none).
    seed : int
        Seed of the noise and of the MLP.

    Returns
    -------
    float
        Mean squared error over the observed held-out target entries (NaN if none).

    References
    ----------
    Subramani et al. (2025), SimBA, pounce phase.
    """
    z = np.asarray(z, dtype=float)
    sel = np.asarray(selected, dtype=np.intp)
    rest = np.setdiff1d(np.arange(z.shape[1]), sel)
    if rest.size == 0:
        return float("nan")
    x = z[:, sel].copy()
    if noise_var > 0:
        rng = np.random.default_rng(seed)
        x += rng.normal(0.0, np.sqrt(noise_var), size=x.shape)  # NaN stays NaN
    model = ColumnwiseRegressor(make_regressor(predictor, seed=seed, n_train=len(train)))
    model.fit(x[train], z[np.ix_(train, rest)])
    pred = model.predict(x[test])
    truth = z[np.ix_(test, rest)]
    ok = ~np.isnan(truth) & ~np.isnan(pred)
    return float(((pred[ok] - truth[ok]) ** 2).mean()) if ok.any() else float("nan")


def model_splits(n_models: int, *, n_splits: int = 5, test_fraction: float = 0.2,
                 seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """Random train / held-out model splits (numpy Generator, reproducible)."""
    if not 0 < test_fraction < 1:
        raise ValidationError(f"test_fraction must be in (0, 1), got {test_fraction}")
    n_test = max(1, round(test_fraction * n_models))
    if n_models - n_test < 3:
        raise ValidationError(f"pounce needs at least 3 training models, got {n_models - n_test}")
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n_splits):
        perm = rng.permutation(n_models)
        out.append((np.sort(perm[n_test:]), np.sort(perm[:n_test])))
    return out


def pounce_curve(z: np.ndarray, order: Sequence[int], *, sizes: Sequence[int] | None = None,
                 predictor: str = "ridge", noise_var: float = 0.0, n_splits: int = 5,
                 test_fraction: float = 0.2, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Held-out MSE of the prefixes of a dataset order, averaged over model splits.

    Parameters
    ----------
    z : ndarray of shape (n_models, n_columns)
        Normalised scores.
    order : sequence of int
        Dataset order (e.g. from :func:`~.prowl.prowl`).
    sizes : sequence of int, optional
        Prefix sizes to evaluate (default ``1 .. n_columns - 1``).
    predictor, noise_var, n_splits, test_fraction, seed
        See :func:`pounce_mse` and :func:`model_splits`.

    Returns
    -------
    sizes, mse : ndarray
    """
    z = np.asarray(z, dtype=float)
    order = np.asarray(order, dtype=np.intp)
    n = z.shape[1]
    sizes = np.arange(1, n) if sizes is None else np.asarray(sizes, dtype=int)
    if sizes.size and (sizes.min() < 1 or sizes.max() >= n or sizes.max() > len(order)):
        raise ValidationError(f"prefix sizes must lie in 1..{min(n - 1, len(order))}")
    splits = model_splits(z.shape[0], n_splits=n_splits, test_fraction=test_fraction, seed=seed)
    mse = np.array([
        np.nanmean([pounce_mse(z, order[:k], tr, te, predictor=predictor, noise_var=noise_var,
                               seed=seed + s) for s, (tr, te) in enumerate(splits)])
        for k in progress(sizes, desc=f"pounce ({predictor})", total=len(sizes))
    ])
    return sizes, mse


def auc_mse(sizes: np.ndarray, mse: np.ndarray, n_columns: int) -> float:
    """Normalised area under MSE vs subset size ``k / n`` (trapezoid; a single size: its MSE)."""
    sizes = np.asarray(sizes, dtype=float)
    mse = np.asarray(mse, dtype=float)
    ok = np.isfinite(mse)
    sizes, mse = sizes[ok], mse[ok]
    if sizes.size == 0:
        return float("nan")
    if sizes.size == 1:
        return float(mse[0])
    x = sizes / n_columns
    return float(np.trapezoid(mse, x) / (x[-1] - x[0]))
