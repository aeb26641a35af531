"""Baselines against the mrmr_eval reference numbers on the reference's own splits.

Uses ``anchors/mrmr_eval/splits_binned_n30.json`` (30 source models, seeds 0-4,
binned split; "train" = source rows in order, "test" = target rows) and compares
mean RMSE and target-only Kendall τ over the five seeds at the 10 % budget with
``results.csv``. Skipped when ../shared is absent.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy.stats import kendalltau

import coreval
from coreval.base import resolve_budget

pytestmark = pytest.mark.shared

DATASETS = ("mmlu", "commonsense")
SEEDS = range(5)
# our name -> (reference key, RMSE tolerance in pp, tau_t tolerance or None)
METHODS = {
    "random": ("random_sampling", 1.0, None),
    "random+": ("random_sampling_and_learn", 0.5, 0.03),
    "random++": ("krandom_sampling_and_learn", 0.5, 0.03),
    "anchor-points": ("anchor_points_weighted", 1.0, None),
}


@pytest.fixture(scope="module")
def reference(anchors_dir):
    base = anchors_dir / "mrmr_eval"
    if not (base / "results.csv").exists() or not (base / "splits_binned_n30.json").exists():
        pytest.skip(f"needs {base}/results.csv and splits_binned_n30.json")
    results = pd.read_csv(base / "results.csv")
    splits = json.loads((base / "splits_binned_n30.json").read_text())
    return results, splits


@pytest.mark.parametrize("dataset", DATASETS)
def test_baselines_match_reference(dataset, reference, load_shared):
    results, splits = reference
    matrix = load_shared(dataset)
    k = resolve_budget(0.10, matrix.n_items)
    ours: dict[str, list[tuple[float, float]]] = {m: [] for m in METHODS}
    for seed in SEEDS:
        split = splits[dataset][str(seed)]
        source, target = matrix.take(split["train"]), matrix.take(split["test"])
        truth = target.summary_scores()
        for name in METHODS:
            method = coreval.get_method(name)
            selector = method.make_selector(k=k, seed=seed).fit(source)
            no_interval = {"interval": "none"} if "interval" in method.accepted_options() else {}
            predictor = method.make_predictor(seed=seed, **no_interval).fit(source,
                                                                            selector.coreset_)
            pred = predictor.predict(target.values[:, selector.selected_]).mean
            rmse = float(np.sqrt(np.mean((pred - truth) ** 2)))
            ours[name].append((rmse, kendalltau(truth, pred).statistic))
    failures = []
    for name, (key, rmse_tol, tau_tol) in METHODS.items():
        ref = results[(results.dataset == dataset) & (results.method == key)
                      & (results.coreset == "10%") & results.seed.isin(list(SEEDS))]
        assert len(ref) == len(SEEDS), f"reference rows missing for {dataset}/{key}"
        rmse, tau = np.mean(ours[name], axis=0)
        d_rmse = 100 * abs(rmse - ref.rmse.mean())
        if d_rmse > rmse_tol:
            failures.append(f"{name}: RMSE {100 * rmse:.2f} vs {100 * ref.rmse.mean():.2f} pp")
        if tau_tol is not None and abs(tau - ref.kendall_tau_test.mean()) > tau_tol:
            failures.append(f"{name}: tau_t {tau:.3f} vs {ref.kendall_tau_test.mean():.3f}")
    assert not failures, f"{dataset}: " + "; ".join(failures)
