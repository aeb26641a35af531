"""The ``coreval`` command line: demo, compare, select, predict, fit, adapt, report.

Errors are printed as one line (``error: ...``) with exit code 2; no tracebacks
for bad input.

Modules: :mod:`~coreval.cli.commands` (the commands), :mod:`~coreval.cli.arguments`
(parsing and checking arguments), :mod:`~coreval.cli.inputs` (reading data, a new
model's responses and lm-eval logs), :mod:`~coreval.cli.console` (one-line errors and
notes).
"""

from coreval.cli.commands import app, main

__all__ = ["app", "main"]
