"""Adaptive tests as a predictor, so that the harness runs them on the same splits.

Each target model takes an adaptive test (:mod:`coreval.adaptive`) over the bank of
:class:`coreval.selection.item_bank.ItemBankSelector`, answering from its recorded row
(items it has no score for are never asked), and stops at the budget or when the full
score's interval is narrow enough.
"""

from __future__ import annotations

import numpy as np

from coreval.adaptive import AdaptiveTest, ItemBank, any_of, max_items, score_width
from coreval.base import Coreset, Prediction, Predictor
from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError
from coreval.irt.fit_spec import IRTFitSpec
from coreval.irt.source_fit import BAYES_FIT, fit_source_irt


class AdaptivePredictor(Predictor):
    """Run an adaptive test per target model and predict its full score.

    Parameters
    ----------
    rule : {"score", "fisher", "kl"}
        Selection rule (:mod:`coreval.adaptive.select`).
    width : float, optional
        Also stop once the ``level`` interval of the full score is at most this wide.
    batch : int
        Items per batch.
    randomesque : int
        Exposure control: pick among this many best items.
    tau : float
        Misfit standard deviation of the full score (:class:`coreval.adaptive.ItemBank`).
    irt : IRTFitSpec
        The IRT fit (the bank selector's, through the caller's cache).
    level : float
    seed : int
    show_progress : bool, optional

    Attributes
    ----------
    bank_ : ItemBank
    items_used_ : ndarray
        Items each model of the last :meth:`predict` answered.
    """

    needs_binary = True
    allows_missing_responses = True

    def __init__(self, *, rule: str = "score", width: float | None = None, batch: int = 1,
                 randomesque: int = 1, tau: float = 0.0, irt: IRTFitSpec = BAYES_FIT,
                 level: float = 0.9, seed: int = 0, show_progress: bool | None = None) -> None:
        self.rule = rule
        self.width = width
        self.batch = batch
        self.randomesque = randomesque
        self.tau = tau
        self.irt = irt
        self.level = level
        self.seed = seed
        self.show_progress = show_progress

    def _fit(self, source: ScoreMatrix, coreset: Coreset) -> None:
        if coreset.max_items is None:
            raise ValidationError("AdaptivePredictor needs an item bank "
                                  "(ItemBankSelector) as its coreset")
        irt_fit = fit_source_irt(source, self.irt, seed=self.seed, cache=self.cache_,
                                 show_progress=self.show_progress)
        bank = ItemBank.from_fit(irt_fit, source, tau=self.tau)
        self.bank_ = ItemBank(items=bank.items[coreset.indices], a=bank.a[:, coreset.indices],
                              d=bank.d[:, coreset.indices],
                              c=None if bank.c is None else bank.c[:, coreset.indices],
                              weights=bank.weights[coreset.indices],
                              groups=None if bank.groups is None else
                              bank.groups[coreset.indices], tau=self.tau)

    @property
    def stop_(self):
        """The stopping rule: the budget, or an interval of at most ``width``.

        Derived from the parameters and the coreset rather than stored, so that the
        fitted state is data only (a saved selection holds no functions).
        """
        stops = [max_items(int(self.coreset_.max_items))]
        if self.width is not None:
            stops.append(score_width(self.width, self.level))
        return any_of(*stops)

    def _predict(self, x: np.ndarray) -> Prediction:
        means, lowers, uppers, used = [], [], [], []
        for j, row in enumerate(x):
            answered = ~np.isnan(row)
            test = AdaptiveTest(self.bank_, rule=self.rule, stop=self.stop_,
                                randomesque=self.randomesque,
                                exposure=answered.astype(float), level=self.level,
                                seed=self.seed + j)
            test.stop = any_of(self.stop_, lambda state, n=int(answered.sum()):
                               state.n_asked >= n)
            pred = test.run(lambda items, row=row: row[self.bank_.positions(items)],
                            b=self.batch)
            means.append(pred.mean[0])
            lowers.append(pred.lower[0])
            uppers.append(pred.upper[0])
            used.append(test.state.n_asked)
        self.items_used_ = np.asarray(used)
        return Prediction(mean=np.asarray(means), lower=np.asarray(lowers),
                          upper=np.asarray(uppers), level=self.level, interval="posterior")
