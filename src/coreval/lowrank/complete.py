"""Completing a score matrix on its native scales: transform, complete, map back.

Each function takes a models x benchmarks matrix with NaN for unobserved cells and returns a
:class:`Completion` of every cell on the native scales:

* :func:`complete_bias_als` — BenchPress's default (logit Bias-ALS, rank 2, lambda 0.1,
  10 starts of 40 sweeps), a point estimate without an interval;
* :func:`complete_bayes` — the Bayesian model of :mod:`coreval.lowrank.bayes`, with the
  central ``level`` interval of the posterior predictive; ``calibration="conformal"`` widens
  or narrows it by normalised split conformal (Lei et al. 2018) on cells held out *inside*
  the training cells (:func:`inner_split`), or by cross-conformal over a partition of them
  (:func:`inner_folds`, Vovk 2015; the default), never on the cells being predicted; given
  several ranks it fits each and keeps the one with the highest PSIS-LOO expected log
  predictive density of the training cells
  (:func:`coreval.lowrank.rank_choice.loo_elpd`);
* :func:`select_als` — chooses ALS's rank and lambda on such inner held-out training cells.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from coreval.base.conformal import conformal_quantile
from coreval.errors import ValidationError
from coreval.lowrank.als import complete_als, fit_als
from coreval.lowrank.bayes import (
    Guide,
    Noise,
    check_row_features,
    fit_lowrank_nuts,
    fit_lowrank_posterior,
    predictive_draws,
)
from coreval.lowrank.rank_choice import check_ranks, fit_best_rank, stack_ranks
from coreval.lowrank.transform import (
    Transform,
    check_matrix,
    fit_transform,
    forward_observed,
    inverse,
)

#: Inner folds of :func:`complete_bayes`'s cross-conformal factor when none are given.
CROSS_CONFORMAL_FOLDS = 10


class Completion(NamedTuple):
    """Every cell of a completed matrix, on the native scales.

    Attributes
    ----------
    mean : ndarray of shape (n_rows, n_cols)
        Point predictions (observed cells are predicted too: the fit, not the data).
    lower, upper : ndarray, same shape
        Central ``level`` interval (NaN when the method has none).
    interval : str
        ``"none"``, ``"posterior"``, ``"posterior+conformal"`` or ``"conformal"``.
    details : mapping, optional
        What the method chose inside the fit (e.g. ``rank`` and each candidate's PSIS-LOO
        ``elpd`` for :func:`complete_bayes` with several ranks).
    """

    mean: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    interval: str
    details: Mapping[str, Any] | None = None


def _prepare(values: np.ndarray, transform: Transform, fractions: bool = False):
    values = check_matrix(values)
    ct = fit_transform(values, transform=transform, fractions=fractions)
    observed, z = forward_observed(ct, values)
    return values, ct, observed, z


def complete_bias_als(values: np.ndarray, *, transform: Transform = "logit", rank: int = 2,
                      lam: float = 0.1, n_iter: int = 40, n_ensemble: int = 10,
                      seed: int = 42, legacy_rng: bool = False,
                      fractions: bool = False) -> Completion:
    """Bias-ALS completion in the transformed space (Zeng & Papailiopoulos 2026, section 4.2).

    Parameters
    ----------
    values : ndarray of shape (n_models, n_benchmarks)
        Scores on native scales, NaN = unobserved.
    transform : {"logit", "identity"}
        Score transform of percentage columns (:func:`coreval.lowrank.transform.fit_transform`).
    rank, lam, n_iter, n_ensemble, seed, legacy_rng
        Options of :func:`coreval.lowrank.als.complete_als` (``legacy_rng=True`` reproduces
        the authors' predictions, not only their accuracy).
    fractions : bool
        Columns on a 0-1 scale are percentages / 100
        (:func:`coreval.lowrank.transform.fit_transform`).
    """
    _, ct, observed, z = _prepare(values, transform, fractions)
    completed, _ = complete_als(z, observed, rank=rank, lam=lam, n_iter=n_iter,
                                n_ensemble=n_ensemble, seed=seed, legacy_rng=legacy_rng)
    mean = inverse(ct, completed)
    nan = np.full_like(mean, np.nan)
    return Completion(mean, nan, nan.copy(), "none")


def inner_split(observed: np.ndarray, *, fraction: float = 1 / 3,
                seed: int = 0) -> np.ndarray:
    """Cells held out inside the training cells: about ``fraction`` of each row's cells.

    A row with ``n >= 2`` observed cells gives ``max(1, round(fraction n))`` of them (at most
    ``n - 1``); rows with fewer keep all of theirs. Mirrors the per-model folds of the
    held-out-cell protocol one level down.

    Returns
    -------
    ndarray of bool, same shape as ``observed``
        The inner held-out cells.
    """
    if not 0.0 < fraction < 1.0:
        raise ValidationError(f"fraction must be in (0, 1), got {fraction}")
    rng = np.random.default_rng(seed)
    held = np.zeros_like(observed, dtype=bool)
    for i in range(observed.shape[0]):
        cols = np.flatnonzero(observed[i])
        if cols.size < 2:
            continue
        n = min(max(1, round(fraction * cols.size)), cols.size - 1)
        held[i, rng.choice(cols, size=n, replace=False)] = True
    return held


def inner_folds(observed: np.ndarray, n_folds: int, *, seed: int = 0) -> np.ndarray:
    """A partition of each row's observed cells into ``n_folds`` groups, for cross-conformal.

    Each row's cells are shuffled and dealt out in turn, so the groups of a row differ in
    size by at most one and a row with ``n < n_folds`` cells has one cell in each of ``n``
    groups. Rows with fewer than 2 cells are not partitioned (their cell is never held out,
    as in :func:`inner_split`).

    Returns
    -------
    ndarray of int, same shape as ``observed``
        The group (``0 .. n_folds - 1``) of each observed cell; ``-1`` for the rest.
    """
    if int(n_folds) != n_folds or n_folds < 2:
        raise ValidationError(f"n_folds must be an integer >= 2, got {n_folds!r}")
    rng = np.random.default_rng(seed)
    group = np.full(observed.shape, -1, dtype=int)
    for i in range(observed.shape[0]):
        cols = np.flatnonzero(observed[i])
        if cols.size < 2:
            continue
        # start each row's deal at a random group, so that short rows do not all fill group 0
        start = rng.integers(n_folds)
        group[i, rng.permutation(cols)] = (start + np.arange(cols.size)) % n_folds
    return group


def conformal_scores(y: np.ndarray, center: np.ndarray, half_width: np.ndarray) -> np.ndarray:
    """Normalised conformity scores ``|y - center| / half_width`` (Lei et al. 2018, 5.2).

    Non-finite scores (a cell without a prediction) are dropped.
    """
    score = np.abs(np.asarray(y) - center) / np.maximum(half_width, 1e-12)
    return score[np.isfinite(score)]


def conformal_factor(y: np.ndarray, center: np.ndarray, half_width: np.ndarray,
                     level: float) -> float:
    """Normalised split-conformal factor (Lei et al. 2018, section 5.2).

    The ``⌈(n + 1)·level⌉``-th smallest of the ``n`` scores ``|y - center| / half_width``
    over calibration cells (:func:`coreval.base.conformal.conformal_quantile`; ``inf`` when
    ``n`` is too small for the level): the interval ``center ± factor half_width`` then
    covers a new exchangeable cell with probability at least ``level``.
    """
    score = conformal_scores(y, center, half_width)
    if score.size == 0:
        raise ValidationError("conformal calibration needs at least one calibration cell")
    return conformal_quantile(score, level)


def standardize_features(row_features: np.ndarray, n_rows: int) -> np.ndarray:
    """Row covariates as a finite 2-D float array with zero-mean, unit-variance columns.

    Raises a :class:`ValidationError` naming the problem (shape, NaN, a constant column).
    """
    x = check_row_features(row_features, n_rows)
    sd = x.std(axis=0)
    if (sd == 0).any():
        raise ValidationError(f"row_features columns {np.flatnonzero(sd == 0).tolist()} are "
                              "constant")
    return (x - x.mean(axis=0)) / sd


def _bayes_posterior(z: np.ndarray, observed: np.ndarray, *, inference: str, rank: int,
                     noise: Noise, df: float | None, guide: Guide, n_steps: int,
                     learning_rate: float, num_warmup: int, num_samples: int,
                     max_tree_depth: int, init: str, row_features: np.ndarray | None,
                     seed: int) -> dict[str, np.ndarray]:
    """Posterior draws of the Bayesian model (NUTS or SVI), started at Bias-ALS or at random."""
    start = (fit_als(z, observed, rank=rank, lam=0.1, seed=seed) if init == "als" else None)
    if inference == "nuts":
        return fit_lowrank_nuts(z, observed, rank=rank, noise=noise, df=df,
                                num_warmup=num_warmup, num_samples=num_samples,
                                max_tree_depth=max_tree_depth, init=start,
                                row_features=row_features, seed=seed)
    return fit_lowrank_posterior(z, observed, rank=rank, noise=noise, guide=guide,
                                 n_steps=n_steps, learning_rate=learning_rate,
                                 n_draws=num_samples, init=start, seed=seed)


def _bayes_z(post: dict[str, np.ndarray], *, df: float | None, level: float, seed: int,
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Posterior mean of the cell means and the predictive median / central interval (z)."""
    draws = predictive_draws(post, np.random.default_rng(seed), df)
    alpha = 1.0 - level
    lo, med, hi = np.quantile(draws, [alpha / 2, 0.5, 1 - alpha / 2], axis=0)
    return post["loc"].mean(axis=0), med, lo, hi


def complete_bayes(values: np.ndarray, *, transform: Transform = "logit",
                   rank: int | Sequence[int] = 2, rank_combination: str = "select",
                   noise: Noise = "column", df: float | None = 4.0,
                   inference: str = "nuts", num_warmup: int = 300, num_samples: int = 300,
                   max_tree_depth: int = 8,
                   guide: Guide = "normal", n_steps: int = 3000, learning_rate: float = 0.02,
                   level: float = 0.9, calibration: str = "posterior",
                   inner_fraction: float | None = None, n_inner_folds: int | None = None,
                   init: str = "als",
                   row_features: np.ndarray | None = None,
                   fractions: bool = False, seed: int = 0) -> Completion:
    """Bayesian low-rank completion with posterior predictive intervals.

    Parameters
    ----------
    values : ndarray of shape (n_models, n_benchmarks)
        Scores on native scales, NaN = unobserved.
    transform : {"logit", "identity"}
    rank : int or sequence of int
        Number of factors. Several candidates (e.g. ``(1, 2, 3, 4)``, NUTS only): each is
        fitted to the training cells and the one with the highest PSIS-LOO expected log
        predictive density of those cells
        (:func:`~coreval.lowrank.rank_choice.loo_elpd`) is used; the choice and every
        candidate's elpd are in ``Completion.details``. Costs one NUTS fit per candidate.
    rank_combination : {"select", "stack"}
        With several candidate ranks: keep the one with the highest PSIS-LOO elpd
        (``"select"``), or mix all of them with Bayesian stacking weights
        (``"stack"``, :func:`~coreval.lowrank.rank_choice.stack_ranks`; the weights are in
        ``Completion.details``). Same cost; with ``calibration="conformal"`` each inner fit
        repeats the combination on its cells (one NUTS fit per candidate with
        ``"stack"``, one with ``"select"``).
    noise, df
        Model options (:func:`coreval.lowrank.bayes.lowrank_model`); ``df`` is the Student-t
        likelihood's degrees of freedom (``None``: normal). SVI always uses a normal
        likelihood.
    inference : {"nuts", "svi"}
        NUTS (:func:`~coreval.lowrank.bayes.fit_lowrank_nuts`, ``num_warmup`` +
        ``num_samples``, ``max_tree_depth``) or SVI (:func:`~coreval.lowrank.bayes.fit_lowrank_posterior`,
        ``guide``, ``n_steps``, ``learning_rate``, ``num_samples`` guide draws).
    level : float
        Nominal coverage of the central interval.
    calibration : {"posterior", "conformal"}
        ``"posterior"``: the predictive quantiles as they are. ``"conformal"``: fit again
        without some of the training cells, take the :func:`conformal_factor` of those
        cells' z-space residuals relative to their predictive half-widths, and scale the
        final interval's half-widths (around the predictive median, in z-space) by it;
        ``n_inner_folds`` / ``inner_fraction`` say which cells.
    inner_fraction : float, optional
        Split conformal: one inner fit without :func:`inner_split`'s ``inner_fraction`` of
        each model's training cells (e.g. ``1 / 3``); give it or ``n_inner_folds``, not both.
    n_inner_folds : int, optional
        Cross-conformal (Vovk 2015), the default with 10 folds when neither option is
        given: each model's training cells are partitioned into K groups
        (:func:`inner_folds`), K inner fits each leave one group out, and the factor is the
        conformal quantile of all groups' scores pooled. Every training cell of a row with
        two or more is then a calibration cell, so the factor varies less than a split's,
        and each inner fit sees ``(K - 1) / K`` of the cells, closer to the final fit (a
        factor from a weaker inner fit over-covers). On four benchmark-level matrices
        (``benchmarks/results/conformal_cells.md``, ``benchpress.md``) 10 folds covered
        0.899-0.903 at nominal 0.90, against 0.899-0.920 for a third held out once. The
        finite-sample guarantee of split conformal does not carry over exactly (Barber et
        al. 2021 bound a related K-fold scheme's coverage below by ``1 - 2 (1 - level)``).
        Costs K inner fits instead of one.
    init : {"als", "random"}
        Start inference at a Bias-ALS fit (rank ``rank``, lambda 0.1, 40 sweeps) of the same
        cells, or at a small random point.
    row_features : ndarray of shape (n_models,) or (n_models, n_features), optional
        Known covariates of the models (e.g. a reasoning flag, open weights, the release
        date as a number), standardised here and entered with per-benchmark coefficients
        and in the prior means of each model's bias and factors
        (:func:`coreval.lowrank.bayes.lowrank_model`); NUTS only.
    fractions : bool
        Columns on a 0-1 scale are percentages / 100
        (:func:`coreval.lowrank.transform.fit_transform`).
    seed : int
        Seed of inference, of the predictive draws and of the inner split.

    Returns
    -------
    Completion
        ``mean`` is the inverse transform of the posterior mean of ``mu + a + c + U V^T``.
    """
    if calibration not in ("posterior", "conformal"):
        raise ValidationError(f"calibration must be 'posterior' or 'conformal', got "
                              f"{calibration!r}")
    if inference not in ("nuts", "svi"):
        raise ValidationError(f"inference must be 'nuts' or 'svi', got {inference!r}")
    if not 0.0 < level < 1.0:
        raise ValidationError(f"level must be in (0, 1), got {level}")
    if inner_fraction is not None and n_inner_folds is not None:
        raise ValidationError("give inner_fraction (split conformal) or n_inner_folds "
                              "(cross-conformal), not both")
    if n_inner_folds is not None and (int(n_inner_folds) != n_inner_folds
                                      or n_inner_folds < 2):
        raise ValidationError(f"n_inner_folds must be an integer >= 2, got {n_inner_folds!r}")
    if init not in ("als", "random"):
        raise ValidationError(f"init must be 'als' or 'random', got {init!r}")
    ranks = check_ranks(rank)
    if rank_combination not in ("select", "stack"):
        raise ValidationError(f"rank_combination must be 'select' or 'stack', got "
                              f"{rank_combination!r}")
    if len(ranks) > 1 and inference != "nuts":
        raise ValidationError("choosing among several ranks needs inference='nuts' (PSIS-LOO "
                              "of posterior draws)")
    values, ct, observed, z = _prepare(values, transform, fractions)
    if row_features is not None:
        if inference != "nuts":
            raise ValidationError("row_features need inference='nuts'")
        row_features = standardize_features(row_features, z.shape[0])
    opts = dict(inference=inference, noise=noise, df=df, guide=guide, n_steps=n_steps,
                learning_rate=learning_rate, num_warmup=num_warmup, num_samples=num_samples,
                max_tree_depth=max_tree_depth, init=init, row_features=row_features)
    lik_df = df if inference == "nuts" else None  # SVI's model is normal
    combine = stack_ranks if rank_combination == "stack" else fit_best_rank
    post, choice = combine(
        lambda r: _bayes_posterior(z, observed, rank=r, seed=seed, **opts), ranks, z, observed,
        lik_df)
    details: dict[str, Any] = dict(choice or {})
    chosen = details.get("rank", ranks[0])
    mean_z, med_z, lo_z, hi_z = _bayes_z(post, df=lik_df, level=level, seed=seed)
    interval = "posterior"
    if calibration == "conformal":
        # "select" keeps the rank chosen above in the inner fits; "stack" repeats the stacking
        inner_ranks = ranks if rank_combination == "stack" else (chosen,)
        if inner_fraction is not None:
            groups = [inner_split(observed, fraction=inner_fraction, seed=seed)]
        else:
            n_groups = CROSS_CONFORMAL_FOLDS if n_inner_folds is None else int(n_inner_folds)
            labels = inner_folds(observed, n_groups, seed=seed)
            groups = [labels == k for k in range(n_groups)]
        scores = []
        for k, held in enumerate(groups):
            inner_observed, z_in = inner_data(values, held, transform, fractions)
            inner_seed = seed + 1 + k
            inner, _ = combine(lambda r, z_in=z_in, obs=inner_observed, s=inner_seed:
                               _bayes_posterior(z_in, obs, rank=r, seed=s, **opts),
                               inner_ranks, z_in, inner_observed, lik_df)
            _, m_in, lo_in, hi_in = _bayes_z(inner, df=lik_df, level=level, seed=inner_seed)
            # the scores are invariant to the per-column affine map between the two z-spaces
            scores.append(conformal_scores(z_in[held], m_in[held], (hi_in - lo_in)[held] / 2))
        factor = conformal_factor(np.concatenate(scores), 0.0, 1.0, level)
        lo_z = med_z - factor * (med_z - lo_z)
        hi_z = med_z + factor * (hi_z - med_z)
        interval = "posterior+conformal"
        details["conformal_factor"] = factor
    return Completion(inverse(ct, mean_z), inverse(ct, lo_z), inverse(ct, hi_z), interval,
                      details or None)


def inner_data(values: np.ndarray, held: np.ndarray, transform: Transform,
               fractions: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The inner fit's observed cells and z-scores, with a transform of its own cells only.

    The transform (percentage / rating columns, mean and scale) is fitted without the
    inner held-out cells, as the outer fit's is fitted without the cells it predicts, so
    the calibration cells do not shape the inner fit's data. Held cells are mapped with
    the same transform (they are the calibration targets).

    Returns
    -------
    inner_observed : ndarray of bool
        Observed cells that are not held out.
    z_in : ndarray
        Every observed cell in the inner transform's z-space (0 elsewhere).
    """
    ct_in = fit_transform(np.where(held, np.nan, values), transform=transform,
                          fractions=fractions)
    observed, z_in = forward_observed(ct_in, values)
    return observed & ~held, z_in


def select_als(values: np.ndarray, *, ranks: tuple[int, ...] = (1, 2, 3, 4),
               lams: tuple[float, ...] = (0.01, 0.1, 1.0), transform: Transform = "logit",
               inner_fraction: float = 1 / 3, fractions: bool = False, seed: int = 0,
               n_ensemble: int = 5) -> tuple[int, float, dict[tuple[int, float], float]]:
    """Rank and lambda of Bias-ALS with the smallest median absolute error on inner cells.

    The inner cells (:func:`inner_split`) are hidden, every pair of the grid completes the
    rest, and the pair whose completion is closest (median absolute error in score points)
    on the hidden cells is returned, with the grid's errors. Only the given training cells
    are used. ``fractions`` is passed to every completion
    (:func:`coreval.lowrank.transform.fit_transform`: 0-1 columns are percentages / 100).
    """
    values = check_matrix(values)
    observed = ~np.isnan(values)
    held = inner_split(observed, fraction=inner_fraction, seed=seed)
    train = np.where(held, np.nan, values)
    errors = {}
    for rank in ranks:
        for lam in lams:
            comp = complete_bias_als(train, transform=transform, rank=rank, lam=lam,
                                     n_ensemble=n_ensemble, fractions=fractions, seed=seed)
            errors[(rank, lam)] = float(np.median(np.abs(comp.mean[held] - values[held])))
    best = min(errors, key=errors.get)
    return best[0], best[1], errors
