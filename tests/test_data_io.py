"""Tests of the data readers/writers: tables, response patterns, lm-eval logs, load/save."""

from __future__ import annotations

import json
import os
import shutil
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from coreval.data import (
    ScoreMatrix,
    load_catalog,
    load_matrix,
    read_lm_eval,
    read_long,
    read_response_patterns,
    read_wide,
    save_matrix,
)
from coreval.errors import ValidationError

LM_EVAL = Path(__file__).parent / "fixtures" / "lm_eval"
NAN = np.nan


@pytest.fixture
def mixed() -> ScoreMatrix:
    values = np.array([[0.25, NAN, 1.0], [0.5, 0.125, NAN], [1 / 3, 0.0, 0.75]])
    return ScoreMatrix(values, models=["org/a", "007", "c"], items=["x/1", "x/2", "y"])


def _same(a: ScoreMatrix, b: ScoreMatrix) -> None:
    assert a.models.tolist() == b.models.tolist()
    assert a.items.tolist() == b.items.tolist()
    np.testing.assert_array_equal(a.values, b.values)


# ------------------------------------------------------------------ tables
@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
@pytest.mark.parametrize("layout", ["wide", "long"])
def test_table_round_trip(tmp_path, mixed, suffix, layout):
    path = save_matrix(mixed, tmp_path / f"scores{suffix}", layout=layout)
    assert path.exists() and list(tmp_path.iterdir()) == [path]  # no temp file left
    reader = read_wide if layout == "wide" else read_long
    for loaded in (load_matrix(path), reader(path)):  # load_matrix detects the layout
        if layout == "long":  # ids keep their order of first appearance in the rows
            loaded = loaded.subset(models=mixed.models, items=mixed.items)
        _same(loaded, mixed)


def test_wide_csv_layout_and_ids_kept_as_text(tmp_path):
    path = tmp_path / "wide.csv"
    path.write_text("model,q1,q2\n007,1,0\nbeta,,1\n")
    matrix = load_matrix(path)
    assert matrix.models.tolist() == ["007", "beta"]
    assert matrix.items.tolist() == ["q1", "q2"]
    np.testing.assert_array_equal(matrix.values, [[1.0, 0.0], [NAN, 1.0]])
    assert matrix.kind == "binary" and matrix.name == "wide"


def test_wide_parquet_with_the_model_ids_as_its_index(tmp_path, mixed):
    """pandas keeps ScoreMatrix.to_frame()'s model-id index in the file; it is the id column."""
    path = tmp_path / "indexed.parquet"
    mixed.to_frame().to_parquet(path)
    _same(load_matrix(path), mixed)
    frame = mixed.to_frame().reset_index().iloc[[0, 2]]  # row numbers 0, 2 as the index
    frame.to_parquet(path)
    _same(load_matrix(path), mixed.take([0, 2]))


def test_ids_that_look_missing_keep_their_names_and_na_scores_are_missing(tmp_path):
    wide = tmp_path / "wide.csv"
    wide.write_text("model,NA,q2\nNA,1,NA\nnull,0,1\n")
    matrix = load_matrix(wide)
    assert matrix.models.tolist() == ["NA", "null"] and matrix.items.tolist() == ["NA", "q2"]
    np.testing.assert_array_equal(matrix.values, [[1.0, NAN], [0.0, 1.0]])
    long = tmp_path / "long.csv"
    long.write_text("model,item,score\na,null,1\na,x,0\nb,null,NA\nb,x,1\n")
    matrix = load_matrix(long)
    assert matrix.items.tolist() == ["null", "x"]
    np.testing.assert_array_equal(matrix.values, [[1.0, 0.0], [NAN, 1.0]])
    blank = tmp_path / "blank.csv"
    blank.write_text("model,item,score\na,x,1\n,x,0\nb,x,1\n")
    with pytest.raises(ValidationError, match="1 rows have no model id"):
        load_matrix(blank)


def test_long_csv_with_extra_columns_and_order_of_appearance(tmp_path):
    frame = pd.DataFrame({"Model": ["m2", "m1", "m2", "m1"], "Item": ["b", "a", "a", "b"],
                          "Score": [0.5, 0.25, 1.0, 0.0], "note": ["", "", "", "x"]})
    path = tmp_path / "long.csv"
    frame.to_csv(path, index=False)
    matrix = load_matrix(path)
    assert matrix.models.tolist() == ["m2", "m1"] and matrix.items.tolist() == ["b", "a"]
    np.testing.assert_array_equal(matrix.values, [[0.5, 1.0], [0.0, 0.25]])


