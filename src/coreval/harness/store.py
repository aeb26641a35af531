"""Resumable storage of harness results: one Parquet file per finished cell.

A grid writes each finished cell to ``<out>.parts/<key>.parquet`` atomically
(temporary file + ``os.replace``), keyed by a stable hash of everything that
determines the cell's result. A restarted grid skips the cells whose part exists,
so a run killed at any moment (even with SIGKILL) resumes and ends with the same
table. At the end the parts of the grid are combined, in grid order, into ``out``.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from coreval._atomic import atomic_path
from coreval.data.matrix import ScoreMatrix

#: The public contract: these columns, in this order, start every results table.
CONTRACT_COLUMNS: tuple[str, ...] = (
    "dataset", "method", "split", "budget", "k", "n_source", "seed",
    "mae", "rmse", "kendall", "spearman", "pearson", "r2", "coverage90", "width90",
    "seconds_select", "seconds_fit", "seconds_predict", "coreset",
)

#: Columns after the contract ones (see :func:`coreval.harness.run_grid`).
SCHEMA = pa.schema([
    ("dataset", pa.string()), ("method", pa.string()), ("split", pa.string()),
    ("budget", pa.float64()), ("k", pa.int64()), ("n_source", pa.int64()),
    ("seed", pa.int64()),
    ("mae", pa.float64()), ("rmse", pa.float64()), ("kendall", pa.float64()),
    ("spearman", pa.float64()), ("pearson", pa.float64()), ("r2", pa.float64()),
    ("coverage90", pa.float64()), ("width90", pa.float64()),
    ("seconds_select", pa.float64()), ("seconds_fit", pa.float64()),
    ("seconds_predict", pa.float64()), ("coreset", pa.list_(pa.string())),
    # extras
    ("n_target", pa.int64()), ("n_skipped", pa.int64()), ("interval", pa.string()),
    ("uses_source_models", pa.bool_()), ("error", pa.string()), ("fold", pa.int64()),
    ("label", pa.string()), ("task", pa.string()), ("level", pa.float64()),
    ("interval_score90", pa.float64()), ("n_cells", pa.int64()), ("n_columns", pa.int64()),
    ("cell", pa.string()), ("calibration", pa.string()), ("selection", pa.string()),
])

#: Columns a part written before they existed may lack (read as null).
_OPTIONAL = ("calibration", "selection")

#: Integer columns that are never null (plain int64 in pandas).
_DENSE_INT = ("k", "seed", "n_target", "n_columns")


def _exact(obj: Any) -> Any:
    """A JSON-able stand-in for an object ``json`` cannot render, exact to the byte.

    ``repr`` is not: numpy elides the middle of arrays over 1000 entries and rounds to 8
    digits, so two different option arrays would share a cell key.
    """
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        if obj.dtype == object:
            return {"ndarray": obj.tolist(), "shape": list(obj.shape)}
        data = np.ascontiguousarray(obj)
        return {"ndarray": hashlib.sha256(data.tobytes()).hexdigest(),
                "dtype": str(data.dtype), "shape": list(data.shape)}
    if isinstance(obj, pd.DataFrame | pd.Series):
        return {"pandas": _frame_hash(obj)}
    if isinstance(obj, set | frozenset):
        return sorted(obj, key=repr)
    return repr(obj)  # a default repr naming an address differs per run: no false reuse


def _frame_hash(frame: pd.DataFrame | pd.Series) -> str:
    """SHA-256 of a frame's index, columns and values (pandas' row hashes)."""
    try:
        rows = pd.util.hash_pandas_object(frame, index=True)
    except TypeError:  # unhashable cells (lists, arrays): hash their text
        rows = pd.util.hash_pandas_object(frame.astype(str), index=True)
    h = hashlib.sha256(rows.to_numpy().tobytes())
    if isinstance(frame, pd.DataFrame):
        h.update("\x1f".join(map(str, frame.columns)).encode("utf-8"))
    return h.hexdigest()


def stable_hash(obj: Any, *, length: int = 24) -> str:
    """Hex SHA-256 of a JSON rendering of ``obj`` (keys sorted), truncated to ``length``.

    Arrays and frames enter by a hash of their bytes (:func:`_exact`).
    """
    text = json.dumps(obj, sort_keys=True, default=_exact, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:length]


def matrix_fingerprint(matrix: ScoreMatrix) -> str:
    """Hash of a score matrix's values, ids, kind, level and item / model metadata.

    NaN-safe and byte exact.
    """
    h = hashlib.sha256()
    values = np.ascontiguousarray(matrix.values, dtype=np.float64)
    h.update(str(values.shape).encode())
    h.update(np.where(np.isnan(values), np.inf, values).tobytes())
    for ids in (matrix.models, matrix.items):
        h.update("\x1f".join(map(str, ids)).encode("utf-8"))
        h.update(b"\x1e")
    h.update(f"{matrix.kind}|{matrix.level}".encode())
    # metadata changes results: groups the summary score, item features (Scales++) and
    # model covariates what a method sees
    for meta in (matrix.item_meta, matrix.model_meta):
        h.update(b"\x1d" + (b"" if meta is None else _frame_hash(meta).encode()))
    return h.hexdigest()[:24]


def rows_fingerprint(rows: Sequence[int] | np.ndarray) -> str:
    """Hash of an ordered list of row positions."""
    return hashlib.sha256(np.asarray(rows, dtype=np.int64).tobytes()).hexdigest()[:24]


class PartStore:
    """The ``<out>.parts/`` folder of a grid.

    Parameters
    ----------
    out : path-like
        The combined results file; parts live in ``<out>.parts/``.
    """

    def __init__(self, out: str | os.PathLike) -> None:
        self.out = Path(out)
        self.parts_dir = Path(f"{self.out}.parts")
        self._tables: dict[str, pa.Table] = {}  # parts read or written by this store

    def remove_stale_temporaries(self) -> int:
        """Delete temporary files left by a killed run; returns how many were removed.

        Two grids writing into the same ``out`` at the same time are not supported.
        """
        if not self.parts_dir.is_dir():
            return 0
        stale = list(self.parts_dir.glob(".*.tmp"))
        for p in stale:
            p.unlink(missing_ok=True)
        return len(stale)

    def path(self, key: str) -> Path:
        return self.parts_dir / f"{key}.parquet"

    def finished(self, keys: Iterable[str], *, include_errors: bool = True) -> set[str]:
        """Keys among ``keys`` whose part file exists and is readable.

        With ``include_errors=False`` the cells that recorded an error count as
        unfinished (so they are run again).
        """
        if not self.parts_dir.is_dir():
            return set()
        present = {p.stem for p in self.parts_dir.glob("*.parquet") if not p.name.startswith(".")}
        done = set()
        for key in keys:
            if key not in present:
                continue
            table = self._read(key)
            if table is None:
                continue
            if not include_errors and table.column("error")[0].is_valid:
                continue
            done.add(key)
        return done

    def write(self, row: Mapping[str, Any]) -> Path:
        """Write one finished cell (``row["cell"]`` is its key) atomically."""
        table = pa.Table.from_pylist([dict(row)], schema=SCHEMA)
        path = self.path(str(row["cell"]))
        with atomic_path(path) as tmp:
            pq.write_table(table, tmp)
        self._tables[str(row["cell"])] = table
        return path

    def _read(self, key: str) -> pa.Table | None:
        if key in self._tables:
            return self._tables[key]
        try:
            table = _conform(pq.read_table(self.path(key)))
        except (OSError, pa.ArrowException, KeyError, ValueError):
            return None  # unreadable or from an older schema: treat as not finished
        self._tables[key] = table
        return table

    def combine(self, keys: Sequence[str]) -> pa.Table:
        """Concatenate the parts of ``keys`` in that order and write ``out`` atomically."""
        tables = []
        for key in keys:
            table = self._read(key)
            if table is None:
                raise FileNotFoundError(f"missing or unreadable result part for cell {key}")
            tables.append(table)
        combined = pa.concat_tables(tables) if tables else SCHEMA.empty_table()
        with atomic_path(self.out) as tmp:
            pq.write_table(combined, tmp)
        return combined


def to_frame(table: pa.Table) -> pd.DataFrame:
    """pandas view of a results table: nullable Int64/boolean, lists for ``coreset``."""
    df = table.to_pandas(types_mapper={pa.int64(): pd.Int64Dtype(),
                                       pa.bool_(): pd.BooleanDtype()}.get)
    for col in _DENSE_INT:
        if len(df) and not df[col].isna().any():
            df[col] = df[col].astype("int64")
    df["coreset"] = [[] if v is None else [str(x) for x in v] for v in df["coreset"]]
    return df


def read_results(path: str | os.PathLike) -> pd.DataFrame:
    """Read a combined results file written by :func:`coreval.harness.run_grid`."""
    return to_frame(_conform(pq.read_table(path)))


def _conform(table: pa.Table) -> pa.Table:
    """``table`` in :data:`SCHEMA`'s columns and types (missing optional columns as null)."""
    for name in _OPTIONAL:
        if name not in table.column_names:
            table = table.append_column(name, pa.nulls(len(table), SCHEMA.field(name).type))
    return table.select(SCHEMA.names).cast(SCHEMA)
