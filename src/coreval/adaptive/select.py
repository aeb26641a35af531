"""Choosing the next items: selection rules, exposure control, content balancing, batches.

A rule is a pure function ``rule(state) -> criterion`` over the unasked items (larger
is better); :func:`next_items` takes the best ``b`` of them under the exposure and
content constraints.

Rules
-----
``fisher``
    Fisher information at the posterior mean ability, averaged over the item-parameter
    draws by their posterior weight (Lord 1980; the catsim / mirtCAT default). With
    D ≥ 2 abilities the information is a matrix, and the rule maximises the determinant
    of the posterior precision plus the item's information (D-optimality, Segall 1996;
    mirtCAT's ``"Drule"``).
``kl``
    Posterior-weighted Kullback-Leibler information (Chang & Ying 1996):
    ``Σ_k π_k KL(p_i(θ̂) ‖ p_i(θ_k))``.
``score``
    Expected reduction of the posterior variance of the *full benchmark score* if the
    item is answered (:func:`score_variance_reduction`). It is target-aware: an item
    that tells much about θ but whose answer barely moves the predicted score (weight,
    or ability region the score is insensitive to) is not preferred.

Batches take the ``b`` best items by the criterion of the current state (no fantasised
answers in between), the usual choice for batched inference.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from coreval.adaptive.estimate import active_nodes
from coreval.adaptive.state import AdaptiveState
from coreval.errors import ValidationError

Rule = Callable[[AdaptiveState], np.ndarray]


def fisher_information(state: AdaptiveState) -> np.ndarray:
    """Fisher information of each unasked item at the posterior mean ability.

    3PL: ``I = a² (q/p) ((p - c)/(1 - c))²``, which is ``a² p q`` without guessing.
    D ≥ 2: the item's information matrix is ``f a a'`` (``f`` the factor above without
    ``a²``), and ``det(P + f a a') = det(P) (1 + f a' Σ a)`` with ``P = Σ⁻¹`` the
    posterior precision (matrix determinant lemma), so the D-optimal criterion is
    ``f a' Σ a`` (Segall 1996), averaged over the draws; with D = 1 it is ``Σ`` times the
    information, the same order.
    """
    bank = state.bank
    theta, _ = state.theta_moments()
    draw_weight = state.weights().sum(axis=1)                    # (S,)
    rest = state.unasked
    a, d = bank.a[:, rest], bank.d[:, rest]
    if bank.dims > 1:
        z = np.clip(a @ theta + d, -30.0, 30.0)
        spread = np.einsum("snk,kl,snl->sn", a, state.theta_covariance(), a)   # a' Σ a
        return draw_weight @ (_information_factor(bank, rest, z) * spread)
    z = np.clip(a * theta + d, -30.0, 30.0)
    return draw_weight @ (a**2 * _information_factor(bank, rest, z))


def kl_information(state: AdaptiveState) -> np.ndarray:
    """Posterior-weighted KL information (Chang & Ying 1996) of each unasked item.

    ``Σ_{s,g} π_sg KL(p_s(θ̂) ‖ p_sg)`` with ``θ̂`` the posterior mean (not a grid node),
    split so that no (draw, node, item) array is formed: with ``p̂_s = p_s(θ̂)``,
    ``q = 1 - p`` and the bank's cached logarithms,

        Σ_s π_s (p̂_s log p̂_s + q̂_s log q̂_s) - Σ_s (p̂_s Σ_g π_sg log p_sg
                                                   + q̂_s Σ_g π_sg log q_sg),

    ``π_s = Σ_g π_sg``; the inner sums over the grid are one batched matrix product.
    """
    bank = state.bank
    pi = state.weights()                                          # (S, G)
    theta, _ = state.theta_moments()
    log_p, log_q = state.log_probs                                # (S, G, N) each
    p_hat = bank.probs_at(theta)                                  # (S, N)
    q_hat = 1.0 - p_hat
    expected_log_p = np.matmul(pi[:, None, :], log_p)[:, 0, :]    # (S, N)
    expected_log_q = np.matmul(pi[:, None, :], log_q)[:, 0, :]
    entropy_part = pi.sum(axis=1) @ (p_hat * np.log(p_hat) + q_hat * np.log1p(-p_hat))
    cross_part = (p_hat * expected_log_p + q_hat * expected_log_q).sum(axis=0)
    return (entropy_part - cross_part)[state.unasked]


def score_variance_reduction(state: AdaptiveState) -> np.ndarray:
    """Expected reduction of the full score's posterior variance from answering each item.

    With ``m``, ``n`` as in :mod:`coreval.adaptive.estimate` and, for item ``i``,
    ``m' = m - w_i p_i``, ``n' = n - w_i² p_i (1 - p_i)``, the expected variance after
    the answer ``y`` is ``Σ_y P(y) [Var_{π_y}(m') + E_{π_y}(n')]`` with ``π_y ∝ π p_i^y
    (1 - p_i)^{1-y}``, which sums to

        E_π[m'²] + E_π[n'] - (E_π[p_i m'])² / P(y=1) - (E_π[(1 - p_i) m'])² / P(y=0);

    the criterion is the current variance minus that (one pass of matrix products over
    the nodes, O(K · N)).
    """
    bank = state.bank
    pi, p_all = active_nodes(state)
    rest = state.unasked
    p = p_all[:, rest]                                            # (K, U)
    w = bank.weights[rest]
    m = p @ w
    n = (p * (1.0 - p)) @ w**2
    var_now = pi @ (m - pi @ m) ** 2 + pi @ n
    pm, pm2, pn = pi * m, pi * m**2, pi * n
    e_p = pi @ p
    e_p2 = pi @ p**2
    e_pm = pm @ p
    e_m2 = pm2.sum() - 2 * w * e_pm + w**2 * e_p2
    e_n = pn.sum() - w**2 * (e_p - e_p2)
    s1 = e_pm - w * e_p2                                          # E[p m']
    s0 = (pm.sum() - w * e_p) - s1                                # E[(1 - p) m']
    p1 = np.clip(e_p, 1e-12, 1 - 1e-12)
    expected = e_m2 + e_n - s1**2 / p1 - s0**2 / (1.0 - p1)
    return var_now - expected


def _information_factor(bank, rest: np.ndarray, z: np.ndarray) -> np.ndarray:
    """``p* q*`` (2PL) or ``(q/p) ((p - c)/(1 - c))²`` (3PL) at logits ``z`` (S, U)."""
    p_star = 1.0 / (1.0 + np.exp(-z))
    if bank.c is None:
        return p_star * (1.0 - p_star)
    c = bank.c[:, rest]
    p = c + (1.0 - c) * p_star
    return ((1.0 - p) / p) * ((p - c) / (1.0 - c)) ** 2


RULES: dict[str, Rule] = {"fisher": fisher_information, "kl": kl_information,
                          "score": score_variance_reduction}


def get_rule(rule: str | Rule) -> Rule:
    """A rule by name (:data:`RULES`) or a callable ``rule(state) -> criterion``."""
    if callable(rule):
        return rule
    if rule not in RULES:
        raise ValidationError(f"unknown selection rule {rule!r}; choose one of "
                              f"{', '.join(RULES)} or pass a callable")
    return RULES[rule]


def _content_order(state: AdaptiveState, targets: Mapping[str, float],
                   chosen: list[int]) -> list[str]:
    """Groups by their deficit ``target share - share given`` (Kingsbury & Zara 1989)."""
    groups = state.bank.groups
    if groups is None:
        raise ValidationError("content balancing needs item groups in the bank")
    unknown = sorted(set(targets) - set(groups))
    if unknown:
        raise ValidationError(f"content targets for unknown groups: {', '.join(unknown)}")
    total = float(sum(targets.values()))
    if total <= 0 or any(v < 0 for v in targets.values()):
        raise ValidationError("content targets must be non-negative shares with a positive sum")
    given = groups[np.concatenate([state.asked, np.asarray(chosen, dtype=np.intp)])]
    share = {g: float(np.mean(given == g)) if len(given) else 0.0 for g in targets}
    return sorted(targets, key=lambda g: share[g] - targets[g] / total)


def next_items(state: AdaptiveState, rule: str | Rule = "score", b: int = 1, *,
               randomesque: int = 1, exposure: np.ndarray | None = None,
               content: Mapping[str, float] | None = None,
               rng: np.random.Generator | None = None) -> np.ndarray:
    """Positions of the next ``b`` items to ask.

    Parameters
    ----------
    state : AdaptiveState
    rule : {"score", "fisher", "kl"} or callable
        Selection rule (module docstring).
    b : int
        Batch size.
    randomesque : int
        Pick each item at random among the ``randomesque`` best (Kingsbury & Zara
        1989); 1 = always the best.
    exposure : ndarray (N,), optional
        Sympson-Hetter exposure-control parameters ``k_i`` in [0, 1]: a chosen item is
        administered with probability ``k_i``, else passed over for the rest of this test
        and the next best is taken (Sympson & Hetter 1985; the test's draw
        ``state.exposure_draw[i] < k_i``, made once by :func:`coreval.adaptive.init`;
        calibrate with :func:`coreval.adaptive.calibrate_exposure`).
    content : mapping group -> share, optional
        Target shares of item groups: each item comes from the group furthest below
        its share.
    rng : numpy Generator, optional
        For randomesque (default: seeded by the answers so far).
    """
    if isinstance(b, bool) or not isinstance(b, int | np.integer) or b < 1:
        raise ValidationError(f"b must be a positive integer, got {b!r}")
    if isinstance(randomesque, bool) or not isinstance(randomesque, int | np.integer) \
            or randomesque < 1:
        raise ValidationError(f"randomesque must be a positive integer, got {randomesque!r}")
    rest = state.unasked
    if b > len(rest):
        raise ValidationError(f"asked for {b} items but only {len(rest)} are left")
    if exposure is not None:
        exposure = np.asarray(exposure, dtype=float)
        if exposure.shape != (state.bank.n_items,) or ((exposure < 0) | (exposure > 1)).any():
            raise ValidationError(f"exposure must be {state.bank.n_items} numbers in [0, 1]")
    if rng is None:
        from coreval.adaptive.estimate import _rng

        rng = _rng(state, 0)
    if isinstance(rule, str) and state.n_asked == 0:
        cache = state.bank.prior_criteria
        if rule not in cache:
            cache[rule] = np.asarray(get_rule(rule)(state), dtype=float)
        criterion = cache[rule]
    else:
        criterion = np.asarray(get_rule(rule)(state), dtype=float)
    if criterion.shape != rest.shape:
        raise ValidationError(f"the rule returned {criterion.shape[0]} values for "
                              f"{len(rest)} unasked items")
    available = np.isin(rest, state.administrable(exposure))
    chosen: list[int] = []
    groups = state.bank.groups
    while len(chosen) < b:
        pool = available.copy()
        if content is not None:
            for group in _content_order(state, content, chosen):
                in_group = pool & (groups[rest] == group)
                if in_group.any():
                    pool = in_group
                    break
        candidates = np.flatnonzero(pool)
        if len(candidates) == 0:
            break
        best = candidates[np.argsort(-criterion[candidates], kind="stable")]
        pick = best[rng.integers(min(randomesque, len(best)))]
        available[pick] = False
        chosen.append(int(rest[pick]))
    if len(chosen) < b:
        raise ValidationError("exposure control left too few items to choose from; "
                              "raise the exposure parameters")
    return np.asarray(chosen, dtype=np.intp)
