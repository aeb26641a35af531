"""How many items any IRT-based test needs before its full-score interval can be 4 pp wide.

The width stop of ``benchmarks/adaptive.py`` asks items until the 90 % interval of the
predicted full score ``S = (1/N) Σ_j y_j`` is ``width`` wide. Under a unidimensional IRT
model, even a test that knew the target's ability θ exactly leaves the unasked answers
uncertain: given θ they are independent Bernoulli(p_j(θ)), so

    Var(S | θ, asked A) = (1/N²) Σ_{j ∉ A} p_j(θ) (1 - p_j(θ)),

and a posterior over θ only adds to it (law of total variance). The smallest such variance
after ``n`` items comes from asking the ``n`` items with the largest ``p_j(1 - p_j)``
first. The *oracle* count is the smallest ``n`` whose normal 90 % interval
``2 z_0.95 sqrt(Var)`` is at most ``width``: no selection rule, posterior or misfit term
can stop earlier under the model. A random static sample of ``n`` of the target's own
answers, scored by its sample mean, has the finite-population width
``2 z_0.95 sqrt(ȳ(1 - ȳ)/n · (N - n)/(N - 1))`` (ȳ: the target's full score), which gives
the static count. Their ratio bounds from below the width-stop ratio that
``benchmarks/adaptive.py`` reports (adaptive items / random-sample items) on that matrix.

The 2PL is fitted by marginal maximum likelihood (:func:`coreval.irt.mml.fit_mml`) on
*all* models of a matrix and θ is each model's EAP on the quadrature grid: this is an
analysis of the data, not an evaluation of a method.

Usage::

    python benchmarks/width_floor.py [--data-dir ../shared/data] [--width 0.04]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from scipy.special import expit
from scipy.stats import norm

from _results import LLM, RESULTS, SHARED, provenance, write_markdown
from coreval.data import load_matrix
from coreval.irt.mml import fit_mml


def oracle_items(p: np.ndarray, width: float, level: float = 0.9) -> int:
    """Fewest items after which ``Var(S | θ)`` allows a ``width``-wide interval."""
    z = norm.ppf(0.5 + level / 2)
    n_items = p.size
    v = np.sort(p * (1.0 - p))                                  # ascending
    remaining = np.concatenate([np.cumsum(v)[::-1], [0.0]])    # asked n largest: Σ of the rest
    ok = 2 * z * np.sqrt(remaining) / n_items <= width
    return int(np.argmax(ok))


def random_items(score: float, n_items: int, width: float, level: float = 0.9) -> int:
    """Fewest random items whose sample mean has a ``width``-wide interval (with FPC)."""
    z = norm.ppf(0.5 + level / 2)
    n = np.arange(1, n_items + 1)
    half = z * np.sqrt(score * (1 - score) / n * (n_items - n) / max(n_items - 1, 1))
    return int(n[np.argmax(2 * half <= width)])


def floor_row(name: str, data_dir: Path, width: float) -> dict:
    """Mean oracle and random-sample counts over a matrix's models."""
    matrix = load_matrix(name, data_dir=data_dir)
    y = np.asarray(matrix.values, dtype=float)
    fit = fit_mml(y, model="2pl", compute_se=False, show_progress=False)
    theta, _ = fit.eap_theta(y)
    oracle, static = [], []
    for i, t in enumerate(theta):
        oracle.append(oracle_items(expit(fit.a * t + fit.d), width))
        static.append(random_items(float(np.nanmean(y[i])), y.shape[1], width))
    oracle, static = np.asarray(oracle, float), np.asarray(static, float)
    return {"dataset": name, "models": y.shape[0], "items": y.shape[1],
            "oracle": oracle.mean(), "static": static.mean(),
            "ratio": oracle.mean() / static.mean(),
            "oracle_over_half": float((oracle > y.shape[1] / 2).mean())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", default=str(SHARED / "data"))
    parser.add_argument("--width", type=float, default=0.04)
    parser.add_argument("--out", default=str(RESULTS / "width_floor.md"))
    args = parser.parse_args(argv)
    rows = []
    for name in LLM:
        rows.append(floor_row(name, Path(args.data_dir), args.width))
        print(rows[-1], file=sys.stderr, flush=True)
    command = "python benchmarks/width_floor.py " + " ".join(argv if argv is not None
                                                             else sys.argv[1:])
    pp = 100 * args.width
    lines = [f"# Items needed for a {pp:g} pp wide 90 % interval of the full score: "
             "the IRT floor", "", *provenance(command),
             "Under a unidimensional 2PL, a test that knew a target's ability θ exactly still "
             "leaves its unasked answers uncertain: given θ they are independent "
             "Bernoulli(p_j(θ)), so Var(S | θ, asked A) = (1/N²) Σ_{j ∉ A} p_j(1 − p_j), and a "
             "posterior over θ or a misfit term only adds to it. `oracle items` is the "
             "smallest n for which asking the n items with the largest p_j(1 − p_j) brings "
             f"the normal 90 % interval to {pp:g} pp: no IRT-based test can stop earlier under "
             "the model. `random sample items` is the smallest n for which the sample mean of "
             "n random items of the target has a 90 % interval (with the finite-population "
             f"correction, variance ȳ(1 − ȳ)) {pp:g} pp wide. Their ratio bounds from below "
             "the width-stop ratio of `adaptive.md`. The 2PL is fitted by marginal maximum "
             "likelihood on all models of a matrix, θ is each model's EAP: an analysis of the "
             "data, not an evaluation of a method.", "",
             "Means over each matrix's models; `oracle > N/2`: share of models whose oracle "
             "count exceeds half the bank (where `benchmarks/adaptive.py` stops a test).", "",
             "| dataset | models | items N | oracle items | random sample items | "
             "oracle / random | oracle > N/2 |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['dataset']} | {r['models']} | {r['items']} | {r['oracle']:.1f} | "
                     f"{r['static']:.1f} | {r['ratio']:.2f} | {r['oracle_over_half']:.2f} |")
    write_markdown(args.out, "\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
