"""Figures and score reports built on matplotlib (and ArviZ for posteriors)."""

from coreval.report.calibration import (
    LEVELS,
    calibration_runs,
    coverage_table,
    plot_calibration,
    plot_width_vs_budget,
    predict_levels,
    summarize_calibration,
    width_vs_budget,
)
from coreval.report.harness_plots import (
    coreset_difficulty,
    plot_coverage,
    plot_difficulty,
    plot_metric_vs_sources,
    plot_time,
    recommend,
)
from coreval.report.plots import (
    plot_metric_vs_budget,
    plot_true_vs_predicted,
    plot_true_vs_predicted_grid,
)
from coreval.report.score_card import ScoreCard, score_card

__all__ = [
    "LEVELS",
    "ScoreCard",
    "calibration_runs",
    "coreset_difficulty",
    "coverage_table",
    "plot_calibration",
    "plot_coverage",
    "plot_difficulty",
    "plot_metric_vs_budget",
    "plot_metric_vs_sources",
    "plot_time",
    "plot_true_vs_predicted",
    "plot_true_vs_predicted_grid",
    "plot_width_vs_budget",
    "predict_levels",
    "recommend",
    "score_card",
    "summarize_calibration",
    "width_vs_budget",
]
