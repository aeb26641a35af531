"""IRT fitting speed and held-out log-likelihood: coreval (NumPyro) vs py-irt (Pyro), same run.

Fits a 1-D 2PL to ``arc_challenge`` (218 × 1172) with 10% of the entries masked
and reports wall time and the held-out log-likelihood per entry (plug-in point
estimates) and accuracy. Each coreval fit runs in a new Python process and is
timed three ways: as the first fit of a process that compiles its JAX programs
("cold"), as the first fit of a process that loads them from JAX's persistent
compilation cache filled by an earlier process (``coreval.jax_cache``; the CLI
turns it on), and as a later fit of the same shape in the same process.
py-irt (``multidim_2pl``, dims 1, its defaults: 2000 epochs, Adam lr 0.1,
ExponentialLR 0.9999) runs in a separate virtual environment
(``--pyirt-python``), as in ``shared/anchors/irt_speed.md``.

Usage::

    python benchmarks/irt_speed.py [--steps 2000] [--repeats 3] [--pyirt-python ../pyirt-venv/bin/python]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
import warnings
from pathlib import Path

import numpy as np
from scipy.special import expit

from _results import provenance, write_markdown

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "data"

PYIRT_SCRIPT = textwrap.dedent('''
    import json, sys, time
    import numpy as np, pandas as pd, pyro, torch
    from py_irt.config import IrtConfig
    from py_irt.dataset import Dataset
    from py_irt.training import IrtModelTrainer
    train = np.load(sys.argv[1])["Y"]
    epochs, model_type = int(sys.argv[3]), sys.argv[4]
    torch.manual_seed(0); pyro.set_rng_seed(0)
    df = pd.DataFrame(train, columns=[f"i{j}" for j in range(train.shape[1])])
    df.insert(0, "subject", [f"s{i}" for i in range(train.shape[0])])
    data = Dataset.from_pandas(df, subject_column="subject",
                               item_columns=[c for c in df.columns if c != "subject"])
    extra = {"dims": 1} if model_type == "multidim_2pl" else {"priors": "hierarchical"}
    config = IrtConfig(model_type=model_type, epochs=epochs, log_every=10**9, **extra)
    start = time.perf_counter()
    try:
        trainer = IrtModelTrainer(data_path=None, config=config, dataset=data, verbose=False)
        trainer.train(device="cpu")
    except ValueError as exc:  # py-irt's SVI can diverge to NaN
        json.dump({"error": str(exc).splitlines()[0][:200],
                   "seconds": time.perf_counter() - start}, open(sys.argv[2], "w"))
        sys.exit(0)
    seconds = time.perf_counter() - start
    params = trainer.irt_model.export()
    item_ix = [int(data.ix_to_item_id[k][1:]) for k in range(len(data.ix_to_item_id))]
    subj_ix = [int(data.ix_to_subject_id[k][1:]) for k in range(len(data.ix_to_subject_id))]
    json.dump({"seconds": seconds, "ability": params["ability"], "diff": params["diff"],
               "disc": params["disc"], "item_ix": item_ix, "subject_ix": subj_ix},
              open(sys.argv[2], "w"))
''')


#: The three ways a coreval fit is timed (see ``main``).
WHEN = {"cold": "first fit of a new process, compiling",
        "cached": "first fit of a new process, persistent compilation cache",
        "later": "later fit in the process, compiled"}


def heldout_metrics(prob: np.ndarray, y: np.ndarray, held: np.ndarray) -> tuple[float, float]:
    """Mean log-likelihood per held-out entry and held-out accuracy of ``prob``."""
    p = np.clip(prob[held], 1e-7, 1 - 1e-7)
    obs = y[held]
    ll = np.where(obs == 1, np.log(p), np.log1p(-p)).mean()
    return float(ll), float(((p > 0.5) == (obs == 1)).mean())


def run_ours(train: np.ndarray, method: str, steps: int,
             seed: int = 0) -> tuple[float, np.ndarray, dict]:
    """One coreval fit: wall seconds, plug-in probabilities (point estimates), diagnostics."""
    from coreval.irt import fit

    start = time.perf_counter()
    settings = {"num_steps": steps, "num_draws": 100 if method == "svi" else 1}
    result = fit("2pl", train, method=method, seed=seed, show_progress=False, settings=settings)
    seconds = time.perf_counter() - start
    prob = result.predict_mean(result.abilities())
    return seconds, prob, result.card["diagnostics"]


def worker(train_path: Path, method: str, steps: int, cache: str, out: Path) -> None:
    """Child-process mode: two fits (seeds 0, 1) in a fresh process, optionally with a cache."""
    if cache:
        from coreval.jax_cache import enable_compilation_cache

        enable_compilation_cache(cache)
    train = np.load(train_path)["Y"]
    result = {}
    for seed in (0, 1):
        seconds, prob, _ = run_ours(train, method, steps, seed=seed)
        result[f"seconds{seed}"] = seconds
        result[f"prob{seed}"] = prob
    np.savez(out, **result)


def run_process(train: np.ndarray, method: str, steps: int, cache: str) -> dict:
    """Run :func:`worker` in a new Python process; returns its seconds and probabilities."""
    with tempfile.TemporaryDirectory() as tmp:
        np.savez(Path(tmp) / "train.npz", Y=train)
        out = Path(tmp) / "out.npz"
        env = {**os.environ, "COREVAL_JAX_CACHE": "off", "COREVAL_PROGRESS": "0"}
        subprocess.run([sys.executable, __file__, "--worker", method, "--steps", str(steps),
                        "--cache", cache, "--train", str(Path(tmp) / "train.npz"),
                        "--out", str(out)], check=True, env=env)
        with np.load(out) as res:
            return {k: res[k] for k in res.files}


def run_pyirt(python: str, train: np.ndarray, epochs: int, model_type: str) -> dict:
    """Fit py-irt in its own venv; returns seconds (+ prob, or the divergence error)."""
    with tempfile.TemporaryDirectory() as tmp:
        np.savez(Path(tmp) / "train.npz", Y=train)
        script = Path(tmp) / "run_pyirt.py"
        script.write_text(PYIRT_SCRIPT)
        out = Path(tmp) / "out.json"
        start = time.perf_counter()
        subprocess.run([python, str(script), str(Path(tmp) / "train.npz"), str(out),
                        str(epochs), model_type], check=True, capture_output=True, text=True)
        res = json.loads(out.read_text())
        res["total"] = time.perf_counter() - start
    if "error" in res:
        return res
    n_models, n_items = train.shape
    theta = np.zeros(n_models)
    theta[res["subject_ix"]] = np.asarray(res["ability"]).reshape(-1)
    diff, disc = np.zeros(n_items), np.ones(n_items)
    diff[res["item_ix"]] = np.asarray(res["diff"]).reshape(-1)
    disc[res["item_ix"]] = np.asarray(res["disc"]).reshape(-1)
    res["prob"] = expit(disc[None, :] * (theta[:, None] - diff[None, :]))
    return res


def _spread(seconds: list[float]) -> str:
    return f"{min(seconds):.1f}-{max(seconds):.1f}" if len(seconds) > 1 else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA / "arc_challenge.npz")
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--holdout", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=3,
                        help="processes per timing (coreval) and fits (py-irt); the median "
                             "is reported, with the range")
    parser.add_argument("--pyirt-python", default=os.environ.get(
                            "COREVAL_PYIRT_PYTHON",
                            str(Path(__file__).resolve().parents[2] / "pyirt-venv" / "bin" / "python")),
                        help="python of a separate venv with py-irt ('' to skip); default "
                             "$COREVAL_PYIRT_PYTHON or ../pyirt-venv beside the repository")
    parser.add_argument("--out", type=Path,
                        default=REPO / "benchmarks" / "results" / "irt_speed.md")
    parser.add_argument("--worker", choices=("svi", "map"), help=argparse.SUPPRESS)
    parser.add_argument("--cache", default="", help=argparse.SUPPRESS)
    parser.add_argument("--train", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    os.environ.setdefault("COREVAL_PROGRESS", "0")
    if args.worker:
        worker(args.train, args.worker, args.steps, args.cache, args.out)
        return

    y = np.load(args.data)["Y"].astype(float)
    rng = np.random.default_rng(args.seed)
    held = (rng.random(y.shape) < args.holdout) & ~np.isnan(y)
    train = np.where(held, np.nan, y)
    base = np.nanmean(train)
    base_ll = float(np.mean(np.where(y[held] == 1, np.log(base), np.log1p(-base))))
    rows = [("base rate (train mean)", float("nan"), "", base_ll,
             float(max(base, 1 - base)))]

    # Each coreval measurement runs in a new Python process, as a user's script or a CLI
    # call would. "cold": JAX compiles every program (no persistent cache). "cached": a
    # second process with JAX's persistent compilation cache, filled by a first process
    # (coreval.jax_cache; the CLI turns it on). "later fit": a second fit (another seed,
    # same shapes) in the same process, as in a session or a harness grid.
    # Timings on a shared 2-core machine vary by a second or more between runs, so
    # each is the median over --repeats processes (range in the table).
    timings: dict[tuple[str, str], tuple[float, float]] = {}
    for method in ("svi", "map"):
        name = f"coreval 2PL {method.upper()} ({args.steps} steps, Adam 0.05"
        with tempfile.TemporaryDirectory() as cache:
            colds = [run_process(train, method, args.steps, "") for _ in range(args.repeats)]
            run_process(train, method, args.steps, cache)  # fills the cache
            cacheds = [run_process(train, method, args.steps, cache)
                       for _ in range(args.repeats)]
        for when, runs, key in (("cold", colds, "0"), ("cached", cacheds, "0"),
                                ("later", colds, "1")):
            secs = [float(r[f"seconds{key}"]) for r in runs]
            seconds = float(np.median(secs))
            ll, acc = heldout_metrics(runs[0][f"prob{key}"], y, held)
            label = f"{name}; {WHEN[when]})"
            rows.append((label, seconds, _spread(secs), ll, acc))
            timings[(method, when)] = (seconds, ll)
            print(f"{label}: {seconds:.1f} s ({_spread(secs)}), held-out LL {ll:.4f}, "
                  f"acc {acc:.3f}", flush=True)

    notes = []
    if args.pyirt_python:
        for model_type in ("multidim_2pl", "2pl"):
            label = f"py-irt {model_type}" + (" dims=1" if model_type == "multidim_2pl" else
                                                " hierarchical")
            label += f" ({args.steps} epochs, lr 0.1)"
            try:
                fits = [run_pyirt(args.pyirt_python, train, args.steps, model_type)
                        for _ in range(1 if model_type == "multidim_2pl" else args.repeats)]
                res = fits[0]
            except (OSError, subprocess.CalledProcessError) as exc:
                detail = (getattr(exc, "stderr", "") or str(exc)).strip().splitlines()
                notes.append(f"{label} could not run: {detail[-1] if detail else exc}")
                print(notes[-1], flush=True)
                continue
            if "error" in res:
                notes.append(f"{label} diverged after {res['seconds']:.1f} s: {res['error']}")
                print(notes[-1], flush=True)
                continue
            ll, acc = heldout_metrics(res["prob"], y, held)
            secs = [f["seconds"] for f in fits]
            seconds = float(np.median(secs))
            rows.append((label, seconds, _spread(secs), ll, acc))
            timings.setdefault("py-irt", (seconds, ll, label))
            print(f"{label}: {seconds:.1f} s fit ({_spread(secs)}), held-out LL {ll:.4f}, "
                  f"acc {acc:.3f}", flush=True)

    lines = [
        "# IRT fitting speed: coreval vs py-irt (same run)", "",
        *provenance(f"python benchmarks/irt_speed.py --steps {args.steps} --repeats {args.repeats}"
                    + (f" --pyirt-python {args.pyirt_python}" if args.pyirt_python
                       else " --pyirt-python ''")),
        f"Data: `{args.data.name}` {y.shape[0]} × {y.shape[1]}, {held.sum()} entries "
        f"({args.holdout:.0%}) held out (seed {args.seed}). Held-out log-likelihood is the "
        "mean per held-out entry with plug-in point estimates (MAP mode, SVI guide median; "
        "py-irt: its variational locations).", "",
        f"Fit seconds: median over {args.repeats} new processes (coreval) or fits (py-irt "
        "2pl), with the range; the time of the fit call, without importing the libraries.", "",
        "| fit | fit seconds | range | held-out LL / entry | held-out acc |",
        "|---|---|---|---|---|",
    ]
    for label, fit_s, spread, ll, acc in rows:
        lines.append(f"| {label} | {fit_s:.1f} | {spread} | {ll:.4f} | {acc:.3f} |")
    lines.append("")
    if "py-irt" in timings:
        ref_s, ref_ll, ref_label = timings["py-irt"]
        for method in ("svi", "map"):
            ratios = ", ".join(f"{ref_s / timings[(method, when)][0]:.1f}× {WHEN[when]}"
                               for when in WHEN)
            ll = timings[(method, "cold")][1]
            lines.append(f"- {method.upper()} vs {ref_label} (target ≥ 5×): {ratios}; "
                         f"held-out LL {ll - ref_ll:+.4f} per entry vs py-irt.")
    lines.extend(f"- {note}" for note in notes)
    lines.append(f"- Machine load while running: {os.getloadavg()[0]:.1f} (1-min average, "
                 f"{os.cpu_count()} cores). JAX compilation in a cold process (cold minus "
                 "later fit): " + ", ".join(
                     f"{m.upper()} {timings[(m, 'cold')][0] - timings[(m, 'later')][0]:.1f} s"
                     for m in ("svi", "map")) + ".")
    lines.append(f"- Python {sys.version.split()[0]}.")
    write_markdown(args.out, "\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
