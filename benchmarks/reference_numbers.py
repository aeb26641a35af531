"""Numbers of the reference checks, to show that a refactor changes none of them.

Runs small configurations of the checks against the papers' reference code
(binned splits and baselines of mrmr_eval, mRMR coresets, gp-IRT / irt-bayes,
LSAT-7 by MML against mirt, Smola's Table 4 selection on MTEB) through the public
API only (``coreval.select``, ``coreval.data``, ``coreval.irt.fit``) and writes every
number, at full precision, as JSON. Two runs are compared with ``--compare``.

Usage
-----
``python benchmarks/reference_numbers.py --out before.json`` on one tree,
``--out after.json`` on the other, then
``python benchmarks/reference_numbers.py --compare before.json after.json``
(exit 1 on any difference). Needs ``../shared/data`` (or ``--data-dir``).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
DATASETS = ("arc_challenge", "gsm", "mmlu")
METHODS = ("random", "random+", "random++", "anchor-points++", "lasso+", "mrmr++")
IRT_METHODS = ("p-irt", "gp-irt", "irt-bayes")


def _arr(x: Any) -> list:
    return np.asarray(x, dtype=float).round(12).tolist()


def _load(name: str, data_dir: Path):
    from coreval.data import load_matrix

    return load_matrix(name, data_dir=data_dir)


def _split(matrix, seed: int):
    from coreval.data.splits import make_split

    sp = make_split(matrix, "binned", seed=seed, n_source=30)
    return matrix.take(sp.source), matrix.take(sp.target), sp


def _prediction(source, target, method: str, budget: float, seed: int, **options) -> dict:
    import coreval

    fitted = coreval.select(source, method, budget, seed=seed, **options)
    pred = fitted.predict_array(target.values[:, fitted.coreset.indices])
    truth = target.summary_scores()
    return {"items": [str(i) for i in fitted.coreset.items], "mean": _arr(pred.mean),
            "lower": _arr(pred.lower), "upper": _arr(pred.upper),
            "rmse_pp": float(100 * np.sqrt(np.mean((pred.mean - truth) ** 2)))}


def splits_and_baselines(data_dir: Path) -> dict:
    """Binned splits (vs the reference indices) and the regression baselines."""
    ref = json.loads((data_dir.parent / "anchors" / "mrmr_eval" / "splits_binned_n30.json"
                      ).read_text())
    out: dict[str, Any] = {}
    for name in DATASETS:
        matrix = _load(name, data_dir)
        for seed in (0, 1):
            source, target, sp = _split(matrix, seed)
            cell = out.setdefault(f"{name}/seed{seed}", {})
            cell["source_rows"] = [int(i) for i in sp.source]
            cell["reference_split"] = str(ref.get(name, {}).get(str(seed), ""))[:64]
            for method in METHODS:
                cell[method] = _prediction(source, target, method, 0.05, seed)
    return out


def irt_methods(data_dir: Path) -> dict:
    """gp-IRT, p-IRT and irt-bayes on one cell (arc_challenge, seed 0, 5 %)."""
    source, target, _ = _split(_load("arc_challenge", data_dir), 0)
    return {m: _prediction(source, target, m, 0.05, 0, show_progress=False)
            for m in IRT_METHODS}


def calibration_cv(data_dir: Path) -> dict:
    """``calibration="cv"`` of mrmr++ on one cell."""
    source, target, _ = _split(_load("gsm", data_dir), 0)
    return _prediction(source, target, "mrmr++", 0.05, 0, calibration="cv")


def lsat7_mml(data_dir: Path) -> dict:
    """LSAT-7 2PL by MML and its difference from mirt."""
    import pandas as pd

    from coreval.data import ScoreMatrix
    from coreval.irt import fit

    table = pd.read_csv(data_dir / "psychometrics" / "LSAT7.csv")
    freq = table["freq"].to_numpy(int) if "freq" in table else np.ones(len(table), int)
    items = table.drop(columns=[c for c in table if c == "freq"])
    y = np.repeat(items.to_numpy(float), freq, axis=0)
    res = fit("2pl", ScoreMatrix(y), method="mml")
    point = res.item_point()
    ref = json.loads((data_dir.parent / "anchors" / "lsat_mirt_reference.json").read_text())
    a = np.asarray(point["a"], float).ravel()
    d = np.asarray(point["d"], float).ravel()
    return {"a": _arr(a), "d": _arr(d), "se": {k: _arr(v) for k, v in (res._item_se or {}).items()},
            "loglik": float(res.card["diagnostics"]["loglik"]),
            "max_abs_diff_a_vs_mirt": float(np.max(np.abs(a - np.asarray(ref["LSAT7_2PL"]["a"])))),
            "max_abs_diff_d_vs_mirt": float(np.max(np.abs(d - np.asarray(ref["LSAT7_2PL"]["d"]))))}


def table4_mteb(data_dir: Path) -> dict:
    """Smola's Table 4 protocol on MTEB: gauss-mi / gauss-random at k = 5, first folds."""
    import coreval

    matrix = _load("mteb", data_dir)
    folds = np.array_split(np.random.default_rng(42).permutation(matrix.n_models), 10)
    out = {}
    for f in range(3):
        train = matrix.take(np.concatenate([folds[j] for j in range(10) if j != f]))
        test = matrix.take(folds[f])
        for method in ("gauss-mi", "gauss-random"):
            fitted = coreval.select(train, method, 5, seed=f)
            pred = fitted.predict_array(test.values[:, fitted.coreset.indices])
            out[f"fold{f}/{method}"] = {"items": [str(i) for i in fitted.coreset.items],
                                         "mean": _arr(np.nan_to_num(pred.mean, nan=-1.0))}
    return out


SECTIONS: dict[str, Callable[[Path], dict]] = {
    "splits_and_baselines": splits_and_baselines,
    "irt_methods": irt_methods,
    "calibration_cv": calibration_cv,
    "lsat7_mml": lsat7_mml,
    "table4_mteb": table4_mteb,
}


def run(data_dir: Path) -> dict:
    out: dict[str, Any] = {}
    for name, fn in SECTIONS.items():
        t0 = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out[name] = fn(data_dir)
        except Exception as exc:  # a section that fails is reported, the others still run
            out[name] = {"error": f"{type(exc).__name__}: {exc}"}
        print(f"{name}: {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    return out


def _diff(a: Any, b: Any, path: str, found: list[str]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                found.append(f"{path}/{key}: only in one run")
            else:
                _diff(a[key], b[key], f"{path}/{key}", found)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _diff(x, y, f"{path}[{i}]", found)
    elif isinstance(a, float) and isinstance(b, float):
        if not (a == b or (math.isnan(a) and math.isnan(b))):
            found.append(f"{path}: {a!r} != {b!r} (diff {abs(a - b):.3g})")
    elif a != b:
        found.append(f"{path}: {str(a)[:60]!r} != {str(b)[:60]!r}")


def compare(before: Path, after: Path) -> int:
    a, b = json.loads(before.read_text()), json.loads(after.read_text())
    failed = 0
    for section in sorted(set(a) | set(b)):
        found: list[str] = []
        _diff(a.get(section), b.get(section), section, found)
        print(f"{section}: {'identical' if not found else f'{len(found)} differences'}")
        for line in found[:10]:
            print(f"  {line}")
        failed += bool(found)
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--data-dir", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    args = ap.parse_args(argv)
    if args.compare:
        return compare(*args.compare)
    result = run(args.data_dir)
    text = json.dumps(result, indent=1, sort_keys=True)
    if args.out:
        args.out.write_text(text)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
