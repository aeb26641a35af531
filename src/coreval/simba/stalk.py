"""SimBA stalk: how pairs of datasets (columns) and of models (rows) relate.

Subramani et al. (2025), "SimBA", stalk phase. For every pair ``(a, b)`` of columns (or rows) of the
normalised matrix, ``b`` is regressed on ``a`` with six one-variable regressors and the pair
is labelled with the best-fitting family; when no family reaches ``R^2 >= 0.5`` the pair has
no relationship (``"none"``). The six families used here (the paper's list was not available
to us; these are the standard curve-fitting families that contain its linear, exponential and
power-law relations) are

==============  ==========================  =========
family          model                       params
==============  ==========================  =========
linear          y = a + b x                 2
logarithmic     y = a + b ln x              2
exponential     y = a exp(b x)              2
power-law       y = a x^b                   2
quadratic       y = a + b x + c x^2         3
cubic           y = a + b x + c x^2 + d x^3 4
==============  ==========================  =========

``R^2`` is always measured on ``y`` in its own units. Because nested polynomials can only
raise ``R^2``, the label is the family with the best **adjusted** ``R^2`` (ties within 1e-9 go
to the family listed first, the simpler one; a family is only eligible with at least three
residual degrees of freedom, ``n >= params + 3``); the reported ``r2`` is the plain ``R^2`` of
that family and the 0.5 threshold applies to it. Exponential and power-law curves are fitted
by nonlinear least squares (``scipy.optimize.curve_fit``) started from the log-space fit;
``ln x`` and ``x^b`` use ``max(x, 1e-6)`` because normalised scores can be 0. Missing entries:
a pair is fitted on the models (or datasets) that both have, and pairs with fewer than
``min_overlap`` common entries are ``"insufficient"``.

The issue spec (after the paper, whose text we could not read) names the relations linear,
exponential, power-law or none; :data:`KINDS` maps the
six labels onto those, with logarithmic / quadratic / cubic fits reported as ``"other"``
(a monotone or curved relation that is none of the three named forms).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
from numpy.polynomial import polynomial as P
from scipy.optimize import OptimizeWarning, curve_fit

from coreval._progress import progress
from coreval.errors import ValidationError

#: The six families, simplest first, with their number of parameters.
FAMILIES: dict[str, int] = {
    "linear": 2, "logarithmic": 2, "exponential": 2, "power-law": 2, "quadratic": 3, "cubic": 4,
}

#: Coarse relation kind of each label (the spec's linear / exponential / power-law / none).
KINDS: dict[str, str] = {
    "linear": "linear", "exponential": "exponential", "power-law": "power-law",
    "logarithmic": "other", "quadratic": "other", "cubic": "other", "none": "none",
    "constant": "none", "insufficient": "insufficient",
}

#: ``R^2`` below which a pair has no relationship.
R2_THRESHOLD = 0.5

_EPS = 1e-6


def _r2(y: np.ndarray, pred: np.ndarray) -> float:
    ss_tot = float(((y - y.mean()) ** 2).sum())
    if ss_tot <= 0 or not np.isfinite(pred).all():
        return float("nan")
    return 1.0 - float(((y - pred) ** 2).sum()) / ss_tot


def _poly(x: np.ndarray, y: np.ndarray, degree: int) -> np.ndarray:
    if np.unique(x).size <= degree:
        return np.full_like(y, np.nan)
    coef = P.polyfit(x, y, degree)
    return P.polyval(x, coef)


def _nonlinear(f: Callable[..., np.ndarray], x: np.ndarray, y: np.ndarray,
               p0: tuple[float, float]) -> np.ndarray:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", OptimizeWarning)
            warnings.simplefilter("ignore", RuntimeWarning)
            params, _ = curve_fit(f, x, y, p0=p0, maxfev=2000)
        return f(x, *params)
    except (RuntimeError, ValueError):
        return np.full_like(y, np.nan)


def _exp(x: np.ndarray, a: float, b: float) -> np.ndarray:
    return a * np.exp(b * x)


def _power(x: np.ndarray, a: float, b: float) -> np.ndarray:
    return a * np.power(np.maximum(x, _EPS), b)


def _log_start(u: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Start values ``(a, b)`` of ``ln y = ln a + b u`` on the positive ``y``."""
    pos = y > 0
    if pos.sum() >= 2 and np.ptp(u[pos]) > 0:
        b, ln_a = np.polyfit(u[pos], np.log(y[pos]), 1)
        return float(np.exp(ln_a)), float(b)
    return float(max(y.mean(), _EPS)), 0.0


