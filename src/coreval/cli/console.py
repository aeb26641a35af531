"""How the command line talks to the user: one-line errors and notes, each note once."""

from __future__ import annotations

import functools
import os

import typer

from coreval.errors import CorevalError


def note_line(message, category, filename, lineno, line=None) -> str:
    return f"note: {message}\n"


SHOWN: set[str] = set()


def show_once(show):
    """``show`` (a ``warnings.showwarning``) called once per warning text in a run.

    The ``"once"`` filter alone does not do it: Python clears its registry whenever the
    filters change, and every ``warnings.catch_warnings()`` block (one per IRT fit) changes
    them, so a note repeated by every fold's fit was printed again each time.
    """
    show = getattr(show, "__wrapped__", show)  # one wrapper, however many runs

    def shown_once(message, category, filename, lineno, file=None, line=None) -> None:
        text = str(message)
        if text not in SHOWN:
            SHOWN.add(text)
            show(message, category, filename, lineno, file, line)

    shown_once.__wrapped__ = show  # type: ignore[attr-defined]
    return shown_once



def one_line_errors(func):
    """The CLI's error boundary: bad input is one line on stderr and exit code 2.

    coreval's validation errors, missing or unreadable files (``OSError``), undecodable
    text (``UnicodeDecodeError``) and bad values (``ValueError``) end here; any other
    exception is a bug and keeps its traceback. ``COREVAL_DEBUG=1`` shows the traceback
    of every error.
    """

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except (CorevalError, OSError, ValueError) as exc:
            if os.environ.get("COREVAL_DEBUG"):
                raise
            text = str(exc).strip().splitlines()
            message = text[0] if text else type(exc).__name__
            if isinstance(exc, OSError) and exc.filename and str(exc.filename) not in message:
                message = f"{message}: {exc.filename}"
            typer.echo(f"error: {message}", err=True)
            raise typer.Exit(2) from None

    return wrapper
