"""``python -m coreval.cli``: the ``coreval`` command."""

from coreval.cli.commands import main

main()
