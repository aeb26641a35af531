"""Ridge and polynomial kernel ridge with λ by exact leave-one-out, batched.

The regression engine under the ``X+`` / ``X++`` predictors and the random-search
selector: the reference λ grids of the mRMR paper's code and closed-form
leave-one-out fits for a whole batch of candidate feature sets (a thousand
random coresets share one batched eigendecomposition). Both batch functions are
checked against scikit-learn's ``RidgeCV`` / ``GridSearchCV(KernelRidge)`` in the tests.
"""

from __future__ import annotations

import numpy as np

from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError


def default_alphas(source: ScoreMatrix) -> np.ndarray:
    """The reference λ grid: ``logspace(-1, 1, 5)`` for binary scores, else ``logspace(-2, 2, 9)``."""
    return np.logspace(-1, 1, 5) if source.is_binary else np.logspace(-2, 2, 9)


def alpha_grid(alphas, source: ScoreMatrix) -> np.ndarray:
    """The λ grid to search: :func:`default_alphas` when ``alphas`` is None, else ``alphas``
    as a 1-D float array, checked to be non-empty, finite and positive (a
    :class:`ValidationError` naming the problem)."""
    if alphas is None:
        return default_alphas(source)
    try:
        grid = np.atleast_1d(np.asarray(alphas, dtype=float))
    except (TypeError, ValueError):
        raise ValidationError(f"alphas must be numbers, got {alphas!r}") from None
    if grid.ndim != 1 or grid.size == 0:
        raise ValidationError(f"alphas must be a non-empty list of penalties, got {alphas!r}")
    if not (np.isfinite(grid).all() and (grid > 0).all()):
        raise ValidationError(f"alphas (ridge penalties) must be finite and > 0, got "
                              f"{grid.tolist()}")
    return grid


