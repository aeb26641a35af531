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
(Lei et al. 2018). Coverage is not monotone in ``τ`` (a larger ``τ`` moves the stop to
another estimate), so the smallest such ``τ`` is found exactly: each test's covered set
of ``τ`` is a union of intervals, one per step at which some ``τ`` stops it
(:func:`_covered_intervals`), and a sweep over their endpoints counts the covered tests.

The functions read ``ρ_n`` only as the scale of ``τ``. For a misfit of another shape
(:data:`MISFIT_SHAPES`), pass its factor ``g_n`` (:func:`misfit_factor`) in place of the
shares: the misfit standard deviation is then ``τ g_n`` and everything above holds.

References
----------
Lei, J., G'Sell, M., Rinaldo, A., Tibshirani, R. J. & Wasserman, L. (2018).
Distribution-free predictive inference for regression. *JASA* 113(523), 1094-1111.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import norm

from coreval.base.conformal import conformal_rank
from coreval.errors import ValidationError

#: How the misfit standard deviation ``τ g`` scales with a test's state, as ``g(ρ, m)``
#: (:func:`misfit_factor`); the first is the default.
MISFIT_SHAPES = ("share", "bernoulli-sd", "bernoulli-var")


def misfit_factor(shape: str, shares, scores) -> np.ndarray:
    """The factor ``g`` of ``τ`` in the misfit standard deviation ``τ g`` of a full score.

    With ``ρ`` the share of the score's weight still unanswered and ``m`` the predicted
    full score on a 0-1 scale (the score over the total weight):

    * ``share``: ``g = ρ``. The misfit bears on the predicted part of the score only, and
      vanishes once every item is answered.
    * ``bernoulli-sd``: ``g = ρ √(4 m (1 − m))``, the misfit in units of the Bernoulli
      standard deviation at the predicted score, relative to its largest value at
      ``m = 1/2``.
    * ``bernoulli-var``: ``g = ρ · 4 m (1 − m)``. An offset ``δ`` on the logit of every
      unanswered item moves the score by ``Σ_u w_u p_u (1 − p_u) δ`` (delta method); with
      each ``p_u`` read as ``m``, that is this factor times ``δ / 4``.

    The last two let the misfit shrink for a model near 0 or 1, which answers most
    unasked items the same way whatever its departure from the IRT model. They read only
    ``(ρ, m)``, which a test's trajectory records, so a stop under any shape can be
    replayed from trajectories run with ``τ = 0`` (:func:`width_stop_misfit`).

    Parameters
    ----------
    shape : {"share", "bernoulli-sd", "bernoulli-var"}
    shares : array-like
        ``ρ`` in [0, 1].
    scores : array-like
        ``m``, broadcast against ``shares``; clipped to [0, 1] and NaN read as 0.

    Returns
    -------
    ndarray
        ``g`` in [0, 1], the shape of ``shares`` broadcast with ``scores``.
    """
    rho = np.asarray(shares, dtype=float)
    m = np.clip(np.nan_to_num(np.asarray(scores, dtype=float)), 0.0, 1.0)
    if shape == "share":
        return rho * np.ones_like(m)
    if shape == "bernoulli-sd":
        return rho * np.sqrt(4.0 * m * (1.0 - m))
    if shape == "bernoulli-var":
        return rho * 4.0 * m * (1.0 - m)
    raise ValidationError(f"misfit shape must be one of {', '.join(MISFIT_SHAPES)}, "
                          f"got {shape!r}")


