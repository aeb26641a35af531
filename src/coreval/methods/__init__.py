"""Methods: declarations pairing a selector with a predictor under the papers' names.

:mod:`coreval.methods.registry` holds the mechanism (:class:`Method`,
:func:`declare`, option routing); one module per family declares its methods.
"""

from coreval.methods.registry import (
    Choice,
    Component,
    Method,
    OptionError,
    available_methods,
    declare,
    get_method,
    register_method,
)

__all__ = [
    "Choice",
    "Component",
    "Method",
    "OptionError",
    "available_methods",
    "declare",
    "get_method",
    "register_method",
]