def _batched_eigh(gram: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    lam, q = np.linalg.eigh(gram)
    return np.clip(lam, 0.0, None), q


def ridge_loo_batch(x_train: np.ndarray, y_train: np.ndarray, x_eval: np.ndarray,
                    alphas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ridge with unpenalised intercept and λ chosen by exact leave-one-out, for a batch.

    For each batch element ``b`` this equals
    ``RidgeCV(alphas, fit_intercept=True).fit(x_train[b], y_train).predict(x_eval[b])``:
    with centred features ``X_c`` and ``G = X_c X_cᵀ = Q Λ Qᵀ``, the hat matrix for
    penalty λ is ``H = 1/m + Q diag(Λ/(Λ+λ)) Qᵀ``, the leave-one-out residuals are
    ``eᵢ / (1 − Hᵢᵢ)`` (Allen 1974; the GCV identity scikit-learn uses), and the
    fitted predictor is ``ȳ + (x − x̄) X_cᵀ Q diag(1/(Λ+λ)) Qᵀ (y − ȳ)``. The first λ
    with the smallest mean squared leave-one-out error is chosen, as in ``RidgeCV``.
    Hand-written (not sklearn) so that a thousand candidate coresets share one
    batched eigendecomposition.

    Parameters
    ----------
    x_train : ndarray, shape (B, m, p)
    y_train : ndarray, shape (m,)
    x_eval : ndarray, shape (B, n_eval, p)
    alphas : ndarray, shape (A,)

    Returns
    -------
    predictions : ndarray, shape (B, n_eval)
    chosen_alpha : ndarray, shape (B,)
    """
    m = x_train.shape[1]
    x_mean = x_train.mean(axis=1, keepdims=True)
    xc = x_train - x_mean
    y_mean = y_train.mean()
    yc = y_train - y_mean
    lam, q = _batched_eigh(xc @ xc.transpose(0, 2, 1))          # (B, m), (B, m, m)
    qty = np.einsum("bij,i->bj", q, yc)                           # (B, m)
    shrink = lam[:, None, :] / (lam[:, None, :] + alphas[None, :, None])   # (B, A, m)
    fitted = np.einsum("bij,baj,bj->bai", q, shrink, qty)          # (B, A, m) centred fit
    h = 1.0 / m + np.einsum("bij,baj->bai", q ** 2, shrink)        # (B, A, m)
    loo = (yc[None, None, :] - fitted) / (1.0 - h)
    best = np.argmin((loo ** 2).mean(axis=2), axis=1)              # first minimum
    chosen = alphas[best]
    inv = 1.0 / (lam + chosen[:, None])                            # (B, m)
    dual = np.einsum("bij,bj,bj->bi", q, inv, qty)                 # (X_c X_cᵀ + λ)⁻¹ y_c
    k_eval = (x_eval - x_mean) @ xc.transpose(0, 2, 1)             # (B, n_eval, m)
    return y_mean + np.einsum("bei,bi->be", k_eval, dual), chosen


def kernel_ridge_loo_batch(x_train: np.ndarray, y_train: np.ndarray, x_eval: np.ndarray,
                           alphas: np.ndarray, degree: int = 2,
                           coef0: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Polynomial kernel ridge with λ by leave-one-out, for a batch of feature sets.

    Equals ``GridSearchCV(KernelRidge(kernel="poly", degree, coef0, gamma=None),
    {"alpha": alphas}, cv=LeaveOneOut(), scoring="neg_mean_squared_error")`` refitted
    and evaluated at ``x_eval``: kernel ``K = (⟨x, x'⟩/p + coef0)^degree``, no
    intercept, leave-one-out residual ``aᵢ / [(K + λI)⁻¹]ᵢᵢ`` with ``a = (K + λI)⁻¹ y``
    (the closed form of the LOO refit; Rifkin & Lippert 2007).

    Parameters
    ----------
    x_train : ndarray, shape (B, m, p)
    y_train : ndarray, shape (m,)
    x_eval : ndarray, shape (B, n_eval, p)
    alphas : ndarray, shape (A,)
    degree, coef0 : polynomial kernel parameters.

    Returns
    -------
    predictions : ndarray, shape (B, n_eval)
    chosen_alpha : ndarray, shape (B,)
    """
    p = x_train.shape[2]
    gamma = 1.0 / p
    k_train = (gamma * (x_train @ x_train.transpose(0, 2, 1)) + coef0) ** degree
    lam, q = _batched_eigh(k_train)
    qty = np.einsum("bij,i->bj", q, y_train)
    inv = 1.0 / (lam[:, None, :] + alphas[None, :, None])          # (B, A, m)
    dual = np.einsum("bij,baj,bj->bai", q, inv, qty)               # (B, A, m)
    diag_inv = np.einsum("bij,baj->bai", q ** 2, inv)              # (B, A, m)
    loo = dual / diag_inv
    best = np.argmin((loo ** 2).mean(axis=2), axis=1)
    chosen = alphas[best]
    a = dual[np.arange(len(best)), best]                           # (B, m)
    k_eval = (gamma * (x_eval @ x_train.transpose(0, 2, 1)) + coef0) ** degree
    return np.einsum("bei,bi->be", k_eval, a), chosen


#: Ridge penalties of the baseline that the IRT methods are compared with
#: (:func:`ridge_fit_predict`).
RIDGE_ALPHAS = np.logspace(-3, 4, 15)


def ridge_fit_predict(x: np.ndarray, y: np.ndarray, x_new: np.ndarray) -> np.ndarray:
    """Fit :class:`sklearn.linear_model.RidgeCV` of ``y`` on ``x`` and predict ``x_new``.

    The baseline of the IRT methods' model criticism (:mod:`coreval.model_check`): a
    linear map of the coreset answers, random++'s predictor. The penalty is chosen from
    :data:`RIDGE_ALPHAS` by the closed-form leave-one-out error (generalised
    cross-validation, Golub, Heath & Wahba 1979). Rows of ``x`` with a missing answer
    are left out of the fit; a row of ``x_new`` with one is predicted as NaN.

    Parameters
    ----------
    x : ndarray, shape (n_models, k)
        Coreset answers of the training models.
    y : ndarray, shape (n_models,)
        Their full scores.
    x_new : ndarray, shape (n_new, k)
        Coreset answers of the models to predict.

    Returns
    -------
    ndarray, shape (n_new,)
    """
    from sklearn.linear_model import RidgeCV

    x, y, x_new = (np.asarray(v, dtype=float) for v in (x, y, x_new))
    keep = ~np.isnan(x).any(axis=1)
    out = np.full(x_new.shape[0], np.nan)
    if keep.sum() < 2:
        return out
    model = RidgeCV(alphas=RIDGE_ALPHAS).fit(x[keep], y[keep])
    ok = ~np.isnan(x_new).any(axis=1)
    if ok.any():
        out[ok] = model.predict(x_new[ok])
    return out


def ridge_baseline(sub: ScoreMatrix, coreset, x: np.ndarray) -> np.ndarray:
    """:func:`ridge_fit_predict` on a fold: ``sub``'s full scores on its ``coreset`` answers.

    The ``baseline`` of :func:`coreval.base.out_of_fold`: fitted on the fold's models
    with the fold's coreset, it predicts the held-out models from the same answers ``x``
    that the method predicts them from.
    """
    return ridge_fit_predict(sub.values[:, coreset.indices], sub.summary_scores(), x)
