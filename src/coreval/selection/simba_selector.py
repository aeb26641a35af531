"""SimBA prowl as a coreval selector: ``k`` benchmarks by greedy PROXY_COVERAGE.

Subramani, Gomez & Diab (2025), "SimBA: Simplifying Benchmark Analysis Using Performance
Matrices Alone", prowl phase. The source matrix is normalised
(:mod:`coreval.simba.normalise`), the chosen similarity between benchmarks is
computed on pairwise-complete models, and benchmarks are added greedily (or by beam search)
to maximise the proxy coverage ``mean_j max_{s in S} sim(j, s)``; the first ``k`` are the coreset.
"""

from __future__ import annotations

import numpy as np

from coreval.base import Coreset, Selector
from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError
from coreval.simba.normalise import ChanceSpec, SimbaNormaliser
from coreval.simba.prowl import (
    SIMILARITY_FLOOR,
    CoverageModel,
    proxy_coverage_order,
)
from coreval.simba.similarity import check_similarity, similarity_matrix


class SimbaSelector(Selector):
    """Select ``k`` benchmarks with SimBA's prowl phase.

    Parameters
    ----------
    k : int
        Number of benchmarks.
    similarity : str
        One of the nine measures: pearson, spearman, kendall, cosine, manhattan, euclidean,
        minkowski (p = 3), wasserstein, jensenshannon.
    beam : int
        Beam width of the search (1 = greedy, the default; the beam is an issue-spec option).
    chance : float, array-like, dict or None
        Chance level per benchmark in native units (default 0).
    min_overlap : int
        Minimum number of models observed on both benchmarks for a defined similarity.
    seed : int
        Unused (the search is deterministic; ties go to the lower column); kept for the
        registry's factory signature.

    Attributes
    ----------
    coreset_ : Coreset
        ``details`` holds the proxy coverage of each prefix (``proxy``), the coverage ``eta`` of
        each prefix on the source models (``coverage``) and the similarity matrix.

    References
    ----------
    Subramani et al. (2025), SimBA, prowl phase.
    """

    def __init__(self, k: int = 5, *, similarity: str = "pearson", beam: int = 1,
                 chance: ChanceSpec = None, min_overlap: int = 3, seed: int = 0) -> None:
        self.k = k
        self.similarity = similarity
        self.beam = beam
        self.chance = chance
        self.min_overlap = min_overlap
        self.seed = seed

    def _select(self, source: ScoreMatrix, k: int) -> Coreset:
        check_similarity(self.similarity)
        if not isinstance(self.beam, int | np.integer) or self.beam < 1:
            raise ValidationError(f"beam must be a positive integer, got {self.beam!r}")
        z = SimbaNormaliser(self.chance).fit(source.values, source.items).transform(source.values)
        sim = similarity_matrix(z, self.similarity, min_overlap=self.min_overlap)
        order, proxy = proxy_coverage_order(sim, k, floor=SIMILARITY_FLOOR[self.similarity],
                                            beam=int(self.beam))
        try:
            eta = CoverageModel(z).curve(order)
        except ValidationError:  # fewer than 3 comparable models: coverage undefined
            eta = np.full(len(order), np.nan)
        return Coreset.from_indices(source, order, method=f"simba-{self.similarity}",
                                    proxy=proxy, coverage=eta, similarity=sim)