def padded_paths(paths, length: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Tests' trajectories as the arrays the functions of this module read.

    Parameters
    ----------
    paths : sequence of array, each (n_steps, 3)
        One test's ``(mean_n, v_n, ρ_n)`` per step, from its start
        (:attr:`coreval.prediction.adaptive.AdaptivePredictor.paths_`).
    length : int
        Columns of the result; at least the longest test's steps.

    Returns
    -------
    means, variances, shares : ndarray, each (n_tests, length)
        One row per test, NaN after the test's last step.
    """
    out = np.full((3, len(paths), int(length)), np.nan)
    for j, path in enumerate(paths):
        path = np.asarray(path, dtype=float)
        if path.ndim != 2 or path.shape[1] != 3 or len(path) > length:
            raise ValidationError(f"trajectory {j} has shape {path.shape}; expected "
                                  f"(n_steps <= {length}, 3)")
        out[:, j, :len(path)] = path.T
    return out[0], out[1], out[2]


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


def stopped_widths(tau: float, variances, shares, steps, *, level: float = 0.9) -> np.ndarray:
    """Width of each test's ``level`` interval at its stop: ``2 z sqrt(v_n + τ² ρ_n²)``.

    Parameters
    ----------
    tau : float
        Misfit standard deviation of a score predicted from no answers.
    variances, shares : array-like, shape (n_models, n_steps)
        Trajectories as in :func:`stopped_coverage`.
    steps : array-like of int, shape (n_models,)
        The step each test stops at (:func:`stopped_coverage`).
    level : float
        Nominal coverage of the interval.
    """
    v = np.atleast_2d(np.asarray(variances, dtype=float))
    s = np.atleast_2d(np.asarray(shares, dtype=float))
    at = np.asarray(steps, dtype=np.intp)
    if v.shape != s.shape or at.shape != (v.shape[0],):
        raise ValidationError(f"stopped_widths needs one step per trajectory: variances "
                              f"{v.shape}, shares {s.shape}, steps {at.shape}")
    rows = np.arange(v.shape[0])
    z = float(norm.ppf(0.5 + level / 2.0))
    return 2.0 * z * np.sqrt(v[rows, at] + (tau * s[rows, at]) ** 2)


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
        The smallest ``τ ≥ 0`` whose stopped tests cover at least ``⌈(n + 1)·level⌉`` of
        the ``n`` models (all of them when ``n`` is too small), as replayed by
        :func:`stopped_coverage`, raised by a relative 1e-9 so that it does not sit on a
        coverage breakpoint; the largest breakpoint when no ``τ`` does.
    """
    if not 0 < level < 1:
        raise ValidationError(f"level must be in (0, 1), got {level!r}")
    if not width > 0:
        raise ValidationError(f"width must be positive, got {width!r}")
    y, m, v, s, valid = _check_paths(truth, means, variances, shares)
    z = float(norm.ppf(0.5 + level / 2.0))
    need = min(conformal_rank(y.size, level), y.size)
    pieces = [_covered_intervals(y[i], m[i, ok], v[i, ok], s[i, ok], width=width, z=z)
              for i, ok in enumerate(valid)]
    starts = np.sort(np.concatenate([p[0] for p in pieces]))
    ends = np.sort(np.concatenate([p[1] for p in pieces]))
    # tests covered at τ: intervals [start, end] with start <= τ <= end
    candidates = np.unique(np.concatenate([[0.0], starts]))
    count = (np.searchsorted(starts, candidates, side="right")
             - np.searchsorted(ends, candidates, side="left"))
    for start in candidates[count >= need]:
        # τ a billionth above the start is inside the same intervals and away from the
        # breakpoint, where the round-off of another computation of the same stop (the
        # online test's, or a replay from rescaled scores) could flip a test; the replay is
        # the reference, and the start itself is the fallback of a degenerate interval
        for tau in (start * (1.0 + 1e-9), start):
            if stopped_coverage(tau, y, m, v, s, width=width, level=level)[1].sum() >= need:
                return float(tau)
    with np.errstate(divide="ignore", invalid="ignore"):
        breaks = np.concatenate([np.sqrt(np.abs((y[:, None] - m) ** 2 / z**2 - v)) / s,
                                 np.sqrt(np.abs((width / (2 * z)) ** 2 - v)) / s])
    breaks = breaks[np.isfinite(breaks)]
    return float(breaks.max()) if breaks.size else 0.0


def _covered_intervals(y: float, m: np.ndarray, v: np.ndarray, s: np.ndarray, *,
                       width: float, z: float) -> tuple[np.ndarray, np.ndarray]:
    """The ``τ ≥ 0`` at which one test's width-stopped interval covers, as ``[start, end]``.

    Step ``n`` is narrow when ``v_n + τ² ρ_n² <= (width / 2z)²``, i.e. ``τ <= stop_n``,
    and covers when ``(y - m_n)² <= z² (v_n + τ² ρ_n²)``, i.e. ``τ >= cover_n``. The test
    stops at the first narrow step, which for ``τ`` in ``(P_{n-1}, P_n]`` (``P`` the
    running maximum of ``stop``) is the step ``n`` where ``P`` sets a record, and at its
    last step above ``P``'s maximum. Each of these ``τ`` ranges intersected with
    ``τ >= cover_n`` of its stop step is one interval (an open lower end is moved to the
    next float).
    """
    slack = (width / (2.0 * z)) ** 2 - v
    miss = (y - m) ** 2 / z**2 - v
    with np.errstate(divide="ignore", invalid="ignore"):
        stop = np.where(slack < 0, -np.inf,
                        np.where(s > 0, np.sqrt(np.maximum(slack, 0.0)) / s, np.inf))
        cover = np.where(miss <= 0, 0.0,
                         np.where(s > 0, np.sqrt(np.maximum(miss, 0.0)) / s, np.inf))
    record = np.maximum.accumulate(stop)
    before = np.concatenate([[-np.inf], record[:-1]])
    steps = np.flatnonzero(record > before)
    low = np.concatenate([before[steps], record[-1:]])        # open lower ends
    high = np.concatenate([record[steps], [np.inf]])
    at = np.concatenate([cover[steps], cover[-1:]])
    start = np.where(at > low, at, np.where(low < 0, 0.0, np.nextafter(low, np.inf)))
    start = np.maximum(start, 0.0)
    keep = np.isfinite(start) & (start <= high)
    return start[keep], high[keep]