def test_long_table_duplicates_raise(tmp_path):
    path = tmp_path / "dup.csv"
    path.write_text("model,item,score\nm1,a,1\nm1,a,0\nm2,a,1\n")
    with pytest.raises(ValidationError, match=r"duplicate .* m1/a"):
        load_matrix(path)


def test_table_errors_are_one_line(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("model,q1\nm1,yes\nm2,1\n")
    with pytest.raises(ValidationError, match="column 'q1' has non-numeric values: yes"):
        read_wide(bad)
    one = tmp_path / "one.csv"
    one.write_text("model\nm1\nm2\n")
    with pytest.raises(ValidationError, match="at least one item column"):
        read_wide(one)
    with pytest.raises(ValidationError, match="lacks columns"):
        read_long(one)
    with pytest.raises(ValidationError, match="unsupported table suffix"):
        read_wide(tmp_path / "x.xlsx")


def test_atomic_write_replaces_existing_file(tmp_path, mixed):
    path = tmp_path / "m.csv"
    path.write_text("old")
    save_matrix(mixed, path)
    assert path.read_text().startswith("model,")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.csv"]


# ------------------------------------------------------------------ response patterns
def test_response_patterns_expand_frequencies(tmp_path):
    path = tmp_path / "pat.csv"
    path.write_text("Item.1,Item.2,freq\n0,0,2\n1,0,0\n1,1,3\n")
    matrix = read_response_patterns(path)
    assert matrix.shape == (5, 2) and matrix.kind == "binary"
    assert matrix.models.tolist() == [f"resp{i}" for i in range(5)]
    np.testing.assert_array_equal(matrix.values, [[0, 0], [0, 0], [1, 1], [1, 1], [1, 1]])
    assert matrix.model_meta["pattern"].tolist() == [0, 0, 2, 2, 2]


def test_load_matrix_detects_pattern_tables_but_not_wide_tables(tmp_path):
    path = tmp_path / "pat.csv"
    path.write_text("Item.1,Item.2,freq\n0,1,2\n1,1,1\n")
    matrix = load_matrix(path)
    assert matrix.shape == (3, 2) and matrix.models.tolist() == ["resp0", "resp1", "resp2"]
    wide = tmp_path / "wide.csv"
    wide.write_text("model,q1,freq\nm1,1,0\nm2,0,1\n")
    assert load_matrix(wide).models.tolist() == ["m1", "m2"]


def test_response_patterns_errors(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("Item.1,Item.2,n\n0,2,2\n")
    with pytest.raises(ValidationError, match="no frequency column 'freq'"):
        read_response_patterns(path)
    with pytest.raises(ValidationError, match="must be 0/1"):
        read_response_patterns(path, freq_column="n")
    path.write_text("Item.1,freq\n0,1.5\n1,2\n")
    with pytest.raises(ValidationError, match="non-negative integer counts"):
        read_response_patterns(path)


@pytest.mark.shared
@pytest.mark.parametrize("name", ["LSAT6", "LSAT7"])
def test_lsat_patterns_match_the_table(shared_dir, name):
    path = shared_dir / "data" / "psychometrics" / f"{name}.csv"
    if not path.exists():
        pytest.skip(f"needs {path}, which is absent")
    table = pd.read_csv(path)
    matrix = read_response_patterns(path)
    freq = table["freq"].to_numpy()
    assert matrix.shape == (1000, 5) == (freq.sum(), table.shape[1] - 1)
    expected = (table.drop(columns="freq").to_numpy() * freq[:, None]).sum(0) / freq.sum()
    np.testing.assert_allclose(matrix.values.mean(axis=0), expected)
    np.testing.assert_array_equal(load_matrix(path).values, matrix.values)


# ------------------------------------------------------------------ lm-eval harness
# Per-document acc of the fixture runs (newest run per model and task).
EXPECTED_ACC = {
    "EleutherAI/pythia-160m": [1, 1, 0, 1, 1, 1, 0],
    "EleutherAI/pythia-70m": [1, 0, 0, 1, 0, 1, 0],
    "openai-community/gpt2": [0, 1, 1, 0, 0, 0, 1],
}
ITEMS = ["arc_easy/0", "arc_easy/1", "arc_easy/2", "arc_easy/3",
         "hellaswag/0", "hellaswag/1", "hellaswag/2"]


def test_read_lm_eval_fixture():
    matrix = read_lm_eval(LM_EVAL, metric="acc")
    assert matrix.models.tolist() == list(EXPECTED_ACC)
    assert matrix.items.tolist() == ITEMS
    np.testing.assert_array_equal(matrix.values, np.array(list(EXPECTED_ACC.values()), float))
    assert matrix.kind == "binary" and matrix.level == "item"
    assert matrix.groups.tolist() == ["arc_easy"] * 4 + ["hellaswag"] * 3
    assert load_matrix(LM_EVAL).items.tolist() == ITEMS  # folders dispatch to the reader
    # by default each task's metric is chosen once: acc_norm where the task logs it
    auto = read_lm_eval(LM_EVAL)
    assert set(auto.item_meta["metric"]) == {"acc_norm"}
    np.testing.assert_array_equal(auto.values, read_lm_eval(LM_EVAL, metric="acc_norm").values)


def test_lm_eval_task_means_equal_harness_aggregates():
    """Per-task means of the samples equal the harness's own ``acc,none`` in the results."""
    for metric in ("acc", "acc_norm"):
        matrix = read_lm_eval(LM_EVAL, metric=metric)
        for results in LM_EVAL.rglob("results_*.json"):
            data = json.loads(results.read_text())
            stamp = results.stem.removeprefix("results_")
            model = data.get("model_name") or data["config"]["model_args"].split(",")[0][11:]
            row = matrix.model_index([model])[0]
            for task, agg in data["results"].items():
                newest = max(p.stem.rsplit("_", 1)[1]
                             for p in results.parent.glob(f"samples_{task}_*.jsonl"))
                if newest != stamp:
                    continue  # an older, superseded run
                cols = matrix.groups == task
                assert matrix.values[row, cols].mean() == pytest.approx(agg[f"{metric},none"])


def test_lm_eval_tasks_argument_and_unknown_task():
    matrix = read_lm_eval(LM_EVAL, tasks=["hellaswag"], metric="acc")
    assert matrix.items.tolist() == ITEMS[4:]
    with pytest.raises(ValidationError, match=r"tasks not found .*: mmlu"):
        read_lm_eval(LM_EVAL, tasks=["mmlu"])


def test_lm_eval_folder_name_when_no_results_file(tmp_path):
    for folder in ("EleutherAI__pythia-70m", "EleutherAI__pythia-160m"):
        shutil.copytree(LM_EVAL / folder, tmp_path / folder)
    for results in tmp_path.rglob("results_*.json"):
        results.unlink()
    matrix = read_lm_eval(tmp_path)  # lm-eval's "__" for "/" is undone
    assert matrix.models.tolist() == ["EleutherAI/pythia-160m", "EleutherAI/pythia-70m"]


def test_lm_eval_results_file_named_by_output_path(tmp_path):
    """``--output_path run.json`` writes ``run_<timestamp>.json`` next to the samples."""
    out = tmp_path / "out"
    out.mkdir()
    for path in (LM_EVAL / "EleutherAI__pythia-70m").iterdir():
        shutil.copy(path, out / path.name.replace("results_", "run_"))
    shutil.copytree(LM_EVAL / "EleutherAI__pythia-160m", tmp_path / "b")
    matrix = read_lm_eval(tmp_path)
    assert matrix.models.tolist() == ["EleutherAI/pythia-160m", "EleutherAI/pythia-70m"]


def _write_samples(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_lm_eval_missing_metric_names_file_and_key(tmp_path):
    stamp = "2024-01-01T00-00-00.000000"
    for model in ("m1", "m2"):
        _write_samples(tmp_path / model / f"samples_arc_easy_{stamp}.jsonl",
                       [{"doc_id": 0, "metrics": ["acc_norm"], "acc_norm": 1.0}])
    with pytest.raises(ValidationError,
                       match=r"samples_arc_easy_.*\.jsonl: line 1 has no metric key 'acc' "
                             r"\(logged metrics: acc_norm\)") as info:
        read_lm_eval(tmp_path, metric="acc")
    assert "\n" not in str(info.value)
    assert read_lm_eval(tmp_path, metric="acc_norm").shape == (2, 1)
    assert read_lm_eval(tmp_path).item_meta["metric"].tolist() == ["acc_norm"]


def test_lm_eval_filters_and_metric_mapping(tmp_path):
    stamp = "2024-01-01T00-00-00.000000"
    for model, (strict, flexible) in {"m1": (0.0, 1.0), "m2": (1.0, 1.0)}.items():
        rows = []
        for doc in range(2):
            rows.append({"doc_id": doc, "filter": "strict-match", "exact_match": strict})
            rows.append({"doc_id": doc, "filter": "flexible-extract", "exact_match": flexible})
        _write_samples(tmp_path / model / f"samples_gsm8k_{stamp}.jsonl", rows)
        _write_samples(tmp_path / model / f"samples_arc_easy_{stamp}.jsonl",
                       [{"doc_id": 0, "filter": "none", "acc": 1.0}])
    metric = {"gsm8k": "exact_match", "arc_easy": "acc"}
    with pytest.raises(ValidationError, match=r"several filters .*pass filter="):
        read_lm_eval(tmp_path, metric=metric)
    matrix = read_lm_eval(tmp_path, metric=metric, tasks=["gsm8k"], filter="strict-match")
    np.testing.assert_array_equal(matrix.values, [[0, 0], [1, 1]])
    # tasks not in the mapping get the automatic choice (exact_match for gsm8k)
    auto = read_lm_eval(tmp_path, metric={"arc_easy": "acc"}, filter="flexible-extract")
    assert dict(zip(auto.item_meta["group"], auto.item_meta["metric"], strict=True)) == {
        "arc_easy": "acc", "gsm8k": "exact_match"}


def test_lm_eval_older_format_one_row_per_filter_without_key(tmp_path):
    """Older releases log each document once per filter with no 'filter' key."""
    stamp = "2024-01-01T00-00-00.000000"
    for model, (first, second) in {"m1": (0.0, 1.0), "m2": (1.0, 0.0)}.items():
        rows = [{"doc_id": doc, "exact_match": v} for doc in range(3)
                for v in (first, second)]
        _write_samples(tmp_path / model / f"samples_gsm8k_{stamp}.jsonl", rows)
    with pytest.warns(UserWarning, match="no 'filter' key.*took the first row"):
        matrix = read_lm_eval(tmp_path, metric="exact_match")
    np.testing.assert_array_equal(matrix.values, [[0, 0, 0], [1, 1, 1]])
    with pytest.warns(UserWarning, match="filter 'flexible-extract' cannot be located"):
        read_lm_eval(tmp_path, metric="exact_match", filter="flexible-extract")


def test_lm_eval_doc_hash_mismatch_is_an_error(tmp_path):
    stamp = "2024-01-01T00-00-00.000000"
    for model, hashes in {"m1": ("h0", "h1"), "m2": ("h0", "other")}.items():
        _write_samples(tmp_path / model / f"samples_arc_easy_{stamp}.jsonl",
                       [{"doc_id": i, "acc": 1.0, "doc_hash": h} for i, h in enumerate(hashes)])
    with pytest.raises(ValidationError, match=r"task 'arc_easy' doc 1: doc_hash differs "
                                              r"between models 'm1' and 'm2'"):
        read_lm_eval(tmp_path)


def test_lm_eval_errors(tmp_path):
    with pytest.raises(ValidationError, match="not found"):
        read_lm_eval(tmp_path / "absent")
    with pytest.raises(ValidationError, match="no lm-eval sample files"):
        read_lm_eval(tmp_path)
    stamp = "2024-01-01T00-00-00.000000"
    _write_samples(tmp_path / "m" / f"samples_t_{stamp}.jsonl", [{"doc_id": 0, "acc": "high"}])
    with pytest.raises(ValidationError, match="not a finite number"):
        read_lm_eval(tmp_path, metric="acc")
    with pytest.raises(ValidationError, match="cannot choose a metric"):
        read_lm_eval(tmp_path)
    (tmp_path / "m" / f"samples_t_{stamp}.jsonl").write_text("{not json\n")
    with pytest.raises(ValidationError, match="line 1 is not valid JSON"):
        read_lm_eval(tmp_path, metric="acc")


def test_lm_eval_single_model_needs_non_strict():
    with pytest.raises(ValidationError, match="at least 2 models"):
        read_lm_eval(LM_EVAL / "EleutherAI__pythia-70m")
    matrix = read_lm_eval(LM_EVAL / "EleutherAI__pythia-70m", strict=False)
    assert matrix.models.tolist() == ["EleutherAI/pythia-70m"]


# ------------------------------------------------------------------ load_matrix / names
def test_bare_names_resolve_in_data_dir_and_env(tmp_path, mixed, monkeypatch):
    save_matrix(mixed, tmp_path / "toy.parquet")
    _same(load_matrix("toy", data_dir=tmp_path), mixed)
    monkeypatch.setenv("COREVAL_DATA_DIR", str(tmp_path))
    assert load_matrix("toy").name == "toy"
    monkeypatch.chdir(tmp_path.parent)
    assert load_matrix("toy.parquet").shape == mixed.shape  # relative file inside data_dir
    with pytest.raises(ValidationError, match=r"dataset 'nope' not found; looked for .*nope\.npz"
                                              r".*nope\.parquet.*nope\.csv"):
        load_matrix("nope")
    monkeypatch.delenv("COREVAL_DATA_DIR")
    with pytest.raises(ValidationError, match="pass data_dir or set COREVAL_DATA_DIR"):
        load_matrix("toy")


def test_catalog_sets_level_and_kind(tmp_path, mixed):
    save_matrix(mixed, tmp_path / "bench.npz")
    (tmp_path / "catalog.json").write_text(json.dumps(
        {"bench": {"level": "benchmark", "scores": "continuous"}}))
    assert load_catalog(tmp_path)["bench"]["level"] == "benchmark"
    matrix = load_matrix("bench", data_dir=tmp_path)
    assert matrix.level == "benchmark" and matrix.kind == "continuous"
    assert load_matrix("bench", data_dir=tmp_path, level="item").level == "item"
    assert load_catalog(tmp_path / "absent") == {}


def test_npz_round_trip_and_unknown_suffix(tmp_path, mixed):
    path = save_matrix(mixed, tmp_path / "m.npz")
    loaded = load_matrix(path)
    np.testing.assert_allclose(loaded.values, mixed.values.astype(np.float32))
    with pytest.raises(ValidationError, match=r"unsupported file type '\.txt'"):
        save_matrix(mixed, tmp_path / "m.txt")
    (tmp_path / "m.txt").write_text("x")
    with pytest.raises(ValidationError, match=r"unsupported file type '\.txt'"):
        load_matrix(tmp_path / "m.txt")
    with pytest.raises(ValidationError, match="no such file or folder"):
        load_matrix(tmp_path / "absent.npz")
    (tmp_path / "junk.npz").write_text("not a zip")
    with pytest.raises(ValidationError, match=r"cannot read junk\.npz as \.npz"):
        load_matrix(tmp_path / "junk.npz")
    assert load_matrix(mixed) is mixed


def test_npz_repeated_model_ids_are_renamed_not_dropped(tmp_path):
    path = tmp_path / "rep.npz"
    np.savez(path, Y=np.eye(3, dtype=np.float32), models=np.array(["a", "b", "a"]),
             items=np.array(["d/0", "d/1", "d/2"]))
    with pytest.warns(UserWarning, match="1 repeated model ids renamed"):
        matrix = load_matrix(path)
    assert matrix.models.tolist() == ["a", "b", "a#2"]
    assert matrix.level == "item"


@pytest.mark.shared
def test_shared_catalog_levels(shared_dir):
    data_dir = shared_dir / "data"
    catalog = load_catalog(data_dir)
    if not catalog:
        pytest.skip("shared data has no catalog.json")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for name, entry in catalog.items():
            if not (data_dir / f"{name}.npz").exists():
                continue
            matrix = load_matrix(name, data_dir=data_dir)
            assert matrix.level == entry["level"], name
            assert matrix.kind == entry["scores"], name
            assert list(matrix.shape) == entry["shape"], name
            assert matrix.observed.mean() == pytest.approx(entry["observed"], abs=5e-3), name


def test_lm_eval_options_through_the_cli(tmp_path):
    """Both formats, a generative task with two filters and a multiple-choice task."""
    from typer.testing import CliRunner

    from coreval.cli import app

    stamp = "2024-01-01T00-00-00.000000"
    rng = np.random.default_rng(0)
    for m in range(6):
        model = tmp_path / f"org__model-{m}"
        mc = [{"doc_id": i, "filter": "none", "metrics": ["acc", "acc_norm"],
               "acc": float(rng.random() < 0.5), "acc_norm": float(rng.random() < 0.5)}
              for i in range(4)]
        _write_samples(model / f"samples_arc_easy_{stamp}.jsonl", mc)
        gen = [{"doc_id": i, "filter": f, "metrics": ["exact_match"],
                "exact_match": float(rng.random() < 0.5)}
               for i in range(3) for f in ("strict-match", "flexible-extract")]
        _write_samples(model / f"samples_gsm8k_{stamp}.jsonl", gen)
    runner = CliRunner()
    no_filter = runner.invoke(app, ["select", str(tmp_path), "--method", "random",
                                    "--budget", "2"])
    assert no_filter.exit_code == 2 and "several filters" in no_filter.output
    ok = runner.invoke(app, ["select", str(tmp_path), "--method", "random", "--budget", "3",
                             "--filter", "strict-match", "--metric", "arc_easy=acc"])
    assert ok.exit_code == 0, ok.output
    items = [line.split(",")[0] for line in ok.output.strip().splitlines()[1:]]
    assert len(items) == 3 and all(i.split("/")[0] in ("arc_easy", "gsm8k") for i in items)
    only = runner.invoke(app, ["select", str(tmp_path), "--method", "random", "--budget", "2",
                               "--tasks", "arc_easy"])
    assert only.exit_code == 0 and "gsm8k" not in only.output
    both = runner.invoke(app, ["select", str(tmp_path), "--metric", "acc", "--metric",
                               "arc_easy=acc_norm"])
    assert both.exit_code == 2 and "not both" in both.output
    # the same folder through load_matrix, with the metric chosen per task
    m = load_matrix(tmp_path, lm_eval={"filter": "strict-match"})
    assert m.models.tolist()[0] == "org/model-0"
    assert dict(zip(m.item_meta["group"], m.item_meta["metric"], strict=True)) == {
        "arc_easy": "acc_norm", "gsm8k": "exact_match"}


def test_predict_from_a_new_models_lm_eval_folder(tmp_path):
    from typer.testing import CliRunner

    from coreval.cli import app

    stamp = "2024-01-01T00-00-00.000000"
    rng = np.random.default_rng(1)
    for m in range(8):
        rows = [{"doc_id": i, "acc": float(rng.random() < 0.3 + 0.05 * m)} for i in range(30)]
        folder = tmp_path / ("new" if m == 7 else "source") / f"org__model-{m}"
        _write_samples(folder / f"samples_arc_easy_{stamp}.jsonl", rows)
    import subprocess
    import sys

    # a real process, so that the CLI's one-line notes reach stderr (pytest records them)
    result = subprocess.run([sys.executable, "-m", "coreval.cli", "predict",
                             str(tmp_path / "source"), str(tmp_path / "new" / "org__model-7"),
                             "--method", "random+", "--budget", "5"],
                            capture_output=True, text=True, env={**os.environ,
                                                                 "COREVAL_JAX_CACHE": "off"})
    assert result.returncode == 0, result.stderr
    notes = [line for line in result.stderr.splitlines() if line.strip()]
    # one note for the ignored items, then the two small-data caveats (7 source models)
    assert notes[0].startswith("note: ignored responses to 25 item(s)")
    assert len(notes) == 3
    assert notes[1].startswith("note: only 7 source models")
    assert "nearly vacuous" in notes[2]
    out = json.loads(result.stdout)
    assert 0 <= out["lower"] <= out["score"] <= out["upper"] <= 1
    two = CliRunner().invoke(app, ["predict", str(tmp_path / "source"), str(tmp_path / "source")])
    assert two.exit_code == 2 and "logs of 7 models" in two.output


# --------------------------------------------------------- tables that used to shift or break
def test_csv_with_one_field_more_per_row_than_the_header_is_refused(tmp_path):
    """R's write.table writes no name over the row ids; pandas would silently make the ids
    the index and read every column one to the left."""
    from coreval.data.io import load_matrix

    path = tmp_path / "r.csv"
    path.write_text('"a","b","c"\n"m1",0.1,0.2,0.3\n"m2",0.4,0.5,0.6\n"m3",0.7,0.8,0.95\n')
    with pytest.raises(ValidationError, match="rows have 4 fields but the header names 3"):
        load_matrix(path)


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_long_round_trip_keeps_the_order_of_ids_and_cells(tmp_path, suffix):
    from coreval.data.io import load_matrix, save_matrix
    from coreval.data.matrix import ScoreMatrix

    m = ScoreMatrix(np.array([[np.nan, .2, .3], [.4, .5, np.nan], [.7, np.nan, .9]]),
                    models=["m0", "m1", "m2"], items=["a", "b", "c"])
    save_matrix(m, tmp_path / f"long{suffix}", layout="long")
    back = load_matrix(tmp_path / f"long{suffix}")
    assert list(back.items) == ["a", "b", "c"] and list(back.models) == ["m0", "m1", "m2"]
    np.testing.assert_array_equal(back.values, m.values)


def test_pattern_table_reads_alike_from_csv_and_parquet_with_a_missing_answer(tmp_path):
    from coreval.data.io import load_matrix

    (tmp_path / "pat.csv").write_text("i1,i2,i3,freq\n0,0,1,3\n1,NA,0,2\n1,1,1,4\n")
    pd.DataFrame({"i1": [0, 1, 1], "i2": [0, None, 1], "i3": [1, 0, 1], "freq": [3, 2, 4]}
                 ).to_parquet(tmp_path / "pat.parquet", index=False)
    csv, parquet = load_matrix(tmp_path / "pat.csv"), load_matrix(tmp_path / "pat.parquet")
    assert csv.shape == parquet.shape == (9, 3)
    np.testing.assert_array_equal(csv.values, parquet.values)


def test_csv_keeps_item_columns_named_like_missing_values(tmp_path):
    from coreval.data.io import load_matrix, save_matrix
    from coreval.data.matrix import ScoreMatrix

    m = ScoreMatrix(np.array([[1., 0.], [0., 1.]]), models=["m1", "m2"], items=["NA", "null"])
    save_matrix(m, tmp_path / "na.csv")
    assert list(load_matrix(tmp_path / "na.csv").items) == ["NA", "null"]


def test_bad_ids_features_and_columns_give_clear_errors(tmp_path):
    from coreval.data.io import load_matrix
    from coreval.data.item_features import item_features
    from coreval.data.matrix import ScoreMatrix
    from coreval.data.npz import read_npz

    with pytest.raises(ValidationError, match="model ids are missing"):
        ScoreMatrix(np.eye(2), models=["a", None], items=["x", "y"])
    with pytest.raises(ValidationError, match="item ids are missing"):
        ScoreMatrix(np.eye(2), items=["x", np.nan])
    np.savez(tmp_path / "g.npz", Y=np.eye(2), models=np.array([["a", "b"]]),
             items=np.array(["x/0", "x/1"]))
    with pytest.raises(ValidationError, match="one-dimensional"):
        read_npz(tmp_path / "g.npz")
    (tmp_path / "ss.csv").write_text("model,item,score,Score\nm1,a,1,0\nm2,a,0,1\n")
    with pytest.raises(ValidationError, match="several columns read as"):
        load_matrix(tmp_path / "ss.csv")
    for column, message in ((["high", "low"], "feat_a hold non-numeric"),
                            ([np.inf, 1.0], "1 inf and 0 NaN")):
        m = ScoreMatrix(np.array([[1., 0.], [0., 1.]]), item_meta=pd.DataFrame(
            {"feat_a": column}, index=["item0", "item1"]))
        with pytest.raises(ValidationError, match=message):
            item_features(m)


def test_response_store_ids_and_parquet_columns(tmp_path):
    from coreval.responses.store import ResponseStore

    with pytest.raises(ValidationError, match="have no model id"):
        ResponseStore.from_records([(None, "q1", "r"), ("m2", "q1", "r")])
    pd.DataFrame({"model": ["m1", "m2"], "item": [0, 1], "out": ["a", "b"]}).to_parquet(
        tmp_path / "resp.parquet", index=False)
    with pytest.raises(ValidationError, match="no column"):
        ResponseStore.from_parquet(tmp_path / "resp.parquet")
    pd.DataFrame({"model": [1, 2], "item": [0.0, 1.0], "output": ["a", "b"]}).to_parquet(
        tmp_path / "num.parquet", index=False)
    got = ResponseStore.from_parquet(tmp_path / "num.parquet", models=["1"], queries=["0"])
    assert len(got.frame) == 1 and got.frame["response"].iloc[0] == "a"
