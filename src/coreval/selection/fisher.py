"""Fisher-information item selection of metabench (Kipnis et al. 2025), as in the mRMR paper.

Fit a 2PL on the source models, split the source abilities into ``k``
quantile bins and take, in each bin, the not-yet-chosen item with the highest
Fisher information averaged over the bin's models. Like the reference, bins
without models are skipped, so fewer than ``k`` items can come back; with
``fill=True`` the remaining places go to the items with the highest Fisher
information averaged over all source abilities (used by irt-bayes, which wants
exactly ``k`` informative items).

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
from coreval.irt.source_fit import METABENCH_FIT, fit_source_irt, logistic_item_params


def quantile_bin_items(theta: np.ndarray, info: np.ndarray, k: int) -> list[int]:
    """One most-informative item per ability-quantile bin (metabench's rule).

    Parameters
    ----------
    theta : ndarray, shape (n_models,)
        Source abilities.
    info : ndarray, shape (n_models, n_items)
        Fisher information of every item at every source ability.
    k : int
        Number of bins: edges ``quantile(theta, linspace(0, 1, k + 1))``; bin j holds
        the models with ``edge_j <= θ < edge_{j+1}`` (as the reference, the top
        edge is exclusive even in the last bin, so the best model falls in no bin).

    Returns
    -------
    list of int
        Chosen item positions in bin order; empty bins are skipped and an item
        chosen in an earlier bin is passed over for the next best one.
    """
    theta = np.asarray(theta, dtype=float).reshape(-1)
    edges = np.quantile(theta, np.linspace(0.0, 1.0, k + 1))
    chosen: list[int] = []
    for lo, hi in itertools.pairwise(edges):
        in_bin = (theta >= lo) & (theta < hi)
        if not in_bin.any():
            continue
        mean_info = info[in_bin].mean(axis=0)
        for item in np.argsort(mean_info, kind="stable")[::-1]:
            if int(item) not in chosen:
                chosen.append(int(item))
                break
        if len(chosen) >= k:
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
    fill : bool
        Top up to ``k`` items with the highest mean information over all source
        abilities (off for metabench, as the reference).
    irt : IRTFitSpec
        The IRT fit of the source models: a 1-D logistic model. The default
        (:data:`coreval.irt.source_fit.METABENCH_FIT`) is a MAP fit of the 2PL with
        weakly-informative priors; the reference uses two rounds of alternating joint
        maximum likelihood instead.
    show_progress : bool, optional

    Attributes
    ----------
    fit_ : IRTFit
        Also in the caller's fit cache, for predictors that ask for the same fit.
    theta_ : ndarray, shape (n_source,)
        Source abilities (posterior means of the fit) that define the bins.
    """

    needs_binary = True

    def __init__(self, k: int = 10, *, seed: int = 0, fill: bool = False,
                 irt: IRTFitSpec = METABENCH_FIT, show_progress: bool | None = None) -> None:
        self.k = k
        self.seed = seed
        self.fill = fill
        self.irt = irt
        self.show_progress = show_progress

    def _select(self, source: ScoreMatrix, k: int) -> Coreset:
        from coreval.irt.information import item_information

        if self.irt.dims != 1:
            raise ValidationError(f"FisherInformationSelector bins a 1-D ability; "
                                  f"got an IRT fit with dims={self.irt.dims}")
        irt_fit = fit_source_irt(source, self.irt, seed=self.seed, cache=self.cache_,
                                 show_progress=self.show_progress)
        a, d, c = logistic_item_params(irt_fit)
        theta = np.asarray(irt_fit.abilities(), dtype=float)[:, 0]
        if not (np.isfinite(theta).all() and np.isfinite(a).all() and np.isfinite(d).all()):
            raise ValidationError("the IRT fit of FisherInformationSelector returned NaN")
        info = np.asarray(item_information(theta, a[:, 0], d, c), dtype=float)  # (n, items)
        chosen = quantile_bin_items(theta, info, k)
        n_binned = len(chosen)
        if self.fill and len(chosen) < k:
            overall = info.mean(axis=0)
            rest = [int(i) for i in np.argsort(overall, kind="stable")[::-1]
                    if int(i) not in chosen]
            chosen.extend(rest[: k - len(chosen)])
        self.fit_ = irt_fit
        self.theta_ = theta
        indices = np.sort(np.asarray(chosen, dtype=np.intp))  # the reference sorts its coreset
        return Coreset.from_indices(source, indices, method="fisher-information",
                                    n_binned=n_binned, binned=np.asarray(chosen[:n_binned]))
