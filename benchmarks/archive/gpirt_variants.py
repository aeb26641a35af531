"""Diagnostic: gp-irt with the reference code's modelling choices swapped in one at a time.

The reference ``gpirt1`` (mrmr_eval, with tinyBenchmarks' fork of py-irt's
``multidim_2pl``) differs from coreval's gp-irt in three places besides the
optimiser. Each variant below changes coreval in exactly one of them, by
patching the library for the run (this script is a diagnostic, not an API):

``current``
    coreval as shipped: θ ~ N(0, 1); anchors by k-means on (a, d); p-IRT and
    the λ bias evaluate the 2PL the fit used, σ(aθ + d).
``ability_hierarchical``
    The fork's ability prior θ ~ N(μ_θ, 1/u_θ) (scale 1/u), μ_θ ~ N(0, 10),
    u_θ ~ Gamma(1, 1), instead of N(0, 1).
``anchors_on_difficulty``
    k-means on (a, b) with b = -d/a, the fork's ``(disc, diff)`` if its fit is
    σ(disc · (θ - diff)), as in PyPI py-irt (but see ``reference_icc``).
``reference_icc``
    The reference's use of that fit: tinyBenchmarks evaluates σ(disc·θ - diff),
    i.e. it reads the difficulty as an intercept. (Probably not a real mismatch:
    the benchpred package's own ``multidim_2pl`` fits σ(disc·θ - diff); see the
    correction in benchmarks/results/irt_methods.md.) Here p-IRT, its ability MLE
    and the λ bias use σ(aθ - b) with coreval's (a, b), and the anchors are
    clustered on (a, b), as in the reference.

Runs gp-irt (binned split, M = 30, seeds 0-4) on the eight shared item-level
matrices at 5 % and 10 % and writes the mean RMSE per variant next to the
reference's.

Usage::

    python benchmarks/gpirt_variants.py [--variants current reference_icc] [--datasets med_qa]
"""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Callable

import numpy as np
import numpyro
import numpyro.distributions as dist
import pandas as pd
from gpirt_settings import reference

import coreval.prediction.gp_irt as gp_irt
import coreval.selection.irt_anchors as irt_anchors
from coreval._atomic import write_text_atomic
from coreval.data import load_matrix
from coreval.harness import run_grid
from coreval.irt import models
from irt_methods import DATASETS, REPO, SHARED, TOLERANCE_PP


def _hierarchical_ability_twopl(y, mask, *, n_models, n_items, dims=1, priors="weak",
                                guessing=False, one_pl=False, batch_size=None) -> None:
    """coreval's 2PL with the fork's ability prior θ ~ N(μ_θ, 1/u_θ)."""
    params = models._item_block("2pl", n_items, dims, priors)
    mu = numpyro.sample("mu_theta", dist.Normal(0.0, 10.0))
    u = numpyro.sample("u_theta", dist.Gamma(1.0, 1.0))
    with numpyro.plate("models", n_models, subsample_size=batch_size) as idx:
        theta = numpyro.sample("theta", dist.Normal(mu, 1.0 / u).expand([dims]).to_event(1))
        models._likelihood("2pl", y, mask, theta, params, idx, batch_size)


def _anchors_on_difficulty(kmeans: Callable) -> Callable:
    def wrapped(params: np.ndarray, k: int, **kwargs):
        a, d = params[:, 0], params[:, 1]
        return kmeans(np.column_stack([a, -d / a]), k, **kwargs)
    return wrapped


def _intercept_is_minus_difficulty(item_params: Callable) -> Callable:
    def wrapped(fit):
        a, d, c = item_params(fit)
        return a, d / a[:, 0], c  # σ(aθ + d/a) = σ(aθ - b)
    return wrapped


def apply_variant(name: str) -> None:
    """Patch coreval for one variant (see the module docstring)."""
    if name == "ability_hierarchical":
        models.twopl = _hierarchical_ability_twopl
    if name in ("anchors_on_difficulty", "reference_icc"):
        irt_anchors.kmeans_anchors = _anchors_on_difficulty(irt_anchors.kmeans_anchors)
    if name == "reference_icc":
        gp_irt.logistic_item_params = _intercept_is_minus_difficulty(gp_irt.logistic_item_params)


VARIANTS = ("current", "ability_hierarchical", "anchors_on_difficulty", "reference_icc")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variant", choices=VARIANTS, help="run one variant (a child process)")
    ap.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS))
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS))
    ap.add_argument("--budgets", nargs="+", type=float, default=[0.05, 0.1])
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "gpirt_variants.md"))
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    raw = REPO / "benchmarks" / "results" / "raw"
    if args.variant:  # one variant per process: the patches are process-wide
        apply_variant(args.variant)
        matrices = {d: load_matrix(d, data_dir=SHARED / "data") for d in args.datasets}
        run_grid(matrices, ["gp-irt"], args.budgets, n_source=[30], seeds=range(5),
                 split="binned", out=raw / f"gpirt_variant_{args.variant}.parquet",
                 method_options={"gp-irt": {"show_progress": False}}, progress=False)
        return
    import subprocess
    import sys
    procs = [subprocess.Popen([sys.executable, __file__, "--variant", v, "--datasets",
                               *args.datasets, "--budgets", *map(str, args.budgets)])
             for v in args.variants]
    if any(p.wait() for p in procs):
        raise SystemExit("a variant failed")
    table = reference().rename("reference").to_frame()
    for v in args.variants:
        df = pd.read_parquet(raw / f"gpirt_variant_{v}.parquet")
        if df["error"].notna().any():
            raise SystemExit(f"{v}: {df['error'].dropna().iloc[0]}")
        table[v] = df.groupby(["dataset", "budget"])["rmse"].mean() * 100
    table = table.dropna()
    lines = ["# gp-irt with the reference's modelling choices, one at a time", "",
             "Command: `python benchmarks/gpirt_variants.py`", "",
             "Mean RMSE (pp) over seeds 0-4, binned split, M = 30; variants as in the "
             "script's docstring. Last rows: rows within "
             f"{TOLERANCE_PP} pp of the reference, and the mean difference.", "",
             "| dataset | budget | reference | " + " | ".join(args.variants) + " |",
             "|---|---|---|" + "---|" * len(args.variants)]
    for (ds, b), row in table.iterrows():
        lines.append(f"| {ds} | {b:.0%} | {row['reference']:.2f} | "
                     + " | ".join(f"{row[v]:.2f}" for v in args.variants) + " |")
    diff = table[args.variants].sub(table["reference"], axis=0)
    lines.append("| within | | | " + " | ".join(
        f"{int((diff[v] <= TOLERANCE_PP).sum())}/{len(diff)}" for v in args.variants) + " |")
    lines.append("| mean diff | | | " + " | ".join(
        f"{diff[v].mean():+.2f}" for v in args.variants) + " |")
    write_text_atomic(args.out, "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
