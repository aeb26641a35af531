"""Speed, memory and agreement of coreval's cached NUTS sampler against numpyro's ``MCMC``.

The same model (:func:`coreval.lowrank.bayes.lowrank_model`, rank 2, per-column noise,
Student-t with 4 degrees of freedom), the same settings (one chain, 300 warm-up and 300
draws, tree depth 8) and the same Bias-ALS start, on the training cells of the first
``--folds`` folds of the authors' BenchPress folds, fitted by

* the reference: ``numpyro.infer.MCMC(NUTS(lowrank_model, init_strategy=init_to_value(...)))``,
  a new ``MCMC`` per fit, the way numpyro's documentation runs a model;
* ``coreval.lowrank.fit_lowrank_nuts``: one jitted program per option set and padded shape,
  reused across fits.

It reports the wall time of each fit, the ratio reference / coreval over the fits after the
first (the first of each compiles), the growth of the process's peak resident memory over
those fits, and the median absolute difference of the two posterior means on the fold's
held-out cells (score points) beside each sampler's MedAE there, so that agreement is read
against the size of the error itself.

Usage::

    python benchmarks/lowrank_nuts_speed.py [--folds 4]

Writes ``benchmarks/results/lowrank_nuts_speed.md`` with the exact command.
"""

from __future__ import annotations

import argparse
import resource
import shlex
import sys
import time

import numpy as np

from _results import RESULTS, SHARED, provenance, write_markdown
from coreval.data import load_matrix
from coreval.harness.cells import read_cell_folds
from coreval.lowrank.als import fit_als
from coreval.lowrank.bayes import fit_lowrank_nuts, lowrank_model, start_values
from coreval.lowrank.transform import fit_transform, forward_observed, inverse

OPTIONS = dict(rank=2, noise="column", df=4.0, num_warmup=300, num_samples=300,
               max_tree_depth=8)


def reference_nuts(z: np.ndarray, observed: np.ndarray, start: dict, seed: int) -> np.ndarray:
    """Posterior mean of every cell's mean by a new ``numpyro.infer.MCMC`` (the reference)."""
    import jax
    import jax.numpy as jnp
    from numpyro.infer import MCMC, NUTS
    from numpyro.infer.initialization import init_to_value

    values = {k: jnp.asarray(v, dtype=jnp.float32) for k, v in start.items()}
    kernel = NUTS(lowrank_model, init_strategy=init_to_value(values=values),
                  max_tree_depth=OPTIONS["max_tree_depth"])
    mcmc = MCMC(kernel, num_warmup=OPTIONS["num_warmup"], num_samples=OPTIONS["num_samples"],
                progress_bar=False)
    mcmc.run(jax.random.PRNGKey(seed), jnp.asarray(np.where(observed, z, 0.0), jnp.float32),
             jnp.asarray(observed), OPTIONS["rank"], OPTIONS["noise"], OPTIONS["df"], None)
    return np.asarray(mcmc.get_samples()["loc"], dtype=np.float64).mean(axis=0)


def peak_mb() -> float:
    """Peak resident memory of this process so far (MB; Linux reports KB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_sampler(name: str, folds: list, values: np.ndarray) -> dict:
    """Fit every fold with one sampler; times, peak memory and held-out posterior means."""
    seconds, means, peaks = [], [], []
    for k, fold in enumerate(folds):
        train = values.copy()
        train[fold.rows, fold.cols] = np.nan
        ct = fit_transform(train)
        observed, z = forward_observed(ct, train)
        state = fit_als(z, observed, rank=OPTIONS["rank"], lam=0.1, seed=k)
        start = time.perf_counter()
        if name == "reference":
            loc = reference_nuts(z, observed, start_values(state, z, observed), seed=k)
        else:
            loc = fit_lowrank_nuts(z, observed, init=state, seed=k, **OPTIONS)["loc"].mean(0)
        seconds.append(time.perf_counter() - start)
        peaks.append(peak_mb())
        means.append(inverse(ct, loc)[fold.rows, fold.cols])
        print(f"{name} fold {k}: {seconds[-1]:.1f} s, peak {peaks[-1]:.0f} MB", flush=True)
    return {"seconds": seconds, "means": means, "peaks": peaks}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folds", type=int, default=4, help="first N folds (>= 2)")
    args = parser.parse_args(argv)
    if args.folds < 2:
        raise SystemExit("--folds must be at least 2 (the first fit of each sampler compiles)")
    matrix_path = SHARED / "data" / "benchpress2026.npz"
    if not matrix_path.exists():
        raise SystemExit(f"{matrix_path} is missing: this benchmark needs the shared data")
    values = load_matrix("benchpress2026", data_dir=SHARED / "data").values.astype(np.float64)
    folds = read_cell_folds(SHARED / "data" / "benchpress2026_info" /
                            "folds_s10_f3_bs42_ms1.json", values.shape)[:args.folds]
    # coreval first: its process-wide peak memory is then not inflated by the reference's
    results = {name: run_sampler(name, folds, values) for name in ("coreval", "reference")}
    ours, ref = results["coreval"], results["reference"]
    rows = []
    for k, fold in enumerate(folds):
        truth = values[fold.rows, fold.cols]
        rows.append(
            f"| {k} | {ref['seconds'][k]:.1f} | {ours['seconds'][k]:.1f} | "
            f"{ref['seconds'][k] / ours['seconds'][k]:.1f} | "
            f"{np.median(np.abs(ref['means'][k] - truth)):.3f} | "
            f"{np.median(np.abs(ours['means'][k] - truth)):.3f} | "
            f"{np.median(np.abs(ref['means'][k] - ours['means'][k])):.3f} |")
    later = slice(1, None)
    ratio = np.sum(ref["seconds"][later]) / np.sum(ours["seconds"][later])
    growth = {name: (r["peaks"][-1] - r["peaks"][0]) / (len(folds) - 1)
              for name, r in results.items()}
    command = "python benchmarks/lowrank_nuts_speed.py " + shlex.join(
        sys.argv[1:] if argv is None else argv)
    lines = ["# Bayesian low-rank completion: cached NUTS sampler against numpyro's MCMC", ""]
    lines += provenance(command, " (single-threaded XLA, shared 2-core machine).")
    lines += [
        f"BenchPress 2026 (84 x 133), training cells of the authors' first {len(folds)} folds; "
        "rank 2, per-column noise, Student-t (4 df), one chain of 300 warm-up + 300 draws, "
        "tree depth 8, started at the fold's Bias-ALS fit. Both samplers run the same model "
        "and start; their random streams differ, so the posterior means agree only up to "
        "Monte Carlo error.",
        "",
        "| fold | reference s | coreval s | ratio | reference MedAE | coreval MedAE | "
        "median abs. difference of the means |",
        "|---|---|---|---|---|---|---|",
        *rows,
        "",
        f"Fits after the first (the first of each sampler compiles): reference / coreval "
        f"wall-time ratio **{ratio:.1f}**. Peak resident memory grows by "
        f"{growth['reference']:.0f} MB per fit with the reference and "
        f"{growth['coreval']:.0f} MB per fit with coreval (the process's peak, after the "
        "first fit of each).",
        "",
    ]
    out = RESULTS / "lowrank_nuts_speed.md"
    write_markdown(out, "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
