"""Property-based fuzzing of the data boundary: matrices, table files, response files, CLI.

Every generated input must end in one of two ways: a one-line error (``ValidationError``
in the API; exit code 2 and a single ``error:`` line in the CLI, no traceback), or a
result that passes its own validation. Hypothesis runs derandomized (the same cases
on every run), so CI is reproducible; ``FUZZ_EXAMPLES`` scales the number of cases.
"""

from __future__ import annotations

import json
import os
import string
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from typer.testing import CliRunner

import coreval
from coreval.cli import app
from coreval.data import ScoreMatrix
from coreval.data.io import load_matrix
from coreval.data.npz import write_npz
from coreval.errors import ValidationError

SCALE = float(os.environ.get("FUZZ_EXAMPLES", "1"))


def fuzz(n: int):
    """Deterministic hypothesis settings with ``n`` examples (times ``FUZZ_EXAMPLES``)."""
    return settings(max_examples=max(1, int(n * SCALE)), deadline=None, derandomize=True,
                    database=None, suppress_health_check=list(HealthCheck))


runner = CliRunner()
CELLS = st.sampled_from(["0", "1", "1", "0", "", "2", "-1", "0.5", "x", "nan", "inf",
                         "1e400", "1e300", " 1", "007", "true", "１"])
#: Cells of a clean 0/1 file: half the generated files use only these.
CLEAN = st.sampled_from(["0", "1"])
SPECIAL = st.sampled_from([0.0, 1.0, np.nan, np.inf, -np.inf, 2.0, -1.0, 1e300, 0.5])


def _check_matrix(m: ScoreMatrix) -> None:
    """What every ScoreMatrix must satisfy."""
    v = m.values
    assert v.ndim == 2 and v.shape == (len(m.models), len(m.items))
    assert not np.isinf(v).any()
    assert len(set(m.models)) == len(m.models) and len(set(m.items)) == len(m.items)
    observed = v[~np.isnan(v)]
    if m.kind == "binary":
        assert np.isin(observed, (0.0, 1.0)).all()


# ----------------------------------------------------------------- matrices (API)
FLOAT_ARRAYS = arrays(np.float64, st.tuples(st.integers(0, 6), st.integers(0, 6)),
                      elements=st.one_of(SPECIAL, st.floats(allow_nan=True, allow_infinity=True)))
TEXT_ROWS = st.lists(st.lists(st.sampled_from(["0", "1", "x", "", "nan"]), min_size=2,
                              max_size=2), min_size=1, max_size=3)


@fuzz(200)
@given(st.one_of(FLOAT_ARRAYS, TEXT_ROWS), st.sampled_from([None, "binary", "continuous", "bogus"]),
       st.booleans())
def test_score_matrix_is_valid_or_refused_and_usable(values, kind, strict):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            m = ScoreMatrix(values, kind=kind, strict=strict)
        except ValidationError as exc:
            assert "\n" not in str(exc).strip()
            event("refused")
            return
        _check_matrix(m)
        event("valid")
        # a valid matrix is usable: a method gives finite numbers or a one-line refusal
        try:
            fitted = coreval.select(m, "random+", 1, seed=0)
            pred = fitted.predict_array(m.values[:, fitted.coreset.indices][:1])
        except ValidationError:
            return
    assert np.isfinite(pred.mean).all() or np.isnan(m.values[0, fitted.coreset.indices]).any()


