"""The ``coreval`` command line: demo, compare, select, predict, fit, report.

Errors are printed as one line (``error: ...``) with exit code 2; no tracebacks
for bad input.
"""

from __future__ import annotations

import ast
import functools
import json
import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from coreval.errors import CorevalError

app = typer.Typer(
    name="coreval",
    help="Efficient LLM evaluation: pick a small coreset of items and predict full scores "
    "with calibrated intervals.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _setup() -> None:
    """Runs before every command: headless plots, and JAX's persistent compilation cache
    (later runs load compiled programs instead of compiling; see coreval.jax_cache)."""
    os.environ.setdefault("MPLBACKEND", "Agg")
    from coreval.jax_cache import enable_compilation_cache

    enable_compilation_cache()


def _one_line_errors(func):
    """Turn coreval's validation errors (and missing files) into one-line messages, exit 2."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except (CorevalError, FileNotFoundError) as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from None

    return wrapper


def _csv_list(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def _budgets(value: str) -> list[float]:
    out = []
    for v in _csv_list(value):
        try:
            out.append(float(v))
        except ValueError:
            raise CorevalError(f"budget {v!r} is not a number") from None
    return out


def _options(pairs: list[str] | None) -> dict[str, object]:
    """``["degree=3", "scheme=mid"]`` → ``{"degree": 3, "scheme": "mid"}`` (Python literals or text)."""
    out: dict[str, object] = {}
    for pair in pairs or []:
        key, sep, text = pair.partition("=")
        if not sep or not key.strip():
            raise CorevalError(f"--option takes KEY=VALUE, got {pair!r}")
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            value = text
        out[key.strip()] = value
    return out


OptionsOpt = Annotated[list[str] | None, typer.Option(
    "--option", "-o", help="Method option KEY=VALUE, repeatable (e.g. -o degree=3); "
    "an option the method does not accept is an error listing the accepted ones.")]


def _read_responses(path: Path):
    """A new model's responses: a CSV with columns item, score -> Series indexed by item id."""
    import pandas as pd

    try:
        table = pd.read_csv(path)
    except (UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise CorevalError(f"cannot read {path} as CSV: {str(exc).splitlines()[0]}") from None
    if not {"item", "score"} <= set(table.columns):
        raise CorevalError(f"{path} needs columns item, score; got {list(table.columns)}")
    try:
        scores = table["score"].to_numpy(float)
    except ValueError:
        raise CorevalError(f"{path}: column score must be numeric") from None
    return pd.Series(scores, index=table["item"].astype(str))


def _load(data: str, data_dir: Path | None):
    from coreval.data.io import load_matrix

    return load_matrix(data, data_dir=data_dir)


# Options shared by the commands that refit a method to score a new model (predict, report).
ResponsesArg = Annotated[Path, typer.Argument(help="CSV of the new model: columns item, score.")]
RefitMethodOpt = Annotated[str, typer.Option(help="Method name (same as used for select).")]
RefitBudgetOpt = Annotated[float, typer.Option(help="Same budget as used for select.")]
RefitSeedOpt = Annotated[int, typer.Option(help="Same seed as used for select.")]

DataDirOpt = Annotated[
    Path | None,
    typer.Option("--data-dir", help="Folder where bare dataset names are looked up "
                 "(default: $COREVAL_DATA_DIR)."),
]


@app.command()
@_one_line_errors
def demo(
    out: Annotated[Path, typer.Option(help="Output folder.")] = Path("coreval-demo"),
    methods: Annotated[str, typer.Option(help="Comma-separated methods.")] =
        "random,random+,random++,anchor-points++,mrmr++,gp-irt,irt-bayes",
    budget: Annotated[float, typer.Option(help="Budget: fraction (<1) or count.")] = 0.1,
    seeds: Annotated[int, typer.Option(help="Number of seeds (0..n-1).")] = 3,
    n_models: Annotated[int, typer.Option(help="Simulated models.")] = 150,
    n_items: Annotated[int, typer.Option(help="Simulated items.")] = 400,
    train_models: Annotated[int, typer.Option(help="Source models per split.")] = 40,
    n_jobs: Annotated[int, typer.Option(help="Parallel jobs.")] = 1,
) -> None:
    """Simulated leaderboard → several methods at a 10% budget → table and plot.

    Example: ``coreval demo --out coreval-demo``. Writes results.parquet,
    summary.md and true_vs_predicted.png with 90% intervals into OUT.
    """
    from coreval.demo import run_demo

    run_demo(out=out, methods=_csv_list(methods), budget=budget, seeds=list(range(seeds)),
             n_models=n_models, n_items=n_items, n_source=train_models, n_jobs=n_jobs)


@app.command()
@_one_line_errors
def compare(
    data: Annotated[list[str], typer.Argument(help="Datasets: paths or bare names.")],
    methods: Annotated[str, typer.Option(help="Comma-separated method names.")] = "random,random+",
    budget: Annotated[str, typer.Option(help="Comma-separated budgets; <1 fraction, >=1 count.")]
        = "0.05,0.1",
    train_models: Annotated[str, typer.Option(
        "--train-models", help="Comma-separated numbers of source models ('all' = every "
        "non-target model).")] = "30",
    seeds: Annotated[int, typer.Option(help="Seeds 0..n-1 (ignored by kfold: every fold runs).")]
        = 5,
    split: Annotated[str | None, typer.Option(
        help="binned (default for item level), random, kfold (default for benchmark level), lofo."
    )] = None,
    folds: Annotated[int, typer.Option(help="Folds for --split kfold.")] = 10,
    holdout: Annotated[float, typer.Option(help="Holdout fraction for --split kfold.")] = 0.1,
    out: Annotated[Path, typer.Option(help="Parquet file with one row per run.")] =
        Path("results.parquet"),
    n_jobs: Annotated[int, typer.Option(help="Parallel joblib workers.")] = 1,
    calibration: Annotated[str, typer.Option(
        help="Intervals: 'native' (the predictor's own) or 'cv' (split conformal on "
        "out-of-fold residuals with the selection redone in each fold).")] = "native",
    scheduler: Annotated[str | None, typer.Option(
        help="dask.distributed scheduler ADDRESS; runs the grid on that cluster.")] = None,
    option: OptionsOpt = None,
    data_dir: DataDirOpt = None,
) -> None:
    """Run a grid of datasets × methods × budgets × source sizes × seeds.

    Example: ``coreval compare mmlu gsm --methods random+,mrmr++ --budget 0.05,0.1
    --train-models 30 --seeds 5 --split binned --data-dir ../shared/data --out r.parquet``.
    Killed runs resume: finished cells are skipped.
    """
    from coreval.harness import format_summary, run_grid

    matrices = {}
    for d in data:
        m = _load(d, data_dir)
        matrices[m.name or Path(d).stem] = m
    levels = {m.level for m in matrices.values()}
    if split is None:
        split = "kfold" if levels == {"benchmark"} else "binned"
    n_source = [None if v == "all" else int(v) for v in _csv_list(train_models)]
    if split == "kfold" and train_models == "30":
        n_source = [None]
    # k-fold runs every fold (the split's seed is the fold index); other splits use seeds 0..n-1.
    seed_list = None if split == "kfold" else list(range(seeds))
    df = run_grid(matrices, _csv_list(methods), _budgets(budget), n_source=n_source,
                  seeds=seed_list, split=split, folds=folds, holdout=holdout, out=out,
                  n_jobs=n_jobs, scheduler=scheduler,
                  method_options={m: {**_options(option), "calibration": calibration}
                                  for m in dict.fromkeys(_csv_list(methods))})
    typer.echo(format_summary(df))
    typer.echo(f"wrote {out}")


@app.command("select")
@_one_line_errors
def select_cmd(
    data: Annotated[str, typer.Argument(help="Score matrix: path or bare name.")],
    method: Annotated[str, typer.Option(help="Method name.")] = "random++",
    budget: Annotated[float, typer.Option(help="Fraction (<1) or count (>=1).")] = 0.1,
    seed: Annotated[int, typer.Option(help="Seed.")] = 0,
    out: Annotated[Path | None, typer.Option(help="CSV to write (item, position, weight).")] = None,
    option: OptionsOpt = None,
    data_dir: DataDirOpt = None,
) -> None:
    """Choose which items (or benchmarks) to run on a new model.

    Example: ``coreval select mmlu --method mrmr++ --budget 100 --out coreset.csv``.
    """
    import pandas as pd

    from coreval.api import select

    fitted = select(_load(data, data_dir), method, budget, seed=seed, **_options(option))
    cs = fitted.coreset
    table = pd.DataFrame({"item": cs.items, "position": cs.indices,
                          "weight": cs.weights if cs.weights is not None else float("nan")})
    if out is not None:
        from coreval._atomic import write_atomic

        write_atomic(out, lambda p: table.to_csv(p, index=False))
        typer.echo(f"wrote {len(table)} items to {out}")
    else:
        typer.echo(table.to_csv(index=False), nl=False)


@app.command("predict")
@_one_line_errors
def predict_cmd(
    data: Annotated[str, typer.Argument(help="Score matrix of known models: path or bare name.")],
    responses: ResponsesArg,
    method: RefitMethodOpt = "random++",
    budget: RefitBudgetOpt = 0.1,
    seed: RefitSeedOpt = 0,
    calibration: Annotated[str, typer.Option(
        help="Intervals: 'native' (the predictor's own) or 'cv' (split conformal on "
        "out-of-fold residuals with the selection redone in each fold).")] = "native",
    option: OptionsOpt = None,
    data_dir: DataDirOpt = None,
) -> None:
    """Predict a new model's full score (with a 90% interval) from its coreset responses.

    Refits the method with the same seed, so the coreset is the one ``coreval select``
    printed. Example: ``coreval predict mmlu new_model.csv --method mrmr++ --budget 100``.
    """
    from coreval.api import select

    series = _read_responses(responses)
    fitted = select(_load(data, data_dir), method, budget, seed=seed, calibration=calibration,
                    **_options(option))
    pred = fitted.predict(series)
    result = {"method": method, "k": len(fitted.coreset), "score": float(pred.mean.ravel()[0]),
              "lower": float(pred.lower.ravel()[0]), "upper": float(pred.upper.ravel()[0]),
              "level": pred.level, "interval": pred.interval}
    typer.echo(json.dumps(result, indent=2))


@app.command("fit")
@_one_line_errors
def fit_cmd(
    data: Annotated[str, typer.Argument(help="Wide CSV of 0/1 responses (rows = respondents), a "
                                        "pattern × frequency table with a 'freq' column, or any "
                                        "supported score matrix.")],
    model: Annotated[str, typer.Option(help="1pl, 2pl, 3pl, beta, lego, hetero, beta3.")] = "2pl",
    dims: Annotated[int, typer.Option(help="Latent dimensions.")] = 1,
    method: Annotated[str, typer.Option(help="mml, map, svi or nuts.")] = "map",
    priors: Annotated[str, typer.Option(help="weak or hierarchical.")] = "weak",
    seed: Annotated[int, typer.Option(help="Seed.")] = 0,
    out: Annotated[Path, typer.Option(help="Output folder models/NAME.")] = Path("models/fit"),
    data_dir: DataDirOpt = None,
) -> None:
    """Fit an IRT model and write models/NAME (posterior.nc, card.json, items.csv).

    Example: ``coreval fit LSAT7.csv --model 2pl --method mml --out models/lsat7``.
    """
    from coreval.data.io import load_matrix
    from coreval.irt import fit

    matrix = load_matrix(data, data_dir=data_dir)
    result = fit(model, matrix, method=method, dims=dims, priors=priors, seed=seed)
    path = result.save(out)
    typer.echo(result.items.head(20).to_string(index=False))
    typer.echo(f"wrote {path}")


@app.command("report")
@_one_line_errors
def report_cmd(
    data: Annotated[str, typer.Argument(help="Score matrix of known models: path or bare name.")],
    responses: ResponsesArg,
    method: RefitMethodOpt = "random++",
    budget: RefitBudgetOpt = 0.1,
    seed: RefitSeedOpt = 0,
    name: Annotated[str, typer.Option(help="Name of the new model on the card.")] = "new model",
    level: Annotated[float, typer.Option(help="Interval level.")] = 0.9,
    out: Annotated[Path, typer.Option(help="Card file: .md (Markdown) or .html (HTML).")] =
        Path("score_card.md"),
    data_dir: DataDirOpt = None,
) -> None:
    """Write an uncertainty-aware score card (score, interval, rank, subtasks) for a new model.

    Refits the method with the same seed, so the coreset is the one ``coreval select``
    printed. Example: ``coreval report mmlu new.csv --method irt-bayes --budget 100
    --out card.html``.
    """
    from coreval.report.score_card import score_card

    card = score_card(_load(data, data_dir), _read_responses(responses), method=method,
                      budget=budget, seed=seed, model_name=name, level=level, out=out)
    typer.echo(json.dumps(card.summary(), indent=2))
    typer.echo(f"score card written to {out}")


def main() -> None:  # pragma: no cover - ``python -m coreval.cli``
    sys.exit(app())


if __name__ == "__main__":  # pragma: no cover
    main()
