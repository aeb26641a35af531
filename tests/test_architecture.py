"""The package's layers are enforced by import-linter (contract in pyproject.toml)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytest.importorskip("importlinter")


def _lint(src: Path) -> subprocess.CompletedProcess:
    """Run lint-imports with the repository's contract on the package under ``src``."""
    code = ("import sys; from importlinter.cli import lint_imports; "
            f"sys.exit(lint_imports(config_filename={str(ROOT / 'pyproject.toml')!r}, no_cache=True))")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin"}, cwd=src)


def test_layers_contract_holds():
    result = _lint(ROOT / "src")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]


def test_layers_contract_catches_a_selector_importing_a_predictor(tmp_path):
    """A deliberate violation (selection importing prediction) makes the contract fail."""
    shutil.copytree(ROOT / "src" / "coreval", tmp_path / "coreval",
                    ignore=shutil.ignore_patterns("__pycache__"))
    target = tmp_path / "coreval" / "selection" / "random.py"
    target.write_text(target.read_text() + "\nimport coreval.prediction.mean  # noqa\n")
    result = _lint(tmp_path)
    assert result.returncode != 0
    assert "coreval.selection.random" in result.stdout
