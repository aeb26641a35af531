"""Method declarations: options are routed to the component that owns them, or rejected."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

import coreval
from coreval.cli import app
from coreval.data import ScoreMatrix
from coreval.data.npz import write_npz
from coreval.methods import Component, Method, OptionError, get_method
from coreval.prediction.mean import MeanPredictor
from coreval.prediction.ridge import KernelRidgePredictor
from coreval.selection.random import RandomSelector
from coreval.selection.random_search import RandomSearchSelector


@pytest.fixture(scope="module")
def matrix() -> ScoreMatrix:
    rng = np.random.default_rng(0)
    theta, b = rng.normal(size=(30, 1)), rng.normal(size=(1, 40))
    y = (rng.random((30, 40)) < 1 / (1 + np.exp(-(theta - b)))).astype(float)
    return ScoreMatrix(y, name="toy")


def test_misspelt_selector_option_is_named_with_the_accepted_ones(matrix):
    with pytest.raises(OptionError) as err:
        coreval.select(matrix, "mrmr++", 10, schme="mid")
    message = str(err.value)
    assert "'schme'" in message and "did you mean 'scheme'" in message
    assert "accepted options:" in message and "mi_neighbors" in message


def test_misspelt_predictor_option_and_bogus_option(matrix):
    with pytest.raises(OptionError, match=r"'degre'.*did you mean 'degree'"):
        coreval.select(matrix, "mrmr++", 10, degre=3)
    with pytest.raises(OptionError, match="totally_bogus"):
        coreval.select(matrix, "mrmr++", 10, degree=3, totally_bogus=1)
    with pytest.raises(OptionError, match="levle"):
        coreval.select(matrix, "random", 10, levle=0.5)


def test_options_reach_the_component_that_owns_them(matrix):
    fitted = coreval.select(matrix, "mrmr++", 10, degree=3, scheme="mid", selection="method")
    assert fitted.predictor.degree == 3 and fitted.selector.scheme == "mid"
    fitted = coreval.select(matrix, "random", 10, level=0.8)
    assert fitted.predictor.level == 0.8
    method = get_method("random++")
    sel_opts, pred_opts = method.route({"predictor__alphas": [1.0], "seed": 3})
    assert sel_opts == {"seed": 3} and pred_opts == {"alphas": [1.0]}
    with pytest.raises(OptionError, match="prefix"):
        method.route({"selektor__seed": 1})
    with pytest.raises(OptionError, match="budget"):
        method.route({"k": 3})


def test_fixed_parameters_cannot_be_overridden():
    method = get_method("search++")
    assert method.make_selector(k=3).kernel is True
    with pytest.raises(OptionError, match="fixes kernel=True"):
        method.make_selector(k=3, kernel=False)


def test_plus_and_plus_plus_are_derived_by_one_rule():
    for family in ("random", "anchor-points", "lasso", "mrmr", "gp-irt", "metabench",
                   "irt-bayes"):
        base = get_method(family)
        plus, plusplus = get_method(family + "+"), get_method(family + "++")
        assert plus.selector == plusplus.selector == base.selector
        assert plus.predictor.cls.__name__ == "RidgePredictor"
        assert plusplus.predictor.cls is KernelRidgePredictor


def test_choice_option_selects_the_coreset(matrix):
    method = get_method("irt-bayes")
    assert isinstance(method.make_selector(k=5), RandomSelector)
    assert method.make_selector(k=5, coreset="fisher").fill == "overall"
    with pytest.raises(OptionError, match="coreset must be one of"):
        method.make_selector(k=5, coreset="nope")
    assert "coreset" in method.accepted_options()


def test_a_declared_method_is_one_line():
    method = Method("_opt-test", Component(RandomSearchSelector, fixed={"kernel": True}),
                    Component(MeanPredictor, defaults={"level": 0.8}))
    pred = method.make_predictor()
    assert pred.level == 0.8 and method.make_predictor(level=0.7).level == 0.7
    with pytest.raises(coreval.ValidationError, match="no parameters"):
        Component(MeanPredictor, fixed={"nope": 1})


def test_cli_option_error_exits_2_with_one_line(tmp_path, matrix):
    write_npz(matrix, tmp_path / "m.npz")
    runner = CliRunner()
    result = runner.invoke(app, ["select", str(tmp_path / "m.npz"), "--method", "mrmr++",
                                 "--budget", "5", "-o", "degre=3"])
    assert result.exit_code == 2
    assert "degre" in result.output and "did you mean 'degree'" in result.output
    assert "Traceback" not in result.output
    ok = runner.invoke(app, ["select", str(tmp_path / "m.npz"), "--method", "mrmr++",
                             "--budget", "5", "-o", "degree=3"])
    assert ok.exit_code == 0, ok.output
    bad = runner.invoke(app, ["compare", str(tmp_path / "m.npz"), "--methods", "random",
                              "--budget", "5", "--seeds", "1", "--train-models", "20",
                              "--out", str(tmp_path / "r.parquet"), "-o", "levle=0.5"])
    assert bad.exit_code == 2 and "levle" in bad.output
    assert not (tmp_path / "r.parquet").exists()


def test_irt_fit_spec_fields_are_options_shared_by_selector_and_predictor():
    from coreval.irt.fit_spec import IRTFitSpec
    from coreval.irt.source_fit import (
        BAYES_FIT,
        GPIRT_FIT,
        IRT_BAYES_FIT,
        METABENCH_FIT,
        TINYBENCH_FIT,
    )

    method = get_method("gp-irt")
    selector = method.make_selector(10, model="2pl", num_steps=300)
    predictor = method.make_predictor(model="2pl", num_steps=300)
    assert selector.irt == predictor.irt == GPIRT_FIT.replace(model="2pl", num_steps=300)
    assert GPIRT_FIT == TINYBENCH_FIT.replace(model="auto", priors="auto")
    assert get_method("p-irt").make_predictor().irt == TINYBENCH_FIT
    # a method's default spec reaches both components, also through a coreset choice
    assert get_method("metabench").make_predictor().irt == METABENCH_FIT
    bayes = get_method("irt-bayes")
    for coreset in ("fisher", "anchors"):
        assert bayes.make_selector(10, coreset=coreset).irt == bayes.make_predictor().irt \
            == IRT_BAYES_FIT == BAYES_FIT.replace(model="auto")
    # a whole spec is an option too, and its fields override it
    spec = IRTFitSpec(model="1pl", fit_method="map")
    assert method.make_predictor(irt=spec, num_draws=7).irt == spec.replace(num_draws=7)


def test_irt_fit_spec_errors_name_the_field(matrix):
    with pytest.raises(OptionError, match=r"'modle'.*did you mean 'model'"):
        coreval.select(matrix, "gp-irt", 10, modle="2pl")
    with pytest.raises(OptionError, match="fit_method must be one of"):
        get_method("gp-irt").make_predictor(fit_method="mcmc")
    with pytest.raises(OptionError, match="num_steps must be a positive integer"):
        get_method("metabench").make_selector(10, num_steps=0)


def test_a_method_whose_components_would_fit_different_irt_models_is_refused():
    from coreval.errors import ValidationError
    from coreval.prediction.gp_irt import GPIRTPredictor
    from coreval.selection.fisher import FisherInformationSelector

    # the Fisher selector's default fit (MAP, weak priors) is not gp-IRT's (SVI, hierarchical)
    with pytest.raises(ValidationError, match="different irt"):
        Method("mismatched", Component(FisherInformationSelector), Component(GPIRTPredictor))
