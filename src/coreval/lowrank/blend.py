"""A convex blend of two completers, its weight chosen on simulated sparse rows.

Completers differ most on rows that reveal only a few cells (a new model with a handful of
scores): Bias-ALS with a small ridge lambda extrapolates a sparse row's factors, while the
posterior mean of :func:`~coreval.lowrank.complete.complete_bayes` shrinks them towards
what the other rows (and covariates) predict. Which is right depends on the matrix, so the
weight is chosen inside each completion, from the matrix it is given: some of its
well-observed rows are reduced to ``k`` revealed cells (:func:`reveal_cells`), both
completers fill them in, and the weight with the lowest median absolute error on the
hidden cells (:func:`choose_blend_weight`) is used for the final completion. This is
nested validation of a stacking weight (Wolpert 1992; Breiman 1996) on the situation the
completion is for, rather than on held-out cells of dense rows. The same hidden cells
calibrate the blend's interval by split conformal (Lei et al. 2018) on errors scaled by
each benchmark's spread (:func:`sparse_row_interval`).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence

import numpy as np

from coreval.base.checks import check_positive_int
from coreval.errors import ValidationError
from coreval.lowrank.complete import Completion, conformal_factor
from coreval.lowrank.transform import check_matrix, percent_columns

#: Candidate weights of the second completer when none are given.
BLEND_WEIGHTS = tuple(np.round(np.linspace(0.0, 1.0, 11), 2))

Completer = Callable[[np.ndarray], Completion]


def reveal_cells(values: np.ndarray, rows: Sequence[int], k: int,
                 rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Hide all but ``k`` random observed cells of each of ``rows``.

    Parameters
    ----------
    values : ndarray of shape (n_rows, n_cols)
        Scores, NaN = unobserved.
    rows : sequence of int
        Rows to make sparse; each needs more than ``k`` observed cells.
    k : int
        Cells each of them keeps.
    rng : numpy Generator

    Returns
    -------
    train : ndarray
        ``values`` with the other cells of ``rows`` set to NaN.
    hidden : ndarray of bool
        The cells hidden that remain predictable: their column keeps an observed cell in
        ``train`` (a column with none has no scale to predict on).
    """
    values = check_matrix(values, who="reveal_cells")
    rows = np.asarray(rows, dtype=int)
    if not isinstance(k, (int, np.integer)) or k < 1:
        raise ValidationError(f"reveal_cells: k must be a positive integer, got {k!r}")
    if rows.ndim != 1 or rows.size == 0:
        raise ValidationError("reveal_cells: give at least one row to make sparse")
    if rows.min() < 0 or rows.max() >= values.shape[0] or np.unique(rows).size != rows.size:
        raise ValidationError(f"reveal_cells: rows must be distinct indices below "
                              f"{values.shape[0]}, got {rows.tolist()}")
    n_obs = (~np.isnan(values[rows])).sum(axis=1)
    if (n_obs <= k).any():
        raise ValidationError(f"reveal_cells: rows {rows[n_obs <= k].tolist()} have no more "
                              f"than k = {k} observed cells, so nothing would be hidden")
    train = values.copy()
    hidden = np.zeros(values.shape, dtype=bool)
    for r in rows:
        obs = np.flatnonzero(~np.isnan(values[r]))
        hide = np.setdiff1d(obs, rng.choice(obs, size=k, replace=False))
        train[r, hide] = np.nan
        hidden[r, hide] = True
    return train, hidden & (~np.isnan(train)).any(axis=0)


def check_weights(weights: Sequence[float]) -> np.ndarray:
    """Candidate blend weights as an array, each in [0, 1]."""
    w = np.asarray(weights, dtype=float)
    if w.ndim != 1 or w.size == 0 or not np.isfinite(w).all() or (w < 0).any() or (w > 1).any():
        raise ValidationError(f"blend weights must be a non-empty list of numbers in [0, 1], "
                              f"got {weights}")
    return w


