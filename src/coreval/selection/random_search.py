"""Random search: keep the best of many random coresets on held-out source models.

Reference: ``random_search_and_learn`` of sambowyer/mrmr_eval (the ``search+``
baseline of the mRMR paper). The inner ridge / kernel-ridge fits are computed
in closed form for a whole batch of candidate coresets at once (see
:mod:`coreval.regression.ridge_loo`) instead of calling ``RidgeCV`` /
``GridSearchCV`` a thousand times.
"""

from __future__ import annotations

import numpy as np

from coreval._progress import progress_bar
from coreval.base import Coreset, Selector
from coreval.base.checks import check_positive_int
from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError
from coreval.regression import alpha_grid, kernel_ridge_loo_batch, ridge_loo_batch


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
        n_search = check_positive_int("n_search", self.n_search)
        batch = check_positive_int("batch_size", self.batch_size)
        values = source.values
        y = source.summary_scores()
        n_src, n_items = values.shape
        grid = alpha_grid(self.alphas, source)
        # Legacy RandomState: exact reproduction of the reference's global np.random stream.
        rs = np.random.RandomState(self.seed)
        order = rs.permutation(n_src)
        n_tr = int(n_src * 0.75)
        train, val = order[:n_tr], order[n_tr:]
        candidates = np.stack([rs.permutation(n_items)[:k] for _ in range(n_search)])
        fit = kernel_ridge_loo_batch if self.kernel else ridge_loo_batch
        maes = np.empty(len(candidates))
        bar = progress_bar(total=len(candidates), desc="random search")
        try:
            for start in range(0, len(candidates), batch):
                idx = candidates[start:start + batch]
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
                                    best_candidate=best, n_search=n_search)
