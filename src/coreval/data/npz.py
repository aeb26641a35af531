"""Reader and writer for the ``.npz`` score-matrix format (keys ``Y``, ``models``, ``items``).

This is the format of ``shared/data`` (see its README): ``Y`` is a float
(models × columns) array with NaN for unobserved entries; ``models`` and
``items`` are string arrays. No pickled objects are read or written.
"""

from __future__ import annotations

import os
import warnings
import zipfile
from pathlib import Path

import numpy as np

from coreval._atomic import write_atomic
from coreval.data.matrix import Level, ScoreMatrix
from coreval.errors import ValidationError


def dedupe_ids(ids: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Make ids unique by suffixing repeats ``#2``, ``#3``, ...; also return the repeated ids.

    Some public matrices (the Open LLM Leaderboard files of mrmr_eval) list a
    model twice. Reference splits count row positions, so rows are kept and
    only the repeated ids are renamed.
    """
    seen: dict[str, int] = {}
    out, repeated = [], []
    for value in np.asarray(ids).astype(str):
        count = seen.get(value, 0) + 1
        seen[value] = count
        out.append(value if count == 1 else f"{value}#{count}")
        if count > 1:
            repeated.append(value)
    return np.array(out, dtype=object), repeated


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
    try:
        with np.load(path, allow_pickle=False) as data:
            missing = {"Y", "models", "items"} - set(data.files)
            if missing:
                raise ValidationError(
                    f"{path.name} lacks arrays {sorted(missing)}; expected Y, models, items")
            values = np.asarray(data["Y"], dtype=np.float64)
            models = data["models"].astype(str)
            items = data["items"].astype(str)
            flat = [key for key, ids in (("models", models), ("items", items)) if ids.ndim != 1]
            if flat:
                raise ValidationError(f"{path.name}: {' and '.join(flat)} must be "
                                      "one-dimensional arrays of ids")
    except (OSError, ValueError, zipfile.BadZipFile) as exc:
        if isinstance(exc, ValidationError):
            raise
        raise ValidationError(f"cannot read {path.name} as .npz: {exc}") from exc
    models, repeated = dedupe_ids(models)
    if repeated:
        warnings.warn(f"{path.name}: {len(repeated)} repeated model ids renamed with a '#n' "
                      f"suffix (e.g. {repeated[0]!r}); rows are kept", stacklevel=2)
    if level is None:
        looks_item = all("/" in s and s.rsplit("/", 1)[1].isdigit() for s in items[:50])
        level = "item" if looks_item else "benchmark"
    return ScoreMatrix(values, models=models, items=items, kind=kind, level=level,
                       name=name or path.stem)


def write_npz(matrix: ScoreMatrix, path: str | os.PathLike) -> Path:
    """Write ``matrix`` as ``.npz`` (atomically: temp file, then rename)."""
    def _write(tmp: Path) -> None:
        with open(tmp, "wb") as fh:  # a file handle: savez must not append ".npz" to the name
            np.savez_compressed(fh, Y=matrix.values.astype(np.float32),
                                models=matrix.models.astype(str), items=matrix.items.astype(str))

    return write_atomic(path, _write)
