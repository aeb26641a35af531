"""A cache of expensive fits (IRT posteriors, Gaussian estimates) owned by its caller.

A selector and a predictor of one method often need the same model of the
source data: the IRT anchor selector and gp-IRT both need the IRT fit, the
Gaussian selectors and imputer both need the EM estimate. The caller that runs
them (:func:`coreval.pipeline.fit_method`, a harness worker) creates one
:class:`FitCache` and passes it to both ``fit`` calls; a fit is reused exactly
when its key (data fingerprint + full specification) is equal. There is no
module-level cache: without a cache object every ``fit`` computes its own.

Timings stay those of a run on its own: :meth:`FitCache.clock` adds the seconds that
a reused fit took when it was made, so a harness cell that reuses a fit made for
another cell reports what the cell costs by itself, whatever ran before it. Each fit
counts once per run (:meth:`FitCache.begin_run`): within one run, the second use of a
fit adds nothing, as it would cost nothing with an empty cache either, and a reused fit
that itself reused others (gp-IRT's model choice, which holds the validation fits)
adds those only where the run has not counted them already.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

import joblib
import numpy as np

from coreval.data.matrix import ScoreMatrix

T = TypeVar("T")


def source_fingerprint(source: ScoreMatrix) -> str:
    """sha256 of everything a fit can read from a matrix.

    The values (with their shape and dtype), the row and column ids, the kind and
    level, and the model and item metadata: the item groups set the summary score
    (:meth:`ScoreMatrix.summary_scores`), and the model metadata are covariates of the
    benchmark-level models, so two matrices that differ only there must not share a fit.
    """
    h = hashlib.sha256()
    values = np.ascontiguousarray(source.values)
    h.update(f"{values.shape}|{values.dtype}|{source.kind}|{source.level}".encode())
    h.update(values.tobytes())
    h.update("\x1f".join(source.models.astype(str)).encode())
    h.update("\x1f".join(source.items.astype(str)).encode())
    for name, meta in (("model_meta", source.model_meta), ("item_meta", source.item_meta)):
        if meta is not None:  # joblib hashes a frame's values, index, columns and dtypes
            h.update(f"{name}|{joblib.hash(meta)}".encode())
    return h.hexdigest()


class FitCache:
    """Least-recently-used store of fits keyed by ``(kind, data fingerprint, spec)``.

    Parameters
    ----------
    maxsize : int
        Most fits kept (older ones are dropped first).
    timer : callable
        The clock that times the fits (``time.perf_counter``).

    Examples
    --------
    >>> cache = FitCache()
    >>> cache.get_or_fit(("irt", "abc", ("2pl",)), lambda: 42)
    42
    >>> cache.get_or_fit(("irt", "abc", ("2pl",)), lambda: 0)   # reused
    42
    >>> len(cache), cache.hits, cache.values()
    (1, 1, [42])
    """

    def __init__(self, maxsize: int = 16, *,
                 timer: Callable[[], float] = time.perf_counter) -> None:
        self.maxsize = int(maxsize)
        self.timer = timer
        self._store: OrderedDict[Hashable, Any] = OrderedDict()
        # per fit made here: its own seconds (without the fits it made or reused inside)
        # and the keys it used inside; kept after eviction, for the fits that used it
        self._own_seconds: dict[Hashable, float] = {}
        self._used_inside: dict[Hashable, tuple[Hashable, ...]] = {}
        self._open: list[dict[str, Any]] = []  # the fits running now, innermost last
        self._counted: set[Hashable] = set()
        self.hits = 0
        self.misses = 0
        self.reused_seconds = 0.0

    def begin_run(self) -> None:
        """Start a run: from now on, every fit reused counts once more in :meth:`clock`.

        :func:`coreval.pipeline.fit_method` calls it, so each method run (a harness
        cell) reports what it would cost with an empty cache.
        """
        self._counted = set()

    def clock(self) -> float:
        """The timer (``time.perf_counter()``) plus the seconds of the fits reused so far.

        The difference of two readings within a run is what the work between them
        would have taken with nothing to reuse: the first hit of a key in a run adds
        the seconds its fit took when it was made, and those of the fits it used
        inside that the run has not counted yet; later hits add nothing.
        """
        return self.timer() + self.reused_seconds

    def __len__(self) -> int:
        return len(self._store)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._store

    def values(self) -> list[Any]:
        """The fits held now, least recently used first (e.g. to measure their memory)."""
        return list(self._store.values())

    def _cost(self, key: Hashable) -> float:
        """Seconds of ``key``'s fit and of the fits it used, each not yet counted."""
        if key in self._counted:
            return 0.0
        self._counted.add(key)
        return self._own_seconds.get(key, 0.0) + sum(
            self._cost(inner) for inner in self._used_inside.get(key, ()))

    def get_or_fit(self, key: Hashable, fit: Callable[[], T]) -> T:
        """The value stored under ``key``, or ``fit()`` stored under it."""
        if self._open:
            self._open[-1]["used"].append(key)
        if key in self._store:
            self._store.move_to_end(key)
            self.hits += 1
            self.reused_seconds += self._cost(key)
            return self._store[key]
        self.misses += 1
        frame: dict[str, Any] = {"used": [], "inner": 0.0}
        self._open.append(frame)
        start = self.timer()
        try:
            value = fit()
        finally:
            self._open.pop()
        seconds = self.timer() - start
        if self._open:
            self._open[-1]["inner"] += seconds
        self.put(key, value)
        self._own_seconds[key] = seconds - frame["inner"]
        self._used_inside[key] = tuple(dict.fromkeys(frame["used"]))
        self._counted.add(key)
        return value

    def put(self, key: Hashable, value: Any) -> None:
        """Store ``value`` under ``key`` (dropping the oldest entries past ``maxsize``)."""
        self._store[key] = value
        self._store.move_to_end(key)
        self._own_seconds.pop(key, None)  # a value put directly took no fit here
        self._used_inside.pop(key, None)
        while len(self._store) > self.maxsize:
            self._store.popitem(last=False)

    def get(self, key: Hashable, default: Any = None) -> Any:
        """The value under ``key`` or ``default`` (no fit)."""
        if key in self._store:
            self._store.move_to_end(key)
            return self._store[key]
        return default


def get_or_fit(cache: FitCache | None, key: Hashable, fit: Callable[[], T]) -> T:
    """``cache.get_or_fit(key, fit)``, or just ``fit()`` without a cache."""
    return fit() if cache is None else cache.get_or_fit(key, fit)
