"""Methods by name: a method is a declared selector + predictor pair.

The harness, the CLI and the notebooks refer to methods by the papers' names
(``"random++"``, ``"gp-irt"``, ``"mrmr++"``, ``"gauss-mi"``). A method is a
declaration (:class:`Method`): a name, a selector class, a predictor class and
their parameters. Each family's declarations live in one module of
:mod:`coreval.methods`; :func:`get_method` imports the built-in families on
first use.

Options
-------
A user's options (``select(m, "mrmr++", 10, degree=3)``, ``--option degree=3``)
are routed to the component whose ``__init__`` accepts them, by scikit-learn's
parameter introspection: an option accepted by both the selector and the
predictor (``seed``, ``model``, ``dims``) goes to both, ``selector__x`` /
``predictor__x`` address one of them, and an option that no component accepts
is an :class:`OptionError` naming it and listing the accepted ones.

Adding a method: put the selector in ``coreval/selection/``, the predictor in
``coreval/prediction/``, and one :func:`declare` call in the family's module
under ``coreval/methods/``.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from coreval.base import Predictor, Selector
from coreval.errors import UnknownMethodError, ValidationError

#: Modules whose import declares the built-in methods (one per family).
BUILTIN_FAMILIES: tuple[str, ...] = (
    "coreval.methods.baselines",
    "coreval.methods.irt",
    "coreval.methods.mrmr",
    "coreval.methods.gaussian",
    "coreval.methods.lowrank",
    "coreval.methods.simba",
    "coreval.methods.scales",
    "coreval.methods.adaptive",
    "coreval.methods.stacking",
)

#: Parameters the framework sets itself (never user options).
RESERVED: frozenset[str] = frozenset({"k"})


class OptionError(ValidationError):
    """An option that no component of the method accepts, or a bad option value."""


def _frozen(mapping: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return MappingProxyType(dict(mapping or {}))


@dataclass(frozen=True)
class Component:
    """A selector or predictor class with the parameters its method sets.

    Attributes
    ----------
    cls : type
        A :class:`~coreval.base.Selector` or :class:`~coreval.base.Predictor` subclass.
    defaults : mapping
        Parameter values of this method that a user option may override.
    fixed : mapping
        Parameter values that define the method (e.g. ``kernel=True`` of
        ``search++``); an option that tries to change one is an error.

    Notes
    -----
    A parameter whose value is a structured specification (an object with
    ``field_names()`` and ``replace(**changes)``, such as
    :class:`coreval.irt.fit_spec.IRTFitSpec` in ``irt``) exposes its fields as
    options: ``model="3pl"`` becomes ``irt=spec.replace(model="3pl")``.
    """

    cls: type
    defaults: Mapping[str, Any] = field(default_factory=dict)
    fixed: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "defaults", _frozen(self.defaults))
        object.__setattr__(self, "fixed", _frozen(self.fixed))
        unknown = sorted((set(self.defaults) | set(self.fixed)) - set(self.params))
        if unknown:
            raise ValidationError(f"{self.cls.__name__} has no parameters {unknown}")

    @property
    def direct_params(self) -> tuple[str, ...]:
        """Parameter names of ``cls.__init__`` (scikit-learn's introspection)."""
        return tuple(self.cls._get_param_names())

    @property
    def structured(self) -> dict[str, Any]:
        """Parameters whose value is a structured spec, with the method's value of each."""
        signature = inspect.signature(self.cls.__init__).parameters
        values = {name: p.default for name, p in signature.items()
                  if p.default is not inspect.Parameter.empty}
        values.update(self.defaults)
        values.update(self.fixed)
        return {name: value for name, value in values.items()
                if callable(getattr(value, "field_names", None))
                and callable(getattr(value, "replace", None))}

    @property
    def params(self) -> tuple[str, ...]:
        """Every option name: the direct parameters and the fields of structured ones."""
        direct = self.direct_params
        fields = [f for spec in self.structured.values() for f in spec.field_names()
                  if f not in direct]
        return (*direct, *fields)

    def build(self, options: Mapping[str, Any]) -> Any:
        """An instance with ``{**defaults, **options, **fixed}``, fields folded into specs."""
        merged = {**self.defaults, **options, **self.fixed}
        direct = set(self.direct_params)
        for name, default in self.structured.items():
            spec = merged.get(name, default)
            changes = {f: merged.pop(f) for f in default.field_names()
                       if f in merged and f not in direct}
            try:
                merged[name] = spec.replace(**changes)
            except ValidationError as err:
                raise OptionError(str(err)) from None
        return self.cls(**merged)


@dataclass(frozen=True)
class Choice:
    """A component chosen by an option of the method (e.g. irt-bayes' ``coreset``).

    Attributes
    ----------
    option : str
        The option's name.
    choices : mapping of str to Component
    default : str
    """

    option: str
    choices: Mapping[str, Component]
    default: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "choices", _frozen(self.choices))
        if self.default not in self.choices:
            raise ValidationError(f"default {self.default!r} is not one of {list(self.choices)}")

    def pick(self, options: Mapping[str, Any]) -> Component:
        """The component that ``options[self.option]`` (or the default) names."""
        value = options.get(self.option, self.default)
        if value not in self.choices:
            raise OptionError(f"option {self.option} must be one of {sorted(self.choices)}, "
                              f"got {value!r}")
        return self.choices[value]


