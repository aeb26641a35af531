"""``coreval demo`` end to end on a small simulated leaderboard."""

from __future__ import annotations

import re

import pandas as pd

from coreval.demo import run_demo


def test_demo_writes_its_outputs_and_reports_coverage_over_every_seed(tmp_path):
    lines: list[str] = []
    paths = run_demo(out=tmp_path, methods=["random+", "mrmr+", "no-such-method"],
                     seeds=(0, 1), n_models=60, n_items=80, n_source=20, echo=lines.append)
    assert all(p.exists() for p in paths.values())
    assert any("'no-such-method' is not available" in line for line in lines)
    results = pd.read_parquet(paths["results"])
    assert sorted(results["seed"].unique()) == [0, 1]
    line = next(x for x in lines if x.startswith("90% interval coverage"))
    assert "seeds [0, 1]" in line
    for name in ("random+", "mrmr+"):
        runs = results.loc[results["method"] == name, "coverage90"]
        shown = re.search(re.escape(name) + r" (\d+)% \((\d+)%-(\d+)%\)", line)
        assert shown is not None, line
        mean, low, high = (int(g) for g in shown.groups())
        assert mean == round(100 * runs.mean())
        assert (low, high) == (round(100 * runs.min()), round(100 * runs.max()))
