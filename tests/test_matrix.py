"""Tests of the ScoreMatrix container (coreval.data.matrix)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from coreval.data import ScoreMatrix
from coreval.errors import ValidationError

NAN = np.nan


def _grouped() -> ScoreMatrix:
    values = np.array([[1.0, 0.0, 1.0, 1.0, 0.0],
                       [0.0, 0.0, 1.0, 0.0, 0.0],
                       [1.0, 1.0, 1.0, 1.0, 1.0]])
    item_meta = pd.DataFrame({"group": ["a", "a", "a", "a", "b"]},
                             index=[f"item{j}" for j in range(5)])
    return ScoreMatrix(values, item_meta=item_meta)


# ------------------------------------------------------------------ validation
@pytest.mark.parametrize(("kwargs", "message"), [
    ({"models": ["m", "m", "n"]}, "duplicate model ids: m"),
    ({"items": ["i", "j", "i"]}, "duplicate item ids: i"),
    ({"models": ["a", "b"]}, "2 model ids given for a matrix with 3 rows"),
    ({"items": ["a", "b"]}, "2 item ids given for a matrix with 3 columns"),
    ({"models": [["a"], ["b"], ["c"]]}, "model ids must be one-dimensional"),
    ({"level": "task"}, "level must be 'item' or 'benchmark'"),
    ({"kind": "ordinal"}, "kind must be 'binary' or 'continuous'"),
])
def test_invalid_ids_and_options_raise_one_line(kwargs, message):
    with pytest.raises(ValidationError, match=message) as info:
        ScoreMatrix(np.eye(3), **kwargs)
    assert "\n" not in str(info.value)


def test_declared_binary_rejects_other_values():
    values = np.array([[0.0, 1.0], [0.5, 2.0]])
    with pytest.raises(ValidationError, match=r"declared binary .* 0\.5, 2\.0"):
        ScoreMatrix(values, kind="binary")


def test_shape_and_value_errors():
    with pytest.raises(ValidationError, match="must be 2-D"):
        ScoreMatrix(np.zeros(4))
    with pytest.raises(ValidationError, match="inf"):
        ScoreMatrix(np.array([[0.0, np.inf], [1.0, 0.0]]))


def test_all_nan_rows_and_columns_raise_naming_them():
    values = np.array([[1.0, NAN, 0.0], [NAN, NAN, NAN], [0.0, NAN, 1.0]])
    with pytest.raises(ValidationError, match="models with no observed score: model1"):
        ScoreMatrix(values)
    values[1, 0] = 1.0
    with pytest.raises(ValidationError, match="columns with no observed score: item1"):
        ScoreMatrix(values)
    assert ScoreMatrix(values, strict=False).shape == (3, 3)  # non-strict matrices allow it


def test_fewer_than_two_models_raise():
    with pytest.raises(ValidationError, match="need at least 2 models, got 1"):
        ScoreMatrix(np.ones((1, 3)))
    with pytest.raises(ValidationError, match="no columns"):
        ScoreMatrix(np.ones((2, 0)))


def test_metadata_must_cover_all_ids_and_is_aligned():
    meta = pd.DataFrame({"family": ["x", "y"]}, index=["model1", "model0"])
    matrix = ScoreMatrix(np.eye(2), model_meta=meta)
    assert matrix.families.tolist() == ["y", "x"]  # reordered to the rows
    with pytest.raises(ValidationError, match="model_meta lacks rows for ids: model2"):
        ScoreMatrix(np.eye(3), model_meta=meta)
    with pytest.raises(ValidationError, match="must be a pandas DataFrame"):
        ScoreMatrix(np.eye(2), item_meta={"group": ["a", "b"]})


def test_metadata_with_duplicate_index_raises():
    meta = pd.DataFrame({"family": ["x", "y", "z"]}, index=["a", "a", "b"])
    with pytest.raises(ValidationError):
        ScoreMatrix(np.eye(2), models=["a", "b"], model_meta=meta)


def test_values_are_read_only_and_ids_strings():
    matrix = ScoreMatrix(np.array([[1, 0], [0, 1]]), models=[10, 20])
    assert matrix.models.tolist() == ["10", "20"]
    assert matrix.items.tolist() == ["item0", "item1"]
    assert matrix.values.dtype == np.float64
    with pytest.raises(ValueError, match="read-only"):
        matrix.values[0, 0] = 5.0


# ------------------------------------------------------------------ kind inference
@pytest.mark.parametrize(("values", "kind"), [
    ([[0.0, 1.0], [1.0, 1.0]], "binary"),
    ([[0.0, NAN], [1.0, 1.0]], "binary"),
    ([[0.0, 0.5], [1.0, 1.0]], "continuous"),
    ([[3.0, 7.5], [1.0, -2.0]], "continuous"),
])
def test_kind_inference(values, kind):
    matrix = ScoreMatrix(np.array(values))
    assert matrix.kind == kind
    assert matrix.is_binary == (kind == "binary")


def test_binary_data_may_be_declared_continuous():
    assert ScoreMatrix(np.eye(2), kind="continuous").kind == "continuous"


# ------------------------------------------------------------------ summary scores
def test_summary_scores_plain_mean_with_and_without_missing():
    values = np.array([[1.0, 0.0, 1.0, 1.0], [0.0, NAN, 1.0, NAN]])
    matrix = ScoreMatrix(values)
    assert np.allclose(matrix.summary_scores(), [0.75, 0.5])
    full = ScoreMatrix(np.array([[1.0, 0.0, 0.0], [1.0, 1.0, 0.0]]))
    assert np.allclose(full.summary_scores(), [1 / 3, 2 / 3])


def test_summary_scores_weight_groups_equally():
    matrix = _grouped()
    # group a = items 0-3, group b = item 4: mean of the two group means
    expected = [(0.75 + 0.0) / 2, (0.25 + 0.0) / 2, (1.0 + 1.0) / 2]
    assert np.allclose(matrix.summary_scores(), expected)
    assert np.allclose(matrix.summary_scores(by_group=False), matrix.values.mean(axis=1))
    weights = matrix.item_weights()
    assert np.allclose(weights, [1 / 8] * 4 + [1 / 2])
    assert np.isclose(weights.sum(), 1.0)
    assert np.allclose(matrix.values @ weights, matrix.summary_scores())
    assert np.allclose(matrix.item_weights(by_group=False), 1 / 5)


def test_summary_scores_with_groups_and_missing_entries():
    values = np.array([[1.0, NAN, 0.0, 1.0], [0.0, 1.0, NAN, NAN]])
    item_meta = pd.DataFrame({"group": ["g", "g", "h", "h"]},
                             index=[f"item{j}" for j in range(4)])
    matrix = ScoreMatrix(values, item_meta=item_meta)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        scores = matrix.summary_scores()
    # row 1 has no observed item in group h: its score is the mean of the groups it has
    assert np.allclose(scores, [(1.0 + 0.5) / 2, 0.5])


def test_summary_scores_with_unobserved_group_does_not_warn():
    values = np.array([[1.0, 0.0], [1.0, NAN]])
    item_meta = pd.DataFrame({"group": ["g", "h"]}, index=["item0", "item1"])
    matrix = ScoreMatrix(values, item_meta=item_meta)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        matrix.summary_scores()


# ------------------------------------------------------------------ subsetting
def test_take_by_positions_keeps_order_and_metadata():
    meta = pd.DataFrame({"family": ["f0", "f1", "f2"]}, index=["model0", "model1", "model2"])
    matrix = ScoreMatrix(np.arange(9.0).reshape(3, 3), model_meta=meta)
    sub = matrix.take([2, 0], [1])
    assert sub.models.tolist() == ["model2", "model0"]
    assert sub.items.tolist() == ["item1"]
    assert sub.values.tolist() == [[7.0], [1.0]]
    assert sub.families.tolist() == ["f2", "f0"]
    assert not sub.strict
    assert matrix.take(np.array([True, False, True])).models.tolist() == ["model0", "model2"]
    assert matrix.take([1]).n_models == 1  # non-strict: single rows are allowed


def test_take_rejects_bad_positions():
    matrix = ScoreMatrix(np.eye(3))
    with pytest.raises(ValidationError, match=r"model positions out of range 0\.\.2: 3"):
        matrix.take([0, 3])
    with pytest.raises(ValidationError, match="must be integers"):
        matrix.take(None, [0.5])
    with pytest.raises(ValidationError, match="mask has length"):
        matrix.take(np.array([True, False]))


def test_subset_by_ids_and_positions():
    matrix = _grouped()
    by_id = matrix.subset(models=["model2", "model1"], items=["item4", "item0"])
    assert by_id.values.tolist() == [[1.0, 1.0], [0.0, 0.0]]
    assert by_id.groups.tolist() == ["b", "a"]
    by_pos = matrix.subset(models=[2, 1], items=[4, 0])
    assert np.array_equal(by_pos.values, by_id.values)
    assert np.array_equal(matrix.model_index(["model1"]), [1])
    assert np.array_equal(matrix.item_index(["item3", "item1"]), [3, 1])


def test_subset_unknown_ids_raise_listing_them():
    matrix = ScoreMatrix(np.eye(3))
    with pytest.raises(ValidationError, match="unknown model ids: zz, yy"):
        matrix.subset(models=["zz", "model0", "yy"])
    with pytest.raises(ValidationError, match="unknown item ids: nope"):
        matrix.subset(items=["nope"])


def test_subset_accepts_boolean_mask_like_take():
    matrix = ScoreMatrix(np.eye(3))
    assert matrix.subset(models=np.array([True, False, True])).models.tolist() == [
        "model0", "model2"]


def test_with_values_and_to_frame():
    matrix = ScoreMatrix(np.eye(2))
    cont = matrix.with_values(np.array([[0.2, 0.4], [0.6, 0.8]]))
    assert cont.kind == "continuous"
    with pytest.raises(ValidationError, match="new values have shape"):
        matrix.with_values(np.ones((3, 2)))
    frame = matrix.to_frame()
    assert frame.index.name == "model" and frame.columns.name == "item"
    assert frame.loc["model1", "item1"] == 1.0


def test_properties_and_repr():
    values = np.array([[1.0, NAN], [0.0, 1.0]])
    matrix = ScoreMatrix(values, name="toy")
    assert matrix.shape == (2, 2) and matrix.n_models == 2 and matrix.n_items == 2
    assert matrix.observed.tolist() == [[True, False], [True, True]]
    assert not matrix.fully_observed
    assert matrix.groups is None and matrix.families is None
    assert "toy" in repr(matrix) and "75% observed" in repr(matrix)
