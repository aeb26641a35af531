"""The mRMR family: ``mrmr`` (sample mean), ``mrmr+`` (ridge), ``mrmr++`` (kernel ridge).

Options: ``scheme`` ("miq" default, "mid", "relevance", "fcd", "fcq"),
``mi_neighbors`` (5), ``target`` ("mean", "pc1") and ``continuous_mi`` ("lnc",
"ksg") for the selector; ``degree`` (default 2), the polynomial-kernel degree of
``mrmr++``.

References
----------
S. Bowyer et al., "Efficient Benchmarking Is Just Feature Selection and Multiple
Regression" (mRMR+ = ``mrmr5_MIQ_y``, mRMR++ = ``kmrmr5_MIQ_y`` of its code).
"""

from __future__ import annotations

from coreval.methods.registry import declare
from coreval.prediction.mean import MeanPredictor
from coreval.selection.mrmr import MRMRSelector

REFERENCE = ("Bowyer et al., Efficient Benchmarking Is Just Feature Selection and "
             "Multiple Regression")

declare("mrmr", MRMRSelector, MeanPredictor, refits=True,
        description="mRMR (MIQ, Ross k-NN relevance, plug-in MI redundancy)",
        reference=REFERENCE)
