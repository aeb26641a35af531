"""Items a width-stopped adaptive test asks, by the latent dimensions of its item bank.

For each dataset, seed and D in ``--dims``, cat-score is fitted as ``benchmarks/adaptive.py``
fits it for its ``@width`` rows (random split of ``--n-source`` source models, budget half
the bank, ``width=--width``, ``tau="cv"``, bank ``BAYES_FIT`` with ``dims=D``). Its held-out
source tests (``AdaptivePredictor.misfit_paths_``) and the first ``--targets`` target models'
tests are run to half the bank with ``τ = 0``; the selection rule does not read ``τ``, so
the width stop under the learnt ``τ`` is replayed exactly from these trajectories
(:func:`coreval.adaptive.misfit.stopped_coverage`, the normal interval the stop itself
reads). Per D: the learnt ``τ``, the held-out source tests' mean items at their replayed
stops (the criterion of ``choose_dims``), and on the targets the mean items, the coverage
and mean width of the interval at the stop, the share of tests capped at half the bank,
and the RMSE there. ``choose_dims`` up to ``m`` dimensions is replayed by keeping, per
split, the D whose held-out source tests asked fewest items (ties: the narrower interval,
then fewer dimensions), as ``AdaptivePredictor(choose_dims=True, max_dims=m)`` does.
``mean@width`` is the random static sample read with the sample mean
(``adaptive.sample_mean_width_row``) on the same targets.

Trajectories are stored per (dataset, seed, D) under ``raw/adaptive_width_dims/`` as they
finish, so an interrupted run resumes.

Usage (as committed)::

    python benchmarks/adaptive_width_dims.py --datasets ifeval --seeds 0 --dims 1 2 3 \
        --targets 150
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("COREVAL_PROGRESS", "0")

import numpy as np

from _results import RESULTS, SHARED, provenance, write_markdown

RAW = RESULTS / "raw" / "adaptive_width_dims"


def trajectory_path(name: str, n_source: int, seed: int, dims: int, targets: int) -> Path:
    """Where the trajectories of one (dataset, split, seed, D, targets) are stored."""
    return RAW / f"{name}_random{n_source}_seed{seed}_d{dims}_t{targets}.npz"


def trajectories(name: str, matrix, seed: int, dims: int, args) -> dict:
    """The held-out source tests' and the targets' trajectories with ``τ = 0`` (stored)."""
    from coreval._atomic import write_atomic
    from coreval.adaptive.misfit import padded_paths
    from coreval.base import FitCache
    from coreval.data.splits import make_split
    from coreval.irt.source_fit import BAYES_FIT
    from coreval.methods import get_method
    from coreval.pipeline import fit_method

    path = trajectory_path(name, args.n_source, seed, dims, args.targets)
    if path.exists():
        with np.load(path) as stored:
            return dict(stored)
    split = make_split(matrix, "random", seed=seed, n_source=args.n_source)
    source, target = matrix.take(split.source), matrix.take(split.target)
    cap = matrix.n_items // 2
    t0 = time.perf_counter()
    fitted = fit_method(get_method("cat-score"), source, cap, seed=seed, cache=FitCache(),
                        width=args.width, irt=BAYES_FIT.replace(dims=dims))
    predictor = fitted.predictor
    src = predictor.misfit_paths_[dims]
    fit_seconds = time.perf_counter() - t0
    predictor.width = None  # run every target to half the bank; the stop is replayed
    rows = target.values[:args.targets, fitted.coreset.indices]
    t0 = time.perf_counter()
    fitted.predict_array(rows)
    means, variances, shares = padded_paths(predictor.paths_, src[1].shape[1])
    found = {"src_truth": src[0], "src_means": src[1], "src_variances": src[2],
             "src_shares": src[3], "truth": target.summary_scores()[:args.targets],
             "means": means, "variances": variances, "shares": shares,
             "tau": np.float64(predictor.tau_), "fit_seconds": np.float64(fit_seconds),
             "test_seconds": np.float64((time.perf_counter() - t0) / len(rows))}
    RAW.mkdir(parents=True, exist_ok=True)

    def save(tmp):
        with open(tmp, "wb") as handle:
            np.savez(handle, **found)

    write_atomic(path, save)
    print(f"{name} seed {seed} D={dims}: stored", flush=True)
    return found


def replay(paths: dict, width: float, level: float = 0.9, shape: str | None = None) -> dict:
    """The width stop under the learnt τ, on the held-out source tests and the targets.

    With ``shape`` (a misfit shape of :func:`coreval.adaptive.misfit.misfit_factor`),
    every share ``ρ_n`` is replaced by the shape's factor ``g(ρ_n, m_n)`` and ``τ`` is
    learnt again on the held-out source tests, as ``AdaptivePredictor`` does
    (``benchmarks/adaptive_misfit_shape.py``); without it the stored ``τ`` is replayed.
    The stored scores are on a 0-1 scale (the bank is the whole matrix).
    """
    from coreval.adaptive.misfit import (
        misfit_factor,
        stopped_coverage,
        stopped_widths,
        width_stop_misfit,
    )

    def shaped(prefix: str) -> list[np.ndarray]:
        m, s = paths[f"{prefix}means"], paths[f"{prefix}shares"]
        return [paths[f"{prefix}truth"], m, paths[f"{prefix}variances"],
                s if shape is None else misfit_factor(shape, s, m)]

    src, (truth, m, v, s) = shaped("src_"), shaped("")
    tau = (float(paths["tau"]) if shape is None
           else width_stop_misfit(*src, width=width, level=level))
    src_steps, _ = stopped_coverage(tau, *src, width=width, level=level)
    src_width = stopped_widths(tau, src[2], src[3], src_steps, level=level)
    steps, covered = stopped_coverage(tau, truth, m, v, s, width=width, level=level)
    widths = stopped_widths(tau, v, s, steps, level=level)
    last = np.isfinite(m).sum(axis=1) - 1
    error = m[np.arange(len(steps)), steps] - truth
    # the bank's accuracy, read with the targets' true scores: the first common length at
    # which 90 % of the point estimates are within half the width of the truth
    within = np.abs(m - truth[:, None]) <= width / 2
    enough = np.flatnonzero(np.isfinite(m).all(axis=0) & (within.mean(axis=0) >= level))
    return {"targets": len(steps),
            "oracle_items": float(enough[0]) if enough.size else float("nan"),
            "tau_pp": 100 * tau, "src_items": float(src_steps.mean()),
            "src_width_pp": 100 * float(src_width.mean()), "items": float(steps.mean()),
            "coverage90": float(covered.mean()), "width90_pp": 100 * float(widths.mean()),
            "capped": float(np.mean(steps >= last)),
            "rmse_pp": 100 * float(np.sqrt(np.mean(error**2))),
            "fit_s": float(paths["fit_seconds"]), "test_s": float(paths["test_seconds"])}


def oracle(items: float, reference: float) -> str:
    """The fixed-length column: items and their ratio to the random sample's, or a dash."""
    if np.isnan(items):
        return "— (not within half the bank)"
    return f"{items:.0f} ({items / reference:.2f})"


