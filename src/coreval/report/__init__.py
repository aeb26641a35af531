"""Figures and score reports built on matplotlib (and ArviZ for posteriors)."""

from coreval.report.plots import (
    plot_metric_vs_budget,
    plot_true_vs_predicted,
    plot_true_vs_predicted_grid,
)

__all__ = ["plot_metric_vs_budget", "plot_true_vs_predicted", "plot_true_vs_predicted_grid"]
