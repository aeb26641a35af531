"""The README's set-up commands and CI must stay in step."""

from __future__ import annotations

import re

from conftest import REPO


def _setup_commands() -> list[str]:
    text = (REPO / "README.md").read_text()
    setup = text.split("## Set-up", 1)[1].split("\n## ", 1)[0]
    return [c.strip() for c in re.findall(r"```bash\n(.*?)```", setup, flags=re.S)]


def test_readme_has_exactly_two_setup_commands():
    commands = _setup_commands()
    assert len(commands) == 2, commands
    assert all("\n" not in c for c in commands)
    assert commands[0].endswith("coreval demo")
    assert "pytest" in commands[1]


def test_ci_runs_the_readme_test_command_verbatim():
    ci = (REPO / ".ci" / "run").read_text()
    assert _setup_commands()[1] in ci.splitlines()
