"""IRT-driven methods: p-IRT / gp-IRT (tinyBenchmarks), metabench, irt-bayes.

Registered names (factories take ``(k, seed, **options)`` / ``(seed, **options)``;
options a factory's class does not accept are ignored, so one option dict can
serve selector and predictor):

* ``p-irt``: IRT anchor points + p-IRT.
* ``gp-irt``, ``gp-irt+``, ``gp-irt++``: IRT anchor points + gp-IRT, or the
  ridge / kernel-ridge refits of the mRMR paper.
* ``metabench``, ``metabench+``, ``metabench++``: Fisher information per
  ability-quantile bin + GAM on (θ̂, coreset mean), or the refits.
* ``irt-bayes``, ``irt-bayes+``, ``irt-bayes++``: a coreset (option
  ``coreset="random"`` (default), ``"fisher"`` (metabench bins topped up to k by
  mean information over the source abilities) or ``"anchors"``) + the IRT
  posterior predictive of the full score. Random is the default because it is
  the coreset whose credible intervals are calibrated: a coreset chosen from
  the fitted item parameters favours items whose discrimination the (mean-field
  SVI) fit over-estimates, and on simulated 2PL data (40 source models, k = 40)
  the Fisher coreset covered 79-85 % at nominal 90 % with the plain posterior
  and 89-97 % (mean 93 %) with the cross-validated misfit term, against 87-92 %
  (mean 90 %) for the random coreset (benchmarks/results/irt_bayes_calibration.md).

The selectors store their IRT fit in ``coreset.info["irt_fit"]`` and the
predictors reuse it, so each method fits the IRT model on the source once
(gp-IRT fits a second one for its weight λ).

References
----------
Polo et al. (2024), tinyBenchmarks; Kipnis et al. (2025), metabench; Bowyer et al.,
Efficient Benchmarking Is Just Feature Selection and Multiple Regression.
"""

from __future__ import annotations

from typing import Any

from coreval.errors import ValidationError
from coreval.methods._variants import register_with_refits
from coreval.prediction.base import Predictor
from coreval.registry import Method, register_method
from coreval.selection.base import Selector

TINYBENCH = "Polo et al. 2024, tinyBenchmarks (mRMR paper, gpirt1)"
METABENCH = "Kipnis et al. 2025, metabench (mRMR paper, metabench)"
IRT_CORESETS: tuple[str, ...] = ("fisher", "random", "anchors")


def _accepted(cls: type, options: dict[str, Any]) -> dict[str, Any]:
    """The options ``cls.__init__`` accepts (scikit-learn's parameter introspection)."""
    names = cls._get_param_names()
    return {key: value for key, value in options.items() if key in names}


def anchor_selector(k: int, seed: int = 0, **options: Any) -> Selector:
    """IRT anchor points (k-means on the IRT item parameters; the 3PL by default)."""
    from coreval.selection.irt_anchors import IRTAnchorSelector

    return IRTAnchorSelector(k=k, seed=seed, **_accepted(IRTAnchorSelector, options))


def pirt_predictor(seed: int = 0, **options: Any) -> Predictor:
    from coreval.prediction.gp_irt import PIRTPredictor

    return PIRTPredictor(seed=seed, **_accepted(PIRTPredictor, options))


def gpirt_predictor(seed: int = 0, **options: Any) -> Predictor:
    from coreval.prediction.gp_irt import GPIRTPredictor

    return GPIRTPredictor(seed=seed, **_accepted(GPIRTPredictor, options))


def fisher_selector(k: int, seed: int = 0, **options: Any) -> Selector:
    """metabench's Fisher-information selector (may return fewer than k items)."""
    from coreval.selection.fisher import FisherInformationSelector

    return FisherInformationSelector(k=k, seed=seed,
                                     **_accepted(FisherInformationSelector, options))


def gam_predictor(seed: int = 0, **options: Any) -> Predictor:
    from coreval.prediction.gam import GAMPredictor

    return GAMPredictor(seed=seed, **_accepted(GAMPredictor, options))


def irt_bayes_selector(k: int, seed: int = 0, *, coreset: str = "random",
                       **options: Any) -> Selector:
    """Coreset of irt-bayes: ``"random"`` (default), ``"fisher"`` (topped up to k) or ``"anchors"``."""
    if coreset == "fisher":
        from coreval.selection.fisher import FisherInformationSelector

        opts = {"fit_method": "svi", "priors": "hierarchical", "learning_rate": 0.1,
                "num_draws": 200,
                **_accepted(FisherInformationSelector, options), "fill": True}
        return FisherInformationSelector(k=k, seed=seed, **opts)
    if coreset == "anchors":
        return anchor_selector(k, seed, **options)
    if coreset == "random":
        from coreval.selection.random import RandomSelector

        return RandomSelector(k=k, seed=seed)
    raise ValidationError(f"irt-bayes coreset must be one of {IRT_CORESETS}, got {coreset!r}")


def irt_bayes_predictor(seed: int = 0, **options: Any) -> Predictor:
    from coreval.prediction.irt_bayes import IRTBayesPredictor

    return IRTBayesPredictor(seed=seed, **_accepted(IRTBayesPredictor, options))


register_method(Method(
    "p-irt", anchor_selector, pirt_predictor,
    description="IRT anchor points + p-IRT (observed anchors + IRT-predicted rest)",
    reference=TINYBENCH,
))
register_with_refits(
    "gp-irt", anchor_selector, gpirt_predictor,
    description="IRT anchor points + gp-IRT (λ-mix of anchor mean and p-IRT)",
    reference=TINYBENCH,
)
register_with_refits(
    "metabench", fisher_selector, gam_predictor,
    description="Fisher information per ability-quantile bin + GAM(θ̂, coreset mean)",
    reference=METABENCH,
)
register_with_refits(
    "irt-bayes", irt_bayes_selector, irt_bayes_predictor,
    description="IRT posterior predictive of the full score (coreset: random|fisher|anchors)",
    reference="coreval; IRT as in Polo et al. 2024",
    options={"coreset": "random"},
)
