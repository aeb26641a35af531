"""Fisher-information item selection of metabench (Kipnis et al. 2025), as in the mRMR paper.

Fit a 2PL on the source models, split the source abilities into ``k``
quantile bins and take, in each bin, the not-yet-chosen item with the highest
Fisher information averaged over the bin's models. Bins without models are
skipped, so the first pass gives at most ``n_source - 1`` items: the reference
stops there (``fill="none"``), which makes every budget above ``M - 1`` items the
same coreset. By default (``fill="bins"``) the pass is repeated over the non-empty
bins, each taking its next most informative item, until ``k`` items are chosen, so
the budget is spent and the coreset still spreads over the ability range;
``fill="overall"`` tops up with the items of highest Fisher information averaged
over all source abilities (irt-bayes's Fisher coreset).

References
----------
Kipnis, A. et al. (2025). metabench: A Sparse Benchmark of Reasoning and Knowledge in
Large Language Models. ICLR.
Bowyer, S. et al. Efficient Benchmarking Is Just Feature Selection and Multiple
Regression, appendix G (the ``metabench`` method of its reference code).
"""

from __future__ import annotations

import itertools

import numpy as np

from coreval.base import Coreset, Selector
from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError
from coreval.irt.fit_spec import IRTFitSpec
from coreval.irt.source_fit import (
    METABENCH_FIT,
    fit_source_irt,
    logistic_item_params,
    resolve_irt_model,
    resolved_choice,
)

#: Ways to fill the budget beyond one pass over the ability bins.
FILL_RULES = ("bins", "overall", "none")


def quantile_bin_items(theta: np.ndarray, info: np.ndarray, k: int, *,
                       rounds: int = 1) -> list[int]:
    """Most informative items per ability-quantile bin (metabench's rule).

    Parameters
    ----------
    theta : ndarray, shape (n_models,)
        Source abilities.
    info : ndarray, shape (n_models, n_items)
        Fisher information of every item at every source ability.
    k : int
        Number of bins and the most items returned: edges ``quantile(theta,
        linspace(0, 1, k + 1))``; bin j holds the models with ``edge_j <= θ <
        edge_{j+1}`` (as the reference, the top edge is exclusive even in the last
        bin, so the best model falls in no bin).
    rounds : int
        Passes over the non-empty bins. Each pass gives every bin, in bin order, its
        most informative item not chosen yet. One pass is the reference's rule; more
        passes fill a budget larger than the number of non-empty bins.

    Returns
    -------
    list of int
        Chosen item positions in the order chosen (at most ``k``).
    """
    theta = np.asarray(theta, dtype=float).reshape(-1)
    edges = np.quantile(theta, np.linspace(0.0, 1.0, k + 1))
    rankings = []
    for lo, hi in itertools.pairwise(edges):
        in_bin = (theta >= lo) & (theta < hi)
        if in_bin.any():
            rankings.append(np.argsort(info[in_bin].mean(axis=0), kind="stable")[::-1])
    chosen: list[int] = []
    taken: set[int] = set()
    for _ in range(rounds):
        before = len(chosen)
        for ranking in rankings:
            item = next((int(i) for i in ranking if int(i) not in taken), None)
            if item is not None:
                chosen.append(item)
                taken.add(item)
            if len(chosen) >= k:
                return chosen
        if len(chosen) == before:  # every item is taken
            break
    return chosen


class FisherInformationSelector(Selector):
    """metabench item selection: most informative item per source-ability quantile bin.

    Parameters
    ----------
    k : int
        Number of bins (the coreset may be smaller, see the module notes).
    seed : int
        Seed of the IRT fit.
    fill : {"bins", "overall", "none"}
        How to fill the budget beyond the first pass over the bins: ``"bins"``
        (default) passes over the bins again; ``"overall"`` takes the items with the
        highest mean information over all source abilities; ``"none"`` stops after
        one pass, as the reference (fewer than ``k`` items when ``k >= n_source``).
    irt : IRTFitSpec
        The IRT fit of the source models: a logistic model, fitted with one latent
        dimension whatever its ``dims`` (the bins need a 1-D ability). The default
        (:data:`coreval.irt.source_fit.METABENCH_FIT`) is a MAP fit of the 2PL with
        weakly-informative priors; the reference uses two rounds of alternating joint
        maximum likelihood instead. ``model="auto"`` is resolved by
        :func:`coreval.irt.source_fit.resolve_irt_model`.
    show_progress : bool, optional

    Attributes
    ----------
    fit_ : IRTFit
        Also in the caller's fit cache, for predictors that ask for the same fit.
    theta_ : ndarray, shape (n_source,)
        Source abilities (posterior means of the fit) that define the bins.
    """

    needs_binary = True

    def __init__(self, k: int = 10, *, seed: int = 0, fill: str = "bins",
                 irt: IRTFitSpec = METABENCH_FIT, show_progress: bool | None = None) -> None:
        self.k = k
        self.seed = seed
        self.fill = fill
        self.irt = irt
        self.show_progress = show_progress

    def resolved_options(self) -> dict[str, str]:
        """``model`` / ``priors`` as ``model="auto"`` / ``priors="auto"`` chose them."""
        return resolved_choice(self.irt, self.irt_spec_)

    def _select(self, source: ScoreMatrix, k: int) -> Coreset:
        from coreval.irt.information import item_information

        if self.fill not in FILL_RULES:
            raise ValidationError(f"FisherInformationSelector fill must be one of "
                                  f"{', '.join(FILL_RULES)}; got {self.fill!r}")
        # The bins are quantiles of a 1-D ability: a spec with D > 1 (e.g. irt-bayes'
        # shared fit) is fitted with one dimension for the selection.
        spec = self.irt if self.irt.dims == 1 else self.irt.replace(dims=1)
        spec, _ = resolve_irt_model(source, spec, seed=self.seed, cache=self.cache_,
                                    show_progress=self.show_progress)
        self.irt_spec_ = spec
        irt_fit = fit_source_irt(source, spec, seed=self.seed, cache=self.cache_,
                                 show_progress=self.show_progress)
        a, d, c = logistic_item_params(irt_fit)
        theta = np.asarray(irt_fit.abilities(), dtype=float)[:, 0]
        if not (np.isfinite(theta).all() and np.isfinite(a).all() and np.isfinite(d).all()):
            raise ValidationError("the IRT fit of FisherInformationSelector returned NaN")
        info = np.asarray(item_information(theta, a[:, 0], d, c), dtype=float)  # (n, items)
        chosen = quantile_bin_items(theta, info, k)
        n_binned = len(chosen)
        if self.fill == "bins" and len(chosen) < k:
            chosen = quantile_bin_items(theta, info, k, rounds=k)
        elif self.fill == "overall" and len(chosen) < k:
            overall = info.mean(axis=0)
            rest = [int(i) for i in np.argsort(overall, kind="stable")[::-1]
                    if int(i) not in chosen]
            chosen.extend(rest[: k - len(chosen)])
        self.fit_ = irt_fit
        self.theta_ = theta
        indices = np.sort(np.asarray(chosen, dtype=np.intp))  # the reference sorts its coreset
        return Coreset.from_indices(source, indices, method="fisher-information",
                                    n_binned=n_binned, binned=np.asarray(chosen[:n_binned]))
