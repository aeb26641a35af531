"""Progress reporting shared by long-running work (fits, grids, embeddings)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator
from typing import TypeVar

from tqdm.auto import tqdm

T = TypeVar("T")


def progress_enabled(show: bool | None = None) -> bool:
    """Whether to draw progress bars.

    An explicit ``show`` wins; else ``COREVAL_PROGRESS`` (``0``/``false``/``no`` off,
    ``1``/``true``/``yes`` on); else on only where a bar can be drawn: a terminal on
    stderr, or a Jupyter kernel (log files do not get ``\x1b[A`` escapes).
    """
    if show is not None:
        return bool(show)
    value = os.environ.get("COREVAL_PROGRESS", "").strip().lower()
    if value in {"0", "false", "no"}:
        return False
    if value in {"1", "true", "yes"}:
        return True
    return bool(getattr(sys.stderr, "isatty", lambda: False)()) or "ipykernel" in sys.modules


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
