"""pandas round-trips: labels survive ScoreMatrix <-> DataFrame, predictions become frames."""

from __future__ import annotations

import numpy as np
import pandas as pd

import coreval
from coreval.data import ScoreMatrix


def _frame() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    y = (rng.random((30, 40)) < 0.5).astype(float)
    return pd.DataFrame(y, index=[f"org/model-{i}" for i in range(30)],
                        columns=[f"q{j:03d}" for j in range(40)])


def test_score_matrix_keeps_a_frames_labels_both_ways():
    frame = _frame()
    for m in (ScoreMatrix(frame), ScoreMatrix.from_frame(frame, name="toy")):
        assert list(m.models) == list(frame.index) and list(m.items) == list(frame.columns)
        back = m.to_frame()
        pd.testing.assert_frame_equal(back, frame, check_names=False)


def test_select_takes_a_dataframe_and_prediction_to_frame():
    frame = _frame()
    fitted = coreval.select(frame, "random+", 8, seed=0)
    assert set(fitted.coreset.items) <= set(frame.columns)
    x = frame.loc[:, list(fitted.coreset.items)].to_numpy()[:3]
    table = fitted.predict_array(x).to_frame(index=frame.index[:3])
    assert list(table.index) == list(frame.index[:3])
    assert list(table.columns) == ["mean", "lower", "upper", "width", "level", "interval"]
    assert (table["lower"] <= table["mean"]).all() and (table["mean"] <= table["upper"]).all()
    assert np.allclose(table["width"], table["upper"] - table["lower"])
