"""Command-line hygiene: --version, --quiet, progress only where a bar can be drawn, extras."""

from __future__ import annotations

import io
import sys

import pytest
from typer.testing import CliRunner

from coreval import __version__
from coreval._progress import progress_enabled
from coreval.cli import app
from coreval.errors import ValidationError

runner = CliRunner()


def test_version():
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output.strip() == f"coreval {__version__}"


def test_quiet_turns_progress_off(monkeypatch, tmp_path):
    monkeypatch.setenv("COREVAL_PROGRESS", "1")
    result = runner.invoke(app, ["--quiet", "select", str(tmp_path / "missing.npz")])
    assert result.exit_code == 2  # the command ran (and failed on the missing file)
    import os

    assert os.environ["COREVAL_PROGRESS"] == "0"


def test_progress_only_on_a_terminal_unless_asked(monkeypatch):
    monkeypatch.delenv("COREVAL_PROGRESS", raising=False)
    monkeypatch.delitem(sys.modules, "ipykernel", raising=False)
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # a log file: no bars
    assert progress_enabled() is False
    monkeypatch.setenv("COREVAL_PROGRESS", "1")
    assert progress_enabled() is True
    monkeypatch.setenv("COREVAL_PROGRESS", "0")
    assert progress_enabled() is False
    assert progress_enabled(True) is True


def test_umap_reducer_without_the_extra_names_it(monkeypatch):
    import numpy as np

    from coreval.data import ScoreMatrix
    from coreval.selection.item_centric import ScalesSelector

    monkeypatch.setitem(sys.modules, "umap", None)  # as if umap-learn were not installed
    rng = np.random.default_rng(0)
    m = ScoreMatrix((rng.random((20, 30)) < 0.5).astype(float))
    features = rng.normal(size=(30, 8))
    with pytest.raises(ValidationError, match=r"coreval\[umap\]"):
        ScalesSelector(5, features=features, reducer="umap").fit(m)
    assert len(ScalesSelector(5, features=features, reducer="none").fit(m).coreset_) == 5


def test_grid_draws_no_bar_into_a_log_by_default(monkeypatch, tmp_path, capsys):
    """run_grid's bar follows the one rule: no terminal and no COREVAL_PROGRESS, no bar."""
    from coreval.data.simulate import simulate
    from coreval.harness import run_grid

    monkeypatch.delenv("COREVAL_PROGRESS", raising=False)
    m = simulate(40, 30, seed=1).matrix
    run_grid({"s": m}, ["random"], [5], seeds=[0], split="random", out=tmp_path / "r.parquet")
    assert "grid:" not in capsys.readouterr().err
    monkeypatch.setenv("COREVAL_PROGRESS", "1")
    run_grid({"s": m}, ["random"], [5], seeds=[1], split="random", out=tmp_path / "r.parquet")
    assert "grid:" in capsys.readouterr().err


def test_a_note_repeated_by_every_fit_is_printed_once(monkeypatch):
    """``warnings.catch_warnings`` (one per IRT fit) resets Python's "once" registry."""
    import warnings

    import typer

    from coreval import cli

    shown = []
    monkeypatch.setattr(warnings, "showwarning", lambda message, *args, **kw: shown.append(
        str(message)))
    monkeypatch.setattr(warnings, "formatwarning", warnings.formatwarning)

    @cli.app.command("_test-notes")
    def _notes() -> None:
        for _ in range(3):
            with warnings.catch_warnings():
                pass
            warnings.warn("the same caveat", UserWarning, stacklevel=2)
        typer.echo("done")

    try:
        first = CliRunner().invoke(cli.app, ["_test-notes"])
        in_first = list(shown)
        second = CliRunner().invoke(cli.app, ["_test-notes"])
    finally:
        cli.app.registered_commands = [c for c in cli.app.registered_commands
                                       if c.name != "_test-notes"]
    assert first.exit_code == 0 and second.exit_code == 0, first.output + second.output
    # once per run, and again in the next run
    assert in_first == ["the same caveat"] and shown == ["the same caveat"] * 2
