"""One mechanism for the "+" and "++" refits of any selector's coreset.

Following the mRMR paper, ``X+`` refits the coreset with ridge regression and
``X++`` with a degree-2 polynomial kernel ridge (c = 1), both choosing λ by
leave-one-out over the paper's grids. Every family registers its variants with
:func:`register_with_refits` instead of writing the pairings again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from coreval.prediction.base import Predictor
from coreval.registry import Method, register_method
from coreval.selection.base import Selector


def ridge_predictor(seed: int = 0, **options: Any) -> Predictor:
    """``X+``: RidgeCV on the coreset (λ by leave-one-out), jackknife+ interval."""
    from coreval.prediction.ridge import RidgePredictor

    return RidgePredictor(**_keep(options, RidgePredictor))


def kernel_ridge_predictor(seed: int = 0, **options: Any) -> Predictor:
    """``X++``: polynomial kernel ridge (degree 2, c = 1), λ by leave-one-out, jackknife+."""
    from coreval.prediction.ridge import KernelRidgePredictor

    return KernelRidgePredictor(**_keep(options, KernelRidgePredictor))


def _keep(options: dict[str, Any], cls: type) -> dict[str, Any]:
    """Pass on only the options that ``cls.__init__`` accepts (selector options are dropped)."""
    params = cls._get_param_names()
    return {k: v for k, v in options.items() if k in params}


def register_with_refits(
    name: str,
    make_selector: Callable[..., Selector],
    make_predictor: Callable[..., Predictor] | None,
    *,
    description: str = "",
    reference: str = "",
    options: dict[str, Any] | None = None,
    task: str = "score",
) -> list[Method]:
    """Register ``name`` (own predictor, if any), ``name+`` (ridge) and ``name++`` (kernel ridge)."""
    options = dict(options or {})
    methods = []
    if make_predictor is not None:
        methods.append(Method(name, make_selector, make_predictor, task=task,
                              description=description, reference=reference, options=options))
    methods.append(Method(f"{name}+", make_selector, ridge_predictor, task=task,
                          description=f"{description} + ridge refit".strip(),
                          reference=reference, options=options))
    methods.append(Method(f"{name}++", make_selector, kernel_ridge_predictor, task=task,
                          description=f"{description} + polynomial kernel ridge refit".strip(),
                          reference=reference, options=options))
    for m in methods:
        register_method(m)
    return methods
