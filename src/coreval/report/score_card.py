"""Uncertainty-aware score card of a new model: full score, rank, subtasks, as Markdown/HTML.

The card answers "how good is this model, and how sure are we" from its
responses on a coreset:

* the predicted full score with a central credible/conformal interval;
* the probability that it beats each reference (source) model, and the
  distribution of its rank among them. From the posterior draws when the
  prediction has them; otherwise from a normal approximation whose standard
  deviation is implied by the interval (:func:`coreval.report.calibration.normal_sd`).
  The card states which;
* per-subtask predictions when the items have groups (``item_meta['group']``):
  a ridge regression of each subtask score on the coreset responses, fitted on
  the reference models, with a jackknife interval from its leave-one-out
  residuals (Barber et al. 2021, section 2).

References
----------
Barber, R. F., Candès, E. J., Ramdas, A. & Tibshirani, R. J. (2021). Predictive
inference with the jackknife+. *Annals of Statistics* 49, 486-507.
"""

from __future__ import annotations

import html
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import norm
from sklearn.linear_model import RidgeCV

from coreval._atomic import write_text_atomic
from coreval.api import FittedMethod, select
from coreval.base import Prediction
from coreval.base.conformal import split_conformal_interval
from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError
from coreval.harness.summary import format_table
from coreval.report.calibration import normal_sd

#: Draws used for the rank distribution under the normal approximation.
NORMAL_DRAWS = 4000


#: Fewer source models than this: every interval rests on little data (flagged).
FEW_SOURCE_MODELS = 10
#: An interval wider than this share of the score range says little (flagged as vacuous).
VACUOUS_SHARE = 0.5


def small_data_caveats(n_source: int, lower: float, upper: float,
                       score_range: tuple[float, float] = (0.0, 1.0)) -> list[str]:
    """Plain-language warnings for a prediction made from little data.

    Flags fewer than :data:`FEW_SOURCE_MODELS` source models, and an interval that spans
    more than :data:`VACUOUS_SHARE` of the score range (then a rank or P(better) computed
    from it says little).
    """
    out = []
    if n_source < FEW_SOURCE_MODELS:
        out.append(f"only {n_source} source models: the prediction and its interval rest on "
                   "few models; evaluate more models fully or treat the numbers as rough")
    span = float(score_range[1] - score_range[0])
    if span > 0 and (upper - lower) >= VACUOUS_SHARE * span:
        out.append(f"the interval spans {100 * (upper - lower) / span:.0f}% of the score "
                   "range: it is nearly vacuous, and so are the rank and P(better) below")
    return out


