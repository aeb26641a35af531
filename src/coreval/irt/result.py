"""The fitted IRT model: posterior in an ArviZ ``InferenceData``, item table, save/load."""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path
from typing import Any

import arviz as az
import numpy as np
import pandas as pd

from coreval.errors import ValidationError, preview
from coreval.irt import models as _models

#: Posterior variables that are item parameters (first axis = item after chain/draw).
ITEM_VARS: tuple[str, ...] = ("a", "d", "b", "c")

#: Summaries accepted by :meth:`IRTFit.item_point` and :meth:`IRTFit.abilities`.
POINT_STATISTICS: tuple[str, ...] = ("point", "mean", "median")


class IRTFit:
    """A fitted IRT model (see :func:`coreval.irt.fit`).

    Attributes
    ----------
    model : str
        Model name (a registered model, :func:`coreval.irt.spec.model_names`, or a custom
        function's name).
    method : str
        ``"map"``, ``"svi"``, ``"nuts"`` or ``"mml"``.
    dims : int
        Latent dimension D.
    priors : str
        Prior family.
    idata : arviz.InferenceData
        ``posterior`` (item parameters ``a`` (item, dim), ``d``, ``b`` (D = 1), ``c``
        (3PL); abilities ``theta`` (model, dim); nuisance ``sigma``/``k``;
        hyper-parameters), ``log_likelihood`` (pointwise over observed entries,
        dim ``obs``), ``observed_data`` (``y`` with NaN where unobserved),
        ``sample_stats``, and for MAP and SVI ``point_estimate`` (the posterior
        mode, or the guide's median; see :meth:`item_point`).
    items : pandas.DataFrame
        One row per item, point estimates (:meth:`item_point`):
        ``item, a, d, b`` (D = 1) or ``item, a1..aD, d`` (D > 1),
        ``c`` for the 3PL, and posterior sds ``a_sd, d_sd`` (``a1_sd``.. for D > 1)
        when there is more than one draw (or standard errors for MML).
    item_ids, model_ids : ndarray of str
    card : dict
        Model card (settings, data provenance, fit diagnostics), saved as card.json.
    """

    def __init__(self, *, model: str, method: str, dims: int, priors: str,
                 idata: az.InferenceData, card: dict[str, Any],
                 item_se: dict[str, np.ndarray] | None = None) -> None:
        self.model = model
        self.method = method
        self.dims = int(dims)
        self.priors = priors
        self.idata = idata
        self.card = card
        post = idata.posterior
        self.item_ids = np.asarray(post.coords["item"].values).astype(str).astype(object)
        self.model_ids = np.asarray(post.coords["model"].values).astype(str).astype(object)
        self._item_se = item_se
        self.items = self._item_table()

    # ------------------------------------------------------------------ draws
    @property
    def n_draws(self) -> int:
        """Number of posterior draws S (chains × draws)."""
        post = self.idata.posterior
        return int(post.sizes["chain"] * post.sizes["draw"])

    @property
    def link(self) -> str:
        """Response model used for prediction/scoring (custom functions: their ``irt_kind``)."""
        from coreval.irt.spec import model_names

        return self.model if self.model in model_names() else self.card.get("link", "2pl")

    def _stack(self, name: str) -> np.ndarray:
        arr = np.asarray(self.idata.posterior[name].values)
        return arr.reshape((-1, *arr.shape[2:]))

    def item_draws(self) -> dict[str, np.ndarray]:
        """Posterior draws of item parameters.

        Returns
        -------
        dict
            ``"a"`` (S, n_items, D), ``"d"`` (S, n_items), plus ``"b"`` (D = 1) and
            ``"c"`` (3PL) when present. S = 1 for a plain point estimate.
        """
        post = self.idata.posterior
        return {name: self._stack(name) for name in ITEM_VARS if name in post}

    def nuisance_draws(self) -> dict[str, np.ndarray]:
        """Draws (S, n_models) of per-model nuisance parameters (LEGO ``sigma``, hetero ``k``)."""
        from coreval.irt.spec import get_spec

        name = get_spec(self.link).nuisance
        return {} if name is None or name not in self.idata.posterior else {
            name: self._stack(name)}

    def _summary(self, name: str, statistic: str) -> np.ndarray:
        """One variable summarised over the draws (see :meth:`item_point`)."""
        if statistic not in POINT_STATISTICS:
            raise ValidationError(
                f"statistic must be one of {POINT_STATISTICS}, got {statistic!r}")
        group = getattr(self.idata, "point_estimate", None)
        if statistic == "point" and group is not None and name in group:
            return np.asarray(group[name].values)
        draws = self._stack(name)
        return np.median(draws, axis=0) if statistic == "median" else draws.mean(axis=0)

    def item_point(self, statistic: str = "point") -> dict[str, np.ndarray]:
        """Point estimates of the item parameters (``a`` (n_items, D), ``d`` (n_items,), ...).

        Parameters
        ----------
        statistic : {"point", "mean", "median"}
            ``"point"`` (default): the fit's own point estimate where it has one, the
            posterior mode for MAP and the guide's median for SVI (its location mapped
            through the constraining transform, ``exp(loc)`` for ``a``), stored in
            the ``point_estimate`` group of :attr:`idata`; the posterior mean for NUTS
            and the estimate for MML. ``"mean"`` / ``"median"``: over the stored draws.

        Notes
        -----
        The draw mean of a positive parameter is pulled up by its posterior spread
        (for ``a = exp(z)``, ``E[a] = exp(μ + σ²/2)``) and carries Monte Carlo noise
        from the finite draws; the point estimate has neither, and it is what the
        tinyBenchmarks / mRMR reference code uses for its anchors (py-irt's
        variational locations).
        """
        post = self.idata.posterior
        return {name: self._summary(name, statistic) for name in ITEM_VARS if name in post}

    def abilities(self, statistic: str = "point") -> np.ndarray:
        """Abilities of the fitted models, shape (n_models, D) (``statistic`` as :meth:`item_point`)."""
        return self._summary("theta", statistic)

    def item_positions(self, items) -> np.ndarray:
        """Positions of item ids (or pass-through integer positions); unknown ids raise."""
        if items is None:
            return np.arange(len(self.item_ids))
        arr = np.asarray(items)
        if arr.dtype.kind in "iu":
            bad = arr[(arr < 0) | (arr >= len(self.item_ids))]
            if bad.size:
                raise ValidationError(f"item positions out of range: {preview(bad)}")
            return arr.astype(np.intp)
        lookup = {v: i for i, v in enumerate(self.item_ids)}
        ids = arr.astype(str).ravel()
        unknown = [v for v in ids if v not in lookup]
        if unknown:
            raise ValidationError(f"unknown item ids: {preview(unknown)}")
        return np.array([lookup[v] for v in ids], dtype=np.intp)

    def point_params(self, items=None) -> dict[str, np.ndarray]:
        """Point item parameters restricted to ``items`` plus the population nuisance median."""
        pos = self.item_positions(items)
        params = {k: v[pos] for k, v in self.item_point().items()}
        for name, draws in self.nuisance_draws().items():
            params[name] = np.atleast_1d(np.median(draws.mean(axis=0)))
        return params

    def predict_mean(self, theta: np.ndarray, items=None) -> np.ndarray:
        """Expected score ``E[Y]`` at abilities ``theta`` with point-estimate item parameters.

        Parameters
        ----------
        theta : array (n, D) (or (n,) when D = 1)
        items : sequence of item ids or positions, optional
            Columns to predict (default: all fitted items).

        Returns
        -------
        ndarray (n, n_selected_items)
            See :func:`coreval.irt.models.mean_response`. For LEGO the new model's
            noise ``sigma`` is the median over the fitted models.
        """
        theta = np.asarray(theta, dtype=np.float64)
        if theta.ndim == 1 and self.dims == 1:
            theta = theta[:, None]
        if theta.ndim != 2 or theta.shape[1] != self.dims:
            raise ValidationError(
                f"theta must have shape (n, {self.dims}), got {theta.shape}")
        params = self.point_params(items)
        return np.asarray(_models.mean_response(self.link, theta, params), dtype=np.float64)

    # ------------------------------------------------------------------ table
    def _item_table(self) -> pd.DataFrame:
        draws = self.item_draws()
        point = self.item_point()
        table: dict[str, Any] = {"item": self.item_ids.astype(str)}
        a, d = draws["a"], draws["d"]
        many = a.shape[0] > 1
        if self.dims == 1:
            table["a"] = point["a"][:, 0]
            table["d"] = point["d"]
            table["b"] = point["b"] if "b" in point else -point["d"] / point["a"][:, 0]
            if (point["a"][:, 0] < 0).any():
                # Signed discriminations (priors="signed"): b is where P = 1/2, but these
                # items get easier as the ability falls.
                table["reversed"] = point["a"][:, 0] < 0
        else:
            for j in range(self.dims):
                table[f"a{j + 1}"] = point["a"][:, j]
            table["d"] = point["d"]
        if "c" in point:
            table["c"] = point["c"]
        if self._item_se is not None:
            for name, se in self._item_se.items():
                table[f"{name}_sd"] = se
        elif many:
            if self.dims == 1:
                table["a_sd"] = a[:, :, 0].std(axis=0, ddof=1)
            else:
                for j in range(self.dims):
                    table[f"a{j + 1}_sd"] = a[:, :, j].std(axis=0, ddof=1)
            table["d_sd"] = d.std(axis=0, ddof=1)
            if "c" in draws:
                table["c_sd"] = draws["c"].std(axis=0, ddof=1)
        return pd.DataFrame(table)

    def __repr__(self) -> str:
        return (f"IRTFit(model={self.model!r}, method={self.method!r}, dims={self.dims}, "
                f"{len(self.model_ids)} models × {len(self.item_ids)} items, "
                f"{self.n_draws} draws)")

    # --------------------------------------------------------------------- io
    def save(self, path: str | os.PathLike, *, force: bool = False) -> Path:
        """Write ``posterior.nc``, ``card.json`` and ``items.csv`` into folder ``path``.

        The folder is written under a temporary name and renamed into place, so a
        crash never leaves a half-written model behind and a reader sees the old
        model or the new one. Nothing else is ever deleted: ``path`` must not exist,
        be an empty folder, or (with ``force=True``) hold a saved model.

        Raises
        ------
        ValidationError
            ``path`` is a file, the working folder or one of its parents, a folder
            that is not a saved model, or a saved model without ``force``.
        """
        path = Path(path)
        check_model_folder(path, force=force)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.parent / f".{path.name}.tmp-{uuid.uuid4().hex[:8]}"
        tmp.mkdir()
        try:
            self.idata.to_netcdf(str(tmp / "posterior.nc"))
            card = dict(self.card)
            card.update(model=self.model, method=self.method, dims=self.dims, priors=self.priors)
            if self._item_se is not None:
                card["item_se"] = {k: np.asarray(v).tolist() for k, v in self._item_se.items()}
            (tmp / "card.json").write_text(json.dumps(_jsonable(card), indent=2))
            self.items.to_csv(tmp / "items.csv", index=False)
            backup = None
            if path.exists():
                backup = path.parent / f".{path.name}.old-{uuid.uuid4().hex[:8]}"
                os.replace(path, backup)
            os.replace(tmp, path)
            if backup is not None:  # only ever a saved model (check_model_folder)
                shutil.rmtree(backup, ignore_errors=True)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return path

    @classmethod
    def load(cls, path: str | os.PathLike) -> IRTFit:
        """Read a model saved by :meth:`save`."""
        path = Path(path)
        nc, card_file = path / "posterior.nc", path / "card.json"
        if not nc.exists() or not card_file.exists():
            raise ValidationError(
                f"{path} is not a saved IRT model (needs posterior.nc, card.json)")
        idata = az.from_netcdf(str(nc))
        for group in idata.groups():  # read everything now so the file is not kept open
            getattr(idata, group).load()
        card = json.loads(card_file.read_text())
        item_se = card.pop("item_se", None)
        if item_se is not None:
            item_se = {k: np.asarray(v, dtype=float) for k, v in item_se.items()}
        return cls(model=card["model"], method=card["method"], dims=card["dims"],
                   priors=card["priors"], idata=idata, card=card, item_se=item_se)


