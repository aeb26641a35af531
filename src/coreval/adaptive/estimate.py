"""The full benchmark score of the model under test: mean, variance and interval.

With ``O = Σ_{i asked} w_i y_i`` the observed part, and on each posterior node ``k``

    m_k = Σ_{u unasked} w_u p_uk,        n_k = Σ_{u unasked} w_u² p_uk (1 - p_uk),

the full score ``T = O + Σ_u w_u y_u`` has posterior mean ``O + Σ_k π_k m_k`` and
variance ``Var_π(m) + E_π(n) + (τ g)²`` (the unanswered items' Bernoulli noise, the
uncertainty of the ability and item parameters, and the misfit term). ``τ`` is the
misfit standard deviation of a score predicted from no answers, and ``g`` the bank's
misfit shape (:func:`coreval.adaptive.misfit.misfit_factor`), by default
``ρ = Σ_{u unasked} w_u / Σ_i w_i``, the share of the score still predicted: the model's
misfit only bears on the items it predicts, so it vanishes once every item is answered.
The other shapes also scale it with the predicted score. The interval is taken from
draws: a node by its weight, then Bernoulli answers to the unasked items, plus
``N(0, (τ g)²)``.
"""

from __future__ import annotations

import zlib

import numpy as np

from coreval.adaptive.misfit import misfit_factor
from coreval.adaptive.state import AdaptiveState
from coreval.base import Prediction

#: Nodes whose posterior weight is below this fraction of the largest are ignored.
NODE_TOLERANCE = 1e-10


def active_nodes(state: AdaptiveState) -> tuple[np.ndarray, np.ndarray]:
    """Weights ``π`` (K,) and probabilities ``p`` (K, N) of the nodes that carry weight."""
    w = state.weights().ravel()
    keep = np.flatnonzero(w > NODE_TOLERANCE * w.max())
    probs = state.probs.reshape(-1, state.bank.n_items)[keep]
    return w[keep] / w[keep].sum(), probs


def fitted_moments(state: AdaptiveState) -> tuple[float, float]:
    """Posterior mean and variance of the full score without the misfit term
    (``O + Σ_k π_k m_k`` and ``Var_π(m) + E_π(n)``)."""
    bank = state.bank
    pi, p = active_nodes(state)
    rest = state.unasked
    w = bank.weights[rest]
    observed = float(bank.weights[state.asked] @ state.responses)
    m = p[:, rest] @ w
    n = (p[:, rest] * (1.0 - p[:, rest])) @ w**2
    mean_m = float(pi @ m)
    return observed + mean_m, float(pi @ (m - mean_m) ** 2 + pi @ n)


def score_moments(state: AdaptiveState) -> tuple[float, float]:
    """Posterior mean and variance of the full score (module docstring)."""
    mean, variance = fitted_moments(state)
    return mean, variance + _misfit_sd(state, mean) ** 2


def unasked_share(state: AdaptiveState) -> float:
    """``ρ``: the share of the full score's weight on items not yet answered."""
    w = state.bank.weights
    return float(w[state.unasked].sum() / w.sum())


def misfit_sd(state: AdaptiveState) -> float:
    """``τ g``: the misfit standard deviation of the full score at this state."""
    return _misfit_sd(state, fitted_moments(state)[0])


def _misfit_sd(state: AdaptiveState, mean: float) -> float:
    """``τ g(ρ, m)`` with the full score's fitted ``mean`` (``m`` = mean / total weight)."""
    bank = state.bank
    if bank.tau == 0:
        return 0.0
    total = float(bank.weights.sum())
    score = mean / total if total > 0 else 0.0
    return bank.tau * float(misfit_factor(bank.misfit_shape, unasked_share(state), score))


def _rng(state: AdaptiveState, seed: int) -> np.random.Generator:
    """A stream fixed by the seed and the answers so far (same answers, same interval)."""
    key = np.concatenate([state.asked.astype(float), state.responses]).tobytes()
    return np.random.default_rng([int(seed), zlib.crc32(key)])


def estimate(state: AdaptiveState, *, level: float = 0.9, num_draws: int = 2000,
             seed: int = 0) -> Prediction:
    """The predicted full score with an equal-tailed ``level`` interval and its draws."""
    bank = state.bank
    mean, _ = fitted_moments(state)
    pi, p = active_nodes(state)
    rng = _rng(state, seed)
    rest = state.unasked
    nodes = rng.choice(len(pi), size=num_draws, p=pi)
    probs = p[nodes][:, rest]                                     # (M, U)
    answers = rng.random(probs.shape) < probs
    draws = float(bank.weights[state.asked] @ state.responses) + answers @ bank.weights[rest]
    if bank.tau > 0:
        draws = draws + rng.normal(0.0, _misfit_sd(state, mean), size=num_draws)
    alpha = 1.0 - level
    lower, upper = np.quantile(draws, [alpha / 2, 1 - alpha / 2])
    total = float(bank.weights.sum())
    return Prediction(mean=np.array([mean]), lower=np.array([max(0.0, lower)]),
                      upper=np.array([min(total, upper)]), level=level,
                      interval="posterior", draws=draws[:, None])
