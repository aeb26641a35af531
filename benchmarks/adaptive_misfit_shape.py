"""How the shape of the misfit term changes the items a width-stopped adaptive test asks.

An adaptive test's predictive variance of the full score is ``v_n + (τ g_n)²``
(:mod:`coreval.adaptive.estimate`), with ``g_n = ρ_n`` the share of the score still
predicted (``share``, the default). The misfit of a model is not the same at every score:
a model near 0 or 1 answers most unasked items the same way, whatever its departure from
the IRT model. Two shapes that let it shrink there are replayed here, with ``m_n`` the
predicted full score (on a 0-1 scale; :func:`coreval.adaptive.misfit.misfit_factor`):

* ``bernoulli-sd``: ``g_n = ρ_n √(4 m_n (1 − m_n))``, the misfit in units of the Bernoulli
  standard deviation at the predicted score;
* ``bernoulli-var``: ``g_n = ρ_n 4 m_n (1 − m_n)``, the delta method of an offset ``δ`` on
  the logit of every unasked item, ``Σ_u w_u p_u (1 − p_u) δ``, with each unasked ``p_u``
  read as ``m_n``.

The selection rules do not read ``τ`` or the shape, so every shape is replayed exactly from
the trajectories ``benchmarks/adaptive_width_dims.py`` stores (the held-out source tests
and the targets, run to half the bank with ``τ = 0``): ``τ`` is learnt per shape on the
held-out source tests (:func:`coreval.adaptive.misfit.width_stop_misfit`, with the shares
multiplied by the shape's factor), and the targets' stops are replayed under it. ``chosen``
keeps, per dataset, seed and D, the shape whose held-out source tests asked the fewest
items (then the narrower interval at the stop, then ``share``), a choice made from the
source models alone: the shape that ``AdaptivePredictor(misfit_shape="auto")`` keeps, by
the same rule on the same held-out tests. For ``share`` the learnt ``τ`` is the stored one
(checked).

Usage (as committed)::

    python benchmarks/adaptive_misfit_shape.py --runs ifeval:1,2,3 ifeval:1:1,2 \
        arc_challenge:1 openllm_math:1:0,1
"""

from __future__ import annotations

import argparse
import os
import re
import sys

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("COREVAL_PROGRESS", "0")

import numpy as np

from _results import RESULTS, SHARED, provenance, write_markdown
from coreval.adaptive.misfit import MISFIT_SHAPES as SHAPES


def replay_shape(paths: dict, shape: str, width: float, level: float = 0.9) -> dict:
    """Learn ``τ`` for ``shape`` on the held-out source tests and replay the targets' stops."""
    from adaptive_width_dims import replay

    row = replay(paths, width, level, shape=shape)
    if shape == "share" and not np.isclose(row["tau_pp"], 100 * float(paths["tau"]),
                                           rtol=1e-6, atol=1e-10):
        raise RuntimeError(f"replayed τ {row['tau_pp']} pp differs from the stored "
                           f"{100 * float(paths['tau'])} pp")
    return row


def markdown(text: str) -> str:
    """A docstring's paragraphs and ``*`` bullets as markdown (roles and ``double`` ticks)."""
    text = text.replace("``", "`").replace(":func:", "").replace(":mod:", "")
    out = []
    for paragraph in text.split("\n\n"):
        items = re.split(r"\n(?=\* )", paragraph)
        if paragraph.startswith("* "):
            out.append("\n".join("- " + " ".join(part.split()[1:]) for part in items))
        else:
            out.append(" ".join(paragraph.split()))
    return "\n\n".join(out)


def parse_run(text: str, seed: int) -> tuple[str, list[int], list[int]]:
    """``NAME:D1,D2[:S1,S2]`` as the dataset, its bank dimensions and its split seeds."""
    name, dims, seeds = [*text.split(":"), "", ""][:3]
    return (name, [int(d) for d in (dims or "1").split(",")],
            [int(s) for s in seeds.split(",")] if seeds else [seed])


