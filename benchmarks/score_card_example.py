"""A score card for a held-out real model (the example in benchmarks/results/score_card_example.md).

The models of a real benchmark are split at random; one held-out model near the
median score plays the new model: its real answers on the coreset go into
:func:`coreval.report.score_card.score_card`, and its true full score (never
shown to the method) is printed next to the card's prediction.

Usage::

    python benchmarks/score_card_example.py --dataset mmlu --method irt-bayes --budget 50
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from _results import version_line, write_markdown
from coreval.data import load_matrix, make_split
from coreval.report.score_card import score_card

HERE = Path(__file__).resolve().parent
DATA = HERE.parent.parent / "shared" / "data"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="mmlu")
    parser.add_argument("--method", default="irt-bayes")
    parser.add_argument("--budget", type=float, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(HERE / "results" / "score_card_example.md"))
    args = parser.parse_args(argv)
    if not DATA.is_dir():
        sys.exit(f"needs the shared data folder {DATA}")
    start = time.perf_counter()
    matrix = load_matrix(DATA / f"{args.dataset}.npz")
    split = make_split(matrix, "random", seed=args.seed, holdout=0.2)
    source, heldout = matrix.take(split.source), matrix.take(split.target)
    truth = heldout.summary_scores()
    new = int(np.argsort(truth)[len(truth) // 2])
    responses = dict(zip(heldout.items, heldout.values[new], strict=True))
    card = score_card(source, responses, method=args.method, budget=args.budget,
                      seed=args.seed, model_name=str(heldout.models[new]))
    s = card.summary()
    inside = s["lower"] <= truth[new] <= s["upper"]
    true_rank = 1 + int((source.summary_scores() > truth[new]).sum())
    cmd = "python benchmarks/score_card_example.py " + " ".join(
        argv if argv is not None else sys.argv[1:])
    title, body = card.to_markdown(top=10).split("\n\n", 1)
    text = "\n".join([
        title, "", version_line(), "", body,
        "## Check against the truth (not used by the method)", "",
        f"- true full score {100 * truth[new]:.1f}% — "
        f"{'inside' if inside else 'outside'} the {s['level']:.0%} interval",
        f"- true rank {true_rank} of {s['n_ranked']} (card: {s['rank_median']}, "
        f"interval {s['rank_lower']}–{s['rank_upper']})",
        f"- made by `{cmd}` in {time.perf_counter() - start:.0f} s "
        f"(random split seed {args.seed}, 20% of models held out)", "",
    ])
    write_markdown(args.out, text)
    print(text)


if __name__ == "__main__":
    main()
