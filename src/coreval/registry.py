"""Methods by name: a method is a selector paired with a predictor.

The harness, the CLI and the notebooks refer to methods by the papers' names
(``"random++"``, ``"gp-irt"``, ``"mrmr++"``, ``"gauss-mi"``). Each family's
pairings live in one module of :mod:`coreval.methods` and are registered with
:func:`register_method` when that module is imported; :func:`get_method` imports
the built-in families on first use.

Adding a method: put the selector in ``coreval/selection/``, the predictor in
``coreval/prediction/``, and one ``register_method(...)`` call in the family's
module under ``coreval/methods/``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from coreval.errors import UnknownMethodError, ValidationError
from coreval.prediction.base import Predictor
from coreval.selection.base import Selector

#: Modules whose import registers the built-in methods (one per family).
BUILTIN_FAMILIES: tuple[str, ...] = (
    "coreval.methods.baselines",
    "coreval.methods.irt",
    "coreval.methods.mrmr",
    "coreval.methods.gaussian",
    "coreval.methods.simba",
    "coreval.methods.scales",
)


@dataclass(frozen=True)
class Method:
    """A named selector + predictor pair.

    Attributes
    ----------
    name : str
        The paper's name, e.g. ``"random++"``.
    make_selector : callable ``(k, seed, **options) -> Selector``
    make_predictor : callable ``(seed, **options) -> Predictor``
    task : {"score", "impute"}
        "score": predict each target model's summary score (item-level data);
        "impute": predict every unselected column (benchmark-level data).
    description : str
        One line for ``coreval compare --help`` and reports.
    reference : str
        Paper the method follows.
    options : dict
        Default options passed to both factories (overridable per call).
    """

    name: str
    make_selector: Callable[..., Selector]
    make_predictor: Callable[..., Predictor]
    task: Literal["score", "impute"] = "score"
    description: str = ""
    reference: str = ""
    options: dict[str, Any] = field(default_factory=dict)

    def selector(self, k: int, seed: int = 0, **options: Any) -> Selector:
        return self.make_selector(k=k, seed=seed, **{**self.options, **options})

    def predictor(self, seed: int = 0, **options: Any) -> Predictor:
        return self.make_predictor(seed=seed, **{**self.options, **options})


_REGISTRY: dict[str, Method] = {}
_LOADED = False


def register_method(method: Method, *, replace: bool = False) -> Method:
    """Add a method to the registry (``replace=True`` to override a name)."""
    if method.name in _REGISTRY and not replace:
        raise ValidationError(f"method {method.name!r} is already registered")
    _REGISTRY[method.name] = method
    return method


def _load_builtin() -> None:
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    for module in BUILTIN_FAMILIES:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:  # a family not built yet
            if exc.name != module:
                raise


def get_method(name: str) -> Method:
    """Look a method up by name; unknown names raise with the list of known ones."""
    _load_builtin()
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY))
        raise UnknownMethodError(f"unknown method {name!r}; known methods: {known}") from None


def available_methods(task: str | None = None) -> list[str]:
    """Sorted names of registered methods, optionally only those of one task."""
    _load_builtin()
    return sorted(n for n, m in _REGISTRY.items() if task is None or m.task == task)
