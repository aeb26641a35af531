"""One small settings object per inference algorithm, validated at the boundary.

:func:`coreval.irt.fit` takes ``method`` and ``settings``: a settings object of the
method's class, a dict of its fields (an unknown field is an error naming the
accepted ones), or None for the defaults.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from coreval.base.checks import check_positive_int
from coreval.errors import ValidationError

#: SVI guides.
GUIDES: tuple[str, ...] = ("normal", "lowrank")


@dataclass(frozen=True)
class MAPSettings:
    """Posterior mode by Adam, then ``num_draws`` Laplace draws.

    Attributes
    ----------
    num_steps : int
        Adam steps.
    learning_rate : float
        Adam learning rate.
    num_draws : int
        Draws from the Laplace approximation ``N(mode, H^-1)`` (at most 5000 parameters;
        else the point estimate only).
    batch_size : int or None
        Minibatch size over models (rows); a minibatched MAP is an ``AutoDelta`` fit
        (point estimate).
    """

    num_steps: int = 2000
    learning_rate: float = 0.05
    num_draws: int = 200
    batch_size: int | None = None

    def check(self) -> None:
        check_positive_int("num_steps", self.num_steps)
        check_positive_int("num_draws", self.num_draws)
        if not self.learning_rate > 0:
            raise ValidationError(f"learning_rate must be positive, got {self.learning_rate}")
        if self.batch_size is not None:
            check_positive_int("batch_size", self.batch_size)


@dataclass(frozen=True)
class SVISettings(MAPSettings):
    """Stochastic variational inference with an ``AutoNormal`` or low-rank guide.

    Attributes
    ----------
    num_steps, learning_rate, batch_size
        As :class:`MAPSettings`.
    num_draws : int
        Draws from the fitted guide.
    guide : {"normal", "lowrank"}
        ``AutoNormal`` (mean field) or ``AutoLowRankMultivariateNormal`` (not minibatched).
    """

    guide: str = "normal"

    def check(self) -> None:
        super().check()
        if self.guide not in GUIDES:
            raise ValidationError(f"unknown guide {self.guide!r}; choose one of "
                                  f"{', '.join(GUIDES)}")
        if self.batch_size is not None and self.guide == "lowrank":
            raise ValidationError("the 'lowrank' guide cannot be minibatched; use guide='normal'")


@dataclass(frozen=True)
class NUTSSettings:
    """NumPyro NUTS, chains run sequentially.

    Attributes
    ----------
    num_warmup, num_samples, num_chains : int
    """

    num_warmup: int = 500
    num_samples: int = 500
    num_chains: int = 2

    def check(self) -> None:
        check_positive_int("num_samples", self.num_samples)
        check_positive_int("num_chains", self.num_chains)
        check_positive_int("num_warmup", self.num_warmup, minimum=0)


@dataclass(frozen=True)
class MMLSettings:
    """Marginal maximum likelihood (Bock & Aitkin 1981); no settings of its own."""

    def check(self) -> None:
        """Nothing to check."""


SETTINGS: dict[str, type] = {"map": MAPSettings, "svi": SVISettings, "nuts": NUTSSettings,
                             "mml": MMLSettings}

Settings = MAPSettings | SVISettings | NUTSSettings | MMLSettings


def resolve_settings(method: str, settings: Settings | Mapping[str, Any] | None) -> Settings:
    """The validated settings of ``method`` from an object, a dict of its fields, or None."""
    if method not in SETTINGS:
        raise ValidationError(f"unknown method {method!r}; choose one of {', '.join(SETTINGS)}")
    cls = SETTINGS[method]
    if settings is None:
        out = cls()
    elif isinstance(settings, Mapping):
        accepted = [f.name for f in fields(cls)]
        unknown = sorted(set(settings) - set(accepted))
        if unknown:
            raise ValidationError(f"method {method!r} has no settings {unknown}; accepted: "
                                  f"{', '.join(accepted) or 'none'}")
        out = cls(**settings)
    elif type(settings) is cls:
        out = settings
    else:
        raise ValidationError(f"method {method!r} takes {cls.__name__} settings, got "
                              f"{type(settings).__name__}")
    out.check()
    return out
