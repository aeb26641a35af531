"""Scale check: minibatch SVI 2PL on a simulated matrix (default 5000 × 30000).

Reports fit time, peak resident memory (``resource.getrusage``) and parameter
recovery (correlation of fitted and true discriminations/intercepts). The
simulation is generated in row blocks as float32 to keep its own footprint small.

Usage::

    python benchmarks/irt_scale.py [--models 5000 --items 30000 --batch-size 500 --steps 2000]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from _results import provenance, write_markdown

REPO = Path(__file__).resolve().parents[1]


def peak_rss_mb() -> float:
    """Peak resident set size of this process in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def simulate_blocks(n_models: int, n_items: int, seed: int, block: int = 250):
    """Binary 2PL responses (float32), true a, d, theta; generated in blocks of rows."""
    rng = np.random.default_rng(seed)
    theta = rng.standard_normal(n_models).astype(np.float32)
    a = np.exp(rng.normal(0.0, 0.4, n_items)).astype(np.float32)
    d = rng.normal(0.0, 1.0, n_items).astype(np.float32)
    y = np.empty((n_models, n_items), dtype=np.float32)
    for start in range(0, n_models, block):
        stop = min(start + block, n_models)
        z = theta[start:stop, None] * a[None, :] + d[None, :]
        y[start:stop] = rng.random(z.shape, dtype=np.float32) < 1.0 / (1.0 + np.exp(-z))
    return y, a, d, theta


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", type=int, default=5000)
    parser.add_argument("--items", type=int, default=30000)
    parser.add_argument("--batch-size", type=int, default=500)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--draws", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path,
                        default=REPO / "benchmarks" / "results" / "irt_scale.md")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    os.environ.setdefault("COREVAL_PROGRESS", "0")
    from coreval.irt import fit

    start = time.perf_counter()
    y, a, d, theta = simulate_blocks(args.models, args.items, args.seed)
    sim_s = time.perf_counter() - start
    rss_sim = peak_rss_mb()
    start = time.perf_counter()
    result = fit("2pl", y, method="svi", seed=args.seed, show_progress=False, settings={"batch_size": args.batch_size, "num_steps": args.steps, "num_draws": args.draws})
    fit_s = time.perf_counter() - start
    rss_fit = peak_rss_mb()
    corr_a = float(np.corrcoef(result.items["a"], a)[0, 1])
    corr_d = float(np.corrcoef(result.items["d"], d)[0, 1])
    corr_t = float(np.corrcoef(result.abilities()[:, 0], theta)[0, 1])
    diag = result.card["diagnostics"]
    cmd = (f"python benchmarks/irt_scale.py --models {args.models} --items {args.items} "
           f"--batch-size {args.batch_size} --steps {args.steps} --draws {args.draws}")
    lines = [
        "# IRT scale: minibatch SVI 2PL on simulated data", "",
        *provenance(cmd),
        "| models × items | batch | steps | simulate s | fit s | peak RSS after simulate (MiB) "
        "| peak RSS after fit (MiB) | corr(a) | corr(d) | corr(theta) |",
        "|---|---|---|---|---|---|---|---|---|---|",
        f"| {args.models} × {args.items} | {args.batch_size} | {args.steps} | {sim_s:.1f} | "
        f"{fit_s:.1f} | {rss_sim:.0f} | {rss_fit:.0f} | {corr_a:.3f} | {corr_d:.3f} | "
        f"{corr_t:.3f} |", "",
        f"- Final loss {diag['final_loss']:.4g}; log-likelihood group: "
        f"{diag.get('log_likelihood', 'all draws stored')}.",
        f"- Machine load {os.getloadavg()[0]:.1f} (1-min average, {os.cpu_count()} cores); "
        f"fit time includes JAX compilation. Python {sys.version.split()[0]}.",
    ]
    write_markdown(args.out, "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
