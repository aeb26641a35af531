"""A store of cached model responses: one or more text responses per (model, query).

DKPS ("Query-efficient model evaluation using cached responses", Helm, Johnson &
Priebe 2026) needs the raw responses of reference models, not only their scores.
:class:`ResponseStore` holds them as a long table and checks completeness at the
boundary: a (model, query) pair without a response is an error that names it,
unless the caller asks to exclude the incomplete models (documented, returned).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from coreval.errors import ValidationError, preview


def _as_column_type(path: str | Path, column: str, ids: Sequence[str | int]) -> list:
    """``ids`` converted to the type of ``column`` in a parquet file, for a pyarrow filter.

    The store keeps ids as strings ("0"), while the file's column may be integers: a
    filter must use the column's type.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        field = pq.read_schema(path).field(column)
    except (OSError, KeyError) as exc:
        raise ValidationError(f"cannot read column {column!r} of {path}: {exc}") from None
    for is_type, cast, what, kind in ((pa.types.is_integer, int, "integers", "integer"),
                                      (pa.types.is_floating, float, "numbers", "numeric")):
        if is_type(field.type):
            try:
                return [cast(q) for q in ids]
            except ValueError:
                raise ValidationError(f"ids must be {what} for the {kind} column {column!r} "
                                      f"of {path}") from None
    if pa.types.is_string(field.type) or pa.types.is_large_string(field.type):
        return [str(q) for q in ids]
    return list(ids)


@dataclass(frozen=True, eq=False)
class ResponseStore:
    """Responses of models to queries, long format.

    Parameters
    ----------
    frame : DataFrame
        Columns ``model`` (str), ``query`` (str) and ``response`` (str). Several
        rows for the same (model, query) are several sampled responses; DKPS
        averages their embeddings. Empty strings are kept and embedded like any
        other text.

    Notes
    -----
    Query and model ids are stored as strings, so integer item ids such as
    AlpacaEval's ``0..804`` become ``"0".."804"``.
    """

    frame: pd.DataFrame

    def __post_init__(self) -> None:
        if not isinstance(self.frame, pd.DataFrame):
            raise ValidationError("ResponseStore expects a pandas DataFrame")
        missing = {"model", "query", "response"} - set(self.frame.columns)
        if missing:
            raise ValidationError(f"response table lacks columns: {preview(sorted(missing))}")
        frame = self.frame[["model", "query", "response"]].copy()
        for col in ("model", "query"):
            empty = frame[col].isna() | (frame[col].astype(str).str.strip() == "")
            if empty.any():
                raise ValidationError(f"{int(empty.sum())} responses have no {col} id (rows "
                                      f"{preview(np.flatnonzero(empty.to_numpy()).tolist(), 5)})")
        if frame["response"].isna().any():
            bad = frame.loc[frame["response"].isna(), ["model", "query"]].head(3)
            pairs = [f"({m}, {q})" for m, q in bad.itertuples(index=False)]
            raise ValidationError(f"responses are missing (None/NaN) for {preview(pairs)}")
        frame["model"] = frame["model"].astype(str)
        frame["query"] = frame["query"].astype(str)
        frame["response"] = frame["response"].astype(str)
        object.__setattr__(self, "frame", frame.reset_index(drop=True))

    # ---------------------------------------------------------------- build
    @classmethod
    def from_records(cls, records: Sequence[tuple[str, str, str]]) -> ResponseStore:
        """Build from ``(model, query, response)`` tuples."""
        return cls(pd.DataFrame(list(records), columns=["model", "query", "response"]))

    @classmethod
    def from_parquet(cls, path: str | Path, *, models: Sequence[str] | None = None,
                     queries: Sequence[str | int] | None = None, model_col: str = "model",
                     query_col: str = "item", response_col: str = "output") -> ResponseStore:
        """Read a long parquet table (default: the AlpacaEval outputs schema).

        Only the requested models / queries are read (pyarrow filters), so a
        run loads just what it needs.
        """
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            have = set(pq.read_schema(path).names)
        except (OSError, pa.ArrowException) as exc:
            raise ValidationError(f"cannot read responses from {path}: {exc}") from None
        absent = [c for c in (model_col, query_col, response_col) if c not in have]
        if absent:
            raise ValidationError(f"{path} has no column(s) {preview(absent)}; columns are "
                                  f"{preview(sorted(have), 10)}")
        filters = []
        if models is not None:
            filters.append((model_col, "in", _as_column_type(path, model_col, models)))
        if queries is not None:
            filters.append((query_col, "in", _as_column_type(path, query_col, queries)))
        try:
            df = pd.read_parquet(path, columns=[model_col, query_col, response_col],
                                 filters=filters or None)
        except (OSError, pa.ArrowException) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ValidationError(f"cannot read responses from {path}: {first}") from None
        df = df.rename(columns={model_col: "model", query_col: "query", response_col: "response"})
        return cls(df)

    # ---------------------------------------------------------------- views
    @property
    def models(self) -> np.ndarray:
        return np.asarray(sorted(self.frame["model"].unique()), dtype=object)

    @property
    def queries(self) -> np.ndarray:
        return np.asarray(sorted(self.frame["query"].unique()), dtype=object)

    def missing_pairs(self, models: Sequence[str], queries: Sequence[str]) -> pd.DataFrame:
        """(model, query) pairs of the requested grid that have no response."""
        models = [str(m) for m in models]
        queries = [str(q) for q in queries]
        grid = pd.MultiIndex.from_product([models, queries], names=["model", "query"])
        have = pd.MultiIndex.from_frame(self.frame[["model", "query"]].drop_duplicates())
        absent = grid.difference(have)
        return absent.to_frame(index=False)

    def complete_models(self, models: Sequence[str], queries: Sequence[str]) -> np.ndarray:
        """The subset of ``models`` that answered every one of ``queries``."""
        absent = self.missing_pairs(models, queries)
        bad = set(absent["model"])
        return np.asarray([str(m) for m in models if str(m) not in bad], dtype=object)

    def grid(self, models: Sequence[str], queries: Sequence[str], *,
             exclude_incomplete: bool = False) -> tuple[pd.DataFrame, np.ndarray]:
        """Rows for a models × queries grid, checked for completeness.

        Parameters
        ----------
        models, queries : sequence of str
            The grid to fetch.
        exclude_incomplete : bool
            False (default): a missing (model, query) pair raises a one-line
            error naming it. True: models with any missing pair are dropped and
            returned as the second value, so the caller can report them.

        Returns
        -------
        rows : DataFrame
            Columns ``model``, ``query``, ``response`` for the kept models.
        excluded : ndarray of str
            Models dropped for missing responses (empty unless ``exclude_incomplete``).
        """
        models = [str(m) for m in models]
        queries = [str(q) for q in queries]
        unknown = sorted(set(models) - set(self.frame["model"]))
        if unknown and not exclude_incomplete:
            raise ValidationError(f"no responses at all for models: {preview(unknown)}")
        absent = self.missing_pairs(models, queries)
        excluded = np.asarray(sorted(set(absent["model"])), dtype=object)
        if len(absent) and not exclude_incomplete:
            pairs = [f"({m}, {q})" for m, q in absent.itertuples(index=False)]
            raise ValidationError(f"no response for (model, query) pairs: {preview(pairs, 5)}")
        keep = [m for m in models if m not in set(excluded)]
        rows = self.frame[self.frame["model"].isin(keep) & self.frame["query"].isin(queries)]
        return rows, excluded
