"""The ``Examples`` in the package's docstrings run and print what they show."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

import coreval

PACKAGE = Path(coreval.__file__).parent
WITH_EXAMPLES = sorted(
    "coreval." + ".".join(path.relative_to(PACKAGE).with_suffix("").parts).removesuffix(
        ".__init__")
    for path in PACKAGE.rglob("*.py") if ">>>" in path.read_text(encoding="utf-8"))


def test_some_modules_have_examples():
    assert "coreval.base.cache" in WITH_EXAMPLES and len(WITH_EXAMPLES) >= 3


@pytest.mark.parametrize("name", WITH_EXAMPLES)
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} docstring example(s) of {name} failed"
