"""SimBA score normalisation: chance correction, then the unit interval.

Subramani, Gomez & Diab, "SimBA: Simplifying Benchmark Analysis Using Performance Matrices
Alone" (Findings of EMNLP 2025): the issue spec (the paper's text was not available to us)
compares datasets on scores normalised to ``[0, 1]`` with chance performance mapped to 0:

    y = max(0, (x - c) / (1 - c))

with ``c`` the chance score of the benchmark (default 0). Benchmark-level matrices in coreval
also hold columns on native scales (percentages, Elo, MT-Bench 1-10). A column whose observed
source values leave ``[0, 1]`` is first min-max scaled to ``[0, 1]`` on the source models
(``(x - min) / (max - min)``; this step is our choice); its chance level, given in native
units, is mapped through the same affine map. Columns already inside ``[0, 1]`` are taken as
proportions and are not rescaled. A chance level that is not given (the default, or a column
missing from a dict) is 0 *after* this map, i.e. the source minimum of a native-scale column and
0 of a proportion.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from coreval.errors import ValidationError, preview

ChanceSpec = Mapping[str, float] | Sequence[float] | np.ndarray | float | None


def chance_vector(chance: ChanceSpec, items: Sequence[str]) -> np.ndarray:
    """Per-column chance scores from a scalar, an array or a ``{column id: chance}`` dict.

    Parameters
    ----------
    chance : float, array-like, dict or None
        ``None`` means "not given" everywhere; a dict may name a subset of the columns.
    items : sequence of str
        Column ids, in matrix order.

    Returns
    -------
    ndarray of shape (n_columns,)
        Chance levels in native units, NaN where not given.
    """
    items = [str(i) for i in items]
    n = len(items)
    if chance is None:
        return np.full(n, np.nan)
    if isinstance(chance, Mapping):
        unknown = sorted(set(map(str, chance)) - set(items))
        if unknown:
            raise ValidationError(f"chance levels given for unknown columns: {preview(unknown)}")
        out = np.full(n, np.nan)
        pos = {c: i for i, c in enumerate(items)}
        for key, value in chance.items():
            out[pos[str(key)]] = float(value)
    else:
        out = np.broadcast_to(np.asarray(chance, dtype=float), (n,)).copy() \
            if np.ndim(chance) == 0 else np.asarray(chance, dtype=float).ravel()
        if out.shape != (n,):
            raise ValidationError(f"{out.shape[0]} chance levels for {n} columns")
    if np.isinf(out).any() or (not isinstance(chance, Mapping) and np.isnan(out).any()):
        raise ValidationError("chance levels must be finite")
    return out


class SimbaNormaliser:
    """Chance-corrected ``[0, 1]`` scores, fitted on source models (SimBA, normalisation).

    Parameters
    ----------
    chance : float, array-like, dict or None
        Chance score per column in native units (see :func:`chance_vector`); a level not
        given is 0 after the unit map (source minimum of a native-scale column).

    Attributes
    ----------
    offset_, span_ : ndarray of shape (n_columns,)
        Affine map to ``[0, 1]``: ``(x - offset_) / span_`` (0 and 1 for proportion columns,
        source min and range for native-scale columns; a constant column gets span 1).
    chance_ : ndarray of shape (n_columns,)
        Chance levels after the affine map (must be < 1).
    native_ : ndarray of bool
        Which columns were min-max scaled.
    """

    def __init__(self, chance: ChanceSpec = None) -> None:
        self.chance = chance

    def fit(self, values: np.ndarray, items: Sequence[str] | None = None) -> SimbaNormaliser:
        y = np.asarray(values, dtype=float)
        if y.ndim != 2:
            raise ValidationError(f"scores must be 2-D (models x columns), got shape {y.shape}")
        n = y.shape[1]
        items = [f"item{j}" for j in range(n)] if items is None else list(items)
        chance = chance_vector(self.chance, items)
        observed = ~np.isnan(y)
        has = observed.any(axis=0)
        lo = np.where(has, np.nanmin(np.where(observed, y, np.inf), axis=0), 0.0)
        hi = np.where(has, np.nanmax(np.where(observed, y, -np.inf), axis=0), 1.0)
        native = (lo < 0.0) | (hi > 1.0)
        span = np.where(native, hi - lo, 1.0)
        span = np.where(span > 0, span, 1.0)
        self.native_ = native
        self.offset_ = np.where(native, lo, 0.0)
        self.span_ = span
        self.chance_ = np.where(np.isnan(chance), 0.0, (chance - self.offset_) / self.span_)
        if (self.chance_ >= 1.0).any():
            bad = np.asarray(items)[self.chance_ >= 1.0]
            raise ValidationError(
                f"chance level is at or above the top of the scale for: {preview(bad)}")
        return self

    def transform(self, values: np.ndarray, *, clip: bool = True,
                  columns: np.ndarray | None = None) -> np.ndarray:
        """Normalised scores ``max(0, (u - c) / (1 - c))`` of the unit-scaled ``u``.

        With ``clip=False`` values are only affinely mapped (no floor at 0, no cap at 1), so
        the map can be inverted exactly; predictors use this for new models. ``columns``
        (positions in the fitted matrix) says which columns ``values`` holds (default: all).
        """
        cols = slice(None) if columns is None else np.asarray(columns, dtype=np.intp)
        offset, span, chance = self.offset_[cols], self.span_[cols], self.chance_[cols]
        u = (np.asarray(values, dtype=float) - offset) / span
        z = (u - chance) / (1.0 - chance)
        if clip:
            z = np.clip(z, 0.0, 1.0)  # np.clip keeps NaN
        return z

    def inverse_transform(self, z: np.ndarray) -> np.ndarray:
        """Native units of normalised scores (the inverse of ``transform(clip=False)``)."""
        u = np.asarray(z, dtype=float) * (1.0 - self.chance_) + self.chance_
        return u * self.span_ + self.offset_

    def scale(self) -> np.ndarray:
        """Native units per normalised unit, per column (to map residual sizes)."""
        return (1.0 - self.chance_) * self.span_


def normalise_scores(values: np.ndarray, chance: ChanceSpec = None,
                     items: Sequence[str] | None = None) -> np.ndarray:
    """Normalise a score matrix to SimBA's chance-corrected ``[0, 1]`` scale (NaN kept).

    Parameters
    ----------
    values : ndarray of shape (n_models, n_columns)
    chance : float, array-like, dict or None
        Chance level per column in native units (default 0).
    items : sequence of str, optional
        Column ids, needed when ``chance`` is a dict.

    Returns
    -------
    ndarray of shape (n_models, n_columns)

    References
    ----------
    Subramani et al. (2025), SimBA, score normalisation.
    """
    return SimbaNormaliser(chance).fit(values, items).transform(values)
