"""Spectral diagnostic of greedy benchmark selection (Smola, "Submodular Benchmark Selection").

For each benchmark-level matrix, estimate the correlation of all models by EM (the
protocol's settings), run greedy entropy and greedy MI to k = 15, and plot their
residual-variance traces against the eigenvalue tail, the lower bound that no
k-subset can beat. Writes benchmarks/results/figures/spectral_<dataset>.png and
benchmarks/results/spectral_diagnostic.md.

Usage: python benchmarks/spectral_diagnostic.py [--data-dir ../shared/data]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from _results import provenance, write_markdown
from coreval.data import load_matrix
from coreval.gaussian.correlation import estimate_correlation
from coreval.gaussian.diagnostics import eigenvalue_tail
from coreval.gaussian.greedy import greedy_entropy, greedy_mi
from coreval.report.plots import plot_spectral_diagnostic

REPO = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", type=Path,
                    default=Path(os.environ.get("COREVAL_DATA_DIR", REPO.parent / "shared" / "data")))
    ap.add_argument("--datasets", nargs="+", default=["mteb", "merged", "benchpress"])
    ap.add_argument("--k", type=int, default=15)
    args = ap.parse_args(argv)
    figures = REPO / "benchmarks" / "results" / "figures"
    figures.mkdir(parents=True, exist_ok=True)
    lines = ["# Spectral diagnostic: greedy residual variance vs eigenvalue tail", "",
             *provenance("python benchmarks/spectral_diagnostic.py "
                         + " ".join(argv or sys.argv[1:])),
             "Correlation of all models by EM (protocol settings, `min_observed=1`). "
             "Residual variance = Σ_{j∉S} Var(j|S) / tr(R). The eigenvalue tail is the "
             "lower bound for any k-subset.", "",
             "| dataset | N | k | eigen tail | greedy entropy | greedy MI |", "|---|---|---|---|---|---|"]
    for name in args.datasets:
        matrix = load_matrix(name, data_dir=args.data_dir)
        est = estimate_correlation(matrix.values, min_observed=1, warn=False)
        r = est.correlation
        k = min(args.k, r.shape[0] - 1)
        ent, mi = greedy_entropy(r, k), greedy_mi(r, k)
        tail = eigenvalue_tail(r)
        fig, ax = plt.subplots(figsize=(5, 4))
        plot_spectral_diagnostic(r, {"greedy entropy": ent.residual_variance,
                                     "greedy MI": mi.residual_variance}, ax=ax)
        ax.set_title(f"{name}: {r.shape[0]} benchmarks", fontsize=9)
        fig.tight_layout()
        fig.savefig(figures / f"spectral_{name}.png", dpi=110)
        plt.close(fig)
        for kk in (1, 5, k):
            lines.append(f"| {name} | {r.shape[0]} | {kk} | {tail[kk]:.3f} | "
                         f"{ent.residual_variance[kk - 1]:.3f} | {mi.residual_variance[kk - 1]:.3f} |")
    lines += ["", "Figures: `figures/spectral_<dataset>.png`."]
    out = REPO / "benchmarks" / "results" / "spectral_diagnostic.md"
    write_markdown(out, "\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