def fit_families(x: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """``R^2`` of ``y`` on ``x`` for each of the six families (NaN where a fit fails).

    Parameters
    ----------
    x, y : ndarray of shape (n,)
        Paired observations (no NaN).

    Returns
    -------
    dict
        ``{family: R^2}``.

    References
    ----------
    Subramani et al. (2025), SimBA, stalk phase.
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    lx = np.log(np.maximum(x, _EPS))
    out = {
        "linear": _r2(y, _poly(x, y, 1)),
        "logarithmic": _r2(y, _poly(lx, y, 1)),
        "exponential": _r2(y, _nonlinear(_exp, x, y, _log_start(x, y))),
        "power-law": _r2(y, _nonlinear(_power, x, y, _log_start(lx, y))),
        "quadratic": _r2(y, _poly(x, y, 2)),
        "cubic": _r2(y, _poly(x, y, 3)),
    }
    return out


def classify_pair(x: np.ndarray, y: np.ndarray, *,
                  threshold: float = R2_THRESHOLD) -> tuple[str, float, dict[str, float]]:
    """Label the relation of ``y`` to ``x``: the best family by adjusted ``R^2``, or "none".

    Returns
    -------
    label : str
        A key of :data:`FAMILIES`, ``"none"`` (best ``R^2`` below ``threshold``) or
        ``"constant"`` (``y`` or ``x`` has no variance).
    r2 : float
        Plain ``R^2`` of the chosen family.
    r2_all : dict
        ``R^2`` of every family.
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    n = len(x)
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return "constant", float("nan"), dict.fromkeys(FAMILIES, float("nan"))
    r2 = fit_families(x, y)
    best, best_adj = None, -np.inf
    for fam, k in FAMILIES.items():
        if not np.isfinite(r2[fam]) or n < k + 3:
            continue  # a family needs 3 residual degrees of freedom (no cubic on 5 points)
        adj = 1.0 - (1.0 - r2[fam]) * (n - 1) / (n - k) if n > k else r2[fam]
        if adj > best_adj + 1e-9:
            best, best_adj = fam, adj
    if best is None:
        return "none", float("nan"), r2
    if r2[best] < threshold:
        return "none", r2[best], r2
    return best, r2[best], r2


def stalk(z: np.ndarray, *, axis: str = "columns", ids: Sequence[str] | None = None,
          threshold: float = R2_THRESHOLD,
          min_overlap: int = 5, show_progress: bool | None = None) -> pd.DataFrame:
    """Pairwise relationships between columns (datasets) or rows (models).

    Parameters
    ----------
    z : ndarray of shape (n_models, n_columns)
        Normalised scores (NaN = missing).
    axis : {"columns", "rows"}
        Compare datasets (``"columns"``) or models (``"rows"``).
    ids : sequence of str, optional
        Names of the compared units.
    threshold : float
        ``R^2`` threshold of a relationship (0.5).
    min_overlap : int
        Fewer common observations than this gives ``"insufficient"``.
    show_progress : bool, optional
        Progress bar.

    Returns
    -------
    DataFrame
        One row per unordered pair ``a < b`` (``b`` regressed on ``a``): ``a``, ``b``, ``n``,
        ``label``, ``kind`` (see :data:`KINDS`), ``r2`` and ``r2_<family>`` for each family.

    References
    ----------
    Subramani et al. (2025), SimBA, stalk phase.
    """
    z = np.asarray(z, dtype=float)
    if axis not in ("columns", "rows"):
        raise ValidationError(f"axis must be 'columns' or 'rows', got {axis!r}")
    units = z if axis == "columns" else z.T
    n = units.shape[1]
    ids = [str(i) for i in (range(n) if ids is None else ids)]
    if len(ids) != n:
        raise ValidationError(f"{len(ids)} ids for {n} {axis}")
    rows = []
    for i in progress(range(n), desc=f"stalk ({axis})", total=n, show=show_progress):
        for j in range(i + 1, n):
            both = ~(np.isnan(units[:, i]) | np.isnan(units[:, j]))
            m = int(both.sum())
            row = {"a": ids[i], "b": ids[j], "n": m}
            if m < min_overlap:
                row.update(label="insufficient", r2=float("nan"))
                row.update({f"r2_{f}": float("nan") for f in FAMILIES})
            else:
                label, r2, r2_all = classify_pair(units[both, i], units[both, j],
                                                  threshold=threshold)
                row.update(label=label, r2=r2)
                row.update({f"r2_{f}": v for f, v in r2_all.items()})
            rows.append(row)
    table = pd.DataFrame(rows, columns=["a", "b", "n", "label", "r2",
                                        *(f"r2_{f}" for f in FAMILIES)])
    table.insert(4, "kind", table["label"].map(KINDS))
    return table


def stalk_summary(table: pd.DataFrame, by: str = "label") -> pd.Series:
    """Fraction of pairs per ``label`` (or per coarse ``kind``), with ``n_pairs``.

    ``"insufficient"`` pairs are excluded from the denominator.
    """
    if by not in ("label", "kind"):
        raise ValidationError(f"by must be 'label' or 'kind', got {by!r}")
    labels = table.loc[table["label"] != "insufficient", by]
    order = ([*FAMILIES, "none", "constant"] if by == "label"
             else ["linear", "exponential", "power-law", "other", "none"])
    frac = labels.value_counts(normalize=True).reindex(order, fill_value=0.0)
    frac["n_pairs"] = float(len(labels))
    return frac