def main(argv: list[str] | None = None) -> int:
    from adaptive import sample_mean_width_row
    from adaptive_width_dims import trajectory_path
    from coreval.data.io import load_matrix
    from coreval.data.splits import make_split

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", nargs="+", default=["ifeval:1,2,3"],
                        help="DATASET:D1,D2,...[:S1,S2,...] whose stored trajectories are "
                             "replayed (split seeds: --seed when not given)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n-source", type=int, default=100)
    parser.add_argument("--targets", type=int, default=150)
    parser.add_argument("--width", type=float, default=0.04)
    parser.add_argument("--out", default=str(RESULTS / "adaptive_misfit_shape.md"))
    args = parser.parse_args(argv)
    lines = ["# The misfit term's shape and the items a width-stopped test asks", "",
             *provenance("python benchmarks/adaptive_misfit_shape.py " + " ".join(
                 argv if argv is not None else sys.argv[1:]))]
    about = __doc__.split("\n\n", 1)[1].split("\n\nUsage")[0]
    lines += [markdown(about), "",
              f"Random split with {args.n_source} source models (seed: the table's), the first "
              f"{args.targets} targets (`targets`: fewer where the split has fewer), "
              f"cat-score with a {100 * args.width:g} pp wide stop at 90 % (or half the "
              "bank); `τ` in pp; `source items`: the held-out source "
              "tests' mean items at their replayed stops; `ratio`: items over those of a "
              "random static sample read with the sample mean (mean@width, "
              "`adaptive.sample_mean_width_row`) on the same targets. Coverage is that of "
              "the normal interval the stop reads (`stopped_coverage`); the harness reports "
              "the interval of the final estimate's draws, so `adaptive.md` can differ by a "
              "target or two. All three shapes are options of `AdaptivePredictor` "
              "(`misfit_shape`, default `share`).", "",
              "| dataset | seed | targets | bank | shape | τ | source items | items | "
              "coverage90 | capped | RMSE (pp) | ratio |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    ratios: dict[tuple[str, int, str], list[tuple[float, float]]] = {}
    for text in args.runs:
        name, dims, seeds = parse_run(text, args.seed)
        matrix = load_matrix(name, data_dir=SHARED / "data")
        for seed in seeds:
            split = make_split(matrix, "random", seed=seed, n_source=args.n_source)
            mean = sample_mean_width_row(matrix.take(split.target), args.width, seed,
                                         args.targets)
            for d in dims:
                path = trajectory_path(name, args.n_source, seed, d, args.targets)
                if not path.exists():
                    raise SystemExit(f"{path} is missing: run benchmarks/adaptive_width_dims.py "
                                     f"--datasets {name} --seeds {seed} --dims {d} "
                                     f"--targets {args.targets} first")
                with np.load(path) as stored:
                    paths = dict(stored)
                rows = {shape: replay_shape(paths, shape, args.width) for shape in SHAPES}
                pick = min(SHAPES, key=lambda s: (rows[s]["src_items"],
                                                  rows[s]["src_width_pp"], SHAPES.index(s)))
                for key, label, r in [*((s, s, rows[s]) for s in SHAPES),
                                      ("chosen", f"chosen ({pick})", rows[pick])]:
                    ratio = r["items"] / mean["items"]
                    ratios.setdefault((name, d, key), []).append((ratio, r["coverage90"]))
                    lines.append(f"| {name} | {seed} | {r['targets']} | D = {d} | {label} | "
                                 f"{r['tau_pp']:.2f} | {r['src_items']:.1f} | "
                                 f"{r['items']:.1f} | {r['coverage90']:.3f} | "
                                 f"{r['capped']:.2f} | {r['rmse_pp']:.2f} | {ratio:.2f} |")
            lines.append(f"| {name} | {seed} | {min(args.targets, len(split.target))} | | "
                         f"mean@width | | | {mean['items']:.1f} | {mean['coverage90']:.3f} | "
                         f"| {mean['rmse_pp']:.2f} | 1.00 |")
    lines += ["", "Mean over the seeds of each dataset and bank (ratio, coverage90; the "
              "number of seeds in brackets):", "",
              "| dataset | bank | " + " | ".join([*SHAPES, "chosen"]) + " |",
              "|---|---|" + "---|" * (len(SHAPES) + 1)]
    for name, d in dict.fromkeys((n, d) for n, d, _ in ratios):
        cells = []
        for shape in [*SHAPES, "chosen"]:
            r, c = np.mean(ratios[(name, d, shape)], axis=0)
            cells.append(f"{r:.2f} ({c:.3f})")
        lines.append(f"| {name} | D = {d} ({len(ratios[(name, d, 'share')])}) | "
                     + " | ".join(cells) + " |")
    write_markdown(args.out, "\n".join(lines) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
