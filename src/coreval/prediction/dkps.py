"""DKPS: predict a model's benchmark score from its embedded responses to a few queries.

Following "Query-efficient model evaluation using cached responses" (Helm, Johnson &
Priebe, arXiv:2605.07096, 2026), a model ``i`` is represented by its mean embedded
response to each of ``n`` shared queries, ``X_i`` (n × d). Models are compared by

    D_ij = ||X_i − X_j||_F / sqrt(n)                                      (DKPS distance)

and placed in a low-dimensional *perspective space* by classical multidimensional
scaling of ``D`` (Torgerson 1952). A regression fitted on the perspectives of
reference models with known scores (OLS by default, or kNN) predicts the score of
a new model that answered only the ``n`` queries. The embedding is transductive:
the new model is embedded jointly with the references, one new model at a time.

Variants
--------
* **Ens(DKPS)** — a convex combination with the Sample Score ``S`` (the new model's
  mean score on the ``n`` queries) whose weight on ``S`` grows with ``n``::

      w_n = τ² / (τ² + σ²/n),      ŷ = w_n · S + (1 − w_n) · ŷ_DKPS

  the precision weighting used by the authors' reference code (``jataware/dkps``,
  ``Ensemble(mode='precision')``: weight on the sample ``e/(e + p(1−p)/m)``). ``τ²`` is
  the DKPS prior error, estimated here by the mean squared leave-one-out residual
  of the regression on the references (leave-one-group-out when reference groups,
  e.g. families, are given); ``σ²`` is the per-query score variance,
  by default ``p(1−p)`` at the clipped DKPS prediction ``p`` (scores in [0, 1]).
* **DKPS+IRT** — a 1-D ability estimate is appended to the perspective vector; the
  references then need their scores on the same ``n`` queries (see
  :func:`logit_ability`).

Intervals are jackknife+ (Barber et al. 2021) over leave-one-reference-out refits
of the regression in a fixed perspective space; the ensemble's interval is the
Gaussian precision combination ``ŷ ± z·(1/τ² + n/σ²)^(-1/2)``.

References
----------
Helm, H. S., Johnson, B. & Priebe, C. E. (2026). Query-efficient model evaluation
using cached responses. arXiv:2605.07096.
Torgerson, W. S. (1952). Multidimensional scaling: I. Theory and method.
Psychometrika 17, 401–419.
Barber, R. F., Candès, E. J., Ramdas, A. & Tibshirani, R. J. (2021). Predictive
inference with the jackknife+. Annals of Statistics 49(1).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import numpy as np
from scipy import linalg
from scipy.spatial.distance import cdist
from scipy.stats import norm
from sklearn.base import BaseEstimator
from sklearn.linear_model import LinearRegression
from sklearn.neighbors import KNeighborsRegressor

from coreval.base import Prediction
from coreval.base.conformal import jackknife_plus_interval
from coreval.data.splits import family_folds
from coreval.errors import ValidationError, preview


# ----------------------------------------------------------------------- geometry
def _check_responses(X, what: str) -> np.ndarray:
    X = np.asarray(X, dtype=float)
    if X.ndim == 2:  # one query: (models, dim)
        X = X[:, None, :]
    if X.ndim != 3:
        raise ValidationError(f"{what} must have shape (models, queries, dim), got {X.shape}")
    if not np.isfinite(X).all():
        raise ValidationError(f"{what} contain NaN or inf")
    return X


def perspective_distances(X, Y=None) -> np.ndarray:
    """DKPS distances ``D_ij = ||X_i − Y_j||_F / sqrt(n)`` between response sets.

    Parameters
    ----------
    X : array of shape (m, n, d)
        Mean embedded response of ``m`` models to ``n`` queries.
    Y : array of shape (p, n, d), optional
        Second set of models (default: ``X``).

    Returns
    -------
    ndarray of shape (m, p)
    """
    X = _check_responses(X, "responses")
    Y = X if Y is None else _check_responses(Y, "responses")
    if X.shape[1:] != Y.shape[1:]:
        raise ValidationError(f"response arrays disagree on (queries, dim): {X.shape[1:]} vs "
                              f"{Y.shape[1:]}")
    n = X.shape[1]
    return cdist(X.reshape(len(X), -1), Y.reshape(len(Y), -1)) / np.sqrt(n)


def per_query_sq_distances(X) -> np.ndarray:
    """Squared distances per query, shape (n, m, m): ``D²(S) = mean_{q∈S} out[q]``.

    Lets a benchmark form the DKPS distance of any query subset ``S`` without
    touching the embeddings again.
    """
    X = _check_responses(X, "responses")
    return np.stack([cdist(X[:, q], X[:, q], "sqeuclidean") for q in range(X.shape[1])])


def classical_mds(D, n_components: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """Classical (Torgerson) multidimensional scaling of a distance matrix.

    ``B = −½ J D² J`` with ``J = I − 11ᵀ/m``; the coordinates are the top
    eigenvectors of ``B`` scaled by the square roots of their eigenvalues.
    Hand-written with :func:`scipy.linalg.eigh` because scikit-learn's ``MDS`` is
    SMACOF (iterative stress minimisation), not classical MDS.

    Parameters
    ----------
    D : array of shape (m, m)
        Symmetric distances with zero diagonal.
    n_components : int
        Output dimension ``d``; eigenvalues ≤ 0 give zero coordinates.

    Returns
    -------
    coords : ndarray of shape (m, n_components)
    eigenvalues : ndarray of shape (n_components,), descending

    References
    ----------
    Torgerson (1952), Psychometrika 17, eq. for the double-centred matrix B.
    """
    D = np.asarray(D, dtype=float)
    if D.ndim != 2 or D.shape[0] != D.shape[1]:
        raise ValidationError(f"distance matrix must be square, got shape {D.shape}")
    m = D.shape[0]
    if not 1 <= n_components <= m:
        raise ValidationError(f"n_components={n_components} must be in 1..{m} (models)")
    if not np.isfinite(D).all():
        raise ValidationError("distance matrix contains NaN or inf")
    D2 = D**2
    row = D2.mean(axis=0)
    B = -0.5 * (D2 - row[None, :] - row[:, None] + row.mean())
    B = (B + B.T) / 2
    vals, vecs = linalg.eigh(B, subset_by_index=[m - n_components, m - 1])
    order = np.argsort(vals)[::-1]
    vals, vecs = vals[order], vecs[:, order]
    # Deterministic sign: the largest-magnitude entry of each axis is positive.
    signs = np.sign(vecs[np.abs(vecs).argmax(axis=0), np.arange(n_components)])
    signs[signs == 0] = 1.0
    coords = vecs * signs * np.sqrt(np.clip(vals, 0.0, None))
    return coords, vals


def logit_ability(sample_scores, n_queries: int) -> np.ndarray:
    """A 1-D ability estimate from a sample score: ``logit((n·S + ½)/(n + 1))``.

    When every model answers the same queries, a Rasch ability estimate is (up to
    a shared shift) a monotone function of the sample score, so the smoothed logit
    of ``S`` serves as the IRT feature of DKPS+IRT without fitting item
    parameters; the ``½`` keeps ``S ∈ {0, 1}`` finite.
    """
    s = np.asarray(sample_scores, dtype=float)
    p = (n_queries * s + 0.5) / (n_queries + 1.0)
    return np.log(p) - np.log1p(-p)


# ---------------------------------------------------------------------- estimator
class DKPS(BaseEstimator):
    """Score prediction in the Data Kernel Perspective Space.

    Parameters
    ----------
    n_components : int
        Perspective-space dimension (classical MDS), default 4.
    regressor : {"ols", "knn"}
        Regression of scores on perspectives.
    n_neighbors : int
        k of the kNN regressor.
    ensemble : bool
        Return Ens(DKPS) (needs ``sample_scores`` in :meth:`predict`).
    sigma2 : "bernoulli" or float
        Per-query score variance of the ensemble weight: ``p(1−p)`` at the clipped
        DKPS prediction, or a fixed value.
    level : float
        Nominal interval coverage.
    interval : {"jackknife+", "none"}
        Interval of the DKPS prediction ("none": ``lower = upper = mean``, faster).
    clip : tuple of float or None
        Range the predictions are clipped to (default [0, 1]).

    Attributes
    ----------
    X_ : ndarray (m, n, d) — reference responses (None when fitted on distances).
    D_ : ndarray (m, m) — reference DKPS distances.
    y_ : ndarray (m,) — reference scores.
    ability_ : ndarray (m,) or None — reference abilities (DKPS+IRT).
    """

    def __init__(self, *, n_components: int = 4, regressor: Literal["ols", "knn"] = "ols",
                 n_neighbors: int = 5, ensemble: bool = False,
                 sigma2: Literal["bernoulli"] | float = "bernoulli", level: float = 0.9,
                 interval: Literal["jackknife+", "none"] = "jackknife+",
                 clip: tuple[float, float] | None = (0.0, 1.0)) -> None:
        self.n_components = n_components
        self.regressor = regressor
        self.n_neighbors = n_neighbors
        self.ensemble = ensemble
        self.sigma2 = sigma2
        self.level = level
        self.interval = interval
        self.clip = clip

    # ------------------------------------------------------------------ fit
    def fit(self, X, y, *, ability=None, groups=None) -> DKPS:
        """Store reference responses ``X`` (m, n, d) and their scores ``y`` (m,).

        ``groups`` (e.g. model families), when given, makes the prior error ``τ²``
        of the ensemble a leave-one-group-out error, matching a leave-one-family-out
        use: with near-duplicate family members among the references, plain
        leave-one-out residuals understate the error on a new family.
        """
        X = _check_responses(X, "reference responses")
        self.X_ = X
        return self._fit(perspective_distances(X), y, ability, groups, n_queries=X.shape[1])

    def fit_distances(self, D, y, *, n_queries: int, ability=None, groups=None) -> DKPS:
        """Fit from precomputed reference DKPS distances ``D`` (m, m)."""
        D = np.asarray(D, dtype=float)
        if D.ndim != 2 or D.shape[0] != D.shape[1]:
            raise ValidationError(f"reference distances must be square, got shape {D.shape}")
        self.X_ = None
        return self._fit(D, y, ability, groups, n_queries=n_queries)

    def _fit(self, D, y, ability, groups, *, n_queries: int) -> DKPS:
        self._check_params()
        y = np.asarray(y, dtype=float).ravel()
        m = D.shape[0]
        if y.shape[0] != m:
            raise ValidationError(f"{y.shape[0]} reference scores for {m} reference models")
        if not np.isfinite(y).all():
            raise ValidationError("reference scores contain NaN or inf")
        if m < self.n_components + 2:
            raise ValidationError(f"DKPS needs at least n_components + 2 = "
                                  f"{self.n_components + 2} reference models, got {m}")
        if self.regressor == "knn" and m <= self.n_neighbors:
            raise ValidationError(f"kNN with n_neighbors={self.n_neighbors} needs more than "
                                  f"{self.n_neighbors} reference models, got {m}")
        if ability is not None:
            ability = np.asarray(ability, dtype=float).ravel()
            if ability.shape != (m,) or not np.isfinite(ability).all():
                raise ValidationError(f"reference abilities must be {m} finite values")
        self.D_ = D
        self.y_ = y
        self.ability_ = ability
        self.n_queries_ = int(n_queries)
        # Prior error τ² of the ensemble: LOO residuals in the references' own space.
        Z, _ = classical_mds(D, self.n_components)
        F = self._features(Z, ability)
        if groups is None:
            self.loo_residuals_ = self._loo_predictions(F, y) - y
        else:
            groups = np.asarray(groups, dtype=object).ravel()
            if groups.shape != (m,):
                raise ValidationError(f"{groups.shape[0]} groups for {m} reference models")
            if any(_missing(g) for g in groups):
                raise ValidationError("reference groups (families) contain missing values")
            groups = groups.astype(str)
            self.loo_residuals_ = self._logo_predictions(F, y, groups) - y
        self.tau2_ = float(np.mean(self.loo_residuals_**2))
        return self

    def _check_params(self) -> None:
        if self.regressor not in ("ols", "knn"):
            raise ValidationError(f"regressor must be 'ols' or 'knn', got {self.regressor!r}")
        if self.interval not in ("jackknife+", "none"):
            raise ValidationError(f"interval must be 'jackknife+' or 'none', got "
                                  f"{self.interval!r}")
        if not 0 < self.level < 1:
            raise ValidationError(f"level must be in (0, 1), got {self.level}")

    # --------------------------------------------------------------- helpers
    @staticmethod
    def _features(Z: np.ndarray, ability: np.ndarray | None) -> np.ndarray:
        return Z if ability is None else np.column_stack([Z, ability])

    def _model(self):
        if self.regressor == "ols":
            return LinearRegression()
        return KNeighborsRegressor(n_neighbors=self.n_neighbors)

    def _scale(self, F: np.ndarray, ref: np.ndarray) -> np.ndarray:
        # kNN is not scale-invariant: standardise features on the references.
        if self.regressor == "knn":
            sd = ref.std(axis=0)
            sd[sd == 0] = 1.0
            return (F - ref.mean(axis=0)) / sd
        return F

    def _logo_predictions(self, F: np.ndarray, y: np.ndarray, groups: np.ndarray) -> np.ndarray:
        """Leave-one-group-out predictions in the fixed perspective space."""
        Fs = self._scale(F, F)
        out = np.empty(len(y))
        for g in np.unique(groups):
            test = groups == g
            if test.all() or (~test).sum() <= (self.n_neighbors if self.regressor == "knn"
                                               else F.shape[1]):
                out[test] = y[~test].mean() if (~test).any() else y[test].mean()
                continue
            out[test] = self._model().fit(Fs[~test], y[~test]).predict(Fs[test])
        return out

    def _loo_predictions(self, F: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Leave-one-reference-out predictions (closed form for OLS)."""
        if self.regressor == "ols":
            A = np.column_stack([np.ones(len(F)), F])
            fit = self._model().fit(F, y)
            resid = y - fit.predict(F)
            h = np.einsum("ij,ji->i", A, np.linalg.pinv(A))  # hat-matrix diagonal
            return y - resid / np.clip(1.0 - h, 1e-12, None)
        Fs = self._scale(F, F)
        out = np.empty(len(y))
        for i in range(len(y)):
            keep = np.arange(len(y)) != i
            out[i] = self._model().fit(Fs[keep], y[keep]).predict(Fs[i:i + 1])[0]
        return out

    def _clip(self, v):
        return v if self.clip is None else np.clip(v, *self.clip)

    # --------------------------------------------------------------- predict
    def predict(self, X, *, sample_scores=None, ability=None) -> Prediction:
        """Predict scores of new models from their responses ``X`` (t, n, d)."""
        if not hasattr(self, "D_"):
            raise ValidationError("DKPS is not fitted; call fit first")
        if self.X_ is None:
            raise ValidationError("DKPS was fitted on distances; use predict_distances")
        X = _check_responses(X, "new-model responses")
        if X.shape[1:] != self.X_.shape[1:]:
            raise ValidationError(f"new-model responses have (queries, dim) {X.shape[1:]}, "
                                  f"references {self.X_.shape[1:]}")
        return self.predict_distances(perspective_distances(X, self.X_),
                                      sample_scores=sample_scores, ability=ability)

    def predict_distances(self, d, *, sample_scores=None, ability=None) -> Prediction:
        """Predict from DKPS distances ``d`` (t, m) of new models to the references."""
        if not hasattr(self, "D_"):
            raise ValidationError("DKPS is not fitted; call fit first")
        d = np.atleast_2d(np.asarray(d, dtype=float))
        m = self.D_.shape[0]
        if d.shape[1] != m or not np.isfinite(d).all():
            raise ValidationError(f"distances to references must be finite with {m} columns, "
                                  f"got shape {d.shape}")
        t = d.shape[0]
        if (self.ability_ is None) != (ability is None):
            raise ValidationError("DKPS+IRT needs abilities for both references and new models")
        if ability is not None:
            ability = np.asarray(ability, dtype=float).ravel()
            if ability.shape != (t,) or not np.isfinite(ability).all():
                raise ValidationError(f"new-model abilities must be {t} finite values")
        if self.ensemble:
            if sample_scores is None:
                raise ValidationError("Ens(DKPS) needs the sample scores of the new models")
            sample_scores = np.asarray(sample_scores, dtype=float).ravel()
            if sample_scores.shape != (t,) or not np.isfinite(sample_scores).all():
                raise ValidationError(f"sample scores must be {t} finite values")
        mean = np.empty(t)
        lower = np.empty(t)
        upper = np.empty(t)
        for i in range(t):
            full = np.zeros((m + 1, m + 1))
            full[:m, :m] = self.D_
            full[m, :m] = full[:m, m] = d[i]
            Z, _ = classical_mds(full, self.n_components)
            F = self._features(Z, None if ability is None else
                               np.append(self.ability_, ability[i]))
            Fs = self._scale(F, F[:m])
            model = self._model().fit(Fs[:m], self.y_)
            mean[i] = model.predict(Fs[m:])[0]
            if self.interval == "jackknife+" and not self.ensemble:
                lower[i], upper[i] = self._jackknife_plus(Fs)
            else:
                lower[i] = upper[i] = mean[i]
        kind = "jackknife+" if self.interval == "jackknife+" else "none"
        if self.ensemble:
            mean, lower, upper = self._ensemble(mean, sample_scores)
            kind = "gaussian-conditional"
        return Prediction(mean=self._clip(mean), lower=self._clip(lower),
                          upper=self._clip(upper), level=self.level, interval=kind)

    def _jackknife_plus(self, Fs: np.ndarray) -> tuple[float, float]:
        """Jackknife+ interval at the new point (``Fs[m]``) from leave-one-out refits."""
        m = len(self.y_)
        at_x, resid = np.empty(m), np.empty(m)
        for j in range(m):
            keep = np.arange(m) != j
            model = self._model().fit(Fs[:m][keep], self.y_[keep])
            pj = model.predict(np.vstack([Fs[j], Fs[m]]))
            resid[j], at_x[j] = self.y_[j] - pj[0], pj[1]
        lower, upper = jackknife_plus_interval(at_x[None, :], resid, self.level)
        return float(lower[0]), float(upper[0])

    def _sigma2(self, p) -> np.ndarray:
        if self.sigma2 == "bernoulli":
            p = np.clip(np.asarray(p, dtype=float), 1e-3, 1 - 1e-3)
            return p * (1 - p)
        return np.full(np.shape(p), float(self.sigma2))

    def ensemble_weight(self, dkps_mean, n_queries: int | None = None) -> np.ndarray:
        """Weight ``w_n = τ²/(τ² + σ²/n)`` on the sample score (see module notes)."""
        n = self.n_queries_ if n_queries is None else int(n_queries)
        tau2 = max(self.tau2_, 1e-12)
        return tau2 / (tau2 + self._sigma2(dkps_mean) / n)

    def _ensemble(self, dkps_mean: np.ndarray, sample: np.ndarray):
        p = self._clip(dkps_mean)
        w = self.ensemble_weight(p)
        mean = w * sample + (1 - w) * p
        n, tau2 = self.n_queries_, max(self.tau2_, 1e-12)
        sd = np.sqrt(1.0 / (1.0 / tau2 + n / self._sigma2(p)))
        z = norm.ppf(0.5 + self.level / 2)
        return mean, mean - z * sd, mean + z * sd


