""":class:`AdaptiveTest`, a stateful object over the functional core, for notebooks and loops.

>>> test = AdaptiveTest(bank, rule="score", stop=score_width(0.04))   # doctest: +SKIP
>>> while not test.done:                                               # doctest: +SKIP
...     items = test.next_items(b=4)
...     test.answer(items, run_model_on(items))
>>> test.estimate()                                                    # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from coreval.adaptive.bank import ItemBank
from coreval.adaptive.estimate import estimate
from coreval.adaptive.select import Rule, next_items
from coreval.adaptive.state import AdaptiveState, init, update
from coreval.adaptive.stop import StopRule, any_of, max_items, score_width
from coreval.base import Prediction
from coreval.errors import ValidationError


class AdaptiveTest:
    """One model's adaptive test: choose items, record answers, stop, predict the score.

    Parameters
    ----------
    bank : ItemBank
    rule : {"score", "fisher", "kl"} or callable
        Selection rule (:mod:`coreval.adaptive.select`).
    stop : callable, optional
        Stopping rule (:mod:`coreval.adaptive.stop`); default: the 90 % interval of the
        full score at most 4 pp wide, or 10 % of the bank answered.
    randomesque, exposure, content
        Exposure control and content balancing (:func:`coreval.adaptive.next_items`).
    level : float
        Level of the reported interval.
    seed : int
        Seed of the test's Sympson-Hetter draws (:func:`coreval.adaptive.init`), of the
        randomesque choices and of the interval's draws.

    Attributes
    ----------
    state : AdaptiveState
        The current state (the functional core's value).
    """

    def __init__(self, bank: ItemBank, *, rule: str | Rule = "score",
                 stop: StopRule | None = None, randomesque: int = 1,
                 exposure: np.ndarray | None = None, content: Mapping[str, float] | None = None,
                 level: float = 0.9, seed: int = 0) -> None:
        if not isinstance(bank, ItemBank):
            raise ValidationError(f"AdaptiveTest needs an ItemBank, got {type(bank).__name__}")
        self.bank = bank
        self.rule = rule
        self.stop = stop if stop is not None else any_of(
            score_width(0.04, level), max_items(max(1, bank.n_items // 10)))
        self.randomesque = randomesque
        self.exposure = exposure
        self.content = content
        self.level = level
        self.seed = seed
        self.state: AdaptiveState = init(bank, seed=seed)
        self._rng = np.random.default_rng(seed)

    @property
    def done(self) -> bool:
        """Whether the stopping rule fires, or no item is left that the test may ask
        (every item answered, or the rest passed over by exposure control)."""
        return (len(self.state.administrable(self.exposure)) == 0
                or bool(self.stop(self.state)))

    @property
    def asked(self) -> list[str]:
        """Ids of the items answered so far, in order."""
        return [str(i) for i in self.bank.items[self.state.asked]]

    def next_items(self, b: int = 1) -> list[str]:
        """Ids of the next ``b`` items to run (at most as many as are left)."""
        b = min(b, len(self.state.administrable(self.exposure)))
        positions = next_items(self.state, self.rule, b, randomesque=self.randomesque,
                               exposure=self.exposure, content=self.content, rng=self._rng)
        return [str(i) for i in self.bank.items[positions]]

    def answer(self, items, responses) -> AdaptiveTest:
        """Record the model's 0/1 answers to ``items`` (ids)."""
        self.state = update(self.state, np.asarray(items).astype(str), responses)
        return self

    def estimate(self) -> Prediction:
        """The predicted full score with its ``level`` interval."""
        return estimate(self.state, level=self.level, seed=self.seed)

    def run(self, answer: Callable[[list[str]], np.ndarray], *, b: int = 1,
            max_steps: int | None = None) -> Prediction:
        """Ask, answer and update until the stopping rule fires; return the estimate.

        ``answer(items) -> responses`` runs the model on the given item ids.
        """
        steps = 0
        while not self.done and (max_steps is None or steps < max_steps):
            items = self.next_items(b)
            self.answer(items, np.asarray(answer(items), dtype=float))
            steps += 1
        return self.estimate()


def calibrate_exposure(bank: ItemBank, r_max: float = 0.5, *, n_items: int,
                       rule: str | Rule = "score", n_simulees: int = 200, n_rounds: int = 5,
                       responses: np.ndarray | None = None, seed: int = 0) -> np.ndarray:
    """Sympson-Hetter exposure parameters so that no item is given to more than ``r_max``.

    Tests of ``n_items`` items are run on simulees. After each round, an item whose
    administration rate exceeds ``r_max`` has its ``k_i`` multiplied by
    ``r_max / rate`` (the iterative adjustment of Sympson & Hetter 1985, as in van der
    Linden 2003).

    Parameters
    ----------
    bank : ItemBank
    r_max : float
        Largest share of tests an item may appear in.
    n_items : int
        Length of each test.
    rule : str or callable
        The selection rule the tests will use.
    n_simulees : int
        Simulees per round when ``responses`` is not given: abilities drawn from
        N(0, I), answers from the bank's first item-parameter draw.
    n_rounds : int
        Rounds of adjustment.
    responses : ndarray, shape (n_models, n_items of the bank), optional
        Recorded 0/1 answers (NaN: no answer, never asked) of real models, e.g. the
        source models: each round, every row takes a test answering from its record.
        This matches the ability distribution of the models the bank will test, which a
        standard-normal population may not.
    seed : int

    Returns
    -------
    ndarray (N,)
        The exposure parameters ``k`` for :func:`coreval.adaptive.next_items`.
    """
    if not 0 < r_max <= 1:
        raise ValidationError(f"r_max must be in (0, 1], got {r_max!r}")
    rng = np.random.default_rng(seed)
    if responses is not None:
        responses = np.asarray(responses, dtype=float)
        if responses.ndim != 2 or responses.shape[1] != bank.n_items:
            raise ValidationError(f"responses must have shape (n_models, {bank.n_items}), "
                                  f"got {responses.shape}")
    k = np.ones(bank.n_items)
    for _ in range(n_rounds):
        selected = np.zeros(bank.n_items)
        if responses is None and bank.dims > 1:
            simulees = [(None, (rng.random(bank.n_items) < bank.probs_at(theta)[0]).astype(float))
                        for theta in rng.normal(size=(n_simulees, bank.dims))]
        elif responses is None:
            simulees = [(int(np.argmin(np.abs(bank.grid - theta))), None)
                        for theta in rng.normal(size=n_simulees)]
        else:
            simulees = [(None, row) for row in responses]
        for g, row in simulees:
            state = init(bank, seed=int(rng.integers(2**32)))
            allowed = k if row is None else k * ~np.isnan(row)
            for _ in range(min(n_items, len(state.administrable(allowed)))):
                item = next_items(state, rule, 1, exposure=allowed, rng=rng)
                selected[item] += 1
                y = float(rng.random() < bank.probs[0, g, item[0]]) if row is None \
                    else float(row[item[0]])
                state = update(state, item, [y])
        rate = selected / len(simulees)
        k = np.where(rate > r_max, np.minimum(1.0, k * r_max / np.maximum(rate, 1e-12)), k)
    return k
