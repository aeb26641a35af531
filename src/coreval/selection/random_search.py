"""Random search: keep the best of many random coresets on held-out source models.

Reference: ``random_search_and_learn`` of sambowyer/mrmr_eval (the ``search+``
baseline of the mRMR paper). The inner ridge / kernel-ridge fits are computed
in closed form for a whole batch of candidate coresets at once (see
:func:`ridge_loo_batch` and :func:`kernel_ridge_loo_batch`) instead of calling
``RidgeCV`` / ``GridSearchCV`` a thousand times; both helpers are checked
against scikit-learn in the tests.
"""

from __future__ import annotations

import numpy as np

from coreval._progress import progress_bar
from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError
from coreval.prediction.ridge import default_alphas
from coreval.selection.base import Coreset, Selector


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


class RandomSearchSelector(Selector):
    """Best of ``n_search`` random coresets, judged on held-out source models.

    Reproduces the reference ``random_search_and_learn``: with the legacy stream
    ``RandomState(seed)``, ``order = permutation(n_source)``; the first
    ``int(0.75 n_source)`` models of ``order`` are the inner training set, the rest
    the inner validation set. Then ``n_search`` times: a coreset
    ``permutation(n_items)[:k]`` from the same stream, a ridge (λ by leave-one-out
    over the reference grid; polynomial kernel ridge when ``kernel=True``) fitted on
    the inner training models, and its mean absolute error on the validation
    models. The first coreset with the smallest error is kept. Pair it with a
    ridge (``search+``) or kernel-ridge (``search++``) predictor for the final fit on
    all source models.

    Parameters
    ----------
    k : int
        Coreset size.
    n_search : int
        Number of random coresets (the reference tutorial uses 1000).
    seed : int
        Seed of the legacy RandomState.
    kernel : bool
        Score candidates with degree-2 polynomial kernel ridge instead of ridge.
    alphas : array-like, optional
        λ grid (default: the reference grid for the data type).
    batch_size : int
        Candidates evaluated per batched linear-algebra call.

    References
    ----------
    Bowyer, S. et al. "Efficient Benchmarking Is Just Feature Selection and Multiple
    Regression", baseline ``search+``.
    """

    min_source_models = 4

    def __init__(self, k: int = 10, n_search: int = 1000, seed: int = 0, kernel: bool = False,
                 alphas=None, batch_size: int = 100) -> None:
        self.k = k
        self.n_search = n_search
        self.seed = seed
        self.kernel = kernel
        self.alphas = alphas
        self.batch_size = batch_size

    def _select(self, source: ScoreMatrix, k: int) -> Coreset:
        if not source.fully_observed:
            raise ValidationError(
                "RandomSearchSelector needs a fully observed source matrix; "
                f"{int((~source.observed).sum())} entries are NaN"
            )
        if int(self.n_search) < 1:
            raise ValidationError(f"n_search must be a positive integer, got {self.n_search!r}")
        values = source.values
        y = source.summary_scores()
        n_src, n_items = values.shape
        grid = default_alphas(source) if self.alphas is None else np.asarray(self.alphas, float)
        # Legacy RandomState: exact reproduction of the reference's global np.random stream.
        rs = np.random.RandomState(self.seed)
        order = rs.permutation(n_src)
        n_tr = int(n_src * 0.75)
        train, val = order[:n_tr], order[n_tr:]
        candidates = np.stack([rs.permutation(n_items)[:k] for _ in range(int(self.n_search))])
        fit = kernel_ridge_loo_batch if self.kernel else ridge_loo_batch
        maes = np.empty(len(candidates))
        bar = progress_bar(total=len(candidates), desc="random search")
        try:
            for start in range(0, len(candidates), max(1, int(self.batch_size))):
                idx = candidates[start:start + int(self.batch_size)]
                x_tr = values[train][:, idx].transpose(1, 0, 2)    # (B, n_tr, k)
                x_val = values[val][:, idx].transpose(1, 0, 2)     # (B, n_val, k)
                pred, _ = fit(x_tr, y[train], x_val, grid)
                maes[start:start + len(idx)] = np.abs(pred - y[val][None, :]).mean(axis=1)
                bar.update(len(idx))
        finally:
            bar.close()
        maes[~np.isfinite(maes)] = np.inf
        best = int(np.argmin(maes))  # the first of equal minima, as the reference's strict "<"
        return Coreset.from_indices(source, candidates[best], method="random-search",
                                    seed=self.seed, best_mae=float(maes[best]),
                                    best_candidate=best, n_search=int(self.n_search))
