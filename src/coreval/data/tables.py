"""Score matrices as tables: wide and long CSV/Parquet, and response-pattern tables.

Layouts
-------
wide
    One row per model; the first column holds the model id, every other column
    is an item (or benchmark) id. Empty cells are unobserved (NaN).
long
    Columns ``model``, ``item``, ``score`` (one row per observed entry; any
    extra columns are ignored). A (model, item) pair may appear only once.
response patterns
    Psychometric pattern × frequency tables (e.g. LSAT-6/7): one column per
    item with 0/1 answers and a ``freq`` column counting respondents with that
    pattern; expanded to one row per respondent.

All writers are atomic (``coreval._atomic.write_atomic``: a temporary file next
to the target, then ``os.replace``), so a crash never leaves a half-written table.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from coreval._atomic import write_atomic
from coreval.data.matrix import Kind, Level, ScoreMatrix
from coreval.errors import ValidationError, preview

Layout = Literal["wide", "long"]
LONG_COLUMNS: tuple[str, str, str] = ("model", "item", "score")
#: Score cells read as missing (pandas' defaults for CSV). Ids are read verbatim: a model
#: or item called "NA" or "null" keeps its name, and only an empty id cell is missing.
MISSING_SCORES: frozenset[str] = frozenset(
    {"", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND",
     "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"})
TABLE_SUFFIXES: tuple[str, ...] = (".csv", ".parquet")


# ------------------------------------------------------------------------- helpers
def _suffix(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix not in TABLE_SUFFIXES:
        raise ValidationError(f"{path.name}: unsupported table suffix {suffix!r}; "
                              f"expected one of {', '.join(TABLE_SUFFIXES)}")
    return suffix


def read_table(path: str | os.PathLike) -> pd.DataFrame:
    """Read a CSV or Parquet file into a DataFrame.

    CSV cells are read as text (ids keep their spelling); Parquet columns keep
    their stored types. Scores are converted to float by the callers.
    """
    path = Path(path)
    suffix = _suffix(path)
    if not path.is_file():
        raise ValidationError(f"no such file: {path}")
    try:
        if suffix == ".csv":
            # Read every cell as text so ids keep their spelling ("007" stays "007");
            # scores are converted (and checked) later by _numeric.
            header = pd.read_csv(path, header=None, nrows=1, dtype=str,
                                 keep_default_na=False).iloc[0]  # a column "NA" is a name
            names = header.str.strip()
            dup = names[names.duplicated()].unique()
            if len(dup):
                raise ValidationError(f"{path.name}: duplicate column names "
                                      f"{preview(list(dup), 5)} (each column needs its own name)")
            frame = pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[""])
            if not isinstance(frame.index, pd.RangeIndex):
                # pandas makes the first field the row index when every row has one field
                # more than the header (R's write.table; trailing commas): columns shift
                raise ValidationError(
                    f"{path.name}: the rows have {len(names) + frame.index.nlevels} fields "
                    f"but the header names {len(names)}; name every column (the model id "
                    "column too) or remove trailing commas")
            return frame
        frame = pd.read_parquet(path)
        # pandas stores a frame's index in the file and restores it. A named or non-integer
        # index (the model ids of ScoreMatrix.to_frame()) becomes a column again; an
        # unnamed integer index is row numbers (a filtered frame's) and is dropped.
        index = frame.index
        if not isinstance(index, pd.RangeIndex):
            row_numbers = index.name is None and pd.api.types.is_integer_dtype(index)
            frame = frame.reset_index(drop=row_numbers)
        return frame
    except ValidationError:
        raise
    except (ValueError, OSError, pd.errors.ParserError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ValidationError(f"cannot read {path.name}: {first}") from exc


def is_long(frame: pd.DataFrame) -> bool:
    """Whether a table is in long layout (has ``model``, ``item`` and ``score`` columns)."""
    cols = {str(c).strip().lower() for c in frame.columns}
    return set(LONG_COLUMNS) <= cols


def _numeric(frame: pd.DataFrame, where: str) -> np.ndarray:
    """Convert every column to float; non-numeric cells raise naming the column."""
    out = np.empty(frame.shape, dtype=np.float64)
    for j, col in enumerate(frame.columns):
        cells = frame[col]
        if not pd.api.types.is_numeric_dtype(cells):
            text = cells.astype(str).str.strip()
            cells = cells.where(cells.isna() | ~text.isin(MISSING_SCORES), None)
        converted = pd.to_numeric(cells, errors="coerce")
        bad = converted.isna() & cells.notna()
        if bad.any():
            raise ValidationError(f"{where}: column {col!r} has non-numeric values: "
                                  f"{preview(frame[col][bad].astype(str).unique(), 5)}")
        out[:, j] = converted.to_numpy(dtype=np.float64, na_value=np.nan)
    return out


# ------------------------------------------------------------------------- readers
def frame_to_matrix(frame: pd.DataFrame, *, long: bool | None = None, name: str = "",
                    kind: Kind | None = None, level: Level = "item",
                    where: str = "table") -> ScoreMatrix:
    """Build a :class:`ScoreMatrix` from a wide or long DataFrame.

    Parameters
    ----------
    frame : DataFrame
        Wide (first column = model id) or long (``model``, ``item``, ``score``).
    long : bool, optional
        Layout; auto-detected with :func:`is_long` when omitted.
    name, kind, level
        Passed to :class:`ScoreMatrix`.
    where : str
        Source name used in error messages.
    """
    if long is None:
        long = is_long(frame)
    if long:
        rename = {c: str(c).strip().lower() for c in frame.columns
                  if str(c).strip().lower() in LONG_COLUMNS}
        frame = frame.rename(columns=rename)
        clash = [c for c in LONG_COLUMNS if list(frame.columns).count(c) > 1]
        if clash:
            raise ValidationError(f"{where}: several columns read as {clash} (names are "
                                  "matched without case or spaces); keep one of each")
        missing = [c for c in LONG_COLUMNS if c not in frame.columns]
        if missing:
            raise ValidationError(f"{where}: long table lacks columns {missing}")
        for col in ("model", "item"):
            empty = frame[col].isna() | (frame[col].astype(str).str.strip() == "")
            if empty.any():
                raise ValidationError(f"{where}: {int(empty.sum())} rows have no {col} id "
                                      f"(rows {preview(np.flatnonzero(empty.to_numpy()), 5)})")
        keys = frame[["model", "item"]].astype(str)
        dup = keys.duplicated(keep=False)
        if dup.any():
            pairs = keys[dup].drop_duplicates().itertuples(index=False)
            raise ValidationError(f"{where}: duplicate (model, item) entries: "
                                  f"{preview([f'{m}/{i}' for m, i in pairs], 5)}")
        scores = _numeric(frame[["score"]], where)[:, 0]
        models = pd.unique(keys["model"])  # order of first appearance
        items = pd.unique(keys["item"])
        values = np.full((len(models), len(items)), np.nan)
        rows = pd.Index(models).get_indexer(keys["model"])
        cols = pd.Index(items).get_indexer(keys["item"])
        values[rows, cols] = scores
        return ScoreMatrix(values, models=models, items=items, kind=kind, level=level,
                           name=name)
    if frame.shape[1] < 2:
        raise ValidationError(f"{where}: wide table needs a model-id column and at least one "
                              f"item column, got {frame.shape[1]} column(s)")
    ids = frame.iloc[:, 0]
    ids = ids.where(ids.isna() | (ids.astype(str).str.strip() != ""), None)
    if ids.isna().any():
        raise ValidationError(f"{where}: {int(ids.isna().sum())} rows have no model id")
    values = _numeric(frame.iloc[:, 1:], where)
    return ScoreMatrix(values, models=ids.astype(str).to_numpy(),
                       items=[str(c) for c in frame.columns[1:]], kind=kind, level=level,
                       name=name)


def read_wide(path: str | os.PathLike, *, name: str | None = None, kind: Kind | None = None,
              level: Level = "item") -> ScoreMatrix:
    """Read a wide CSV/Parquet table (rows = models, first column = model id)."""
    path = Path(path)
    return frame_to_matrix(read_table(path), long=False, name=name or path.stem, kind=kind,
                           level=level, where=path.name)


def read_long(path: str | os.PathLike, *, name: str | None = None, kind: Kind | None = None,
              level: Level = "item") -> ScoreMatrix:
    """Read a long CSV/Parquet table with columns ``model``, ``item``, ``score``.

    Models and items keep their order of first appearance; pairs that never
    appear are unobserved (NaN). Duplicate (model, item) pairs raise.
    """
    path = Path(path)
    return frame_to_matrix(read_table(path), long=True, name=name or path.stem, kind=kind,
                           level=level, where=path.name)


def read_scores_table(path: str | os.PathLike, *, name: str | None = None,
                      kind: Kind | None = None, level: Level = "item") -> ScoreMatrix:
    """Read a CSV/Parquet score table, detecting its layout.

    Long when it has columns ``model``, ``item`` and ``score``; a response-pattern
    table when it has a ``freq`` column and every other column is 0/1 (see
    :func:`read_response_patterns`); wide otherwise.
    """
    path = Path(path)
    frame = read_table(path)
    if not is_long(frame) and is_response_patterns(frame):
        if kind == "continuous":
            raise ValidationError(f"{path.name}: a response-pattern table is binary")
        return patterns_to_matrix(frame, name=name or path.stem, where=path.name)
    return frame_to_matrix(frame, name=name or path.stem, kind=kind, level=level,
                           where=path.name)


def _freq_column(frame: pd.DataFrame, freq_column: str = "freq") -> str | None:
    lower = {str(c).strip().lower(): c for c in frame.columns}
    return lower.get(freq_column.lower())


def is_response_patterns(frame: pd.DataFrame, freq_column: str = "freq") -> bool:
    """Whether a table looks like a pattern × frequency table (0/1 columns plus ``freq``)."""
    freq = _freq_column(frame, freq_column)
    if freq is None or frame.shape[1] < 2:
        return False
    raw = frame.drop(columns=[freq])
    # missing-value tokens (NA, null, ...) are missing answers, as _numeric reads them
    raw = raw.apply(lambda col: col if pd.api.types.is_numeric_dtype(col) else col.where(
        col.isna() | ~col.astype(str).str.strip().isin(MISSING_SCORES), None))
    items = raw.apply(pd.to_numeric, errors="coerce")
    if (items.isna() & raw.notna()).to_numpy().any() or items.isna().to_numpy().all():
        return False  # a non-numeric column (e.g. model ids): not a pattern table
    observed = items.to_numpy(dtype=np.float64, na_value=np.nan)
    return bool(np.isin(observed[~np.isnan(observed)], (0.0, 1.0)).all())


def patterns_to_matrix(frame: pd.DataFrame, *, freq_column: str = "freq", name: str = "",
                       where: str = "table") -> ScoreMatrix:
    """Expand a response-pattern × frequency DataFrame (see :func:`read_response_patterns`)."""
    freq_col = _freq_column(frame, freq_column)
    if freq_col is None:
        raise ValidationError(f"{where}: no frequency column {freq_column!r}; columns are "
                              f"{preview(frame.columns, 10)}")
    freq = _numeric(frame[[freq_col]], where)[:, 0]
    if np.isnan(freq).any() or (freq < 0).any() or (freq != np.round(freq)).any():
        raise ValidationError(f"{where}: column {freq_col!r} must hold non-negative "
                              "integer counts")
    items = frame.drop(columns=[freq_col])
    patterns = _numeric(items, where)
    if not np.isin(patterns[~np.isnan(patterns)], (0.0, 1.0)).all():
        raise ValidationError(f"{where}: response patterns must be 0/1")
    rows = np.repeat(np.arange(len(frame)), freq.astype(np.int64))
    models = [f"resp{i}" for i in range(len(rows))]
    meta = pd.DataFrame({"pattern": rows}, index=pd.Index(models, name="model"))
    return ScoreMatrix(patterns[rows], models=models, items=[str(c) for c in items.columns],
                       kind="binary", level="item", model_meta=meta, name=name)


def read_response_patterns(path: str | os.PathLike, *, freq_column: str = "freq",
                           name: str | None = None) -> ScoreMatrix:
    """Expand a response-pattern × frequency table to one row per respondent.

    Parameters
    ----------
    path : path-like
        CSV/Parquet with one 0/1 column per item and a frequency column, e.g.
        the LSAT-6/7 tables of Bock & Lieberman (1970).
    freq_column : str
        Name of the frequency column (case-insensitive).
    name : str, optional
        Dataset name; defaults to the file stem.

    Returns
    -------
    ScoreMatrix
        Binary matrix of ``sum(freq)`` respondents × items; respondent ids are
        ``resp0, resp1, ...`` (identical patterns would otherwise collide), in
        table row order. ``model_meta['pattern']`` holds the source row.

    References
    ----------
    Bock, R. D. & Lieberman, M. (1970). Fitting a response model for n
    dichotomously scored items. Psychometrika 35, 179–197.
    """
    path = Path(path)
    return patterns_to_matrix(read_table(path), freq_column=freq_column,
                              name=name or path.stem, where=path.name)


# ------------------------------------------------------------------------- writers
def matrix_to_frame(matrix: ScoreMatrix, layout: Layout = "wide") -> pd.DataFrame:
    """The matrix as a wide (``model`` + item columns) or long DataFrame."""
    if layout == "wide":
        frame = matrix.to_frame()
        frame.columns = frame.columns.astype(str)
        return frame.reset_index()
    if layout == "long":
        # every cell (unobserved: no score), so the reader's first-appearance order of the
        # ids is the matrix's order
        rows, cols = np.indices(matrix.shape).reshape(2, -1)
        return pd.DataFrame({"model": matrix.models[rows].astype(str),
                             "item": matrix.items[cols].astype(str),
                             "score": matrix.values[rows, cols]})
    raise ValidationError(f"layout must be 'wide' or 'long', got {layout!r}")


def write_table(matrix: ScoreMatrix, path: str | os.PathLike, *,
                layout: Layout = "wide") -> Path:
    """Write ``matrix`` as a CSV or Parquet table (by suffix), atomically.

    Parameters
    ----------
    matrix : ScoreMatrix
    path : path-like
        Target file ending in ``.csv`` or ``.parquet``.
    layout : {"wide", "long"}
        Wide: one row per model (unobserved = empty cell). Long: one row per
        cell with columns ``model``, ``item``, ``score`` (unobserved = empty score).

    Returns
    -------
    Path
        The written file.
    """
    path = Path(path)
    suffix = _suffix(path)
    frame = matrix_to_frame(matrix, layout)
    if suffix == ".csv":
        return write_atomic(path, lambda tmp: frame.to_csv(tmp, index=False,
                                                           float_format="%.17g"))
    return write_atomic(path, lambda tmp: frame.to_parquet(tmp, index=False))
