"""SimBA (Subramani, Gomez & Diab, Findings of EMNLP 2025): stalk, prowl and pounce.

* :mod:`.normalise` — chance-corrected ``[0, 1]`` scores.
* :mod:`.stalk` — pairwise dataset / model relationships (six regressors, ``R^2 >= 0.5``).
* :mod:`.similarity` — the nine similarity measures (pairwise-complete).
* :mod:`.prowl` — greedy PROXY_COVERAGE subsets, coverage ``eta``, SCAUC, ``|S*|``, baselines.
* :mod:`.pounce` — ridge / kNN / MLP prediction of the remaining datasets, AUC-MSE, noise.
"""

from coreval.selection.simba.normalise import SimbaNormaliser, chance_vector, normalise_scores
from coreval.selection.simba.pounce import (
    REGRESSORS,
    auc_mse,
    make_regressor,
    pounce_curve,
    pounce_mse,
)
from coreval.selection.simba.prowl import (
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
from coreval.selection.simba.similarity import SIMILARITIES, similarity, similarity_matrix
from coreval.selection.simba.stalk import FAMILIES, KINDS, classify_pair, stalk, stalk_summary

__all__ = [
    "COVERAGE_TARGET", "FAMILIES", "KINDS", "REGRESSORS", "SIMILARITIES", "ProwlResult",
    "SimbaNormaliser", "auc_mse", "chance_vector", "classify_pair", "coverage",
    "greedy_coverage_order", "make_regressor", "mean_win_rate", "normalise_scores",
    "pounce_curve", "pounce_mse", "prowl", "random_coverage_curves", "scauc", "similarity",
    "similarity_matrix", "size_at", "stalk", "stalk_summary",
]