# ------------------------------------------------------------------ protocol
def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and np.isnan(value)) or value == ""


def lofo_splits(models, families: Mapping[str, str], targets=None):
    """Leave-one-family-out folds: ``(family, reference positions, target positions)``.

    Parameters
    ----------
    models : sequence of str
        All models (references and targets), in array order.
    families : mapping model -> family
        Every model must have a family; a missing one raises, naming the models.
    targets : sequence of str, optional
        Models to evaluate (default: all).

    Yields
    ------
    family, refs, tgts : str, ndarray of int, ndarray of int
        References are all models outside ``family``.
    """
    models = [str(m) for m in models]
    absent = [m for m in models if _missing(families.get(m))]
    if absent:
        raise ValidationError(f"models without a family for leave-one-family-out: "
                              f"{preview(absent)}")
    fam = np.array([str(families[m]) for m in models])
    tset = set(models if targets is None else map(str, targets))
    unknown = sorted(tset - set(models))
    if unknown:
        raise ValidationError(f"unknown target models: {preview(unknown)}")
    yield from family_folds(fam, np.array([m in tset for m in models]))


# ------------------------------------------------------------- query-set choice
def r2_loo(Z: np.ndarray, y: np.ndarray) -> float:
    """Leave-one-out R² of OLS of ``y`` on ``Z`` (PRESS statistic, closed form)."""
    A = np.column_stack([np.ones(len(Z)), Z])
    coef, *_ = np.linalg.lstsq(A, y, rcond=None)
    resid = y - A @ coef
    h = np.einsum("ij,ji->i", A, np.linalg.pinv(A))
    press = np.sum((resid / np.clip(1 - h, 1e-12, None)) ** 2)
    return float(1.0 - press / np.sum((y - y.mean()) ** 2))


