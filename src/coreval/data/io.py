"""Load and save score matrices from any supported source.

``load_matrix`` accepts

* a :class:`ScoreMatrix` (returned unchanged),
* a path ending in ``.npz`` (``Y``/``models``/``items`` arrays),
* a path ending in ``.csv`` or ``.parquet`` (long layout when it has columns
  ``model``, ``item``, ``score``; a response-pattern table when it has a
  ``freq`` column and 0/1 item columns, e.g. LSAT7.csv; otherwise wide),
* a directory (lm-evaluation-harness ``--log_samples`` output),
* a bare dataset name such as ``"mmlu"``, looked up as ``<dir>/<name>.npz``
  (then ``.parquet``, ``.csv``) in ``data_dir`` or the ``COREVAL_DATA_DIR``
  environment variable. The folder's ``catalog.json`` (if any) supplies the
  column level and score type of catalogued names.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from coreval.data.lm_eval import read_lm_eval
from coreval.data.matrix import Kind, Level, ScoreMatrix
from coreval.data.npz import read_npz, write_npz
from coreval.data.tables import TABLE_SUFFIXES, Layout, read_scores_table, write_table
from coreval.errors import ValidationError

DATA_DIR_ENV = "COREVAL_DATA_DIR"
CATALOG_FILE = "catalog.json"
#: suffixes tried, in order, when resolving a bare dataset name
NAME_SUFFIXES: tuple[str, ...] = (".npz", ".parquet", ".csv")
MATRIX_SUFFIXES: tuple[str, ...] = (".npz", *TABLE_SUFFIXES)


def load_catalog(data_dir: str | os.PathLike | None = None) -> dict[str, dict[str, Any]]:
    """Read ``catalog.json`` of a data folder (``{}`` when the file is absent).

    Parameters
    ----------
    data_dir : path-like, optional
        The folder; defaults to ``$COREVAL_DATA_DIR``. ``None`` without the
        variable gives ``{}``.

    Returns
    -------
    dict
        Dataset name → entry (``level``, ``scores`` = score type, ``shape``, ...).
    """
    folder = _data_dir(data_dir)
    if folder is None:
        return {}
    path = folder / CATALOG_FILE
    if not path.is_file():
        return {}
    try:
        with path.open(encoding="utf-8") as fh:
            catalog = json.load(fh)
    except (OSError, json.JSONDecodeError) as exc:
        raise ValidationError(f"cannot read {path}: {exc}") from exc
    if not isinstance(catalog, dict):
        raise ValidationError(f"{path} must hold a JSON object (name → entry)")
    return catalog


def _data_dir(data_dir: str | os.PathLike | None) -> Path | None:
    if data_dir is not None:
        return Path(data_dir)
    env = os.environ.get(DATA_DIR_ENV)
    return Path(env) if env else None


def _catalog_kind(entry: dict[str, Any]) -> Kind | None:
    value = entry.get("kind", entry.get("scores"))
    return value if value in ("binary", "continuous") else None


def _resolve_name(source: str, data_dir: str | os.PathLike | None) -> Path:
    folder = _data_dir(data_dir)
    if folder is None:
        raise ValidationError(f"{source!r} is neither an existing path nor resolvable as a "
                              f"dataset name: pass data_dir or set {DATA_DIR_ENV}")
    candidates = [folder / f"{source}{suffix}" for suffix in NAME_SUFFIXES]
    for path in candidates:
        if path.is_file():
            return path
    raise ValidationError(f"dataset {source!r} not found; looked for "
                          f"{', '.join(str(p) for p in candidates)}")


def load_matrix(source: str | os.PathLike | ScoreMatrix, *,
                data_dir: str | os.PathLike | None = None, name: str | None = None,
                kind: Kind | None = None, level: Level | None = None,
                lm_eval: Mapping[str, Any] | None = None) -> ScoreMatrix:
    """Load a score matrix from a file, a folder of lm-eval logs or a dataset name.

    Parameters
    ----------
    source : path-like, str or ScoreMatrix
        ``.npz``, ``.csv`` or ``.parquet`` file (wide, long or response-pattern
        table, detected from the columns); a folder of
        lm-evaluation-harness sample logs; or a bare dataset name resolved in
        ``data_dir`` as ``<name>.npz`` / ``.parquet`` / ``.csv``. Relative paths
        that do not exist are also tried inside ``data_dir``. A
        ``ScoreMatrix`` is returned unchanged.
    data_dir : path-like, optional
        Folder for bare names; defaults to ``$COREVAL_DATA_DIR``.
    name : str, optional
        Dataset name (default: the file stem).
    kind : {"binary", "continuous"}, optional
        Score type; default from the catalog entry, else inferred from values.
    level : {"item", "benchmark"}, optional
        Column level; default from the catalog entry (e.g. ``benchmark`` for
        ``mteb``), else inferred (``.npz``) or ``item``.
    lm_eval : mapping, optional
        Options of :func:`coreval.data.lm_eval.read_lm_eval` for a folder of lm-eval
        logs (``metric``, ``tasks``, ``filter``, ``strict``).

    Returns
    -------
    ScoreMatrix

    Raises
    ------
    ValidationError
        Unknown suffix, missing file, or a name not found (listing the paths
        looked for).
    """
    if isinstance(source, ScoreMatrix):
        return source
    if not isinstance(source, str | os.PathLike):
        raise ValidationError(f"cannot load a score matrix from {type(source).__name__}")
    path = Path(source)
    folder = _data_dir(data_dir)
    if not path.exists() and not path.is_absolute() and folder is not None \
            and (folder / path).exists():
        path = folder / path  # a relative file name such as "LSAT7.csv" inside data_dir
    if not path.exists():
        text = str(source)
        is_bare = path.suffix.lower() not in MATRIX_SUFFIXES and os.sep not in text \
            and "/" not in text
        if not is_bare:
            raise ValidationError(f"no such file or folder: {path}")
        path = _resolve_name(text, data_dir)
        entry = load_catalog(path.parent).get(text, {})
        level = level or entry.get("level")
        kind = kind or _catalog_kind(entry)
        name = name or text
    else:
        entry = load_catalog(path.parent).get(path.stem, {}) if path.is_file() else {}
        level = level or entry.get("level")
        kind = kind or _catalog_kind(entry)
    if path.is_dir():
        return read_lm_eval(path, name=name, kind=kind, **dict(lm_eval or {}))
    suffix = path.suffix.lower()
    if suffix == ".npz":
        return read_npz(path, name=name, level=level, kind=kind)
    if suffix in TABLE_SUFFIXES:
        return read_scores_table(path, name=name, kind=kind, level=level or "item")
    raise ValidationError(f"{path.name}: unsupported file type {suffix!r}; expected "
                          f"{', '.join(MATRIX_SUFFIXES)} or an lm-eval output folder")


def save_matrix(matrix: ScoreMatrix, path: str | os.PathLike, *,
                layout: Layout = "wide") -> Path:
    """Save ``matrix`` by suffix (``.npz``, ``.csv``, ``.parquet``), atomically.

    Parameters
    ----------
    matrix : ScoreMatrix
    path : path-like
        Target file.
    layout : {"wide", "long"}
        Table layout for CSV/Parquet (ignored for ``.npz``).

    Returns
    -------
    Path
        The written file.

    Notes
    -----
    ``.npz`` stores float32 scores (the shared-data format) and, like the
    tables, only ids and values: metadata, ``kind`` and ``level`` are not kept.
    """
    if not isinstance(matrix, ScoreMatrix):
        raise ValidationError(f"expected a ScoreMatrix, got {type(matrix).__name__}")
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".npz":
        return write_npz(matrix, path)
    if suffix in TABLE_SUFFIXES:
        return write_table(matrix, path, layout=layout)
    raise ValidationError(f"{path.name}: unsupported file type {suffix!r}; expected "
                          f"{', '.join(MATRIX_SUFFIXES)}")