#: The files of a saved model (:meth:`IRTFit.save`).
MODEL_FILES: tuple[str, ...] = ("posterior.nc", "card.json", "items.csv")


def is_saved_model(path: Path) -> bool:
    """Whether ``path`` is a folder written by :meth:`IRTFit.save` (and nothing else)."""
    if not path.is_dir():
        return False
    names = {p.name for p in path.iterdir()}
    return {"posterior.nc", "card.json"} <= names and names <= set(MODEL_FILES)


def check_model_folder(path: Path, *, force: bool = False) -> None:
    """Refuse to write a model where that would destroy anything but a saved model."""
    resolved = path.resolve()
    if resolved == Path.cwd().resolve() or resolved in Path.cwd().resolve().parents:
        raise ValidationError(f"{path} is the working folder or one of its parents; "
                              "write the model into a new folder such as models/NAME")
    if not path.exists():
        return
    if not path.is_dir():
        raise ValidationError(f"{path} exists and is not a folder; choose another output")
    if not any(path.iterdir()):
        return
    if not is_saved_model(path):
        raise ValidationError(f"{path} is a folder that is not a saved coreval model; refusing to "
                              "replace it (choose a new folder such as models/NAME)")
    if not force:
        raise ValidationError(f"{path} already holds a saved model; pass force=True "
                              "(--force) to replace it")


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, float) and not np.isfinite(obj):
        return None
    return obj
