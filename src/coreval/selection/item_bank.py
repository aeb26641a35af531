"""The item bank of an adaptive test as a selector: every item, asked at most ``k`` per model.

An adaptive test has no fixed coreset: each target model gets its own items. In the
harness, its "coreset" is the whole bank (items the test may draw from), with
``max_items = k``; the IRT fit it needs is made here and shared with the adaptive
predictor (:class:`coreval.prediction.adaptive.AdaptivePredictor`) through the
caller's cache.
"""

from __future__ import annotations

import numpy as np

from coreval.base import Coreset, Selector
from coreval.data.matrix import ScoreMatrix
from coreval.irt.fit_spec import IRTFitSpec
from coreval.irt.source_fit import BAYES_FIT, fit_source_irt


class ItemBankSelector(Selector):
    """Every item as the bank of an adaptive test, with a budget of ``k`` items per model.

    Parameters
    ----------
    k : int
        Items each target model answers (at most).
    irt : IRTFitSpec
        The IRT fit of the source models (a logistic model, D ≥ 1).
    seed : int
    show_progress : bool, optional

    Attributes
    ----------
    fit_ : IRTFit
    """

    needs_binary = True

    def __init__(self, k: int = 10, *, irt: IRTFitSpec = BAYES_FIT, seed: int = 0,
                 show_progress: bool | None = None) -> None:
        self.k = k
        self.irt = irt
        self.seed = seed
        self.show_progress = show_progress

    def _select(self, source: ScoreMatrix, k: int) -> Coreset:
        self.fit_ = fit_source_irt(source, self.irt, seed=self.seed, cache=self.cache_,
                                   show_progress=self.show_progress)
        return Coreset.from_indices(source, np.arange(source.n_items), method="item-bank",
                                    max_items=k)
