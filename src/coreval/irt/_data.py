"""Input validation and preparation of response matrices for the IRT engine."""

from __future__ import annotations

import hashlib
import warnings
from dataclasses import dataclass

import numpy as np

from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError, preview
from coreval.irt.spec import get_spec

#: Scores of models with ``clip`` (Beta, LEGO, β³) are clipped to [EPS, 1 - EPS] (their
#: densities need (0, 1)).
EPS = 1e-3


@dataclass(frozen=True)
class IRTData:
    """A validated response matrix ready for NumPyro.

    Attributes
    ----------
    y : float32 array (n_models, n_items)
        Responses; unobserved entries are filled (0 for binary, 0.5 otherwise) and
        masked out. Clipped to ``[eps, 1 - eps]`` for Beta/LEGO/β³.
    mask : bool array
        True where observed.
    values : float64 array
        The original values with NaN for unobserved entries (stored as observed data).
    model_ids, item_ids : object arrays of str
    name : str
        Dataset name (provenance).
    sha256 : str
        Hash of the original values (provenance).
    """

    y: np.ndarray
    mask: np.ndarray
    values: np.ndarray
    model_ids: np.ndarray
    item_ids: np.ndarray
    name: str
    sha256: str

    @property
    def shape(self) -> tuple[int, int]:
        return self.values.shape  # type: ignore[return-value]


def _row_blocks(n_rows: int, size: int = 512) -> list[slice]:
    return [slice(lo, min(lo + size, n_rows)) for lo in range(0, n_rows, size)]


def column_means(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Mean of the observed entries of each column (NaN for empty columns), by row blocks."""
    total = np.zeros(values.shape[1])
    count = np.zeros(values.shape[1])
    for rows in _row_blocks(values.shape[0]):
        total += np.where(mask[rows], values[rows], 0.0).sum(axis=0)
        count += mask[rows].sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def as_matrix(data: ScoreMatrix | np.ndarray) -> ScoreMatrix:
    """Accept a ScoreMatrix or a 2-D array (NaN = unobserved) and return a ScoreMatrix."""
    if isinstance(data, ScoreMatrix):
        return data
    if data is None:
        raise ValidationError("no data given: pass a ScoreMatrix or a 2-D array of scores")
    try:
        arr = np.asarray(data, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"scores must be numeric, got {type(data).__name__}") from exc
    return ScoreMatrix(arr, strict=False)


def check_response_values(observed: np.ndarray, model: str) -> None:
    """Raise when observed values do not suit ``model``.

    Binary models need 0/1; models of scores in [0, 1] (Beta, LEGO, β³) need
    [0, 1] (then clipped); the heteroskedastic Gaussian model accepts any real score
    (:attr:`coreval.irt.spec.IRTModel.scores`).
    """
    scores = get_spec(model).scores
    if scores == "binary":
        bad = np.unique(observed[(observed != 0.0) & (observed != 1.0)])
        if bad.size:
            raise ValidationError(
                f"model {model!r} needs 0/1 responses but found values {preview(bad, 5)}; "
                "use a continuous model ('beta', 'lego', 'hetero', 'beta3')"
            )
    elif scores == "unit":
        bad = np.unique(observed[(observed < 0.0) | (observed > 1.0)])
        if bad.size:
            raise ValidationError(
                f"model {model!r} needs scores in [0, 1] but found {preview(bad, 5)}; "
                "rescale the scores (e.g. divide percentages by 100)"
            )


def prepare(data: ScoreMatrix | np.ndarray, model: str, *, eps: float = EPS) -> IRTData:
    """Validate ``data`` for ``model`` and build the filled/masked float32 arrays.

    Warns once (listing them) about binary items answered correctly, or
    incorrectly, by every model that saw them; they are kept and identified by
    the prior. Models or items without any observed score are kept too (their
    parameters follow the prior) with a warning.
    """
    matrix = as_matrix(data)
    # No copies of the full matrix beyond the float32 responses: at leaderboard scale
    # (5000 × 30000) every float64 temporary costs 1.2 GB, so checks and means run on
    # blocks of rows.
    values = np.asarray(matrix.values, dtype=np.float64)
    if values.shape[0] < 2:
        raise ValidationError(f"IRT needs at least 2 models, got {values.shape[0]}")
    mask = ~np.isnan(values)
    if not mask.any():
        raise ValidationError("score matrix has no observed entries")
    for rows in _row_blocks(values.shape[0]):
        check_response_values(values[rows][mask[rows]], model)
    items = matrix.items
    empty_rows, empty_cols = ~mask.any(axis=1), ~mask.any(axis=0)
    if empty_rows.any() or empty_cols.any():
        warnings.warn(
            f"{int(empty_rows.sum())} models and {int(empty_cols.sum())} items have no observed "
            f"score (items: {preview(items[empty_cols])}); their parameters follow the prior",
            stacklevel=3,
        )
    filled = values.astype(np.float32)
    spec = get_spec(model)
    if spec.binary:
        col_mean = column_means(values, mask)
        extreme = (~empty_cols) & ((col_mean == 0.0) | (col_mean == 1.0))
        if extreme.any():
            warnings.warn(
                f"{int(extreme.sum())} items were answered correctly (or incorrectly) by every "
                f"model: {preview(items[extreme])}; kept, identified by the prior",
                stacklevel=3,
            )
        filled[~mask] = 0.0
    else:
        filled[~mask] = 0.5
        if spec.clip:
            np.clip(filled, eps, 1.0 - eps, out=filled)
    digest = hashlib.sha256(memoryview(np.ascontiguousarray(values)).cast("B")).hexdigest()
    return IRTData(
        y=filled,
        mask=mask,
        values=values,
        model_ids=np.asarray(matrix.models, dtype=object),
        item_ids=np.asarray(matrix.items, dtype=object),
        name=matrix.name,
        sha256=digest,
    )


def initial_values(data: IRTData, model: str, dims: int) -> dict[str, np.ndarray]:
    """Data-driven starting values: theta from logit row means, d from logit column means.

    Starting optimisation and NUTS here (rather than at random) avoids the slow
    first hundreds of steps and the sign ambiguity of D = 1.
    """
    row = np.nan_to_num(column_means(data.values.T, data.mask.T), nan=0.5)
    col = np.nan_to_num(column_means(data.values, data.mask), nan=0.5)
    row = np.clip(row, 0.02, 0.98)
    col = np.clip(col, 0.02, 0.98)
    lr = np.log(row / (1 - row))
    sd = lr.std()
    t0 = (lr - lr.mean()) / (sd if sd > 1e-6 else 1.0)
    spec = get_spec(model)
    if spec.init is not None:
        return spec.init(t0, col, dims)
    theta = np.zeros((len(row), dims), dtype=np.float32)
    theta[:, 0] = t0
    return {"theta": theta, "d": np.log(col / (1 - col)).astype(np.float32)}
