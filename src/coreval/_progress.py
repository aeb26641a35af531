"""Progress reporting shared by long-running work (fits, grids, embeddings)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import TypeVar

from tqdm.auto import tqdm

T = TypeVar("T")


def progress_enabled(show: bool | None = None) -> bool:
    """Whether to draw progress bars: explicit ``show`` wins, else ``COREVAL_PROGRESS`` (default on)."""
    if show is not None:
        return bool(show)
    return os.environ.get("COREVAL_PROGRESS", "1") not in {"0", "false", "no"}


def progress(iterable: Iterable[T], *, desc: str, total: int | None = None,
             show: bool | None = None) -> Iterator[T]:
    """Wrap ``iterable`` in a tqdm bar unless progress is disabled."""
    if not progress_enabled(show):
        yield from iterable
        return
    yield from tqdm(iterable, desc=desc, total=total, leave=False, dynamic_ncols=True)


def progress_bar(*, total: int, desc: str, show: bool | None = None) -> tqdm:
    """A manual tqdm bar (``update(n)``/``close()``), disabled when progress is off."""
    return tqdm(total=total, desc=desc, leave=False, dynamic_ncols=True,
                disable=not progress_enabled(show))