def select_query_set(sq_dist: np.ndarray, y, n: int, *, n_candidates: int = 100,
                     n_components: int = 4, seed: int = 0) -> tuple[np.ndarray, float]:
    """Offline query-set selection: best of random candidate sets by LOO R² on references.

    Parameters
    ----------
    sq_dist : array of shape (n_pool, m, m)
        Per-query squared DKPS distances of the reference models
        (:func:`per_query_sq_distances`).
    y : array of shape (m,)
        Reference scores.
    n : int
        Query budget (set size).
    n_candidates : int
        Random candidate sets drawn without replacement from the pool.

    Returns
    -------
    indices : ndarray of int
        Pool positions of the chosen set.
    r2 : float
        Its leave-one-out R² (we use LOO rather than in-sample R², which rewards
        sets that merely overfit the references).
    """
    sq_dist = np.asarray(sq_dist, dtype=float)
    y = np.asarray(y, dtype=float)
    n_pool, m, _ = sq_dist.shape
    if not 1 <= n <= n_pool:
        raise ValidationError(f"query budget n={n} must be in 1..{n_pool} (pool size)")
    if m < n_components + 2:
        raise ValidationError(f"query-set selection needs at least {n_components + 2} "
                              f"reference models, got {m}")
    rng = np.random.default_rng(seed)
    best, best_r2 = None, -np.inf
    for _ in range(n_candidates):
        idx = np.sort(rng.choice(n_pool, size=n, replace=False))
        D = np.sqrt(np.clip(sq_dist[idx].mean(axis=0), 0, None))
        Z, _ = classical_mds(D, n_components)
        r2 = r2_loo(Z, y)
        if r2 > best_r2:
            best, best_r2 = idx, r2
    return best, best_r2
