"""IRT-driven methods: p-IRT / gp-IRT (tinyBenchmarks), metabench, irt-bayes.

* ``p-irt``: IRT anchor points + p-IRT.
* ``gp-irt``, ``gp-irt+``, ``gp-irt++``: IRT anchor points + gp-IRT, or the
  ridge / kernel-ridge refits of the mRMR paper. Their IRT fit is tinyBenchmarks'
  with the logistic model and the prior family chosen per run (``model="auto"``: the
  2PL or the 3PL; ``priors="auto"``: positive or signed discriminations; both by the
  gp-IRT validation error on the source models). ``p-irt`` keeps
  ``TINYBENCH_FIT``, the 3PL under the reference's hierarchical priors.
* ``metabench``, ``metabench+``, ``metabench++``: Fisher information per
  ability-quantile bin + GAM on (θ̂, coreset mean), or the refits. Like the refits,
  the GAM is checked against random items by ``selection="auto"``
  (:mod:`coreval.pipeline`, "Checked selection").
* ``irt-bayes``, ``irt-bayes+``, ``irt-bayes++``: a coreset (option
  ``coreset="random"`` (default), ``"fisher"`` (metabench bins topped up to k by
  mean information over the source abilities) or ``"anchors"``) + the IRT
  posterior predictive of the full score, with the 2PL or the 3PL and 1 or 2 latent
  dimensions chosen per run (``IRT_BAYES_FIT``, ``model="auto"``). Random is the
  default coreset. On
  simulated 2PL data (40 source models, k = 40; measured with the 2PL alone) its
  intervals cover 87-92 %
  (mean 90 %) at nominal 90 %; the Fisher coreset's cover 89-94 % (mean 91 %)
  with the cross-validated misfit term and 91-99 % (mean 94 %) without it
  (benchmarks/results/irt_bayes_calibration.md). On real matrices, where the
  2PL misfits, a coreset chosen from the fitted item parameters is checked
  against random items: with ``"fisher"`` or ``"anchors"``, ``selection="auto"``
  (the default of :func:`coreval.pipeline.fit_method`) falls back to the random
  coreset when it predicts the held-out folds of the misfit term better by one
  standard error.

Each method declares one :class:`~coreval.irt.fit_spec.IRTFitSpec` (``shared``) for its
selector and its predictor, and both use the caller's :class:`~coreval.base.FitCache`,
so each method fits the IRT model on the source once. The spec's fields are options
of the method (``model="2pl"``, ``fit_method="map"``, ``num_steps=500``).

References
----------
Polo et al. (2024), tinyBenchmarks; Kipnis et al. (2025), metabench; Bowyer et al.,
Efficient Benchmarking Is Just Feature Selection and Multiple Regression.
"""

from __future__ import annotations

from coreval.irt.source_fit import GPIRT_FIT, IRT_BAYES_FIT, METABENCH_FIT, TINYBENCH_FIT
from coreval.methods.registry import Choice, Component, declare
from coreval.prediction.gam import GAMPredictor
from coreval.prediction.gp_irt import GPIRTPredictor, PIRTPredictor
from coreval.prediction.irt_bayes import IRTBayesPredictor
from coreval.selection.fisher import FisherInformationSelector
from coreval.selection.irt_anchors import IRTAnchorSelector
from coreval.selection.random import RandomSelector

TINYBENCH = "Polo et al. 2024, tinyBenchmarks (mRMR paper, gpirt1)"
METABENCH = "Kipnis et al. 2025, metabench (mRMR paper, metabench)"

#: The coresets of irt-bayes (option ``coreset``).
IRT_BAYES_CORESETS = Choice("coreset", {
    "random": Component(RandomSelector),
    "fisher": Component(FisherInformationSelector, fixed={"fill": "overall"}),
    "anchors": Component(IRTAnchorSelector),
}, default="random")

declare("p-irt", IRTAnchorSelector, PIRTPredictor, shared={"irt": TINYBENCH_FIT},
        description="IRT anchor points + p-IRT (observed anchors + IRT-predicted rest)",
        reference=TINYBENCH)
declare("gp-irt", IRTAnchorSelector, GPIRTPredictor, refits=True, shared={"irt": GPIRT_FIT},
        description="IRT anchor points + gp-IRT (λ-mix of anchor mean and p-IRT)",
        reference=TINYBENCH)
declare("metabench", FisherInformationSelector, GAMPredictor, refits=True,
        shared={"irt": METABENCH_FIT},
        description="Fisher information per ability-quantile bin + GAM(θ̂, coreset mean)",
        reference=METABENCH)
declare("irt-bayes", IRT_BAYES_CORESETS, IRTBayesPredictor, refits=True,
        shared={"irt": IRT_BAYES_FIT},
        description="IRT posterior predictive of the full score (coreset: random|fisher|anchors)",
        reference="coreval; IRT as in Polo et al. 2024")