def choose_blend_weight(first: np.ndarray, second: np.ndarray, truth: np.ndarray,
                        weights: Sequence[float] = BLEND_WEIGHTS) -> tuple[float, np.ndarray]:
    """The weight ``w`` of ``(1 - w) first + w second`` with the lowest median |error|.

    Parameters
    ----------
    first, second, truth : ndarray of shape (n,)
        Two predictions of the same cells and their true scores.
    weights : sequence of float in [0, 1]
        Candidates; ties go to the first listed.

    Returns
    -------
    weight : float
    medae : ndarray of shape (len(weights),)
        Each candidate's median absolute error.
    """
    first, second, truth = (np.asarray(a, dtype=float) for a in (first, second, truth))
    if not (first.shape == second.shape == truth.shape) or first.ndim != 1 or first.size == 0:
        raise ValidationError("choose_blend_weight: give two predictions and the truth of the "
                              "same non-empty set of cells")
    if not (np.isfinite(first).all() and np.isfinite(second).all()
            and np.isfinite(truth).all()):
        raise ValidationError("choose_blend_weight: predictions and truth must be finite")
    w = check_weights(weights)
    blended = (1 - w)[:, None] * first + w[:, None] * second
    medae = np.median(np.abs(blended - truth), axis=1)
    return float(w[int(np.argmin(medae))]), medae


def column_spread(values: np.ndarray) -> np.ndarray:
    """Each column's standard deviation over its observed cells (1 where it has none or
    all are equal), the unit that puts errors on 0-100 and Elo-type columns on one scale."""
    with warnings.catch_warnings():  # an empty column's NaN is replaced below
        warnings.simplefilter("ignore", RuntimeWarning)
        sd = np.nanstd(values, axis=0)
    return np.where(np.isfinite(sd) & (sd > 0), sd, 1.0)


def sparse_row_interval(mean: np.ndarray, values: np.ndarray, residuals: np.ndarray,
                        columns: np.ndarray, level: float = 0.9
                        ) -> tuple[np.ndarray, np.ndarray]:
    """Split-conformal interval ``mean ± q s_j`` from held-out errors of sparse rows.

    ``q`` is the normalised split-conformal factor
    (:func:`coreval.lowrank.complete.conformal_factor`) of the calibration scores
    ``|residual| / s_j``, with ``s_j`` the spread of the residual's
    column (:func:`column_spread` of ``values``). Percentage columns are clipped to
    [0, 100]. The guarantee holds for cells exchangeable with the calibration cells:
    those of rows that reveal as few cells as the validation rows did.
    """
    spread = column_spread(values)
    q = conformal_factor(residuals, 0.0, spread[columns], level)
    lower, upper = mean - q * spread, mean + q * spread
    pct = percent_columns(values)
    lower[:, pct] = np.clip(lower[:, pct], 0.0, 100.0)
    upper[:, pct] = np.clip(upper[:, pct], 0.0, 100.0)
    return lower, upper


