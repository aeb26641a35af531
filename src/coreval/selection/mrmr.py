"""Minimum-redundancy maximum-relevance (mRMR) coreset selection.

Items are features and the per-model summary score is the regression target:
mRMR greedily adds the item that is most informative about the target and least
redundant with the items already chosen (Peng, Long & Ding 2005), as proposed for
LLM evaluation by Bowyer et al.

References
----------
H. Peng, F. Long, C. Ding, "Feature selection based on mutual information:
criteria of max-dependency, max-relevance, and min-redundancy", IEEE TPAMI 27(8),
2005 (MID eq. 6, MIQ eq. 7; FCD/FCQ with the F-statistic, Table 1).
S. Bowyer et al., "Efficient Benchmarking Is Just Feature Selection and Multiple
Regression" (reference code ``sambowyer/mrmr_eval``, ``benchpred/mrmr.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import numpy as np
from sklearn.decomposition import PCA
from sklearn.feature_selection import f_regression

from coreval._progress import progress
from coreval.base import Coreset, Selector
from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError
from coreval.selection.mutual_info import PluginMI, ksg_mi, lnc_mi, ross_mi

Scheme = Literal["miq", "mid", "relevance", "fcd", "fcq"]
Target = Literal["mean", "pc1"]

SCHEMES: tuple[str, ...] = ("miq", "mid", "relevance", "fcd", "fcq")
TARGETS: tuple[str, ...] = ("mean", "pc1")
#: Guard of the quotient schemes (MIQ, FCQ), as in the reference code.
QUOTIENT_EPS = 1e-10


class MRMRSelector(Selector):
    """Greedy mRMR selection of ``k`` items.

    The first item maximises the relevance ``R_j`` (dependence between item ``j``
    and the per-model target); item ``t + 1`` maximises, over the remaining items,

    * ``"miq"``: ``R_j / (D̄_j + 1e-10)`` (mutual-information quotient),
    * ``"mid"``: ``R_j − D̄_j`` (mutual-information difference),
    * ``"fcq"`` / ``"fcd"``: the same with ``R_j`` the F-statistic of regressing
      the target on item ``j`` and ``D̄_j`` the mean absolute Pearson correlation,
    * ``"relevance"``: ``R_j`` alone (no redundancy),

    where ``D̄_j`` is the mean redundancy between ``j`` and the ``t`` selected items.
    Ties go to the lowest column index.

    Parameters
    ----------
    k : int
        Number of items to select.
    scheme : {"miq", "mid", "relevance", "fcd", "fcq"}
        Selection criterion (above).
    mi_neighbors : int
        Nearest neighbours of the k-NN MI estimators (Ross for binary items against
        the continuous target; LNC/KSG for continuous items).
    target : {"mean", "pc1"}
        Relevance target: the per-model summary score, or the models' coordinates
        on the first principal component of the centred score matrix (sign chosen to
        correlate positively with the mean score).
    continuous_mi : {"lnc", "ksg"}
        MI estimator for continuous item scores.
    reference_rounding : bool
        Binary items and MI schemes only: reproduce the float32 arithmetic of the
        reference code (its score matrices are float32, run under NumPy 1): the target and the
        redundancy marginals are rounded to float32. This changes MI values by < 1e-6 but
        decides near-exact ties (frequent: scores are counts / N) exactly as there,
        so the coreset is identical to the reference's. False: float64 throughout.
    seed : int
        Accepted for the common ``(k, seed)`` factory signature; the selection is
        deterministic (the LNC tie-breaking jitter uses fixed streams).

    Attributes
    ----------
    coreset_ : Coreset
        ``details`` holds ``relevance`` (every item's ``R_j``), ``scores`` (the greedy
        criterion of each pick), ``redundancy`` (``D̄`` of each pick), ``scheme``,
        ``target`` and ``estimator``.

    Notes
    -----
    Binary items (mRMR reference behaviour): relevance by Ross (2014) k-NN MI against
    the target (0 when either class has fewer than ``mi_neighbors + 1`` models),
    redundancy by plug-in MI. Redundancy is kept as a running sum over the selected
    items and updated with the newest item only, one matrix-vector product per step,
    so a selection costs ``O(M² N)`` for relevance plus ``O(k M N)`` for redundancy.

    Continuous items (with NaN replaced by column means as in the reference code):
    every relevance and redundancy value is a k-NN estimate costing ``O(M²)``, so a
    selection costs ``O(k N M²)``: 30 models × 500 items, k = 50 takes about 2.5 s of
    CPU with LNC and 0.6 s with KSG; thousands of items × 100 models take minutes.

    Binary 50 models × 20000 items, k = 2000: about 1.5 s of CPU; arc_challenge (30
    source models × 1172 items, k = 117): about 0.02 s (``benchmarks/mrmr_speed.py``).
    """

    def __init__(self, k: int, *, scheme: Scheme = "miq", mi_neighbors: int = 5,
                 target: Target = "mean", continuous_mi: Literal["lnc", "ksg"] = "lnc",
                 reference_rounding: bool = True, seed: int = 0) -> None:
        self.k = k
        self.scheme = scheme
        self.mi_neighbors = mi_neighbors
        self.target = target
        self.continuous_mi = continuous_mi
        self.reference_rounding = reference_rounding
        self.seed = seed

    # ------------------------------------------------------------------ checks
    def _check_params(self, n_models: int) -> None:
        if self.scheme not in SCHEMES:
            raise ValidationError(f"scheme must be one of {SCHEMES}, got {self.scheme!r}")
        if self.target not in TARGETS:
            raise ValidationError(f"target must be one of {TARGETS}, got {self.target!r}")
        if self.continuous_mi not in ("lnc", "ksg"):
            raise ValidationError(
                f"continuous_mi must be 'lnc' or 'ksg', got {self.continuous_mi!r}"
            )
        k = self.mi_neighbors
        if not isinstance(k, int | np.integer) or k < 1:
            raise ValidationError(f"mi_neighbors must be a positive integer, got {k!r}")
        if self.scheme not in ("fcd", "fcq") and k >= n_models:
            raise ValidationError(
                f"mi_neighbors={k} needs more than {k} source models, got {n_models}"
            )

    # ---------------------------------------------------------------- pieces
    def _scores(self, source: ScoreMatrix) -> np.ndarray:
        values = np.array(source.values, dtype=np.float64)
        missing = np.isnan(values)
        if missing.any():
            if source.is_binary:
                raise ValidationError(
                    f"MRMRSelector needs fully observed binary scores; {int(missing.sum())} "
                    "entries are NaN"
                )
            col_means = np.nanmean(values, axis=0)
            values[missing] = col_means[np.nonzero(missing)[1]]
        return values

    def _target(self, source: ScoreMatrix, values: np.ndarray) -> np.ndarray:
        mean = source.summary_scores() if source.fully_observed else values.mean(axis=1)
        if (source.is_binary and source.groups is None and self.reference_rounding
                and self.scheme not in ("fcd", "fcq")):
            # The reference code averages float32 scores; k-NN distance ties between models
            # with equal scores (count / N) then resolve as there. 0/1 sums are exact in
            # float32, so this is the float64 mean rounded to float32.
            mean = values.astype(np.float32).mean(axis=1).astype(np.float64)
        if self.target == "mean":
            return mean
        pc1 = PCA(n_components=1).fit_transform(values)[:, 0]
        if np.corrcoef(pc1, mean)[0, 1] < 0:
            pc1 = -pc1
        return pc1

    def _relevance(self, values: np.ndarray, y: np.ndarray, binary: bool) -> np.ndarray:
        if self.scheme in ("fcd", "fcq"):
            with np.errstate(divide="ignore", invalid="ignore"):
                f_stat = f_regression(values, y)[0]
            return np.nan_to_num(f_stat, nan=0.0, posinf=0.0)
        if binary:
            return ross_mi(values, y, n_neighbors=self.mi_neighbors)
        return self._continuous_mi(values, y)

    def _continuous_mi(self, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        estimator = lnc_mi if self.continuous_mi == "lnc" else ksg_mi
        return estimator(X, y, n_neighbors=self.mi_neighbors)

    def _redundancy(self, values: np.ndarray,
                    binary: bool) -> tuple[Callable[[int, np.ndarray], np.ndarray], bool]:
        """``red(j, cols) -> redundancy of columns cols with column j``; and whether the
        function is cheap enough to evaluate on every column (``cols`` ignored)."""
        if self.scheme in ("fcd", "fcq"):
            centred = values - values.mean(axis=0)
            norms = np.linalg.norm(centred, axis=0)
            unit = np.divide(centred, norms, out=np.zeros_like(centred), where=norms > 0)
            unit_t = np.ascontiguousarray(unit.T)
            # einsum, not BLAS: a threaded gemv this small is slow on a busy machine
            return (lambda j, cols: np.abs(np.einsum("ij,j->i", unit_t, unit[:, j]))), True
        if binary:
            plugin = PluginMI(values, reference_rounding=bool(self.reference_rounding),
                              check=False)
            return (lambda j, cols: plugin.column(j)), True
        return (lambda j, cols: self._continuous_mi(values[:, cols], values[:, j])), False

    # --------------------------------------------------------------- select
    def _select(self, source: ScoreMatrix, k: int) -> Coreset:
        self._check_params(source.n_models)
        values = self._scores(source)
        binary = source.is_binary
        y = self._target(source, values)
        relevance = self._relevance(values, y, binary)
        if self.scheme in ("fcd", "fcq"):
            estimator = "f-statistic/pearson"
        else:
            estimator = "ross/plug-in" if binary else f"{self.continuous_mi}/{self.continuous_mi}"
        if self.scheme == "relevance":
            chosen = np.argsort(-relevance, kind="stable")[:k]  # stable: ties → lowest index
            return Coreset.from_indices(
                source, chosen, method="mrmr", relevance=relevance,
                scores=relevance[chosen], redundancy=np.zeros(k), scheme=self.scheme,
                target=self.target, estimator=estimator,
            )
        redundancy_of, everywhere = self._redundancy(values, binary)
        chosen, scores, mean_reds = self._greedy(relevance, redundancy_of, everywhere, k)
        return Coreset.from_indices(
            source, chosen, method="mrmr", relevance=relevance, scores=scores,
            redundancy=mean_reds, scheme=self.scheme, target=self.target, estimator=estimator,
        )

    def _greedy(self, relevance: np.ndarray, redundancy_of: Callable[[int, np.ndarray], np.ndarray],
                everywhere: bool, k: int) -> tuple[list[int], np.ndarray, np.ndarray]:
        """Greedy picks, their criterion values and their mean redundancies."""
        quotient = self.scheme in ("miq", "fcq")
        n_items = relevance.shape[0]
        available = np.ones(n_items, dtype=bool)
        red_sum = np.zeros(n_items)  # Σ redundancy(j, s) over the selected s, for every j
        chosen = [int(np.argmax(relevance))]  # first maximum: ties → lowest index
        scores = [float(relevance[chosen[0]])]
        mean_reds = [0.0]
        for step in progress(range(1, k), desc="mRMR", total=k - 1):
            newest = chosen[-1]
            available[newest] = False
            # Running sum of redundancy with the selected set: add the newest item only.
            if everywhere:
                red_sum += redundancy_of(newest, None)
            else:
                cols = np.flatnonzero(available)
                red_sum[cols] += redundancy_of(newest, cols)
            mean_red = red_sum / step
            if quotient:
                score = relevance / (mean_red + QUOTIENT_EPS)
            else:
                score = relevance - mean_red
            score[~available] = -np.inf
            best = int(np.argmax(score))  # first maximum: ties → lowest index
            chosen.append(best)
            scores.append(float(score[best]))
            mean_reds.append(float(mean_red[best]))
        return chosen, np.array(scores), np.array(mean_reds)
