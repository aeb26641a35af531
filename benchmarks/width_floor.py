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

Both counts trust the model's conditional independence: the unasked answers average out
as N independent Bernoulli draws. A *design-based* interval does not: it samples items
with known inclusion probabilities ``π_j`` (Poisson sampling) and corrects the IRT
prediction by the Horvitz-Thompson estimate of the residuals (the difference estimator,
Särndal, Swensson & Wretman 1992, §6.3; the estimator of active statistical inference,
Zrnic & Candès 2024),

    Ŝ = (1/N) [Σ_j p_j + Σ_{j sampled} (y_j - p_j) / π_j],
    Var(Ŝ) = (1/N²) Σ_j (1/π_j - 1) (y_j - p_j)²,

unbiased whatever the model's misfit. With expected size ``n = Σ π_j``, the variance is
smallest for ``π_j ∝ |y_j - p_j|`` (Neyman allocation, capped at 1): the *design floor*,
which needs the residuals themselves and so bounds every such design that uses the IRT
predictions at the true θ. ``model-guided`` allocates by the model's own standard deviation,
``π_j ∝ sqrt(p_j (1 - p_j))``, and is scored with the true residuals. Where the
model-guided count is above half the random sample's, a design that allocates by the
model's own uncertainty does not reach the width-stop ratio of 0.5 even at the true θ; a
width-stopped test that does reach it leans on the independence that the misfit term ``τ``
of ``benchmarks/adaptive.py`` measures departures from.

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
from scipy.optimize import brentq
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


def design_items(residual: np.ndarray, scale: np.ndarray, width: float,
                 level: float = 0.9) -> float:
    """Expected size ``Σ π_j`` of the Poisson design ``π_j = min(1, c·scale_j)`` whose
    difference estimator has a ``width``-wide normal interval.

    The design variance ``(1/N²) Σ_j (1/π_j - 1) residual_j²`` falls continuously as ``c``
    grows, so the smallest sufficient ``c`` is the root in ``log c`` found by
    :func:`scipy.optimize.brentq`. Items with
    ``scale_j = 0`` and a nonzero residual make every design with ``c < ∞`` too wide; they
    are asked (``π_j = 1``) from the start, as a test that cannot skip them would.
    """
    z = norm.ppf(0.5 + level / 2)
    n_items = residual.size
    r2 = residual ** 2
    forced = (scale <= 0) & (r2 > 0)
    s = np.where(forced, np.inf, scale)

    def half_width(c: float) -> float:
        pi = np.minimum(1.0, c * s)
        var = np.sum(np.where(pi > 0, (1.0 / np.maximum(pi, 1e-300) - 1.0) * r2, 0.0))
        return z * np.sqrt(var) / n_items

    lo, hi = 1e-8, 1.0 / max(float(s[s > 0].min(initial=np.inf)), 1e-12)  # hi: every π = 1
    if 2 * half_width(lo) <= width:
        return float(np.minimum(1.0, lo * s).sum())
    log_c = brentq(lambda t: 2 * half_width(np.exp(t)) - width, np.log(lo), np.log(hi),
                   xtol=1e-12)
    return float(np.minimum(1.0, np.exp(log_c) * s).sum())


def floor_row(name: str, data_dir: Path, width: float) -> dict:
    """Mean oracle and random-sample counts over a matrix's models."""
    matrix = load_matrix(name, data_dir=data_dir)
    y = np.asarray(matrix.values, dtype=float)
    if np.isnan(y).any():
        raise ValueError(f"{name}: the floors need a fully observed matrix")
    fit = fit_mml(y, model="2pl", compute_se=False, show_progress=False)
    theta, _ = fit.eap_theta(y)
    oracle, static, neyman, guided = [], [], [], []
    for i, t in enumerate(theta):
        p = expit(fit.a * t + fit.d)
        residual = y[i] - p
        oracle.append(oracle_items(p, width))
        static.append(random_items(float(np.nanmean(y[i])), y.shape[1], width))
        neyman.append(design_items(residual, np.abs(residual), width))
        guided.append(design_items(residual, np.sqrt(p * (1 - p)), width))
    oracle, static = np.asarray(oracle, float), np.asarray(static, float)
    neyman, guided = np.asarray(neyman, float), np.asarray(guided, float)
    return {"dataset": name, "models": y.shape[0], "items": y.shape[1],
            "oracle": oracle.mean(), "static": static.mean(),
            "ratio": oracle.mean() / static.mean(),
            "oracle_over_half": float((oracle > y.shape[1] / 2).mean()),
            "neyman": neyman.mean(), "neyman_ratio": neyman.mean() / static.mean(),
            "guided": guided.mean(), "guided_ratio": guided.mean() / static.mean()}


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
    lines += ["", "## Without the independence assumption: design-based intervals", "",
              "Both counts above trust the 2PL's conditional independence. A design-based "
              "interval samples items with known probabilities π_j and corrects the IRT "
              "predictions p_j(θ) by the Horvitz-Thompson estimate of the residuals "
              "(the difference estimator, Särndal, Swensson & Wretman 1992; the estimator of "
              "active statistical inference, Zrnic & Candès 2024), unbiased whatever the "
              "misfit, with Var = (1/N²) Σ_j (1/π_j − 1)(y_j − p_j)². `design floor` is the "
              "expected number of items Σ π_j of the smallest such design with a "
              f"{pp:g} pp wide 90 % interval, π_j ∝ |y_j − p_j| (Neyman allocation, capped at "
              "1; it needs the residuals, so no test reaches it); `model-guided` allocates by "
              "the model's own standard deviation, π_j ∝ √(p_j(1 − p_j)), scored with the true "
              "residuals. Both use θ's EAP from all of the model's answers. Where "
              "`model-guided / random` is above 0.5, a design that allocates by the model's "
              "own uncertainty does not reach the width-stop ratio of 0.5 even at the true θ; "
              "a width-stopped test that does reach it leans on the independence that the "
              "misfit term τ of `benchmarks/adaptive.py` measures departures from.", "",
              "| dataset | random sample items | design floor items | design floor / random "
              "| model-guided items | model-guided / random |", "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['dataset']} | {r['static']:.1f} | {r['neyman']:.1f} | "
                     f"{r['neyman_ratio']:.2f} | {r['guided']:.1f} | {r['guided_ratio']:.2f} |")
    write_markdown(args.out, "\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
