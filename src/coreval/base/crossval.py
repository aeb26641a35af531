"""The one out-of-fold loop: a method re-run on K folds of the source models.

Everything coreval estimates out of fold goes through :func:`out_of_fold`:
the ``calibration="cv"`` interval of :func:`coreval.pipeline.fit_method`,
irt-bayes' misfit term, and the stacking weights. Each fold re-runs the whole
method, selection included (``refit``), on the other folds' source models and
predicts the held-out models from their responses on *that fold's* coreset, so
a held-out model played no part in choosing the columns it is scored on.

References
----------
Lei, J., G'Sell, M., Rinaldo, A., Tibshirani, R. J. & Wasserman, L. (2018).
"Distribution-free predictive inference for regression". *JASA* 113(523).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.model_selection import KFold

from coreval._progress import progress
from coreval.base.coreset import Coreset
from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError


@dataclass(frozen=True)
class OutOfFold:
    """Out-of-fold predictions of source models.

    Attributes
    ----------
    rows : ndarray of int
        Source rows that were predicted, in increasing order.
    truth : ndarray
        Their full (summary) scores.
    mean, lower, upper : ndarray
        The out-of-fold predictions and interval bounds.
    variance : ndarray or None
        Variance of the predictive draws, where the predictor has draws.
    fold : ndarray of int
        The fold of each row.
    collected : ndarray or None
        What ``collect(predictor, x)`` returned for each row (``out_of_fold(collect=...)``),
        e.g. the predictions of a stack's components, shape ``(len(rows), ...)``.
    baseline : ndarray or None
        The predictions of ``baseline(sub, coreset, x)`` for each row
        (``out_of_fold(baseline=...)``): another predictor fitted on the same fold's
        models and coreset, e.g. the ridge that the IRT methods are compared with.
    """

    rows: np.ndarray
    truth: np.ndarray
    mean: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    variance: np.ndarray | None
    fold: np.ndarray
    collected: np.ndarray | None = None
    baseline: np.ndarray | None = None

    @property
    def residuals(self) -> np.ndarray:
        """``truth − mean``."""
        return self.truth - self.mean


def repeated_fold_seeds(seed: int, repeats: int) -> list[int]:
    """Seeds of ``repeats`` assignments of models to folds: ``seed`` first, then drawn from it.

    The first is the run's own seed, so that one repetition is exactly
    ``out_of_fold(..., seed=seed)``; the others are drawn from a generator seeded
    with it, so the same seed gives the same assignments.
    """
    extra = np.random.default_rng(seed).integers(0, 2**31 - 1, size=max(int(repeats) - 1, 0))
    return [int(seed), *(int(s) for s in extra)]


def out_of_fold(source: ScoreMatrix, refit: Callable[..., tuple[Coreset, Any]], *,
                folds: int, seed: int, rows: np.ndarray | None = None,
                complete_only: bool = False, params: dict[str, Any] | None = None,
                show_progress: bool | None = None, desc: str = "out-of-fold",
                collect: Callable[[Any, np.ndarray], np.ndarray] | None = None,
                baseline: Callable[[ScoreMatrix, Coreset, np.ndarray], np.ndarray] | None = None,
                ) -> OutOfFold:
    """Predict ``rows`` of ``source`` out of fold with ``refit``.

    Parameters
    ----------
    source : ScoreMatrix
        Source models.
    refit : callable
        ``refit(sub, **params) -> (coreset, fitted predictor)``; the method re-run
        on the source models outside a fold.
    folds : int
        Number of folds (at most the number of rows; at least 2).
    seed : int
        ``random_state`` of the shuffled :class:`sklearn.model_selection.KFold`.
    rows : ndarray of int, optional
        The source rows to predict (all by default). The models outside a fold
        are all other source rows, predicted or not.
    complete_only : bool
        Skip held-out rows with a missing response on their fold's coreset
        (otherwise the predictor sees the NaN).
    params : dict, optional
        Predictor parameters for the fold fits (e.g. ``{"misfit": "none"}``).
    collect : callable, optional
        ``collect(fold_predictor, x) -> array`` with one row per held-out model,
        called beside ``predict``; its rows are returned in ``OutOfFold.collected``
        (the stacking predictor collects its components' predictions this way).
    baseline : callable, optional
        ``baseline(sub, coreset, x) -> predictions``: another predictor fitted on the
        fold's models ``sub`` and its coreset, predicting the held-out rows from the same
        responses ``x``; returned in ``OutOfFold.baseline``. A comparison with it is
        fair to a method that re-selects its coreset per fold.

    Returns
    -------
    OutOfFold
    """
    n = source.n_models
    rows = np.arange(n) if rows is None else np.asarray(rows, dtype=np.intp)
    n_folds = min(int(folds), len(rows))
    if n_folds < 2:
        raise ValidationError(
            f"out-of-fold estimation needs at least 2 folds of source models; got {len(rows)} "
            f"models and folds={folds}")
    truth = source.summary_scores()
    parts: dict[str, list[np.ndarray]] = {k: [] for k in ("rows", "mean", "lower", "upper",
                                                          "var", "fold", "collected",
                                                          "baseline")}
    has_draws = True
    splits = KFold(n_folds, shuffle=True, random_state=seed).split(rows)
    for f, (_, held_pos) in enumerate(progress(splits, desc=desc, total=n_folds,
                                               show=show_progress)):
        held = rows[held_pos]
        sub = source.take(np.setdiff1d(np.arange(n), held))
        coreset, predictor = refit(sub, **(params or {}))
        x = source.values[np.ix_(held, coreset.indices)]
        if complete_only:
            keep = ~np.isnan(x).any(axis=1)
            held, x = held[keep], x[keep]
        if len(held) == 0:
            continue
        pred = predictor.predict(x)
        parts["rows"].append(held)
        parts["mean"].append(pred.mean)
        parts["lower"].append(pred.lower)
        parts["upper"].append(pred.upper)
        parts["fold"].append(np.full(len(held), f))
        if collect is not None:
            parts["collected"].append(np.asarray(collect(predictor, x), dtype=float))
        if baseline is not None:
            parts["baseline"].append(np.asarray(baseline(sub, coreset, x), dtype=float))
        if pred.draws is None:
            has_draws = False
        else:
            parts["var"].append(pred.draws.var(axis=0))
    if not parts["rows"]:
        empty = np.zeros(0)
        return OutOfFold(np.zeros(0, np.intp), empty, empty, empty, empty,
                         empty if has_draws else None, np.zeros(0, np.intp))
    if not has_draws:  # some fold predicted without draws: no variance for any row
        parts["var"] = []
    order = np.argsort(np.concatenate(parts["rows"]), kind="stable")
    cat = {k: np.concatenate(v)[order] for k, v in parts.items() if v}
    return OutOfFold(rows=cat["rows"], truth=truth[cat["rows"]], mean=cat["mean"],
                     lower=cat["lower"], upper=cat["upper"],
                     variance=cat.get("var") if has_draws else None, fold=cat["fold"],
                     collected=cat.get("collected"), baseline=cat.get("baseline"))


def worse_by_one_se(own_squared: np.ndarray, other_squared: np.ndarray) -> bool:
    """The one-standard-error rule: are the ``own`` out-of-fold errors worse than ``other``'s?

    With ``d_m = e²_own,m − e²_other,m`` the paired difference of two predictors'
    squared out-of-fold errors on source model ``m``, ``own`` is worse only when
    ``mean(d) > sd(d) / √n``: by more than one standard error of the difference
    (Breiman et al. 1984, §3.4.3; Hastie, Tibshirani & Friedman 2009, §7.10). With a few
    dozen source models a difference within one standard error is noise. Fewer than two
    models: no evidence (False).
    """
    d = np.asarray(own_squared, dtype=float) - np.asarray(other_squared, dtype=float)
    if d.size < 2:
        return False
    return bool(d.mean() > d.std(ddof=1) / np.sqrt(d.size))
