"""The misfit term ``τ`` of a test that stops once the full score's interval is narrow.

A test's predictive variance of the full score is ``v_n + (τ ρ_n)²`` after ``n``
answers (:mod:`coreval.adaptive.estimate`). For a test of fixed length, ``τ`` is the
split-conformal inflation of held-out tests' variances at that length
(:func:`coreval.base.conformal.conformal_inflation`). A width stop fires at a step that
depends on ``τ`` itself: a larger ``τ`` makes the test run longer, to a point where the
estimate has moved and the misfit left is smaller. Learning ``τ`` from tests run with
``τ = 0`` scores them where they would have stopped without it, far earlier and with
larger errors than the tests that are finally run, so the interval comes out too wide
and the test asks too many items.

:func:`width_stop_misfit` instead scores every candidate ``τ`` at the stop that ``τ``
would produce. Each held-out test is run once to its budget with ``τ = 0`` and its
trajectory ``(mean_n, v_n, ρ_n)`` is recorded; the selection rules do not read ``τ``,
so the items asked are the same for every ``τ`` and the stop under ``τ`` can be replayed
from the trajectory exactly. ``τ`` is the smallest candidate whose stopped tests cover
``⌈(n + 1)·level⌉`` of the ``n`` held-out models, the split-conformal rank
(Lei et al. 2018).

References
----------
Lei, J., G'Sell, M., Rinaldo, A., Tibshirani, R. J. & Wasserman, L. (2018).
Distribution-free predictive inference for regression. *JASA* 113(523), 1094-1111.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import norm

from coreval.errors import ValidationError

#: Candidates of τ between the smallest and largest breakpoint, geometric; the chosen τ
#: is at most one grid ratio (about 2 %) above the smallest one that reaches the rank.
N_CANDIDATES = 400


def _check_paths(truth, means, variances, shares) -> tuple[np.ndarray, ...]:
    y = np.asarray(truth, dtype=float).ravel()
    m, v, s = (np.atleast_2d(np.asarray(a, dtype=float)) for a in (means, variances, shares))
    if not (m.shape == v.shape == s.shape) or m.shape[0] != y.size or y.size == 0:
        raise ValidationError(
            f"width_stop_misfit needs one trajectory row per model: truth has {y.size} "
            f"values, means/variances/shares have shapes {m.shape}, {v.shape}, {s.shape}")
    if not np.isfinite(y).all():
        raise ValidationError("width_stop_misfit: the true scores must be finite")
    valid = np.isfinite(m)
    if not valid[:, 0].all():
        raise ValidationError("width_stop_misfit: every trajectory needs its first step")
    if ((np.cumsum(~valid, axis=1) > 0) & valid).any():
        raise ValidationError("width_stop_misfit: trajectories may only end in NaN padding")
    if not (np.isfinite(v[valid]).all() and (v[valid] >= 0).all()
            and ((s[valid] >= 0) & (s[valid] <= 1)).all()):
        raise ValidationError("width_stop_misfit: variances must be >= 0 and shares in [0, 1] "
                              "on every recorded step")
    return y, m, v, s, valid


def stopped_coverage(tau: float, truth, means, variances, shares, *, width: float,
                     level: float = 0.9) -> tuple[np.ndarray, np.ndarray]:
    """Replay a width stop with misfit ``tau``: each test's stop step and whether it covers.

    Parameters
    ----------
    tau : float
        Misfit standard deviation of a score predicted from no answers.
    truth : array-like, shape (n_models,)
        True full scores.
    means, variances, shares : array-like, shape (n_models, n_steps)
        Each test's trajectory with ``τ = 0``: the predicted full score, its variance
        and the unanswered share ``ρ`` before the first item (column 0) and after each
        batch; NaN after the test's last step (where its budget stopped it).
    width : float
        The stop: the ``level`` interval ``2 z sqrt(v_n + τ² ρ_n²)`` at most this wide.
    level : float
        Nominal coverage of the interval.

    Returns
    -------
    steps : ndarray of int, shape (n_models,)
        The step at which each test stops (its last step when the width is never reached).
    covered : ndarray of bool, shape (n_models,)
        Whether the Gaussian ``level`` interval at that step covers the true score.
    """
    y, m, v, s, valid = _check_paths(truth, means, variances, shares)
    z = float(norm.ppf(0.5 + level / 2.0))
    total = np.where(valid, v + (tau * s) ** 2, np.inf)
    narrow = valid & (2.0 * z * np.sqrt(total) <= width)
    last = valid.sum(axis=1) - 1
    steps = np.where(narrow.any(axis=1), narrow.argmax(axis=1), last)
    rows = np.arange(y.size)
    covered = (y - m[rows, steps]) ** 2 <= z**2 * total[rows, steps]
    return steps, covered


def width_stop_misfit(truth, means, variances, shares, *, width: float,
                      level: float = 0.9) -> float:
    """``τ`` for tests stopped by the width of the full score's interval (module docstring).

    Parameters
    ----------
    truth, means, variances, shares
        Held-out tests' true scores and trajectories (:func:`stopped_coverage`).
    width : float
        Interval width of the stop, in the units of the scores.
    level : float
        Nominal coverage.

    Returns
    -------
    float
        The smallest candidate ``τ ≥ 0`` whose stopped tests cover at least
        ``⌈(n + 1)·level⌉`` of the ``n`` models (all of them when ``n`` is too small);
        the largest breakpoint when no candidate does.
    """
    if not 0 < level < 1:
        raise ValidationError(f"level must be in (0, 1), got {level!r}")
    if not width > 0:
        raise ValidationError(f"width must be positive, got {width!r}")
    y, m, v, s, valid = _check_paths(truth, means, variances, shares)
    z = float(norm.ppf(0.5 + level / 2.0))
    need = min(math.ceil((y.size + 1) * level - 1e-9), y.size)
    # Coverage and stop status of a step change only where τ crosses one of these.
    with np.errstate(divide="ignore", invalid="ignore"):
        cover_at = np.sqrt(np.maximum((y[:, None] - m) ** 2 / z**2 - v, 0.0)) / s
        stop_at = np.sqrt(np.maximum((width / (2 * z)) ** 2 - v, 0.0)) / s
    breaks = np.concatenate([cover_at[valid], stop_at[valid]])
    breaks = breaks[np.isfinite(breaks) & (breaks > 0)]
    if breaks.size == 0:
        return 0.0
    candidates = np.concatenate([[0.0], np.geomspace(breaks.min(), breaks.max(), N_CANDIDATES)])
    for tau in candidates:
        if stopped_coverage(tau, y, m, v, s, width=width, level=level)[1].sum() >= need:
            return float(tau)
    return float(candidates[-1])
