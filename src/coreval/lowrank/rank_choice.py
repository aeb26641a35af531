"""Choosing the Bayesian low-rank model's rank by PSIS-LOO of the training cells.

Each candidate rank is fitted to the same observed cells and scored by the Pareto-smoothed
importance-sampling estimate of its leave-one-out expected log predictive density
(Vehtari, Gelman & Gabry 2017, "Practical Bayesian model evaluation using leave-one-out
cross-validation and WAIC"), computed by :func:`arviz.loo` from every observed cell's
log-likelihood (:func:`coreval.lowrank.bayes.cell_log_likelihood`). Leaving one *cell* out
is the held-out-cell question of matrix completion itself, and it needs no refit.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from coreval.errors import ValidationError
from coreval.lowrank.bayes import cell_log_likelihood


def loo_elpd(post: dict[str, np.ndarray], z: np.ndarray, observed: np.ndarray,
             df: float | None) -> tuple[float, float, float]:
    """PSIS-LOO expected log predictive density of the observed cells.

    Parameters
    ----------
    post : dict
        Posterior draws with ``loc`` (n_draws, n_rows, n_cols) and ``sigma`` (n_draws, n_cols).
    z : ndarray of shape (n_rows, n_cols)
        The standardised scores the posterior was fitted to.
    observed : ndarray of bool, same shape
    df : float or None
        Student-t degrees of freedom of the likelihood (``None``: normal).

    Returns
    -------
    elpd, se, share_high_k : float
        The estimate, its standard error, and the share of cells whose Pareto k exceeds 0.7
        (their importance weights are unreliable, typically cells of sparse rows).
    """
    import arviz as az

    ll = cell_log_likelihood(post, z, observed, df)
    # the cells' means as the posterior group: arviz takes the draws' relative efficiency from it
    data = az.from_dict(posterior={"loc": post["loc"][:, observed][None]},
                        log_likelihood={"z": ll[None]})
    with warnings.catch_warnings():  # high Pareto k: returned as a share, not a warning
        warnings.simplefilter("ignore")
        res = az.loo(data, pointwise=True)
    return (float(res["elpd_loo"]), float(res["se"]),
            float(np.mean(np.asarray(res["pareto_k"]) > 0.7)))


def check_ranks(rank: int | Sequence[int]) -> tuple[int, ...]:
    """Candidate ranks as a tuple; raises a :class:`ValidationError` naming a bad one."""
    ranks = (rank,) if isinstance(rank, int | np.integer) else tuple(rank)
    if not ranks or any(isinstance(r, bool) or not isinstance(r, int | np.integer) or r < 0
                        for r in ranks):
        raise ValidationError(f"rank must be a non-negative integer or a non-empty sequence of "
                              f"them, got {rank!r}")
    if len(set(ranks)) != len(ranks):
        raise ValidationError(f"rank candidates repeat: {ranks}")
    return tuple(int(r) for r in ranks)


def fit_best_rank(fit: Callable[[int], dict[str, np.ndarray]], ranks: Sequence[int],
                  z: np.ndarray, observed: np.ndarray, df: float | None,
                  ) -> tuple[dict[str, np.ndarray], dict[str, Any] | None]:
    """Fit every candidate rank and keep the posterior with the highest PSIS-LOO elpd.

    Parameters
    ----------
    fit : callable
        ``fit(rank) -> posterior draws`` on the cells ``observed`` of ``z``.
    ranks : sequence of int
        Candidates (:func:`check_ranks`); ties go to the earlier one.
    z, observed, df
        As in :func:`loo_elpd`.

    Returns
    -------
    posterior : dict
        The chosen rank's draws (only the best candidate's draws are kept in memory).
    details : dict or None
        ``rank`` (the choice), and per candidate ``elpd``, ``elpd_se`` and
        ``share_high_pareto_k``; None for a single candidate (no LOO is computed).
    """
    ranks = check_ranks(tuple(ranks))
    if len(ranks) == 1:
        return fit(ranks[0]), None
    scores: dict[int, tuple[float, float, float]] = {}
    best, chosen = None, ranks[0]
    for r in ranks:
        candidate = fit(r)
        scores[r] = loo_elpd(candidate, z, observed, df)
        if best is None or scores[r][0] > scores[chosen][0]:
            best, chosen = candidate, r
    return best, {"rank": chosen, "elpd": {r: v[0] for r, v in scores.items()},
                  "elpd_se": {r: v[1] for r, v in scores.items()},
                  "share_high_pareto_k": {r: v[2] for r, v in scores.items()}}
