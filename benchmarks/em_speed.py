"""Speed of coreval's grouped EM vs a direct per-row implementation of the same EM.

Both run in the same process on the fold-0 training rows of mteb, merged and benchpress,
standardised and configured exactly as the protocol (``PROTOCOL.md`` sections 3-4, HEAD
settings), until the protocol's convergence rule stops them (same iteration counts). Reported:
CPU time (``time.process_time``, all threads) and wall time, the ratio direct / ours, and the
relative Frobenius difference of the converged covariances (must be < 1e-3).

The direct implementation (``em_covariance_per_row`` of ``tests/reference_em.py``, which is
not part of the package; the tests check it against ours) follows the reference code: a
Cholesky per row, a dense N x N conditional covariance per row, and a second per-row pass for
the observed-data log-likelihood. It is timed with one BLAS thread (fair: ours also uses one)
and, for a few iterations, with the library's default threads (as the reference runs).

Usage::

    python benchmarks/em_speed.py [--datasets mteb merged benchpress] [--default-iters 10]

Writes ``benchmarks/results/em_speed.md``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits

from _results import provenance, write_markdown
from coreval.data.npz import read_npz
from coreval.gaussian.correlation import protocol_em_options
from coreval.gaussian.em import em_covariance
from coreval.gaussian.standardize import fit_standardization

REPO = Path(__file__).resolve().parents[1]
# The direct per-row EM is test code (tests/reference_em.py), not library code: import it from
# the tests folder rather than keeping a second copy here.
sys.path.insert(0, str(REPO / "tests"))
from reference_em import em_covariance_per_row  # noqa: E402

SHARED = Path(os.environ.get("COREVAL_SHARED_DIR", REPO.parent / "shared"))


def fold0(name: str) -> tuple[np.ndarray, dict]:
    """Standardised fold-0 training rows (protocol sections 2-3) and the HEAD EM options."""
    values = read_npz(SHARED / "data" / f"{name}.npz").values
    m = len(values)
    folds = np.array_split(np.random.default_rng(42).permutation(m), 10)
    x = values[np.concatenate(folds[1:])]
    observed = ~np.isnan(x)
    z = fit_standardization(x).forward(x)
    return z, protocol_em_options(*x.shape, float(observed.mean()))


def timed(fn, *args, **kwargs) -> tuple[object, float, float]:
    t_cpu, t_wall = time.process_time(), time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.process_time() - t_cpu, time.perf_counter() - t_wall


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=["mteb", "merged", "benchpress"])
    ap.add_argument("--default-iters", type=int, default=10,
                    help="iterations of the per-iteration comparison at default BLAS threads")
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "em_speed.md"))
    args = ap.parse_args(argv)
    if not (SHARED / "data").is_dir():
        sys.exit(f"needs the shared data folder {SHARED}/data")
    warnings.simplefilter("ignore", ConvergenceWarning)
    load = os.getloadavg()
    rows, per_iter = [], []
    for name in args.datasets:
        z, opts = fold0(name)
        ours, c_ours, w_ours = timed(em_covariance, z, n_threads=1, **opts)
        with threadpool_limits(1):
            ref, c_ref, w_ref = timed(em_covariance_per_row, z, **opts)
        diff = float(np.linalg.norm(ours.covariance - ref.covariance)
                     / np.linalg.norm(ref.covariance))
        rows.append((name, z.shape, opts, ours.n_iter, ref.n_iter, c_ours, c_ref, w_ours, w_ref,
                     diff))
        print(f"{name}: ours {c_ours:.2f} s CPU, direct {c_ref:.2f} s CPU, "
              f"ratio {c_ref / c_ours:.1f}, diff {diff:.1e}", flush=True)
        short = dict(opts, max_iter=args.default_iters)
        _, c_o, w_o = timed(em_covariance, z, n_threads=1, **short)
        _, c_d, w_d = timed(em_covariance_per_row, z, **short)  # library default threads
        per_iter.append((name, c_o, c_d, w_o, w_d))
    lines = ["# EM speed: grouped E-step vs direct per-row EM (same algorithm, same run)", "",
             *provenance(" ".join(["python benchmarks/em_speed.py", *sys.argv[1:]]),
                         f" — load average at start {load[0]:.1f} on the shared 2-core "
                         "machine (other jobs running: compare CPU-time ratios, not "
                         "absolute times)."),
             "Fold-0 training rows, protocol standardisation and HEAD EM settings, run to the "
             "protocol's stopping rule (relative Frobenius change < 5e-4). Both one BLAS "
             "thread.", "",
             "| dataset | M x N | eps / max_iter / shrinkage | iterations (ours / direct) | "
             "ours CPU s | direct CPU s | CPU ratio | ours wall s | direct wall s | wall ratio "
             "| rel. Frobenius diff |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, shape, opts, it_o, it_r, c_o, c_r, w_o, w_r, diff in rows:
        lines.append(f"| {name} | {shape[0]} x {shape[1]} | {opts['eps']:g} / "
                     f"{opts['max_iter']} / {opts['shrinkage']} | {it_o} / {it_r} | {c_o:.2f} | "
                     f"{c_r:.2f} | {c_r / c_o:.1f} | {w_o:.2f} | {w_r:.2f} | {w_r / w_o:.1f} | "
                     f"{diff:.1e} |")
    lines += ["", f"First {args.default_iters} iterations, ours (1 thread) vs direct at the "
              "library's default BLAS threads (how the reference code runs):", "",
              "| dataset | ours CPU s | direct CPU s | CPU ratio | ours wall s | direct wall s "
              "| wall ratio |", "|---|---|---|---|---|---|---|"]
    for name, c_o, c_d, w_o, w_d in per_iter:
        lines.append(f"| {name} | {c_o:.3f} | {c_d:.3f} | {c_d / c_o:.1f} | {w_o:.3f} | "
                     f"{w_d:.3f} | {w_d / w_o:.1f} |")
    lines += ["", "What makes ours faster: rows are grouped by missingness pattern; each "
              "pattern's block is factorised and solved for its rows and for the identity in "
              "one raw LAPACK `dposv` call ([u | P] = block^-1 [r | I], instead of potrf + "
              "potrs + potri); all blocks and residuals are gathered with one `take` per "
              "iteration (per-pattern slices are views); the summed conditional covariance is "
              "`n Sigma - Sigma W Sigma` with `W` the scattered pattern precisions (one "
              "`bincount` + two matrix products per iteration instead of an N x N matrix per "
              "row); patterns with fewer missing than observed entries work with the |m| x |m| "
              "block of the precision Sigma^-1 (their right-hand sides `K_m. r_i` come from one "
              "product `R K`); the log-likelihood reuses the E-step's factors; the PSD "
              "projection skips its eigendecomposition when a Cholesky of `Sigma - eps I` "
              "succeeds (then the eigenvalue floor is inactive and the projection is the "
              "identity) and otherwise uses NumPy's `eigh` (less wrapper overhead); BLAS is "
              "limited to one thread (threadpoolctl).",
              "",
              "Honest reading: merged and benchpress have mostly unique missingness patterns "
              "(58 patterns for 106 rows, 69 for 74), so the per-pattern LAPACK call stays the "
              "main cost, and the protocol's eigenvalue floor (eps 1e-3) is active there in "
              "most iterations, so the eigendecomposition cannot be skipped; the margin over "
              "10x is therefore smaller there than on mteb. CPU-time ratios on the loaded "
              "shared machine vary by about +-10 % between runs. Against the direct code at "
              "the library's default threads (how the reference runs) the speed-up is far "
              "larger on merged."]
    write_markdown(args.out, "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
