"""Stopping rules: each is ``rule(state) -> bool`` (True = stop); :func:`any_of` combines.

* :func:`max_items`: a fixed number of items;
* :func:`theta_sd`: the posterior SD of the ability (the classic CAT stop);
* :func:`score_width`: the width of the ``level`` interval of the full score (the
  default, e.g. 4 pp at 90 %), from the normal approximation of its posterior
  (:func:`coreval.adaptive.estimate.score_moments`; cheap enough to check after every
  item);
* any callable ``f(state) -> bool``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.stats import norm

from coreval.adaptive.estimate import score_moments
from coreval.adaptive.state import AdaptiveState
from coreval.errors import ValidationError

StopRule = Callable[[AdaptiveState], bool]


def max_items(n: int) -> StopRule:
    """Stop after ``n`` items."""
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise ValidationError(f"max_items needs a positive integer, got {n!r}")
    return lambda state: state.n_asked >= n


def theta_sd(threshold: float) -> StopRule:
    """Stop once the ability's posterior SD is at most ``threshold`` (D ≥ 2: on every axis)."""
    if not threshold > 0:
        raise ValidationError(f"theta_sd needs a positive threshold, got {threshold!r}")
    return lambda state: bool(np.max(state.theta_moments()[1]) <= threshold)


def score_width(width: float = 0.04, level: float = 0.9) -> StopRule:
    """Stop once the full score's ``level`` interval is at most ``width`` wide."""
    if not 0 < width:
        raise ValidationError(f"score_width needs a positive width, got {width!r}")
    if not 0 < level < 1:
        raise ValidationError(f"level must be in (0, 1), got {level!r}")
    z = float(norm.ppf(0.5 + level / 2))
    return lambda state: 2 * z * np.sqrt(score_moments(state)[1]) <= width


def any_of(*rules: StopRule) -> StopRule:
    """Stop when any of ``rules`` says so (or when no item is left)."""
    for rule in rules:
        if not callable(rule):
            raise ValidationError(f"stopping rules must be callables, got {rule!r}")
    return lambda state: len(state.unasked) == 0 or any(bool(r(state)) for r in rules)