@dataclass(frozen=True)
class Method:
    """A named selector + predictor pair.

    Attributes
    ----------
    name : str
        The paper's name, e.g. ``"random++"``.
    selector : Component or Choice
    predictor : Component
    task : {"score", "impute"}
        "score": predict each target model's summary score (item-level data);
        "impute": predict every unselected column (benchmark-level data).
    description : str
        One line for ``coreval compare --help`` and reports.
    reference : str
        Paper the method follows.
    """

    name: str
    selector: Component | Choice
    predictor: Component
    task: Literal["score", "impute"] = "score"
    description: str = ""
    reference: str = ""

    def __post_init__(self) -> None:
        selectors = (self.selector.choices.values() if isinstance(self.selector, Choice)
                     else (self.selector,))
        shared = self.predictor.structured
        for sel in selectors:
            for name, spec in sel.structured.items():
                if name in shared and shared[name] != spec:
                    raise ValidationError(
                        f"method {self.name!r}: {sel.cls.__name__} and "
                        f"{self.predictor.cls.__name__} would use different {name} "
                        f"({spec} vs {shared[name]}); declare one with shared=")

    def _selector_component(self, options: Mapping[str, Any]) -> Component:
        return self.selector.pick(options) if isinstance(self.selector, Choice) else self.selector

    def accepted_options(self, options: Mapping[str, Any] | None = None) -> dict[str, str]:
        """Every accepted option name and the component(s) that take it.

        With a :class:`Choice` selector the chosen component's parameters count
        (``options`` says which is chosen).
        """
        options = options or {}
        sel = self._selector_component(options)
        owners: dict[str, list[str]] = {}
        for role, comp in (("selector", sel), ("predictor", self.predictor)):
            for name in comp.params:
                if name not in RESERVED and name not in comp.fixed:
                    owners.setdefault(name, []).append(role)
        if isinstance(self.selector, Choice):
            owners.setdefault(self.selector.option, []).append("method")
        return {name: "+".join(roles) for name, roles in sorted(owners.items())}

    def route(self, options: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """Split ``options`` into the selector's and the predictor's keyword arguments.

        Raises
        ------
        OptionError
            An option no component accepts (the message lists the accepted ones),
            an option that would change a parameter fixed by the method, or
            ``k`` (set from the budget).
        """
        comps = {"selector": self._selector_component(options), "predictor": self.predictor}
        out: dict[str, dict[str, Any]] = {"selector": {}, "predictor": {}}
        choice_option = self.selector.option if isinstance(self.selector, Choice) else None
        for key, value in options.items():
            if key == choice_option:
                continue
            role, sep, name = key.partition("__")
            if not sep:
                role, name = "", key
            elif role not in comps:
                raise OptionError(f"option {key!r} of method {self.name!r}: the prefix must be "
                                  "'selector__' or 'predictor__'")
            if name in RESERVED:
                raise OptionError(f"option {name!r} is set from the budget; pass a budget instead")
            targets = [role] if role else [r for r, c in comps.items() if name in c.params]
            if not targets or any(name not in comps[r].params for r in targets):
                raise OptionError(self._unknown_message(key, options))
            for r in targets:
                fixed = comps[r].fixed
                if name in fixed and fixed[name] != value:
                    raise OptionError(f"method {self.name!r} fixes {name}={fixed[name]!r}; "
                                      f"it cannot be set to {value!r}")
                out[r][name] = value
        return out["selector"], out["predictor"]

    def _unknown_message(self, key: str, options: Mapping[str, Any]) -> str:
        accepted = self.accepted_options(options)
        close = difflib.get_close_matches(key.rpartition("__")[2], list(accepted), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        listed = ", ".join(accepted) or "none"
        return (f"method {self.name!r} does not accept option {key!r}{hint}; "
                f"accepted options: {listed}")

    def make_selector(self, k: int, seed: int = 0, **options: Any) -> Selector:
        """The selector for a coreset of ``k`` columns, with the user's ``options``."""
        sel_opts, _ = self.route(options)
        comp = self._selector_component(options)
        if "seed" in comp.params:
            sel_opts.setdefault("seed", seed)
        return comp.build({**sel_opts, "k": k})

    def make_predictor(self, seed: int = 0, **options: Any) -> Predictor:
        """The predictor, with the user's ``options``."""
        _, pred_opts = self.route(options)
        if "seed" in self.predictor.params:
            pred_opts.setdefault("seed", seed)
        return self.predictor.build(pred_opts)


_REGISTRY: dict[str, Method] = {}
_LOADED = False


def register_method(method: Method, *, replace: bool = False) -> Method:
    """Add a method to the registry (``replace=True`` to override a name)."""
    if method.name in _REGISTRY and not replace:
        raise ValidationError(f"method {method.name!r} is already registered")
    _REGISTRY[method.name] = method
    return method


def _with_shared(component: Component | Choice, shared: Mapping[str, Any]) -> Component | Choice:
    """``component`` with the ``shared`` values among its defaults (where it takes them)."""
    if isinstance(component, Choice):
        return Choice(component.option, {key: _with_shared(c, shared)
                                         for key, c in component.choices.items()},
                      component.default)
    own = {k: v for k, v in shared.items() if k in component.direct_params
           and k not in component.defaults}
    if not own:
        return component
    return Component(component.cls, {**component.defaults, **own}, component.fixed)


def declare(name: str, selector: Component | Choice | type, predictor: Component | type, *,
            refits: bool = False, task: Literal["score", "impute"] = "score",
            shared: Mapping[str, Any] | None = None,
            description: str = "", reference: str = "") -> list[Method]:
    """Declare and register a method; with ``refits`` also ``name+`` and ``name++``.

    ``shared`` gives parameter values to every component that takes them (e.g. one
    ``irt=IRTFitSpec(...)`` for the selector and the predictor, so that they fit the
    source models once); a component's own ``defaults`` take precedence. A selector
    and a predictor that would use different structured specs are an error.

    ``X+`` refits the coreset of ``X``'s selector with ridge regression and ``X++``
    with a degree-2 polynomial kernel ridge (c = 1), both with λ by leave-one-out,
    as in the mRMR paper (Bowyer et al.); this one rule derives both for any family.
    A bare class stands for ``Component(cls)``. ``predictor=None`` with ``refits``
    registers only the two refits.
    """
    from coreval.prediction.ridge import KernelRidgePredictor, RidgePredictor

    sel = selector if isinstance(selector, Component | Choice) else Component(selector)
    sel = _with_shared(sel, shared or {})
    methods = []
    if predictor is not None:
        pred = predictor if isinstance(predictor, Component) else Component(predictor)
        pred = _with_shared(pred, shared or {})
        methods.append(Method(name, sel, pred, task, description, reference))
    if refits:
        methods.append(Method(f"{name}+", sel, Component(RidgePredictor), task,
                              f"{description} + ridge refit".strip(), reference))
        methods.append(Method(f"{name}++", sel, Component(KernelRidgePredictor), task,
                              f"{description} + polynomial kernel ridge refit".strip(),
                              reference))
    for m in methods:
        register_method(m)
    return methods


def _load_builtin() -> None:
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    for module in BUILTIN_FAMILIES:
        importlib.import_module(module)


def get_method(name: str) -> Method:
    """Look a method up by name; unknown names raise with the list of known ones."""
    _load_builtin()
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY))
        close = difflib.get_close_matches(str(name), list(_REGISTRY), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise UnknownMethodError(f"unknown method {name!r}{hint}; known methods: {known}"
                                 ) from None


def available_methods(task: str | None = None) -> list[str]:
    """Sorted names of registered methods, optionally only those of one task."""
    _load_builtin()
    return sorted(n for n, m in _REGISTRY.items() if task is None or m.task == task)
