"""Uniformly random coreset (the ``random`` baseline of the mRMR paper)."""

from __future__ import annotations

import numpy as np

from coreval.base import Coreset, Selector
from coreval.data.matrix import ScoreMatrix


class RandomSelector(Selector):
    """Choose ``k`` columns uniformly at random without replacement.

    The draw is ``np.random.RandomState(seed).permutation(n_items)[:k]``: the
    legacy Mersenne-Twister stream is used on purpose, because it is exactly what
    the reference code (sambowyer/mrmr_eval, ``RandomSampling`` after
    ``np.random.seed(seed)``) draws, so the same seed gives the same items.
    The selector never reads the scores (cold start).

    Parameters
    ----------
    k : int
        Number of columns.
    seed : int
        Seed of the legacy RandomState.

    References
    ----------
    Bowyer, S. et al. "Efficient Benchmarking Is Just Feature Selection and Multiple
    Regression", baselines ``random`` / ``random+`` / ``random++``.
    """

    uses_source_models = False

    def __init__(self, k: int = 10, seed: int = 0) -> None:
        self.k = k
        self.seed = seed

    def _select(self, source: ScoreMatrix, k: int) -> Coreset:
        # Legacy RandomState: exact reproduction of the reference's stream (see docstring).
        idx = np.random.RandomState(self.seed).permutation(source.n_items)[:k]
        return Coreset.from_indices(source, idx, method="random", seed=self.seed)
