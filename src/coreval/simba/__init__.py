"""The SimBA engine (Subramani, Gomez & Diab, Findings of EMNLP 2025): stalk, prowl, pounce.

Used by :class:`~coreval.selection.simba_selector.SimbaSelector` (prowl) and
:class:`~coreval.prediction.simba.SimbaPredictor` (pounce); it knows nothing of either.

* :mod:`.normalise` — chance-corrected ``[0, 1]`` scores.
* :mod:`.stalk` — pairwise dataset / model relationships (six regressors, ``R^2 >= 0.5``).
* :mod:`.similarity` — the nine similarity measures (pairwise-complete).
* :mod:`.prowl` — greedy PROXY_COVERAGE subsets, coverage ``eta``, SCAUC, ``|S*|``, baselines.
* :mod:`.pounce` — ridge / kNN / MLP prediction of the remaining datasets, AUC-MSE, noise.

Provenance. Only the paper's abstract could be read (arXiv 2510.17998v1; ACL Anthology
2025.findings-emnlp.711): the stored copies of the arXiv HTML page end at the first sentences
of Section 1 and the authors' code (github.com/nishantsubramani/simba) was not in the code
index. From the abstract: the three phases (stalk = dataset and model comparisons; prowl = a
representative subset found from raw scores alone, judged by coverage with 95 % as the target
level; pounce = predicting held-out models from the subset, judged by MSE and preserved
ranks). From the issue spec, unverifiable against the paper text: the normalisation, the
linear / exponential / power-law / none classes with ``R^2 >= 0.5``, the nine similarities,
coverage as the Pearson correlation of mean win rates, SCAUC, ``|S*|``, greedy PROXY_COVERAGE
with ``gamma`` and an optional beam, the random / greedy-min / greedy-max baselines, the
ridge / kNN / MLP(1, 2) predictors, AUC-MSE and ``sigma^2`` in {0.05, 0.1}. Everything else
(the six regressors, tie rules, distance-to-similarity maps, the proxy-coverage formula, the
SCAUC and AUC-MSE normalisations, the pounce protocol, missing-entry handling) is our choice
and is documented in the module that implements it.
"""

from coreval.simba.normalise import SimbaNormaliser, chance_vector, normalise_scores
from coreval.simba.pounce import (
    REGRESSORS,
    auc_mse,
    make_regressor,
    pounce_curve,
    pounce_mse,
)
from coreval.simba.prowl import (
    COVERAGE_TARGET,
    ProwlResult,
    coverage,
    greedy_coverage_order,
    mean_win_rate,
    prowl,
    random_coverage_curves,
    scauc,
    size_at,
)
from coreval.simba.similarity import SIMILARITIES, similarity, similarity_matrix
from coreval.simba.stalk import FAMILIES, KINDS, classify_pair, stalk, stalk_summary

__all__ = [
    "COVERAGE_TARGET", "FAMILIES", "KINDS", "REGRESSORS", "SIMILARITIES", "ProwlResult",
    "SimbaNormaliser", "auc_mse", "chance_vector", "classify_pair", "coverage",
    "greedy_coverage_order", "make_regressor", "mean_win_rate", "normalise_scores",
    "pounce_curve", "pounce_mse", "prowl", "random_coverage_curves", "scauc", "similarity",
    "similarity_matrix", "size_at", "stalk", "stalk_summary",
]