# ----------------------------------------------------------------- table files
@fuzz(150)
@given(st.data())
def test_csv_table_loads_valid_or_refused(tmp_path_factory, data):
    header = data.draw(st.one_of(
        st.just(["model", "i1", "i2", "i3", "i4"]),
        st.lists(st.sampled_from(["model", "i1", "i2", "i3", "", "i1", "score", "item"]),
                 min_size=1, max_size=5)))
    cells = data.draw(st.sampled_from([CLEAN, CELLS]))
    rows = data.draw(st.lists(st.lists(cells, min_size=5, max_size=5), min_size=0, max_size=6))
    if data.draw(st.booleans()):  # distinct model ids (else the first cells are the ids)
        rows = [[f"m{i}", *r[1:]] for i, r in enumerate(rows)]
    path = tmp_path_factory.mktemp("csv") / "t.csv"
    lines = [",".join(header)] + [",".join(r[: len(header)]) for r in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            m = load_matrix(path)
        except ValidationError as exc:
            assert str(exc).strip()
            event("refused")
            return
    _check_matrix(m)
    event("valid")
    assert len(set(header[1:])) == len(header[1:]) or {"model", "item", "score"} <= set(header)


# ----------------------------------------------------------------- response files (CLI)
@pytest.fixture(scope="module")
def source_npz(tmp_path_factory):
    rng = np.random.default_rng(0)
    y = (rng.random((25, 30)) < 0.6).astype(float)
    m = ScoreMatrix(y, models=[f"m{i}" for i in range(25)], items=[f"{j:03d}" for j in range(30)],
                    name="fuzz")
    path = tmp_path_factory.mktemp("src") / "fuzz.npz"
    write_npz(m, path)
    coreset = coreval.select(m, "random+", 6, seed=0).coreset.items
    return path, [str(i) for i in coreset]


def _assert_cli_outcome(result) -> dict | None:
    """Exit 0 (returns the JSON printed, if any) or a one-line error with exit 2."""
    assert result.exit_code in (0, 2), (result.exit_code, result.output, result.exception)
    assert "Traceback" not in result.output
    if result.exit_code == 2:
        lines = [line for line in result.output.splitlines() if line.strip()]
        assert lines and (lines[-1].startswith("error:") or "Error" in result.output), lines
        event("refused")
        return None
    event("valid")
    text = result.output
    start = text.find("{")
    return json.loads(text[start:text.rfind("}") + 1]) if start >= 0 else {}


@fuzz(100)
@given(st.data())
def test_prediction_from_fuzzed_responses_is_valid_or_refused(tmp_path_factory, source_npz,
                                                              data):
    path, coreset = source_npz
    items = data.draw(st.one_of(
        st.permutations(coreset),
        st.lists(st.one_of(st.sampled_from(coreset), st.sampled_from(["6", "999", "", "x"])),
                 min_size=0, max_size=8)))
    cells = data.draw(st.sampled_from([CLEAN, CELLS]))
    scores = data.draw(st.lists(cells, min_size=len(items), max_size=len(items)))
    header = data.draw(st.sampled_from(["item,score", "item,score", "item,value", "score,item",
                                        "item"]))
    body = "\n".join(f"{i},{s}" for i, s in zip(items, scores, strict=True))
    responses = tmp_path_factory.mktemp("resp") / "new.csv"
    responses.write_text(f"{header}\n{body}\n", encoding="utf-8")
    result = runner.invoke(app, ["predict", str(path), str(responses), "--method", "random+",
                                 "--budget", "6"])
    out = _assert_cli_outcome(result)
    clean = (header == "item,score" and sorted(items) == sorted(coreset)
             and all(v in ("0", "1") for v in scores))
    if clean:  # well-formed responses must be accepted (ids keep their spelling)
        assert out is not None, result.output
    if out is not None:
        # anything accepted was well-formed: binary data takes 0/1 responses only
        assert all(v.strip() in ("0", "1", "0.0", "1.0") for v in scores), (scores, out)
        assert 0.0 <= out["lower"] <= out["score"] <= out["upper"] <= 1.0


# ----------------------------------------------------------------- CLI arguments
GOOD_METHODS = ["random", "random+", "random++", "anchor-points", "lasso+"]
GOOD_BUDGETS = ["1", "3", "5", "0.1", "0.2"]
GOOD_SEEDS = ["0", "1", "7", "4294967295"]
BAD = ["-1", "1.5", "abc", "", "1e9", "4294967296", "nan", "inf", "100000", "0"]


@fuzz(60)
@given(st.sampled_from(GOOD_METHODS + GOOD_METHODS + ["mrmr++", "nope", ""]),
       st.sampled_from(GOOD_BUDGETS * 3 + BAD), st.sampled_from(GOOD_SEEDS * 3 + BAD),
       st.one_of(st.just([]), st.just([]),
                 st.lists(st.text(string.ascii_lowercase + "=_0123.", max_size=12), max_size=2)))
def test_select_arguments_are_valid_or_refused(source_npz, method, budget, seed, options):
    path, _ = source_npz
    args = ["select", str(path), "--method", method, "--budget", budget, "--seed", seed]
    for option in options:
        args += ["--option", option]
    result = runner.invoke(app, args)
    out = _assert_cli_outcome(result)
    if method in GOOD_METHODS and budget in GOOD_BUDGETS and seed in GOOD_SEEDS \
            and not options:
        assert out is not None, result.output  # valid arguments are accepted
    if out is not None:
        table = pd.read_csv(pd.io.common.StringIO(result.output), dtype={"item": str})
        assert {"item", "position", "weight"} <= set(table.columns)
        assert table["item"].is_unique and len(table) >= 1
