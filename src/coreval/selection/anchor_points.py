"""Anchor points: k-medoids of items in correlation space (Vivek et al. 2024)."""

from __future__ import annotations

import kmedoids
import numpy as np

from coreval.base import Coreset, Selector
from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError


def item_correlations(values: np.ndarray) -> np.ndarray:
    """Pearson correlation between columns over the rows; undefined (constant) pairs → 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        corr = np.corrcoef(values, rowvar=False)
    corr = np.atleast_2d(corr)
    corr[np.isnan(corr)] = 0.0
    return corr


class AnchorPointsSelector(Selector):
    """k-medoids on ``1 − corr(items)`` over the source models; weights = cluster sizes.

    Items are points whose dissimilarity is one minus their Pearson correlation
    across source models (NaN correlations of constant items count as 0). FasterPAM
    (Schubert & Rousseeuw 2021, the maintained ``kmedoids`` package) finds ``k``
    medoids from a random initialisation; duplicate medoids are removed; every item
    is assigned to the medoid it correlates with most (ties: first medoid in the
    reference's order), and medoid ``j`` gets weight ``|cluster j| / n_items``, so
    that ``Σⱼ wⱼ xⱼ`` estimates the mean score.

    Seeding reproduces the reference, which calls ``kmedoids.fasterpam(diss, k,
    init="random")`` after ``np.random.seed(seed)``: the initial medoids are
    ``RandomState(seed).choice(n_items, k, replace=False)``. For fewer than 1000
    items the package then runs the deterministic single-thread FasterPAM; from
    1000 items on it runs the parallel variant, seeded from the same stream, on
    ``os.cpu_count()`` threads. We pin that to 2 threads (the reference machine's
    count; its numbers are reproduced exactly on gsm / med_qa / arc_challenge) so
    the result does not depend on the machine.

    Parameters
    ----------
    k : int
        Number of medoids (the coreset can be smaller after de-duplication).
    seed : int
        Seed of the initial medoids.
    max_iter : int
        FasterPAM iteration limit (package default 100).
    n_cpu : int, optional
        FasterPAM threads. Default: the reference's rule, 1 below 1000 items, else 2.

    References
    ----------
    Vivek, R., Ethayarajh, K., Yang, D. & Kiela, D. (2024). "Anchor Points:
    Benchmarking Models with Much Fewer Examples". EACL.
    Schubert, E. & Rousseeuw, P. J. (2021). "Fast and eager k-medoids clustering".
    *Information Systems* 101.
    """

    def __init__(self, k: int = 10, seed: int = 0, max_iter: int = 100,
                 n_cpu: int | None = None) -> None:
        self.k = k
        self.seed = seed
        self.max_iter = max_iter
        self.n_cpu = n_cpu

    def _select(self, source: ScoreMatrix, k: int) -> Coreset:
        if not source.fully_observed:
            raise ValidationError(
                "AnchorPointsSelector needs a fully observed source matrix; "
                f"{int((~source.observed).sum())} entries are NaN"
            )
        corr = item_correlations(source.values)
        diss = 1.0 - corr
        n = source.n_items
        n_cpu = (1 if n < 1000 else 2) if self.n_cpu is None else int(self.n_cpu)
        # Legacy RandomState: the reference draws the initial medoids (and, for the
        # parallel variant, its shuffling seed) from the seeded global legacy stream.
        rs = np.random.RandomState(self.seed)
        if n_cpu == 1:
            init = rs.choice(n, k, replace=False).astype(np.uintp)
            result = kmedoids.fasterpam(diss, init, max_iter=self.max_iter, n_cpu=1)
        else:
            result = kmedoids.fasterpam(diss, k, max_iter=self.max_iter, init="random",
                                        random_state=rs, n_cpu=n_cpu)
        # Duplicates are removed with a Python set on purpose: its iteration order
        # is the reference's medoid order, which decides argmax ties below
        # (e.g. constant items, whose correlations are all 0, join the first medoid).
        medoids = np.array(list(set(np.asarray(result.medoids).tolist())), dtype=np.intp)
        members = np.argmax(corr[medoids, :], axis=0)
        sizes = np.bincount(members, minlength=len(medoids))
        # each cluster's share of the summary score (of the items, without groups)
        weights = np.bincount(members, weights=source.item_weights(), minlength=len(medoids))
        return Coreset.from_indices(source, medoids, weights=weights, method="anchor-points",
                                    seed=self.seed, n_iter=int(result.n_iter),
                                    loss=float(result.loss), cluster_sizes=sizes)