def complete_blend(values: np.ndarray, first: Completer, second: Completer, *,
                   validation_rows: Sequence[int], k_reveal: int = 5, n_draws: int = 3,
                   weights: Sequence[float] = BLEND_WEIGHTS, level: float = 0.9,
                   seed: int = 0) -> Completion:
    """Complete with ``(1 - w) first + w second``, ``w`` chosen on simulated sparse rows.

    The validation step runs both completers on ``values`` with each of
    ``validation_rows`` reduced to ``k_reveal`` random observed cells
    (:func:`reveal_cells`), ``n_draws`` times with independent draws of the revealed
    cells, and picks the candidate weight whose blend has the lowest median absolute
    error on the hidden cells of all draws pooled (:func:`choose_blend_weight`). One draw
    of a few rows is a noisy basis for the choice, whose minimiser then tends to an end
    of the weight grid; repeating the random split and pooling its errors is the usual
    remedy (repeated cross-validation: Burman 1989; Krstajic et al. 2014). The final
    completion runs both on ``values`` as given. Its interval is split conformal on the
    chosen blend's errors in those hidden cells (:func:`sparse_row_interval`): calibrated
    for rows that reveal about ``k_reveal`` cells, conservative for better-observed rows.
    With several draws the calibration cells repeat rows, and cells, across draws, so they
    are not exchangeable as one split's are and the quantile is an approximation. The
    interval holds only as far as the validation rows are like the rows predicted: on
    BenchPress's new releases, which beat the models before them, it covered 0.81 at
    nominal 0.90 (``benchmarks/results/benchpress.md``). Cost: ``n_draws + 1`` runs of each
    completer.

    References
    ----------
    Burman, P. (1989). A comparative study of ordinary cross-validation, v-fold
    cross-validation and the repeated learning-testing methods. Biometrika 76(3), 503-514.
    Krstajic, D., Buturovic, L. J., Leahy, D. E. & Thomas, S. (2014). Cross-validation
    pitfalls when selecting and assessing regression and classification models. Journal
    of Cheminformatics 6, 10.

    Parameters
    ----------
    values : ndarray of shape (n_models, n_benchmarks)
        Scores on native scales, NaN = unobserved.
    first, second : callable
        ``values -> Completion`` (e.g. :func:`~coreval.lowrank.complete.complete_bias_als`
        and :func:`~coreval.lowrank.complete.complete_bayes` with fixed options).
    validation_rows : sequence of int
        Well-observed rows that stand in for the rows the completion is for: for new
        releases, the newest of the models already evaluated.
    k_reveal : int
        Cells each validation row keeps (as many as the sparse rows reveal).
    n_draws : int
        Independent draws of the revealed cells the weight is validated on (each costs
        one run of each completer); ``1`` is a single split.
    weights : sequence of float in [0, 1]
        Candidate weights of ``second``.
    level : float
        Nominal coverage of the interval.
    seed : int
        Seed of the revealed cells (draw 0 and the draws after it come from one stream,
        so the first draw does not depend on ``n_draws``).

    Returns
    -------
    Completion
        The blended point predictions with the conformal interval
        (``interval="conformal"``; the weight is chosen on the calibration cells too, one
        value among ``len(weights)``). ``details`` holds the chosen ``weight``, each
        candidate's validation ``medae`` (all draws pooled), the number of validation
        cells (over all draws), each draw's own best weight (``draw_weights``) and the two
        final ``components`` (the completers' own :class:`Completion` of ``values``).
    """
    values = check_matrix(values, who="complete_blend")
    check_weights(weights)
    if not 0.0 < level < 1.0:
        raise ValidationError(f"complete_blend: level must lie in (0, 1), got {level}")
    n_draws = check_positive_int("complete_blend: n_draws", n_draws)
    rng = np.random.default_rng(seed)
    draws = [reveal_cells(values, validation_rows, k_reveal, rng) for _ in range(n_draws)]
    if not any(hidden.any() for _, hidden in draws):
        raise ValidationError("complete_blend: no hidden validation cell is predictable "
                              "(their benchmarks have no other observed score)")
    val_a, val_b, truth, columns, draw_weights = [], [], [], [], []
    for train, hidden in draws:
        if not hidden.any():
            continue
        a, b = first(train).mean[hidden], second(train).mean[hidden]
        draw_weights.append(choose_blend_weight(a, b, values[hidden], weights)[0])
        val_a.append(a)
        val_b.append(b)
        truth.append(values[hidden])
        columns.append(np.nonzero(hidden)[1])
    val_a, val_b, truth = (np.concatenate(x) for x in (val_a, val_b, truth))
    weight, medae = choose_blend_weight(val_a, val_b, truth, weights)
    residuals = (1 - weight) * val_a + weight * val_b - truth
    components = (first(values), second(values))
    mean = (1 - weight) * components[0].mean + weight * components[1].mean
    lower, upper = sparse_row_interval(mean, values, residuals, np.concatenate(columns), level)
    details = {"weight": weight,
               "medae": {f"{w:g}": float(m) for w, m in zip(weights, medae, strict=True)},
               "n_validation_cells": int(truth.size), "draw_weights": draw_weights,
               "components": components}
    return Completion(mean, lower, upper, "conformal", details)
