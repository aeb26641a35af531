"""Reader and writer for the ``.npz`` score-matrix format (keys ``Y``, ``models``, ``items``).

This is the format of ``shared/data`` (see its README): ``Y`` is a float
(models × columns) array with NaN for unobserved entries; ``models`` and
``items`` are string arrays. No pickled objects are read or written.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from coreval.data.matrix import Level, ScoreMatrix
from coreval.errors import ValidationError


def read_npz(path: str | os.PathLike, *, name: str | None = None, level: Level | None = None,
             kind: str | None = None) -> ScoreMatrix:
    """Read a score matrix from an ``.npz`` file.

    Parameters
    ----------
    path : path-like
        File with arrays ``Y`` (models × columns), ``models`` and ``items``.
    name : str, optional
        Dataset name; defaults to the file stem.
    level : {"item", "benchmark"}, optional
        Column level. Inferred when omitted: ``item`` when column ids look like
        ``<dataset>/<index>``, else ``benchmark``.
    kind : {"binary", "continuous"}, optional
        Score type (inferred from the values when omitted).
    """
    path = Path(path)
    if not path.exists():
        raise ValidationError(f"no such file: {path}")
    with np.load(path, allow_pickle=False) as data:
        missing = {"Y", "models", "items"} - set(data.files)
        if missing:
            raise ValidationError(f"{path.name} lacks arrays {sorted(missing)}; expected Y, models, items")
        values = np.asarray(data["Y"], dtype=np.float64)
        models = data["models"].astype(str)
        items = data["items"].astype(str)
    if level is None:
        looks_item = all("/" in s and s.rsplit("/", 1)[1].isdigit() for s in items[:50])
        level = "item" if looks_item else "benchmark"
    return ScoreMatrix(values, models=models, items=items, kind=kind, level=level,
                       name=name or path.stem)


def write_npz(matrix: ScoreMatrix, path: str | os.PathLike) -> Path:
    """Write ``matrix`` as ``.npz`` (atomically: temp file, then rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez_compressed(tmp, Y=matrix.values.astype(np.float32),
                        models=matrix.models.astype(str), items=matrix.items.astype(str))
    os.replace(tmp, path)
    return path
