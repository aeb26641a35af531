"""The mRMR family: ``mrmr`` (sample mean), ``mrmr+`` (ridge), ``mrmr++`` (kernel ridge).

Options (passed to :meth:`coreval.registry.Method.selector` / ``.predictor``):
``scheme`` ("miq" default, "mid", "relevance", "fcd", "fcq"), ``mi_neighbors`` (5),
``target`` ("mean", "pc1"), ``continuous_mi`` ("lnc", "ksg") for the selector, and
``d`` ∈ {1, 2, 3, 4} (default 2), the polynomial-kernel degree of ``mrmr++``.

References
----------
S. Bowyer et al., "Efficient Benchmarking Is Just Feature Selection and Multiple
Regression" (mRMR+ = ``mrmr5_MIQ_y``, mRMR++ = ``kmrmr5_MIQ_y`` of its code).
"""

from __future__ import annotations

from typing import Any

from coreval.errors import ValidationError
from coreval.methods._variants import kernel_ridge_predictor, register_with_refits
from coreval.prediction.base import Predictor
from coreval.registry import Method, register_method
from coreval.selection.mrmr import MRMRSelector

REFERENCE = ("Bowyer et al., Efficient Benchmarking Is Just Feature Selection and "
             "Multiple Regression")
KERNEL_DEGREES: tuple[int, ...] = (1, 2, 3, 4)


def _accepted(options: dict[str, Any], cls: type) -> dict[str, Any]:
    names = cls._get_param_names()
    return {key: value for key, value in options.items() if key in names}


def mrmr_selector(k: int, seed: int = 0, **options: Any) -> MRMRSelector:
    """``MRMRSelector(k, seed=seed, ...)`` with the selector's options (others are ignored)."""
    params = _accepted(options, MRMRSelector)
    params.pop("k", None)
    params.pop("seed", None)
    return MRMRSelector(k=k, seed=seed, **params)


def mean_predictor(seed: int = 0, **options: Any) -> Predictor:
    """``mrmr``: the plain mean of the coreset responses (``MeanPredictor``)."""
    from coreval.prediction.mean import MeanPredictor

    return MeanPredictor(**_accepted(options, MeanPredictor))


def polynomial_kernel_predictor(seed: int = 0, d: int = 2, **options: Any) -> Predictor:
    """``mrmr++``: polynomial kernel ridge of degree ``d`` ∈ {1, 2, 3, 4} (c = 1), λ by LOO."""
    if d not in KERNEL_DEGREES:
        raise ValidationError(f"kernel degree d must be one of {KERNEL_DEGREES}, got {d!r}")
    options.pop("degree", None)
    return kernel_ridge_predictor(seed=seed, degree=int(d), **options)


_DESCRIPTION = "mRMR (MIQ, Ross k-NN relevance, plug-in MI redundancy)"
register_with_refits(
    "mrmr", mrmr_selector, mean_predictor, description=_DESCRIPTION, reference=REFERENCE,
)
# ``mrmr++`` takes the kernel degree ``d`` (the shared refit helper has no such option).
register_method(Method(
    "mrmr++", mrmr_selector, polynomial_kernel_predictor,
    description=f"{_DESCRIPTION} + polynomial kernel ridge refit (degree d, default 2)",
    reference=REFERENCE,
), replace=True)