@dataclass
class ScoreCard:
    """A new model's predicted score with its uncertainty.

    Attributes
    ----------
    model : str
        Name of the new model.
    dataset, method : str
        Benchmark and coreval method.
    k, n_items, n_reference : int
        Coreset size, benchmark size and number of reference models.
    prediction : Prediction
        The full-score prediction (one model).
    uncertainty : str
        ``"posterior draws"`` or ``"normal approximation from the interval"``.
    comparisons : DataFrame
        ``reference, score, p_beat`` sorted by score (descending).
    rank : dict
        ``median``, ``lower``, ``upper`` (central ``level`` interval) of the rank
        among reference models plus the new one (1 = best) and ``n`` (= n_reference + 1).
    subtasks : DataFrame or None
        ``subtask, n_items, mean, lower, upper, coreset_items`` when items have groups.
    notes : list of str
    """

    model: str
    dataset: str
    method: str
    k: int
    n_items: int
    n_reference: int
    prediction: Prediction
    uncertainty: str
    comparisons: pd.DataFrame
    rank: dict
    subtasks: pd.DataFrame | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def level(self) -> float:
        return float(self.prediction.level)

    def summary(self) -> dict:
        """The headline numbers as a flat dict (score, interval, rank)."""
        p = self.prediction
        return {"model": self.model, "dataset": self.dataset, "method": self.method,
                "k": self.k, "score": float(p.mean[0]), "lower": float(p.lower[0]),
                "upper": float(p.upper[0]), "level": self.level, "interval": p.interval,
                "rank_median": self.rank["median"], "rank_lower": self.rank["lower"],
                "rank_upper": self.rank["upper"], "n_ranked": self.rank["n"]}

    def _sections(self, top: int) -> list[tuple[str, str | pd.DataFrame]]:
        p = self.prediction
        pct = f"{self.level:.0%}"
        headline = (f"Predicted full score: **{100 * p.mean[0]:.1f}%** "
                    f"({pct} {p.interval} interval {100 * p.lower[0]:.1f}–"
                    f"{100 * p.upper[0]:.1f}%), from {self.k} of {self.n_items} items "
                    f"with `{self.method}`.")
        rank = (f"Rank among {self.n_reference} reference models and this one: "
                f"**{self.rank['median']}** of {self.rank['n']} ({pct} interval "
                f"{self.rank['lower']}–{self.rank['upper']}); uncertainty from "
                f"{self.uncertainty}.")
        comp = self.comparisons.copy()
        comp["score"] = (100 * comp["score"]).round(1)
        comp["p_beat"] = comp["p_beat"].round(3)
        comp = comp.rename(columns={"score": "score (%)", "p_beat": "P(new model better)"})
        near = _nearest(comp, self.comparisons["score"].to_numpy(), float(p.mean[0]), top)
        sections: list[tuple[str, str | pd.DataFrame]] = [
            ("", headline), ("", rank),
            (f"Closest {len(near)} reference models", near),
        ]
        if self.subtasks is not None:
            sub = self.subtasks.copy()
            for col in ("mean", "lower", "upper"):
                sub[col] = (100 * sub[col]).round(1)
            sections.append(("Subtasks (%)", sub))
        if self.notes:
            sections.append(("Notes", "\n".join(f"- {n}" for n in self.notes)))
        return sections

    def to_markdown(self, *, top: int = 10) -> str:
        """The card as GitHub Markdown (``top`` closest reference models listed)."""
        lines = [f"# Score card: {self.model} on {self.dataset}", ""]
        for title, body in self._sections(top):
            if title:
                lines += [f"## {title}", ""]
            lines += [format_table(body) if isinstance(body, pd.DataFrame) else body, ""]
        return "\n".join(lines)

    def to_html(self, *, top: int = 10) -> str:
        """The card as a standalone HTML page."""
        parts = [f"<h1>Score card: {html.escape(self.model)} on "
                 f"{html.escape(self.dataset)}</h1>"]
        for title, body in self._sections(top):
            if title:
                parts.append(f"<h2>{html.escape(title)}</h2>")
            if isinstance(body, pd.DataFrame):
                parts.append(body.to_html(index=False, border=0))
            else:
                text = html.escape(body).replace("\n", "<br>\n")
                text = _inline(text)
                parts.append(f"<p>{text}</p>")
        style = ("body{font-family:sans-serif;max-width:50em;margin:2em auto}"
                 "table{border-collapse:collapse}td,th{padding:2px 8px;"
                 "border-bottom:1px solid #ddd;text-align:right}")
        return ("<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>Score card</title>"
                f"<style>{style}</style></head><body>\n" + "\n".join(parts)
                + "\n</body></html>\n")

    def save(self, path: str | os.PathLike, *, top: int = 10) -> Path:
        """Write the card; ``.html``/``.htm`` gives HTML, anything else Markdown."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        is_html = path.suffix.lower() in (".html", ".htm")
        text = self.to_html(top=top) if is_html else self.to_markdown(top=top)
        write_text_atomic(path, text)  # a failed rewrite keeps the previous card
        return path


def _inline(text: str) -> str:
    """Markdown ``**x**`` and backquoted code to HTML (the only inline markup the card uses)."""
    for mark, tag in (("**", "b"), ("`", "code")):
        pieces = text.split(mark)
        text = "".join(f"<{tag}>{s}</{tag}>" if i % 2 else s for i, s in enumerate(pieces))
    return text


def _nearest(table: pd.DataFrame, scores: np.ndarray, score: float, top: int) -> pd.DataFrame:
    order = np.argsort(np.abs(scores - score), kind="stable")[:top]
    return table.iloc[np.sort(order)].reset_index(drop=True)


def beat_probabilities(prediction: Prediction, reference_scores, *,
                       seed: int = 0) -> tuple[np.ndarray, np.ndarray, str]:
    """Probability that the new model's full score exceeds each reference score.

    Parameters
    ----------
    prediction : Prediction
        Prediction for exactly one model.
    reference_scores : array-like of shape (n_reference,)
        Known full scores of the reference models.
    seed : int
        Seed of the normal draws (normal approximation only).

    Returns
    -------
    p_beat : ndarray (n_reference,)
        ``P(S_new > s_j)``. From draws: the fraction of draws above ``s_j`` (ties
        count one half). Normal approximation: ``Φ((mean - s_j) / sd)``.
    score_draws : ndarray (n_draws,)
        Draws of the new model's score (normal draws under the approximation).
    uncertainty : str
        Which of the two was used.
    """
    if prediction.mean.shape != (1,):
        raise ValidationError(f"a score card is for one model; got predictions of shape "
                              f"{prediction.mean.shape}")
    ref = np.asarray(reference_scores, float).ravel()
    if prediction.draws is not None:
        draws = np.asarray(prediction.draws, float).reshape(-1)
        p_beat = (draws[:, None] > ref).mean(0) + 0.5 * (draws[:, None] == ref).mean(0)
        return p_beat, draws, "posterior draws"
    sd = float(normal_sd(prediction)[0])
    mean = float(prediction.mean[0])
    if not np.isfinite(sd):
        raise ValidationError("the prediction's interval is infinite; cannot rank the model")
    sd = max(sd, 1e-12)
    p_beat = norm.cdf((mean - ref) / sd)
    draws = np.random.default_rng(seed).normal(mean, sd, NORMAL_DRAWS)
    return p_beat, draws, "normal approximation from the interval"


def rank_interval(score_draws: np.ndarray, reference_scores, level: float = 0.9) -> dict:
    """Median and central ``level`` interval of the rank (1 = best) among references + the model."""
    ref = np.asarray(reference_scores, float).ravel()
    ranks = 1 + (ref[None, :] > np.asarray(score_draws, float)[:, None]).sum(axis=1)
    alpha = 1.0 - level
    lo, med, hi = np.quantile(ranks, [alpha / 2, 0.5, 1 - alpha / 2], method="inverted_cdf")
    return {"median": int(med), "lower": int(lo), "upper": int(hi), "n": int(ref.size + 1)}


def subtask_predictions(source: ScoreMatrix, coreset_indices: np.ndarray, x: np.ndarray, *,
                        level: float = 0.9) -> pd.DataFrame | None:
    """Per-subtask scores from the coreset responses (None when items have no groups).

    For each group ``g`` a ridge regression (``RidgeCV``, penalty by efficient
    leave-one-out) of the reference models' group mean on their coreset responses
    predicts the new model's group mean; the interval is ``± q`` with ``q`` the
    conformal quantile of the absolute leave-one-out residuals (the jackknife
    interval of Barber et al. 2021, eq. 2; sklearn's ``store_cv_results`` gives
    those residuals without refitting).
    """
    groups = source.groups
    if groups is None:
        return None
    values = source.values
    xs = values[:, coreset_indices]
    keep = ~np.isnan(xs).any(axis=1)
    rows = []
    for g in np.unique(groups):
        cols = groups == g
        with np.errstate(invalid="ignore"):
            y = np.nanmean(values[:, cols], axis=1)
        ok = keep & np.isfinite(y)
        if ok.sum() < 3:
            continue
        ridge = RidgeCV(alphas=np.logspace(-3, 3, 13), store_cv_results=True)
        ridge.fit(xs[ok], y[ok])
        alpha_pos = int(np.flatnonzero(np.isclose(ridge.alphas, ridge.alpha_))[0])
        loo_resid = np.sqrt(ridge.cv_results_[:, alpha_pos])
        mean = ridge.predict(x.reshape(1, -1))
        lower, upper = split_conformal_interval(mean, loo_resid, level)
        lo, hi = (np.clip(v, 0.0, 1.0) if source.is_binary else v for v in (lower, upper))
        rows.append({"subtask": g, "n_items": int(cols.sum()),
                     "coreset_items": int(cols[coreset_indices].sum()),
                     "mean": float(mean[0]), "lower": float(lo[0]), "upper": float(hi[0])})
    return pd.DataFrame(rows)


def score_card(source: ScoreMatrix, responses: Mapping[str, float] | pd.Series | np.ndarray, *,
               method: str = "random+", budget: float = 0.1, fitted: FittedMethod | None = None,
               model_name: str = "new model", level: float = 0.9, seed: int = 0,
               out: str | os.PathLike | None = None, top: int = 10) -> ScoreCard:
    """Predict a new model's full score from its coreset responses and build its score card.

    Parameters
    ----------
    source : ScoreMatrix
        Scores of the reference (already evaluated) models.
    responses : mapping item id -> score, Series, or array in coreset order
        The new model's scores on the coreset items. Items outside the coreset are
        ignored when keyed by id (so a full response vector may be passed).
    method, budget, seed
        How the coreset is chosen (``coreval.select``) when ``fitted`` is None.
        The same seed gives the same coreset, so the coreset the model was run on can
        be recomputed.
    fitted : FittedMethod, optional
        An already fitted method on ``source`` (its coreset is used).
    model_name : str
        Name of the new model on the card.
    level : float
        Nominal level of the score and rank intervals.
    out : path, optional
        Write the card there (``.md`` Markdown, ``.html`` HTML).
    top : int
        Number of closest reference models listed on the card.

    Returns
    -------
    ScoreCard
    """
    if not 0.0 < float(level) < 1.0:
        raise ValidationError(f"level must be in (0, 1), got {level!r}")
    if not isinstance(source, ScoreMatrix):
        raise ValidationError(f"score_card expects a ScoreMatrix, got {type(source).__name__}")
    if fitted is None:
        fitted = select(source, method, budget, seed=seed)
    if fitted.method.task != "score":
        raise ValidationError(f"method {fitted.method.name!r} imputes benchmarks; a score card "
                              "needs a method that predicts the full score")
    # unknown item ids are an error, responses outside the coreset a warning (as in predict)
    x = np.asarray(fitted.responses_from(responses), float).reshape(1, -1)
    notes: list[str] = []
    # the method's own interval (calibration="cv" included), as `coreval predict` gives it
    pred = fitted.predict_array(x, level=level)
    if pred.interval == "normal-approx":
        notes.append(f"{level:.0%} interval: normal approximation from the method's own "
                     "interval")
    ref_scores = source.summary_scores()
    p_beat, score_draws, uncertainty = beat_probabilities(pred, ref_scores, seed=seed)
    rank = rank_interval(score_draws, ref_scores, level)
    comparisons = pd.DataFrame({"reference": source.models.astype(str), "score": ref_scores,
                                "p_beat": p_beat}).sort_values("score", ascending=False,
                                                               kind="stable")
    subtasks = subtask_predictions(source, fitted.coreset.indices, x[0], level=level)
    if subtasks is not None:
        notes.append("subtask intervals: ridge on the coreset with a leave-one-out jackknife "
                     "interval")
    if fitted.model_check is not None:  # the IRT methods' criticism on the source models
        notes.extend(fitted.model_check.notes())
    notes.append(f"reference models: {source.n_models} source models of {source.name or 'the data'}"
                 "; their scores are treated as exact")
    notes[:0] = [f"**caution**: {c}" for c in small_data_caveats(
        source.n_models, float(pred.lower[0]), float(pred.upper[0]), source.score_range())]
    card = ScoreCard(model=model_name, dataset=source.name or "benchmark",
                     method=fitted.method.name, k=len(fitted.coreset), n_items=source.n_items,
                     n_reference=source.n_models, prediction=pred, uncertainty=uncertainty,
                     comparisons=comparisons.reset_index(drop=True), rank=rank,
                     subtasks=subtasks, notes=notes)
    if out is not None:
        card.save(out, top=top)
    return card
