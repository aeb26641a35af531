"""A cache of expensive fits (IRT posteriors, Gaussian estimates) owned by its caller.

A selector and a predictor of one method often need the same model of the
source data: the IRT anchor selector and gp-IRT both need the IRT fit, the
Gaussian selectors and imputer both need the EM estimate. The caller that runs
them (:func:`coreval.pipeline.fit_method`, a harness worker) creates one
:class:`FitCache` and passes it to both ``fit`` calls; a fit is reused exactly
when its key (data fingerprint + full specification) is equal. There is no
module-level cache: without a cache object every ``fit`` computes its own.

Timings stay those of a run on its own: :meth:`FitCache.clock` adds the seconds that
each reused fit took when it was made, so a harness cell that reuses a fit made for
another cell reports what the cell costs by itself, whatever ran before it.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

import numpy as np

from coreval.data.matrix import ScoreMatrix

T = TypeVar("T")


def source_fingerprint(source: ScoreMatrix) -> str:
    """sha256 of a matrix's values and its row and column ids."""
    h = hashlib.sha256()
    h.update(np.ascontiguousarray(source.values).tobytes())
    h.update("\x1f".join(source.models.astype(str)).encode())
    h.update("\x1f".join(source.items.astype(str)).encode())
    return h.hexdigest()


class FitCache:
    """Least-recently-used store of fits keyed by ``(kind, data fingerprint, spec)``.

    Parameters
    ----------
    maxsize : int
        Most fits kept (older ones are dropped first).

    Examples
    --------
    >>> cache = FitCache()
    >>> cache.get_or_fit(("irt", "abc", ("2pl",)), lambda: 42)
    42
    >>> cache.get_or_fit(("irt", "abc", ("2pl",)), lambda: 0)   # reused
    42
    """

    def __init__(self, maxsize: int = 16) -> None:
        self.maxsize = int(maxsize)
        self._store: OrderedDict[Hashable, Any] = OrderedDict()
        self._seconds: dict[Hashable, float] = {}
        self.hits = 0
        self.misses = 0
        self.reused_seconds = 0.0

    def clock(self) -> float:
        """``time.perf_counter()`` plus the seconds of every fit reused so far.

        The difference of two readings is what the work between them would have taken
        with nothing to reuse: a hit adds the seconds its fit took when it was made.
        """
        return time.perf_counter() + self.reused_seconds

    def __len__(self) -> int:
        return len(self._store)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._store

    def get_or_fit(self, key: Hashable, fit: Callable[[], T]) -> T:
        """The value stored under ``key``, or ``fit()`` stored under it."""
        if key in self._store:
            self._store.move_to_end(key)
            self.hits += 1
            self.reused_seconds += self._seconds.get(key, 0.0)
            return self._store[key]
        self.misses += 1
        start = self.clock()
        value = fit()
        self.put(key, value)
        self._seconds[key] = self.clock() - start
        return value

    def put(self, key: Hashable, value: Any) -> None:
        """Store ``value`` under ``key`` (dropping the oldest entries past ``maxsize``)."""
        self._store[key] = value
        self._store.move_to_end(key)
        self._seconds.pop(key, None)  # a value put directly took no fit here
        while len(self._store) > self.maxsize:
            dropped, _ = self._store.popitem(last=False)
            self._seconds.pop(dropped, None)

    def get(self, key: Hashable, default: Any = None) -> Any:
        """The value under ``key`` or ``default`` (no fit)."""
        if key in self._store:
            self._store.move_to_end(key)
            return self._store[key]
        return default


def get_or_fit(cache: FitCache | None, key: Hashable, fit: Callable[[], T]) -> T:
    """``cache.get_or_fit(key, fit)``, or just ``fit()`` without a cache."""
    return fit() if cache is None else cache.get_or_fit(key, fit)
