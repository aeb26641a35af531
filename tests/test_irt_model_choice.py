"""The anchor model: the 3PL's learnt guessing floor, and ``model="auto"`` (2PL or 3PL by validation error).

Whether ``auto`` picks the 3PL on data with a floor is not tested: on simulated
3PL data with 40 source models the two validation errors are within Monte Carlo
noise of each other (it picked the 2PL for some seeds even at floor 0.5).
"""

from __future__ import annotations

import numpy as np
import pytest

from coreval.base import FitCache
from coreval.data.matrix import ScoreMatrix
from coreval.irt import fit
from coreval.irt.fit_spec import IRTFitSpec
from coreval.irt.source_fit import resolve_irt_model, validation_bias
from coreval.prediction.gp_irt import GPIRTPredictor
from coreval.selection.irt_anchors import IRTAnchorSelector

FAST = IRTFitSpec(dims=1, fit_method="svi", priors="hierarchical", num_steps=600,
                  learning_rate=0.1, num_draws=20)


def _guessing_matrix(seed: int = 0, n_models: int = 40, n_items: int = 160,
                     floor: float = 0.3) -> ScoreMatrix:
    """Multiple-choice-like 3PL responses: many near-chance models answer at ``floor``."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(0.0, 1.5, n_models)
    a = rng.lognormal(0.3, 0.3, n_items)
    d = rng.normal(0.0, 1.0, n_items)
    p = floor + (1 - floor) / (1 + np.exp(-(theta[:, None] * a + d)))
    y = (rng.random(p.shape) < p).astype(float)
    return ScoreMatrix(y, models=[f"m{i}" for i in range(n_models)],
                       items=[f"q{j}" for j in range(n_items)])


def test_resolve_keeps_a_named_model_and_scores_every_candidate_for_auto() -> None:
    source = _guessing_matrix()
    spec, errors = resolve_irt_model(source, FAST.replace(model="2pl"))
    assert spec == FAST.replace(model="2pl") and errors == {}
    spec, errors = resolve_irt_model(source, FAST.replace(model="auto"))
    assert set(errors) == {"2pl", "3pl"}
    assert spec == FAST.replace(model=min(errors, key=errors.get))
    # the errors are those of validation_bias for each model
    assert errors["3pl"] == pytest.approx(validation_bias(source, FAST.replace(model="3pl")))


@pytest.mark.parametrize("floor", [0.0, 0.3])
def test_hierarchical_guessing_prior_learns_the_benchmarks_floor(floor: float) -> None:
    """The 3PL's ``mu_c`` hierarchy (the default anchor model) finds a floor or its absence.

    With the fixed Beta(1, 4) prior (``priors="weak"``) the guessing parameters are
    pulled towards 0.2 whatever the data; the hierarchy learns the level.
    """
    y = _guessing_matrix(n_models=60, n_items=200, floor=floor).values
    mean_c = {}
    for priors in ("hierarchical", "weak"):
        result = fit("3pl", y, method="svi", priors=priors, seed=0, show_progress=False, settings={"num_steps": 1500, "learning_rate": 0.1, "num_draws": 20})
        mean_c[priors] = float(np.mean(result.item_point()["c"]))
    assert abs(mean_c["hierarchical"] - floor) < 0.08
    assert abs(mean_c["hierarchical"] - floor) < abs(mean_c["weak"] - floor)


def test_gp_irt_reuses_the_selectors_choice() -> None:
    source = _guessing_matrix(seed=1)
    spec = FAST.replace(model="auto")
    cache = FitCache()
    selector = IRTAnchorSelector(k=12, irt=spec, show_progress=False).fit(source, cache=cache)
    assert selector.model_ in ("2pl", "3pl")
    assert set(selector.validation_errors_) == {"2pl", "3pl"}
    predictor = GPIRTPredictor(irt=spec, show_progress=False).fit(source, selector.coreset_,
                                                                   cache=cache)
    assert predictor.irt_spec_.model == selector.model_
    assert predictor.irt_fit_ is selector.fit_
    # λ's bias is the chosen model's validation error
    assert predictor.bias_ == pytest.approx(selector.validation_errors_[selector.model_])


def _reversed_items_matrix(seed: int = 0, n_models: int = 40, n_items: int = 160,
                           share: float = 0.35) -> ScoreMatrix:
    """2PL responses with ``share`` of the items answered better by weaker models."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(0.0, 1.0, n_models)
    a = rng.lognormal(0.3, 0.3, n_items)
    a[: int(share * n_items)] *= -1.0
    d = rng.normal(0.0, 1.0, n_items)
    y = (rng.random((n_models, n_items)) < 1 / (1 + np.exp(-(theta[:, None] * a + d))))
    return ScoreMatrix(y.astype(float), models=[f"m{i}" for i in range(n_models)],
                       items=[f"q{j}" for j in range(n_items)])


def test_auto_priors_score_both_families_and_pick_signed_on_reversed_items() -> None:
    """``priors="auto"``: one candidate per family (and per model with ``model="auto"``)."""
    source = _reversed_items_matrix()
    spec, errors = resolve_irt_model(source, FAST.replace(model="2pl", priors="auto"))
    assert set(errors) == {"2pl/hierarchical", "2pl/signed"}
    assert errors["2pl/signed"] < errors["2pl/hierarchical"]
    assert spec == FAST.replace(model="2pl", priors="signed")
    both, errors = resolve_irt_model(source, FAST.replace(model="auto", priors="auto"))
    assert set(errors) == {"2pl/hierarchical", "2pl/signed", "3pl/hierarchical", "3pl/signed"}
    assert both.priors in ("hierarchical", "signed") and both.model in ("2pl", "3pl")


def test_validation_bias_compares_means_over_the_same_items():
    """With missing answers the predicted and observed means cover the items each validation
    model answered; the predicted mean over every odd item read missing easy items as bias."""
    from coreval.data.simulate import simulate

    sim = simulate(40, 60, seed=2)
    spec = FAST.replace(model="2pl")
    full = validation_bias(sim.matrix, spec, seed=0)
    y, p = sim.matrix.values.copy(), sim.params["p"]
    odd = np.arange(1, 60, 2)
    for r in range(0, 40, 5):  # the validation models' 15 easiest odd items are not logged
        y[r, odd[np.argsort(-p[r, odd])[:15]]] = np.nan
    missing = ScoreMatrix(y, models=sim.matrix.models, items=sim.matrix.items)
    # 0.078 complete, 0.090 with the gaps (0.166 when the means covered different items)
    assert validation_bias(missing, spec, seed=0) < 1.5 * full
