"""The specification of an IRT fit of source models: one frozen object, one cache key.

Every IRT-driven estimator (the anchor and Fisher selectors; p-IRT, gp-IRT, the GAM and
irt-bayes predictors) takes its fit as one parameter ``irt`` of type :class:`IRTFitSpec`,
and a method declares the spec its selector and predictor share
(:mod:`coreval.methods.irt`). Two estimators reuse one fit exactly when their specs (and
the data and seed) are equal, because the spec *is* the cache key.

This module imports no JAX.
"""

from __future__ import annotations

import dataclasses
import difflib
import numbers
from dataclasses import dataclass
from typing import Any

from coreval.errors import ValidationError

#: Inference algorithms of :func:`coreval.irt.fit` (its ``method``).
FIT_METHODS: tuple[str, ...] = ("map", "svi", "nuts", "mml")

#: Prior families of the engine's models (:mod:`coreval.irt.priors`).
PRIOR_FAMILIES: tuple[str, ...] = ("weak", "hierarchical", "signed")


@dataclass(frozen=True)
class IRTFitSpec:
    """What defines an IRT fit of the source models, apart from the data and the seed.

    Parameters
    ----------
    model : str
        A registered IRT model (:func:`coreval.irt.spec.model_names`), or ``"auto"``:
        the 2PL or the 3PL, whichever predicts held-out source models better
        (:func:`coreval.irt.source_fit.resolve_irt_model`).
    dims : int
        Latent dimensions D.
    fit_method : {"map", "svi", "nuts", "mml"}
        Inference algorithm (:func:`coreval.irt.fit`'s ``method``).
    priors : {"weak", "hierarchical", "signed", "auto"}
        Prior family (:mod:`coreval.irt.priors`; ``"signed"`` lets D = 1
        discriminations be negative). ``"auto"``: ``"hierarchical"`` or ``"signed"``,
        whichever predicts held-out source models better
        (:func:`coreval.irt.source_fit.resolve_irt_model`).
    num_steps, learning_rate, num_draws : int, float, int
        Optimiser steps, Adam learning rate and posterior draws of MAP and SVI
        (:class:`coreval.irt.MAPSettings`, :class:`coreval.irt.SVISettings`); NUTS
        and MML use their own defaults, so these do not enter their cache key.

    Examples
    --------
    >>> spec = IRTFitSpec(model="3pl")
    >>> spec.replace(num_steps=500).num_steps
    500
    >>> IRTFitSpec(fit_method="mcmc")
    Traceback (most recent call last):
    ...
    coreval.errors.ValidationError: IRTFitSpec: fit_method must be one of ('map', 'svi', \
'nuts', 'mml'), got 'mcmc'
    """

    model: str = "2pl"
    dims: int = 1
    fit_method: str = "svi"
    priors: str = "hierarchical"
    num_steps: int = 2000
    learning_rate: float = 0.1
    num_draws: int = 200

    def __post_init__(self) -> None:
        if not isinstance(self.model, str) or not self.model:
            raise ValidationError(f"IRTFitSpec: model must be a model name, got {self.model!r}")
        for name, allowed in (("fit_method", FIT_METHODS), ("priors", (*PRIOR_FAMILIES, "auto"))):
            if getattr(self, name) not in allowed:
                raise ValidationError(f"IRTFitSpec: {name} must be one of {allowed}, "
                                      f"got {getattr(self, name)!r}")
        for name in ("dims", "num_steps", "num_draws"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
                raise ValidationError(f"IRTFitSpec: {name} must be a positive integer, "
                                      f"got {value!r}")
            object.__setattr__(self, name, int(value))
        lr = self.learning_rate
        if isinstance(lr, bool) or not isinstance(lr, numbers.Real) or not 0.0 < lr < float("inf"):
            raise ValidationError(f"IRTFitSpec: learning_rate must be a positive number, "
                                  f"got {lr!r}")
        object.__setattr__(self, "learning_rate", float(lr))

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        """The names of the spec's fields (the options that set them)."""
        return tuple(f.name for f in dataclasses.fields(cls))

    def replace(self, **changes: Any) -> IRTFitSpec:
        """A copy with some fields changed; an unknown field name is an error."""
        unknown = sorted(set(changes) - set(self.field_names()))
        if unknown:
            close = difflib.get_close_matches(unknown[0], self.field_names(), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ValidationError(f"IRTFitSpec has no field {unknown[0]!r}{hint}; fields: "
                                  f"{', '.join(self.field_names())}")
        return dataclasses.replace(self, **changes) if changes else self

    def settings(self) -> dict[str, Any] | None:
        """The optimiser settings passed to :func:`coreval.irt.fit` (MAP and SVI only)."""
        if self.fit_method not in ("map", "svi"):
            return None
        return {"num_steps": self.num_steps, "learning_rate": self.learning_rate,
                "num_draws": self.num_draws}

    def key(self) -> tuple:
        """The fields that define the fit, as a hashable tuple (part of the cache key).

        The optimiser settings count only for MAP and SVI, which use them, so a NUTS or
        MML fit is shared by specs that differ only in them.
        """
        return (self.model, self.dims, self.fit_method, self.priors,
                tuple(sorted((self.settings() or {}).items())))
