"""Choosing the Bayesian low-rank model's rank by PSIS-LOO of the training cells.

Each candidate rank is fitted to the same observed cells and scored by the Pareto-smoothed
importance-sampling estimate of its leave-one-out expected log predictive density
(Vehtari, Gelman & Gabry 2017, "Practical Bayesian model evaluation using leave-one-out
cross-validation and WAIC"), computed by :func:`arviz.loo` from every observed cell's
log-likelihood (:func:`coreval.lowrank.bayes.cell_log_likelihood`). Leaving one *cell* out
is the held-out-cell question of matrix completion itself, and it needs no refit.

Instead of keeping the best rank, :func:`stack_ranks` mixes the candidates' posterior
predictive distributions with Bayesian stacking weights (Yao, Vehtari, Simpson & Gelman
2018, "Using stacking to average Bayesian predictive distributions"), the weights that
maximise the PSIS-LOO log score of the mixture (:func:`arviz.compare`,
``method="stacking"``).
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
    return _loo_summary(_psis_loo(post, z, observed, df))


def _loo_data(post: dict[str, np.ndarray], z: np.ndarray, observed: np.ndarray,
              df: float | None) -> Any:
    """InferenceData of the observed cells' means and log-likelihood, the input of arviz's LOO."""
    import arviz as az

    ll = cell_log_likelihood(post, z, observed, df)
    # the cells' means as the posterior group: arviz takes the draws' relative efficiency from it
    return az.from_dict(posterior={"loc": post["loc"][:, observed][None]},
                        log_likelihood={"z": ll[None]})


def _psis_loo(post: dict[str, np.ndarray], z: np.ndarray, observed: np.ndarray,
              df: float | None) -> Any:
    """Pointwise PSIS-LOO of the observed cells (arviz's ``ELPDData``)."""
    import arviz as az

    with warnings.catch_warnings():  # high Pareto k: returned as a share, not a warning
        warnings.simplefilter("ignore")
        return az.loo(_loo_data(post, z, observed, df), pointwise=True)


def _loo_summary(res: Any) -> tuple[float, float, float]:
    """``(elpd, se, share of Pareto k > 0.7)`` of an ``ELPDData``."""
    return (float(res["elpd_loo"]), float(res["se"]),
            float(np.mean(np.asarray(res["pareto_k"]) > 0.7)))


def _choice_details(rank: int, scores: dict[int, tuple[float, float, float]]) -> dict[str, Any]:
    """The recorded choice: ``rank`` and per candidate ``elpd``, ``elpd_se``, ``share_high_pareto_k``."""
    return {"rank": rank, "elpd": {r: v[0] for r, v in scores.items()},
            "elpd_se": {r: v[1] for r, v in scores.items()},
            "share_high_pareto_k": {r: v[2] for r, v in scores.items()}}


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
    return best, _choice_details(chosen, scores)


def mixture_counts(weights: np.ndarray, n_draws: int) -> np.ndarray:
    """Draws per component of a mixture of ``n_draws``: ``weights * n_draws``, rounded by
    largest remainder so the counts sum to ``n_draws`` (deterministic, unlike a multinomial).
    """
    weights = np.clip(np.asarray(weights, dtype=float), 0.0, None)  # an optimiser's -1e-17
    raw = weights / np.sum(weights) * n_draws
    counts = np.floor(raw).astype(int)
    order = np.argsort(-(raw - counts), kind="stable")
    counts[order[: n_draws - counts.sum()]] += 1
    return counts


def stack_ranks(fit: Callable[[int], dict[str, np.ndarray]], ranks: Sequence[int],
                z: np.ndarray, observed: np.ndarray, df: float | None,
                ) -> tuple[dict[str, np.ndarray], dict[str, Any] | None]:
    """Fit every candidate rank and mix their posteriors with Bayesian stacking weights.

    The weights ``w`` maximise ``sum_i log sum_k w_k p_k(z_i | z_-i)`` over the simplex,
    with each candidate's leave-one-cell-out predictive density estimated by PSIS-LOO
    (Yao et al. 2018; :func:`arviz.compare` with ``method="stacking"``). The mixture is
    returned as draws: of the ``n`` draws of each candidate, ``w_k n`` (rounded by
    :func:`mixture_counts`) evenly spaced ones of candidate ``k``, so the mixture has ``n``
    draws of the cells' means ``loc`` and the noise scales ``sigma``, which is all the
    posterior predictive needs (the factors differ in shape between ranks and are dropped).

    Parameters
    ----------
    fit, ranks, z, observed, df
        As in :func:`fit_best_rank`.

    Returns
    -------
    posterior : dict
        ``loc`` (n_draws, n_rows, n_cols) and ``sigma`` (n_draws, n_cols) of the mixture
        (a single candidate's full draws when only one rank is given).
    details : dict or None
        ``weights`` and, as in :func:`fit_best_rank`, ``rank`` (the largest weight),
        ``elpd``, ``elpd_se`` and ``share_high_pareto_k`` per candidate; None for a
        single candidate.
    """
    import arviz as az

    ranks = check_ranks(tuple(ranks))
    if len(ranks) == 1:
        return fit(ranks[0]), None
    posts = {r: fit(r) for r in ranks}
    loo = {r: _psis_loo(p, z, observed, df) for r, p in posts.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = az.compare({str(r): v for r, v in loo.items()}, method="stacking")
    weights = np.array([float(table.loc[str(r), "weight"]) for r in ranks])
    n_draws = min(p["loc"].shape[0] for p in posts.values())
    parts: dict[str, list[np.ndarray]] = {"loc": [], "sigma": []}
    for r, count in zip(ranks, mixture_counts(weights, n_draws), strict=True):
        take = np.round(np.linspace(0, posts[r]["loc"].shape[0] - 1, count)).astype(int)
        for name in parts:
            parts[name].append(posts[r][name][take])
    mixture = {name: np.concatenate(arrays) for name, arrays in parts.items()}
    details = _choice_details(ranks[int(np.argmax(weights))],
                              {r: _loo_summary(v) for r, v in loo.items()})
    details["weights"] = {r: float(w) for r, w in zip(ranks, weights, strict=True)}
    return mixture, details
