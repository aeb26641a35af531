"""BenchPress's greedy probe search, run by coreval, against the authors' chains.

:func:`coreval.harness.probe_search.greedy_probe_search` with the authors' completer (logit Bias-ALS,
rank 2, lambda 0.1, their random starts) on the BenchPress 2026 matrix: every step adds the
candidate whose probe set has the lowest MedAE over all observed cells (revealed probe cells
at zero error) when each model in turn reveals only its probes. The chain and the MedAE after
each step are compared with the authors' (``../shared/anchors/benchpress/README.md``).

Usage::

    python benchmarks/probe_search.py [--pool allowlist|all] [--steps 5] [--n-jobs 2]

writes ``benchmarks/results/probe_search_POOL.md``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

from _results import provenance, write_markdown
from benchpress import ALLOWLIST, AUTHOR_PROBES
from coreval.data import load_matrix
from coreval.harness.probe_search import greedy_probe_search
from coreval.lowrank import complete_bias_als

REPO = Path(__file__).resolve().parents[1]
#: The authors' MedAE after each of their greedy steps (anchors README, "Probe selection").
AUTHOR_STEPS = {"allowlist": (5.98, 5.47, 5.02, 4.76, 4.55),
                "all": (5.98, 4.93, 4.50, 4.20, 3.93)}


def authors_completer(train: np.ndarray):
    """BenchPress's default completer with its random starts."""
    return complete_bias_als(train, legacy_rng=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", default=os.environ.get("COREVAL_DATA", "../shared/data"))
    parser.add_argument("--pool", choices=["allowlist", "all"], default="allowlist")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--n-jobs", type=int, default=1)
    parser.add_argument("--out", default=None,
                        help="markdown file (default: benchmarks/results/probe_search_POOL.md)")
    args = parser.parse_args(argv)
    out = args.out or REPO / "benchmarks" / "results" / f"probe_search_{args.pool}.md"
    matrix = load_matrix("benchpress2026", data_dir=Path(args.data_dir))
    values = matrix.values.astype(np.float64)
    items = list(matrix.items)
    candidates = ([items.index(b) for b in ALLOWLIST] if args.pool == "allowlist" else None)
    start = time.perf_counter()
    search = greedy_probe_search(values, args.steps, authors_completer,
                                 candidates=candidates, n_jobs=args.n_jobs)
    seconds = time.perf_counter() - start
    chain = AUTHOR_PROBES[args.pool][0]
    command = "python benchmarks/probe_search.py " + " ".join(
        argv if argv is not None else sys.argv[1:])
    pool = "the authors' low-cost allowlist (25 benchmarks)" if candidates else "all 133"
    lines = ["# BenchPress's greedy probe search, run by coreval", "",
             *provenance(command),
             f"Matrix `benchpress2026.npz` (84 × 133), candidates: {pool}. Each step scores every remaining candidate with 84 completions (logit "
             "Bias-ALS, rank 2, λ 0.1, the authors' random starts; each model in turn reveals "
             "only its probes) and keeps the lowest MedAE over all 2,604 observed cells, the "
             "revealed probe cells at zero error. The authors' chain and MedAE per step are "
             "from `../shared/anchors/benchpress/README.md` (their code on this matrix). "
             f"{args.n_jobs} joblib worker(s); {seconds / 60:.1f} min in all.", "",
             "| step | coreval's choice | MedAE | MedAE hidden | authors' choice | authors' MedAE |",
             "|---|---|---|---|---|---|"]
    for step, (col, res) in enumerate(zip(search.selected, search.results, strict=True)):
        theirs = chain[step] if step < len(chain) else "—"
        lines.append(f"| {step + 1} | {items[col]} | {res['medae']:.3f} | "
                     f"{res['medae_hidden']:.3f} | {theirs} | "
                     f"{AUTHOR_STEPS[args.pool][step]:.2f} |")
    lines.append("")
    write_markdown(out, "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
