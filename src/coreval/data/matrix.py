"""The score matrix: models × items (or models × benchmarks), NaN = not observed."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np
import pandas as pd

from coreval.errors import ValidationError, preview

Kind = Literal["binary", "continuous"]
Level = Literal["item", "benchmark"]
IdSelector = Sequence[str] | Sequence[int] | np.ndarray | None


def _as_ids(ids, n: int, what: str) -> np.ndarray:
    if ids is None:
        return np.array([f"{what}{i}" for i in range(n)], dtype=object)
    raw = np.asarray(ids, dtype=object)
    if raw.ndim != 1:
        raise ValidationError(f"{what} ids must be one-dimensional, got shape {raw.shape}")
    missing = np.flatnonzero(pd.isna(raw))
    if missing.size:  # str() would turn them into the ids "None" and "nan"
        raise ValidationError(f"{what} ids are missing (None or NaN) at positions "
                              f"{preview(missing.tolist(), 5)}")
    return np.asarray(ids).astype(str).astype(object)


def _warn_stray_values(values: np.ndarray, models: np.ndarray, items: np.ndarray) -> None:
    """Warn, naming the cells, when a few values keep almost-0/1 data from being binary.

    Binary is inferred only when every observed value is 0 or 1. A stray 2 or -1 in 0/1
    data (fewer than 1 % of the values) would silently make the matrix continuous.
    """
    observed = ~np.isnan(values)
    stray = observed & ~np.isin(values, (0.0, 1.0))
    n_stray = int(stray.sum())
    if n_stray == 0 or n_stray >= 0.01 * observed.sum():
        return
    cells = ", ".join(f"{models[r]}/{items[c]}={values[r, c]:g}"
                      for r, c in np.argwhere(stray)[:5])
    more = f" and {n_stray - 5} more" if n_stray > 5 else ""
    warnings.warn(f"scores are 0/1 except {n_stray} cell(s): {cells}{more}; the matrix is "
                  "treated as continuous. Fix those cells, or pass kind='continuous' to "
                  "confirm", UserWarning, stacklevel=4)


#: Largest score magnitude accepted (squares and products stay far from float overflow).
MAX_ABS_SCORE = 1e12


@dataclass(frozen=True, eq=False)
class ScoreMatrix:
    """Scores of models (rows) on items or benchmarks (columns).

    Parameters
    ----------
    values : ndarray of shape (n_models, n_items)
        Float scores; ``NaN`` marks an entry that was not observed.
    models, items : sequence of str, optional
        Row and column identifiers (unique). Default ``model0..``, ``item0..``.
    kind : {"binary", "continuous"}, optional
        Score type. Inferred when omitted: binary iff every observed value is 0 or 1.
        Declaring ``"binary"`` for data with other values raises.
    level : {"item", "benchmark"}
        Whether columns are single items or whole benchmarks.
    model_meta, item_meta : DataFrame, optional
        Metadata indexed by model / item id. Recognised columns: ``family`` and
        ``release_date`` for models; ``group`` (benchmark or subtask) and ``text``
        for items. Extra columns are kept.
    name : str
        Dataset name used in reports and harness rows.
    strict : bool
        When true (the default for user-built matrices), reject all-NaN rows or
        columns and matrices with fewer than two models. Subsets made by
        :meth:`take` are not strict; methods re-validate at their own boundary.

    Notes
    -----
    The summary score of a model (:meth:`summary_scores`) is the mean over its
    observed columns, or, when ``item_meta`` has a ``group`` column, the mean of
    the per-group means (equal weight per subtask).
    """

    values: np.ndarray
    models: np.ndarray | Sequence[str] | None = None
    items: np.ndarray | Sequence[str] | None = None
    kind: Kind | None = None
    level: Level = "item"
    model_meta: pd.DataFrame | None = None
    item_meta: pd.DataFrame | None = None
    name: str = ""
    strict: bool = field(default=True, repr=False)

    def __post_init__(self) -> None:
        # A private copy: the matrix is immutable and must not freeze the caller's array.
        if isinstance(self.values, pd.DataFrame):  # keep a frame's labels (from_frame)
            frame = self.values
            if self.models is None:
                object.__setattr__(self, "models", frame.index.to_numpy())
            if self.items is None:
                object.__setattr__(self, "items", frame.columns.to_numpy())
        try:
            values = np.array(self.values, dtype=np.float64, copy=True)
        except (TypeError, ValueError) as exc:
            raise ValidationError(f"score matrix values must be numbers: {exc}") from None
        if values.ndim != 2:
            raise ValidationError(
                f"score matrix must be 2-D (models × items), got shape {values.shape}"
            )
        n_models, n_items = values.shape
        if np.isinf(values).any():
            raise ValidationError("score matrix contains ±inf; use NaN for unobserved entries")
        too_large = np.abs(np.nan_to_num(values)) > MAX_ABS_SCORE
        if too_large.any():
            r, c = np.argwhere(too_large)[0]
            raise ValidationError(
                f"score matrix has values beyond ±{MAX_ABS_SCORE:g} (e.g. {float(values[r, c]):g} at "
                f"row {r}, column {c}); rescale the scores (squares of such values overflow)")
        models = _as_ids(self.models, n_models, "model")
        items = _as_ids(self.items, n_items, "item")
        if len(models) != n_models:
            raise ValidationError(
                f"{len(models)} model ids given for a matrix with {n_models} rows"
            )
        if len(items) != n_items:
            raise ValidationError(f"{len(items)} item ids given for a matrix with {n_items} columns")
        for ids, what in ((models, "model"), (items, "item")):
            uniq, counts = np.unique(ids.astype(str), return_counts=True)
            if (counts > 1).any():
                raise ValidationError(f"duplicate {what} ids: {preview(uniq[counts > 1])}")
        if self.level not in ("item", "benchmark"):
            raise ValidationError(f"level must be 'item' or 'benchmark', got {self.level!r}")
        observed = values[~np.isnan(values)]
        is01 = bool(np.isin(observed, (0.0, 1.0)).all())
        kind = self.kind
        if kind is None:
            kind = "binary" if is01 and observed.size else "continuous"
            if not is01:
                _warn_stray_values(values, models, items)
        elif kind == "binary" and not is01:
            bad = np.unique(observed[~np.isin(observed, (0.0, 1.0))])
            raise ValidationError(
                f"matrix declared binary but has values other than 0/1: {preview(bad, 5)}"
            )
        elif kind not in ("binary", "continuous"):
            raise ValidationError(f"kind must be 'binary' or 'continuous', got {kind!r}")
        if self.strict:
            if n_models < 2:
                raise ValidationError(f"need at least 2 models, got {n_models}")
            if n_items < 1:
                raise ValidationError("score matrix has no columns")
            empty_rows = np.isnan(values).all(axis=1)
            if empty_rows.any():
                raise ValidationError(
                    f"models with no observed score: {preview(models[empty_rows])}"
                )
            empty_cols = np.isnan(values).all(axis=0)
            if empty_cols.any():
                raise ValidationError(
                    f"columns with no observed score: {preview(items[empty_cols])}"
                )
        model_meta = self._check_meta(self.model_meta, models, "model_meta")
        item_meta = self._check_meta(self.item_meta, items, "item_meta")
        values.setflags(write=False)
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "models", models)
        object.__setattr__(self, "items", items)
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "model_meta", model_meta)
        object.__setattr__(self, "item_meta", item_meta)

    @staticmethod
    def _check_meta(meta: pd.DataFrame | None, ids: np.ndarray, what: str) -> pd.DataFrame | None:
        if meta is None:
            return None
        if not isinstance(meta, pd.DataFrame):
            raise ValidationError(f"{what} must be a pandas DataFrame indexed by id")
        index = meta.index.astype(str)
        if index.duplicated().any():
            raise ValidationError(f"{what} has duplicate ids: {preview(index[index.duplicated()])}")
        missing = np.setdiff1d(ids.astype(str), index)
        if len(missing):
            raise ValidationError(f"{what} lacks rows for ids: {preview(missing)}")
        meta = meta.copy()
        meta.index = index
        return meta.loc[ids.astype(str)]

    # ------------------------------------------------------------------ shape
    @property
    def shape(self) -> tuple[int, int]:
        return self.values.shape  # type: ignore[return-value]

    @property
    def n_models(self) -> int:
        return self.values.shape[0]

    @property
    def n_items(self) -> int:
        return self.values.shape[1]

    @property
    def is_binary(self) -> bool:
        return self.kind == "binary"

    @property
    def observed(self) -> np.ndarray:
        """Boolean mask of observed entries."""
        return ~np.isnan(self.values)

    @property
    def fully_observed(self) -> bool:
        return bool(self.observed.all())

    @property
    def groups(self) -> np.ndarray | None:
        """Per-column group label (benchmark/subtask) if ``item_meta`` has ``group``."""
        if self.item_meta is None or "group" not in self.item_meta:
            return None
        return self.item_meta["group"].to_numpy().astype(str)

    @property
    def families(self) -> np.ndarray | None:
        """Per-model family label if ``model_meta`` has ``family``."""
        if self.model_meta is None or "family" not in self.model_meta:
            return None
        return self.model_meta["family"].to_numpy()

    def __repr__(self) -> str:
        frac = self.observed.mean() if self.values.size else 0.0
        return (
            f"ScoreMatrix(name={self.name!r}, {self.n_models} models × {self.n_items} "
            f"{'items' if self.level == 'item' else 'benchmarks'}, {self.kind}, "
            f"{frac:.0%} observed)"
        )

    # ---------------------------------------------------------------- scores
    def summary_scores(self, *, by_group: bool = True) -> np.ndarray:
        """Per-model summary score.

        The mean over observed columns; with item groups (``item_meta['group']``)
        and ``by_group=True``, the unweighted mean of per-group means, so that every
        subtask counts equally.
        """
        groups = self.groups if by_group else None
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN group of a model -> NaN
            if groups is None:
                return np.nanmean(self.values, axis=1) if not self.fully_observed \
                    else self.values.mean(axis=1)
            per_group = [
                np.nanmean(self.values[:, groups == g], axis=1) for g in np.unique(groups)
            ]
        return np.nanmean(np.column_stack(per_group), axis=1)

    def score_range(self) -> tuple[float, float]:
        """The range a full score can take: (0, 1) for scores in [0, 1], else the observed
        minimum and maximum (native scales, e.g. 0-100 or ratings)."""
        lo, hi = float(np.nanmin(self.values)), float(np.nanmax(self.values))
        return (0.0, 1.0) if self.is_binary or (lo >= 0 and hi <= 1) else (lo, hi)

    def item_weights(self, *, by_group: bool = True) -> np.ndarray:
        """Weights ``w`` (summing to 1) with summary score = ``Y @ w`` on complete rows."""
        groups = self.groups if by_group else None
        if groups is None:
            return np.full(self.n_items, 1.0 / self.n_items)
        uniq, inverse, counts = np.unique(groups, return_inverse=True, return_counts=True)
        return 1.0 / (len(uniq) * counts[inverse])

    # ------------------------------------------------------------- subsetting
    def model_index(self, ids: Sequence[str] | np.ndarray) -> np.ndarray:
        """Row positions of model ids; unknown ids raise, listing them."""
        return _positions(self.models, ids, "model")

    def item_index(self, ids: Sequence[str] | np.ndarray) -> np.ndarray:
        """Column positions of item ids; unknown ids raise, listing them."""
        return _positions(self.items, ids, "item")

    def take(self, models: np.ndarray | Sequence[int] | None = None,
             items: np.ndarray | Sequence[int] | None = None) -> ScoreMatrix:
        """Subset by row and column *positions* (order is kept). The result is not strict."""
        rows = np.arange(self.n_models) if models is None else _check_positions(
            models, self.n_models, "model")
        cols = np.arange(self.n_items) if items is None else _check_positions(
            items, self.n_items, "item")
        return replace(
            self,
            values=self.values[np.ix_(rows, cols)],
            models=self.models[rows],
            items=self.items[cols],
            model_meta=None if self.model_meta is None else self.model_meta.iloc[rows],
            item_meta=None if self.item_meta is None else self.item_meta.iloc[cols],
            kind=self.kind,
            strict=False,
        )

    def subset(self, models: IdSelector = None, items: IdSelector = None) -> ScoreMatrix:
        """Subset by model and item *ids* (strings) or positions (integers)."""
        rows = None if models is None else self._resolve(models, self.model_index)
        cols = None if items is None else self._resolve(items, self.item_index)
        return self.take(rows, cols)

    @staticmethod
    def _resolve(sel, to_positions) -> np.ndarray:
        arr = np.asarray(sel)
        if arr.dtype.kind in "iub":
            return arr
        return to_positions(arr.astype(str))

    def with_values(self, values: np.ndarray) -> ScoreMatrix:
        """A copy with new values of the same shape (kind re-inferred)."""
        values = np.asarray(values, dtype=float)
        if values.shape != self.shape:
            raise ValidationError(f"new values have shape {values.shape}, expected {self.shape}")
        return replace(self, values=values, kind=None, strict=False)

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, **kwargs) -> ScoreMatrix:
        """A matrix from a wide DataFrame: index = model ids, columns = item ids.

        The labels are kept (``ScoreMatrix(frame)`` does the same); ``kwargs`` go to the
        constructor (``kind``, ``level``, ``name``, ``item_meta``, ...).
        """
        if not isinstance(frame, pd.DataFrame):
            raise ValidationError(f"from_frame expects a DataFrame, got {type(frame).__name__}")
        return cls(frame, **kwargs)

    def to_frame(self) -> pd.DataFrame:
        """Wide DataFrame: index = model ids, columns = item ids (the inverse of
        :meth:`from_frame`)."""
        return pd.DataFrame(self.values, index=pd.Index(self.models, name="model"),
                            columns=pd.Index(self.items, name="item"))


def _positions(ids_all: np.ndarray, ids, what: str) -> np.ndarray:
    lookup = {v: i for i, v in enumerate(ids_all.astype(str))}
    ids = np.asarray(ids).astype(str)
    unknown = [v for v in ids if v not in lookup]
    if unknown:
        raise ValidationError(f"unknown {what} ids: {preview(unknown)}")
    return np.array([lookup[v] for v in ids], dtype=np.intp)


def _check_positions(pos, n: int, what: str) -> np.ndarray:
    arr = np.asarray(pos)
    if arr.dtype == bool:
        if arr.shape != (n,):
            raise ValidationError(f"{what} mask has length {arr.shape}, expected {n}")
        return np.flatnonzero(arr)
    if arr.size and arr.dtype.kind not in "iu":
        raise ValidationError(f"{what} positions must be integers, got dtype {arr.dtype}")
    arr = arr.astype(np.intp).ravel()
    bad = arr[(arr < 0) | (arr >= n)]
    if bad.size:
        raise ValidationError(f"{what} positions out of range 0..{n - 1}: {preview(bad)}")
    return arr
