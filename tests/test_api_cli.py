"""The user-facing API (select/predict) and the CLI: outputs and one-line errors."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import coreval
from coreval.cli import app
from coreval.data.matrix import ScoreMatrix

runner = CliRunner()


@pytest.fixture
def small_matrix(rng) -> ScoreMatrix:
    theta = rng.normal(size=(40, 1))
    a = rng.lognormal(0, 0.3, size=(1, 60))
    d = rng.normal(size=60)
    p = 1 / (1 + np.exp(-(theta @ a + d)))
    y = (rng.random(p.shape) < p).astype(float)
    return ScoreMatrix(y, models=[f"m{i}" for i in range(40)],
                       items=[f"t/{j}" for j in range(60)], name="small")


@pytest.fixture
def wide_csv(tmp_path, small_matrix):
    path = tmp_path / "small.csv"
    small_matrix.to_frame().to_csv(path)
    return path


def test_select_is_deterministic_and_predict_aligns_by_id(small_matrix):
    a = coreval.select(small_matrix, "random+", budget=10, seed=3)
    b = coreval.select(small_matrix, "random+", budget=10, seed=3)
    np.testing.assert_array_equal(a.coreset.indices, b.coreset.indices)
    row = small_matrix.values[0, a.coreset.indices]
    by_id = dict(zip(a.coreset.items, row, strict=True))
    shuffled = dict(reversed(list(by_id.items())))
    p1, p2 = a.predict(by_id), a.predict(shuffled)
    assert p1.mean == pytest.approx(p2.mean)
    assert p1.lower <= p1.mean <= p1.upper


def test_predict_rejects_unknown_and_missing_items(small_matrix):
    fitted = coreval.select(small_matrix, "random+", budget=5, seed=0)
    good = dict(zip(fitted.coreset.items, np.ones(5), strict=True))
    with pytest.raises(coreval.ValidationError, match="not in the source data: nope"):
        fitted.predict({**good, "nope": 1.0})
    # items of the source data outside the coreset are ignored, with a note
    other = next(i for i in small_matrix.items if i not in set(fitted.coreset.items))
    with pytest.warns(UserWarning, match="ignored responses to 1 item"):
        extra = fitted.predict({**good, str(other): 0.0})
    assert extra.mean == pytest.approx(fitted.predict(good).mean)
    with pytest.raises(coreval.ValidationError, match="lack coreset items"):
        fitted.predict(dict(list(good.items())[:3]))


def test_unknown_method_error_lists_known_methods(small_matrix):
    with pytest.raises(coreval.UnknownMethodError, match=r"unknown method 'nope'; known methods: .*random"):
        coreval.select(small_matrix, "nope")


def test_budget_larger_than_pool(small_matrix):
    with pytest.raises(coreval.ValidationError, match="larger than the pool of 60"):
        coreval.select(small_matrix, "random", budget=61)


def test_cli_help_lists_commands():
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for cmd in ("demo", "compare", "select", "predict", "fit"):
        assert cmd in result.output


def test_cli_select_then_predict_round_trip(tmp_path, wide_csv, small_matrix):
    out = tmp_path / "coreset.csv"
    res = runner.invoke(app, ["select", str(wide_csv), "--method", "random+", "--budget", "8",
                              "--out", str(out)])
    assert res.exit_code == 0, res.output
    coreset = pd.read_csv(out)
    assert len(coreset) == 8
    new = tmp_path / "new.csv"
    scores = small_matrix.subset(items=coreset["item"].astype(str).to_numpy()).values[5]
    pd.DataFrame({"item": coreset["item"], "score": scores}).to_csv(new, index=False)
    res = runner.invoke(app, ["predict", str(wide_csv), str(new), "--method", "random+",
                              "--budget", "8"])
    assert res.exit_code == 0, res.output
    result = json.loads(res.output)
    assert result["lower"] <= result["score"] <= result["upper"]
    assert result["interval"] == "jackknife+"


@pytest.mark.parametrize(
    "args, message",
    [
        (["select", "{csv}", "--method", "nope"], "unknown method 'nope'"),
        (["select", "{csv}", "--budget", "1000"], "larger than the pool"),
        (["select", "does-not-exist.csv"], "does-not-exist"),
        # options the command takes as flags: a one-line error, not a clash or an override
        (["select", "{csv}", "-o", "seed=3"], "give it as --seed"),
        (["predict", "{csv}", "{csv}", "-o", "calibration=cv"], "give it as --calibration"),
        (["compare", "{csv}", "--methods", "random", "-o", "calibration=cv"],
         "give it as --calibration"),
        # kfold's source is every model outside the fold; an explicit count is refused
        (["compare", "{csv}", "--methods", "random", "--split", "kfold", "--train-models",
          "30"], "kfold"),
    ],
)
def test_cli_errors_are_one_line(args, message, wide_csv):
    res = runner.invoke(app, [a.replace("{csv}", str(wide_csv)) for a in args])
    assert res.exit_code == 2
    lines = [ln for ln in res.output.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and message in lines[0], res.output


def test_cli_report_writes_a_score_card(tmp_path, wide_csv, small_matrix):
    fitted = coreval.select(small_matrix, "random+", budget=8, seed=0)
    new = tmp_path / "new.csv"
    pd.DataFrame({"item": fitted.coreset.items,
                  "score": small_matrix.values[3, fitted.coreset.indices]}).to_csv(new, index=False)
    card = tmp_path / "card.md"
    res = runner.invoke(app, ["report", str(wide_csv), str(new), "--method", "random+",
                              "--budget", "8", "--name", "m3", "--out", str(card)])
    assert res.exit_code == 0, res.output
    text = card.read_text()
    assert "m3" in text and "90%" in text


def test_cli_rejects_a_responses_file_that_is_not_csv(tmp_path, wide_csv):
    bad = tmp_path / "bad.csv"
    bad.write_bytes(bytes(range(256)) * 4)
    res = runner.invoke(app, ["predict", str(wide_csv), str(bad)])
    assert res.exit_code == 2
    assert res.output.strip().startswith("error:") and len(res.output.strip().splitlines()) == 1


def test_cli_responses_keep_item_ids_that_read_like_missing_values(tmp_path):
    """Item ids such as NA or null are ids (as in the matrix reader); blank scores are NaN."""
    from coreval.cli.inputs import read_responses

    path = tmp_path / "new.csv"
    path.write_text("item,score\nNA,1\nnull,0\nx,\ny,NA\n")
    got = read_responses(path)
    assert list(got.index) == ["NA", "null", "x", "y"]
    assert got["NA"] == 1.0 and got["null"] == 0.0 and np.isnan(got[["x", "y"]]).all()


def test_cli_report_refuses_unknown_items(tmp_path, wide_csv, small_matrix):
    fitted = coreval.select(small_matrix, "random+", budget=8, seed=0)
    new = tmp_path / "new.csv"
    pd.DataFrame({"item": [*fitted.coreset.items, "bogus"],
                  "score": [*small_matrix.values[3, fitted.coreset.indices], 1.0]}
                 ).to_csv(new, index=False)
    res = runner.invoke(app, ["report", str(wide_csv), str(new), "--method", "random+",
                              "--budget", "8", "--out", str(tmp_path / "card.md")])
    assert res.exit_code == 2 and "not in the source data: bogus" in res.output, res.output


def test_predict_judges_the_interval_on_the_source_score_range(tmp_path, rng):
    """On a 0-100 scale a 5-point interval is narrow: no "nearly vacuous" caveat."""
    from coreval.data.simulate import simulate

    sim = simulate(60, 80, model="beta", phi=30.0, seed=3)
    m = sim.matrix
    scaled = ScoreMatrix(m.values * 100, models=m.models, items=m.items, name="pct")
    assert scaled.score_range() == pytest.approx((np.nanmin(scaled.values),
                                                  np.nanmax(scaled.values)))
    path = tmp_path / "pct.csv"
    scaled.take(np.arange(59)).to_frame().to_csv(path)
    fitted = coreval.select(scaled.take(np.arange(59)), "random+", budget=16, seed=0)
    assert fitted.score_range == scaled.take(np.arange(59)).score_range()
    new = tmp_path / "new.csv"
    pd.DataFrame({"item": fitted.coreset.items,
                  "score": scaled.values[59, fitted.coreset.indices]}).to_csv(new, index=False)
    res = runner.invoke(app, ["predict", str(path), str(new), "--method", "random+",
                              "--budget", "16"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output[res.output.index("{"):])
    span = fitted.score_range[1] - fitted.score_range[0]
    assert (out["upper"] - out["lower"]) < 0.5 * span
    assert "vacuous" not in res.output


def test_cli_predict_reports_the_irt_model_check(tmp_path, wide_csv, small_matrix):
    fitted = coreval.select(small_matrix, "metabench", budget=12, seed=0)
    new = tmp_path / "new.csv"
    pd.DataFrame({"item": fitted.coreset.items,
                  "score": small_matrix.values[5, fitted.coreset.indices]}).to_csv(new,
                                                                                   index=False)
    res = runner.invoke(app, ["predict", str(wide_csv), str(new), "--method", "metabench",
                              "--budget", "12"])
    assert res.exit_code == 0, res.output
    check = json.loads(res.stdout)["model_check"]
    assert check == json.loads(json.dumps(fitted.model_check.summary()))
    assert check["model"] == "2PL, 1 dimension" and 0.0 <= check["ppc_pvalue"] <= 1.0
    assert check["cv_rmse"] > 0 and check["ridge_rmse"] > 0