def chosen(rows: dict[int, dict], max_dims: int) -> int:
    """The D ``choose_dims`` keeps among 1..max_dims: fewest source items, then narrower."""
    return min((d for d in rows if d <= max_dims),
               key=lambda d: (rows[d]["src_items"], rows[d]["src_width_pp"], d))


def main(argv: list[str] | None = None) -> int:
    from adaptive import sample_mean_width_row
    from coreval.data.io import load_matrix
    from coreval.data.splits import make_split

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["ifeval"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--dims", nargs="+", type=int, default=[1, 2, 3])
    parser.add_argument("--n-source", type=int, default=100)
    parser.add_argument("--targets", type=int, default=150)
    parser.add_argument("--width", type=float, default=0.04)
    parser.add_argument("--out", default=str(RESULTS / "adaptive_width_dims.md"),
                        help="markdown file written")
    args = parser.parse_args(argv)
    lines = ["# Width-stopped adaptive tests by the item bank's latent dimensions", "",
             *provenance("python benchmarks/adaptive_width_dims.py " + " ".join(
                 argv if argv is not None else sys.argv[1:]))]
    about = __doc__.split("\n\n", 1)[1].split("\n\nTrajectories")[0]
    lines += [about.replace("\n", " ").replace("``", "`").replace(":func:", ""),
              "", "Items and widths are means over the tests; `τ` in pp; `source items`: "
              "the held-out source tests' mean items at their replayed stops; `fit s`: "
              "seconds of the fit (misfit folds included), `s / test`: seconds per target "
              "test run to half the bank (two processes on 2 cores). `fixed length, 90 % "
              "within ±w/2` reads the targets' true scores, so it is an analysis, not a "
              "method: the first number of items after which 90 % of the targets' point "
              "estimates are within half the stop's width of their full scores (in brackets, "
              "its ratio to mean@width). It shows how fast the bank's estimates become "
              "accurate, the limit that a stop with calibrated intervals works against.", ""]
    for name in args.datasets:
        matrix = load_matrix(name, data_dir=SHARED / "data")
        for seed in args.seeds:
            rows = {d: replay(trajectories(name, matrix, seed, d, args), args.width)
                    for d in args.dims}
            split = make_split(matrix, "random", seed=seed, n_source=args.n_source)
            target = matrix.take(split.target)
            mean = sample_mean_width_row(target, args.width, seed, args.targets)
            lines += [f"## {name} (random, M = {args.n_source}), seed {seed}, "
                      f"first {args.targets} targets, N = {matrix.n_items}", "",
                      "| bank | τ | source items | items | coverage90 | width90 (pp) | "
                      "capped | RMSE (pp) | items / mean@width | fixed length, 90 % "
                      "within ±w/2 | fit s | s / test |",
                      "|---|---|---|---|---|---|---|---|---|---|---|---|"]
            labels = [(f"D = {d}", rows[d]) for d in args.dims]
            labels += [(f"choose_dims, max_dims = {m} (D = {chosen(rows, m)})",
                        rows[chosen(rows, m)]) for m in range(2, max(args.dims) + 1)
                       if all(d in rows for d in range(1, m + 1))]
            for label, r in labels:
                lines.append(f"| {label} | {r['tau_pp']:.2f} | {r['src_items']:.1f} | "
                             f"{r['items']:.1f} | {r['coverage90']:.3f} | "
                             f"{r['width90_pp']:.2f} | {r['capped']:.2f} | "
                             f"{r['rmse_pp']:.2f} | {r['items'] / mean['items']:.2f} | "
                             f"{oracle(r['oracle_items'], mean['items'])} | "
                             f"{r['fit_s']:.0f} | {r['test_s']:.1f} |")
            lines += [f"| mean@width (random sample, sample mean) | | | {mean['items']:.1f} | "
                      f"{mean['coverage90']:.3f} | {mean['width90_pp']:.2f} | | "
                      f"{mean['rmse_pp']:.2f} | 1.00 | | | |", ""]
    out = Path(args.out)
    write_markdown(out, "\n".join(lines))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
