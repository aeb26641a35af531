"""What the command line reads: data sets, a new model's responses (CSV or lm-eval logs)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from coreval.errors import CorevalError


def read_responses(path: Path, lm_eval: dict | None = None):
    """A new model's responses -> Series indexed by item id.

    A CSV with columns item, score (a ``model`` column, as in a long table, may name one
    model; ``.parquet`` is read as Parquet), or a folder of the new model's lm-eval logs (its
    items are ``task/doc_id``, as in a matrix read from logs).
    """
    import pandas as pd

    from coreval.data.tables import MISSING_SCORES

    if path.is_dir():
        return logs_series(read_one_model_logs(path, lm_eval))
    try:
        table = (pd.read_parquet(path) if path.suffix.lower() == ".parquet"
                 else pd.read_csv(path, dtype={"item": str, "model": str},
                                  keep_default_na=False,  # item ids such as "NA" are ids
                                  na_values={"score": sorted(MISSING_SCORES)}))
    except (UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise CorevalError(f"cannot read {path} as CSV: {str(exc).splitlines()[0]}") from None
    if not {"item", "score"} <= set(table.columns):
        hint = ("; this is a coreset file written by coreval select: RESPONSES are the new "
                "model's scores on those items" if {"item", "position"} <= set(table.columns)
                else "")
        raise CorevalError(f"{path} needs columns item, score; got {list(table.columns)}{hint}")
    if "model" in table.columns:  # a long table (model, item, score) of one model
        models = table["model"].dropna().unique()
        if len(models) > 1:
            raise CorevalError(f"{path} holds the scores of {len(models)} models "
                               f"({', '.join(map(str, models[:3]))}); give one model's")
        table["item"] = table["item"].astype(str)
    if table["item"].isna().any() or table["item"].duplicated().any():
        dup = table["item"][table["item"].duplicated()].dropna().unique()
        raise CorevalError(f"{path}: every row needs its own item id"
                           + (f" (repeated: {', '.join(map(str, dup[:5]))})" if len(dup) else ""))
    scores = pd.to_numeric(table["score"], errors="coerce")
    bad = scores.isna() & table["score"].notna()
    if bad.any():
        raise CorevalError(f"{path}: column score must be numeric; got "
                           + ", ".join(f"{i}={v!r}" for i, v in
                                       zip(table["item"][bad][:5], table["score"][bad][:5],
                                           strict=True)))
    return pd.Series(scores.to_numpy(float), index=table["item"].astype(str))


def read_one_model_logs(path: Path, lm_eval: dict | None):
    """The lm-eval logs of one (new) model in folder ``path``, as a one-row matrix."""
    from coreval.data.lm_eval import read_lm_eval

    logs = read_lm_eval(path, **{**(lm_eval or {}), "strict": False})
    if logs.n_models != 1:
        raise CorevalError(f"{path} holds the logs of {logs.n_models} models "
                           f"({', '.join(map(str, logs.models[:3]))}); give one model's "
                           "folder")
    return logs


def source_logs_options(matrix, lm: dict) -> dict[str, object]:
    """How ``matrix``'s lm-eval logs were read: each task's metric, the filter, doc hashes.

    Empty when the matrix does not come from lm-eval logs.
    """
    meta = matrix.item_meta
    if meta is None or not {"group", "metric"} <= set(meta.columns):
        return {}
    out: dict[str, object] = {
        "metric": dict(zip(meta["group"].astype(str), meta["metric"].astype(str), strict=True)),
        "filter": lm.get("filter")}
    if "doc_hash" in meta.columns:
        hashes = meta["doc_hash"].dropna()
        out["doc_hash"] = {str(k): str(v) for k, v in hashes.items()}
    return out


def same_metric(source: dict[str, str], given: object) -> dict[str, str]:
    """The source's metric per task, with ``--metric`` allowed only where it agrees.

    A new model scored with another metric than its source models (``acc`` against
    ``acc_norm``) gives a wrong score, so a disagreement is an error.
    """
    if given is None:
        return dict(source)
    asked = given if isinstance(given, dict) else dict.fromkeys(source, given)
    differ = [f"{t}: {asked[t]} (source: {source[t]})" for t in asked
              if t in source and asked[t] != source[t]]
    if differ:
        raise CorevalError(f"--metric differs from the metric the source logs were read with "
                           f"({'; '.join(differ[:3])}); the new model must be scored alike")
    return {**source, **asked}


def read_new_logs(path: Path, source_lm: dict, lm: dict):
    """A new model's lm-eval logs, read with the source's metric per task and filter.

    Only the tasks in ``path`` are read (its logs usually hold just the coreset's tasks, so
    ``--tasks`` of the source does not apply), and a document whose ``doc_hash`` differs
    from the source's is an error.
    """
    from coreval.data.lm_eval import find_sample_files

    if not source_lm:  # the source is no lm-eval matrix: read as asked
        return logs_series(read_one_model_logs(path, {k: v for k, v in lm.items()
                                                        if k != "tasks"}))
    found = {f.task for f in find_sample_files(path)}
    metric = same_metric(source_lm.get("metric") or {}, lm.get("metric"))
    given_filter, source_filter = lm.get("filter"), source_lm.get("filter")
    if given_filter and source_filter and given_filter != source_filter:
        raise CorevalError(f"--filter {given_filter!r} differs from the source logs' "
                           f"{source_filter!r}")
    tasks = sorted(t for t in found if t in metric)  # other tasks are not in the source
    if not tasks:
        raise CorevalError(f"{path}: no logs of the source's tasks ({', '.join(sorted(metric)[:5])})")
    options: dict[str, object] = {"metric": {t: metric[t] for t in tasks}, "tasks": tasks}
    if given_filter or source_filter:
        options["filter"] = given_filter or source_filter
    logs = read_one_model_logs(path, options)
    check_doc_hashes(source_lm.get("doc_hash") or {}, logs, path)
    return logs_series(logs)


def new_model_responses(path: Path, source, lm: dict):
    """A new model's responses to ``source``'s items: a CSV, or its lm-eval logs read as the
    source's were (:func:`read_new_logs`)."""
    if path.is_dir():
        return read_new_logs(path, source_logs_options(source, lm), lm)
    return read_responses(path, lm)


def logs_series(logs):
    """The scores of a one-model matrix read from lm-eval logs, by item id (no NaN)."""
    import pandas as pd

    row = logs.values[0]
    keep = ~np.isnan(row)
    return pd.Series(row[keep], index=logs.items[keep].astype(str))


def load_data(data: str, data_dir: Path | None, lm_eval: dict | None = None):
    from coreval.data.io import load_matrix

    return load_matrix(data, data_dir=data_dir, lm_eval=lm_eval)


def check_doc_hashes(saved: dict[str, str], logs, path: Path) -> None:
    """A coreset document whose lm-eval ``doc_hash`` differs from the source logs' is an error
    (the same ``doc_id`` names another document, e.g. in another version of the task)."""
    meta = logs.item_meta
    if not saved or meta is None or "doc_hash" not in meta.columns:
        return
    new = meta["doc_hash"].dropna()
    differ = [item for item, h in new.items() if item in saved and saved[item] != h]
    if differ:
        task, _, doc = differ[0].rpartition("/")
        raise CorevalError(f"{path}: task {task!r} doc {doc}: doc_hash differs from the source "
                           f"logs of the saved selection ({len(differ)} of {len(new)} documents "
                           "differ; another version of the task?)")
