"""Saved selections: a fitted method written to a folder and read back without refitting.

``coreval select ... --save DIR`` writes, and ``coreval predict --from DIR RESPONSES``
reads, a :class:`coreval.pipeline.FittedMethod`: the method's name, its options, seed
and budget, the coreset and the fitted predictor. Only safe formats are used:

``selection.json``
    The manifest: versions, the method, the coreset, the selector's parameters and the
    predictor, encoded as JSON by walking the estimator (below).
``arrays.npz``
    Every numpy array of the fitted state, read back with ``allow_pickle=False``.
``irt_fit_<n>/``
    IRT fits held by the predictor, in their own NetCDF format (:meth:`IRTFit.save`).

One mechanism covers every predictor. An estimator (a scikit-learn ``BaseEstimator``,
coreval's selectors and predictors included) is written as its class path,
``get_params(deep=False)`` and its fitted attributes (everything else in its
``__dict__``); values are walked recursively: numbers, strings and ``None`` go to JSON,
arrays to the NPZ file, tuples, named tuples, lists, dicts, dataclasses, nested
estimators and other coreval objects (their attributes) by their parts. Reading rebuilds each object by class path, restricted to classes of
coreval and scikit-learn (:data:`ALLOWED_PACKAGES`): ``cls(**params)`` (no work in
``__init__``, the scikit-learn contract), then the fitted attributes are restored.
Anything else (a function, an object of another library) cannot be saved, and saving
says which attribute holds it. The selector is kept as its parameters and coreset only:
predicting never reads its other fitted state.

coreval never unpickles: a folder holding a pickle is refused.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import shutil
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator

from coreval._version import __version__
from coreval.base import Coreset
from coreval.errors import ValidationError, preview
from coreval.irt.result import IRTFit
from coreval.methods import get_method
from coreval.pipeline import FittedMethod, random_variant

__all__ = ["ALLOWED_PACKAGES", "check_selection_folder", "is_saved_selection",
           "load_selection", "read_manifest", "save_selection"]

FORMAT = "coreval-selection"
FORMAT_VERSION = 6
MANIFEST = "selection.json"
ARRAYS = "arrays.npz"
#: Top-level packages whose classes a saved selection may name.
ALLOWED_PACKAGES: tuple[str, ...] = ("coreval", "sklearn")
#: Predictor attributes that belong to one fitting run, not to the fitted state: the
#: caller's fit cache and the function that re-runs the method on source subsets.
TRANSIENT: frozenset[str] = frozenset({"cache_", "refit_"})
#: File names that hold pickles (refused whatever their content).
PICKLE_SUFFIXES: tuple[str, ...] = (".pkl", ".pickle", ".joblib", ".dill")
#: The entries of ``selection.json``.
_MANIFEST_KEYS = frozenset({
    "format", "format_version", "coreval_version", "method", "options", "seed", "budget",
    "k", "calibration", "clip01", "n_source", "source_items", "cv_residuals", "cv_means",
    "interval_scale", "seconds",
    "provenance", "coreset", "selector", "predictor", "selection", "selection_rmse",
    "score_range", "model_check"})


# ---------------------------------------------------------------- encoding
class _Writer:
    """Encodes values as JSON, collecting arrays and IRT fits on the side."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.arrays: dict[str, np.ndarray] = {}
        self.fits: dict[int, str] = {}

    def encode(self, value: Any, where: str) -> Any:
        if value is None or isinstance(value, bool | str):
            return value
        if isinstance(value, np.generic):
            return {"__scalar__": value.dtype.str, "value": value.item()}
        if isinstance(value, int | float):
            return value
        if isinstance(value, np.ndarray):
            return self._array(value, where)
        if isinstance(value, np.dtype) and value.fields is None and value.kind != "O":
            return {"__dtype__": value.str}
        if isinstance(value, tuple) and hasattr(type(value), "_fields"):  # NamedTuple state
            return {"__namedtuple__": _class_path(value, where),
                    "fields": {k: self.encode(v, f"{where}.{k}")
                               for k, v in value._asdict().items()}}
        if isinstance(value, tuple):
            return {"__tuple__": [self.encode(v, f"{where}[{i}]") for i, v in enumerate(value)]}
        if isinstance(value, list):
            return [self.encode(v, f"{where}[{i}]") for i, v in enumerate(value)]
        if isinstance(value, Mapping):
            return {"__dict__": [[self.encode(k, where), self.encode(v, f"{where}[{k!r}]")]
                                 for k, v in value.items()]}
        if isinstance(value, IRTFit):
            if id(value) not in self.fits:  # a fit shared by several holders is written once
                name = f"irt_fit_{len(self.fits)}"
                value.save(self.folder / name)
                self.fits[id(value)] = name
            return {"__irt_fit__": self.fits[id(value)]}
        if isinstance(value, BaseEstimator):
            return self.estimator(value, where)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            path = _class_path(value, where)
            return {"__dataclass__": path,
                    "fields": {f.name: self.encode(getattr(value, f.name), f"{where}.{f.name}")
                               for f in dataclasses.fields(value) if f.init}}
        if type(value).__module__.split(".")[0] == "coreval" and hasattr(value, "__dict__"):
            # a fitted helper object of coreval (e.g. SimBA's normaliser): its attributes
            return {"__object__": _class_path(value, where),
                    "state": {k: self.encode(v, f"{where}.{k}") for k, v in vars(value).items()}}
        raise ValidationError(f"cannot save {where}: a {type(value).__module__}."
                              f"{type(value).__qualname__} is not data coreval can write "
                              "safely (JSON/NPZ/NetCDF)")

    def estimator(self, est: BaseEstimator, where: str, *, state: bool = True) -> dict:
        params = est.get_params(deep=False)
        out = {"__estimator__": _class_path(est, where),
               "params": {k: self.encode(v, f"{where}.{k}") for k, v in params.items()}}
        if state:
            out["state"] = {k: self.encode(v, f"{where}.{k}") for k, v in vars(est).items()
                            if k not in params and k not in TRANSIENT}
        return out

    def _array(self, value: np.ndarray, where: str) -> dict:
        text = False
        if value.dtype == object:  # ids are object arrays of str: stored as unicode
            if not all(isinstance(v, str) for v in value.ravel()):
                raise ValidationError(f"cannot save {where}: an object array that is not text")
            value, text = value.astype(str), True
        key = f"a{len(self.arrays)}"
        # Keep the memory layout (a transposed view stays one): BLAS sums in another order
        # on another layout, and the prediction must be the same to the last bit.
        axes = np.argsort([-abs(st) for st in value.strides], kind="stable").tolist()
        if axes == sorted(axes):
            self.arrays[key] = value
            return {"__ndarray__": key, "object": text}
        self.arrays[key] = np.ascontiguousarray(value.transpose(axes))
        return {"__ndarray__": key, "object": text, "axes": axes}


def _class_path(obj: Any, where: str) -> str:
    cls = type(obj)
    if cls.__module__.split(".")[0] not in ALLOWED_PACKAGES:
        raise ValidationError(f"cannot save {where}: {cls.__module__}.{cls.__qualname__} is "
                              f"not a class of {' or '.join(ALLOWED_PACKAGES)}")
    return f"{cls.__module__}:{cls.__qualname__}"


# ---------------------------------------------------------------- decoding
def _allowed_class(path: str) -> type:
    """The class named ``module:qualname``, only from :data:`ALLOWED_PACKAGES`."""
    module, _, name = str(path).partition(":")
    if module.split(".")[0] not in ALLOWED_PACKAGES or not name or "." in name:
        raise ValidationError(f"saved selection names class {path!r}; only classes of "
                              f"{', '.join(ALLOWED_PACKAGES)} are read")
    try:
        cls = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        raise ValidationError(f"saved selection names class {path!r}, which this coreval "
                              f"{__version__} does not have") from None
    if not isinstance(cls, type):
        raise ValidationError(f"saved selection names {path!r}, which is not a class")
    return cls


class _Reader:
    def __init__(self, folder: Path, arrays: Mapping[str, np.ndarray]) -> None:
        self.folder = folder
        self.arrays = arrays
        self.fits: dict[str, IRTFit] = {}

    def decode(self, value: Any) -> Any:
        if isinstance(value, list):
            return [self.decode(v) for v in value]
        if not isinstance(value, dict):
            return value
        if "__scalar__" in value:
            return np.dtype(value["__scalar__"]).type(value["value"])
        if "__dtype__" in value:
            return np.dtype(value["__dtype__"])
        if "__ndarray__" in value:
            array = np.array(self.arrays[value["__ndarray__"]])
            if value.get("axes"):  # back to the saved array's layout
                array = array.transpose(np.argsort(value["axes"]))
            return array.astype(object) if value.get("object") else array
        if "__namedtuple__" in value:
            cls = _allowed_class(value["__namedtuple__"])
            if not (issubclass(cls, tuple) and hasattr(cls, "_fields")):
                raise ValidationError(f"saved selection: {value['__namedtuple__']} is not a "
                                      "named tuple")
            return cls(**{k: self.decode(v) for k, v in value["fields"].items()})
        if "__tuple__" in value:
            return tuple(self.decode(v) for v in value["__tuple__"])
        if "__dict__" in value:
            return {self.decode(k): self.decode(v) for k, v in value["__dict__"]}
        if "__irt_fit__" in value:
            name = str(value["__irt_fit__"])
            if name not in self.fits:
                if Path(name).name != name:
                    raise ValidationError(f"saved selection names IRT fit {name!r}")
                self.fits[name] = IRTFit.load(self.folder / name)
            return self.fits[name]
        if "__estimator__" in value:
            return self.estimator(value)
        if "__dataclass__" in value:
            cls = _allowed_class(value["__dataclass__"])
            if not dataclasses.is_dataclass(cls):
                raise ValidationError(f"saved selection: {value['__dataclass__']} is not a "
                                      "dataclass")
            return cls(**{k: self.decode(v) for k, v in value["fields"].items()})
        if "__object__" in value:
            cls = _allowed_class(value["__object__"])
            if not cls.__module__.startswith("coreval."):
                raise ValidationError(f"saved selection: {value['__object__']} is not a "
                                      "coreval class")
            obj = object.__new__(cls)  # its saved attributes, without running __init__
            obj.__dict__.update({k: self.decode(v) for k, v in value["state"].items()})
            return obj
        raise ValidationError(f"saved selection holds an unknown entry {sorted(value)}")

    def estimator(self, value: dict) -> BaseEstimator:
        cls = _allowed_class(value["__estimator__"])
        if not issubclass(cls, BaseEstimator):
            raise ValidationError(f"saved selection: {value['__estimator__']} is not an "
                                  "estimator")
        est = cls(**{k: self.decode(v) for k, v in value["params"].items()})
        for key, item in value.get("state", {}).items():
            setattr(est, key, self.decode(item))  # fitted state, as fit left it
        return est


# ---------------------------------------------------------------- folders
def is_saved_selection(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a folder written by :func:`save_selection`."""
    return (Path(path) / MANIFEST).is_file()


def check_selection_folder(path: str | os.PathLike) -> None:
    """Raise unless ``path`` may receive a saved selection (new, empty, or a saved one)."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ValidationError(f"--save {path} is a file; give a folder")
    if path.resolve() in (Path.cwd().resolve(), *Path.cwd().resolve().parents):
        raise ValidationError(f"--save {path} is the working folder or one of its parents")
    if path.is_dir() and any(path.iterdir()) and not is_saved_selection(path):
        raise ValidationError(f"--save {path} is a folder that is not a saved selection; "
                              "give a new or empty folder (nothing else is replaced)")


def save_selection(fitted: FittedMethod, path: str | os.PathLike, *,
                   provenance: Mapping[str, Any] | None = None) -> Path:
    """Write ``fitted`` to folder ``path`` (JSON + NPZ + NetCDF; never pickle).

    The folder is written under a temporary name and renamed into place, so a reader
    sees the old selection or the new one. ``path`` must not exist, be empty, or hold a
    saved selection (which is replaced); nothing else is ever deleted.

    Parameters
    ----------
    fitted : FittedMethod
        A fitted method (:func:`coreval.select`).
    path : path-like
        Output folder.
    provenance : mapping, optional
        JSON-able notes on the source data (its name, the lm-eval reader's options),
        kept in the manifest; ``coreval predict --from`` reads a new model's lm-eval logs
        with the same ``lm_eval`` options.

    Raises
    ------
    ValidationError
        ``path`` is a file or a folder that is not a saved selection, or the predictor
        holds something that cannot be written safely (the message names the attribute).
    """
    path = Path(path)
    check_selection_folder(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.tmp-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()  # the usual mode (umask), unlike tempfile.mkdtemp's 0700
    try:
        writer = _Writer(tmp)
        name = fitted.method.name
        manifest = {
            "format": FORMAT, "format_version": FORMAT_VERSION, "coreval_version": __version__,
            "method": name,
            "options": writer.encode(dict(fitted.options), "options"),
            "seed": int(fitted.seed), "budget": fitted.budget, "k": len(fitted.coreset),
            "calibration": fitted.calibration, "clip01": bool(fitted.clip01),
            "selection": fitted.selection, "selection_rmse": fitted.selection_rmse,
            "n_source": int(fitted.n_source),
            "score_range": (None if fitted.score_range is None
                            else [float(v) for v in fitted.score_range]),
            "source_items": writer.encode(
                None if fitted.source_items is None else np.asarray(fitted.source_items,
                                                                    dtype=str),
                "source_items"),
            "cv_residuals": writer.encode(fitted.cv_residuals, "cv_residuals"),
            "cv_means": writer.encode(fitted.cv_means, "cv_means"),
            "interval_scale": fitted.interval_scale,
            "seconds": {k: float(v) for k, v in fitted.seconds.items()},
            "provenance": json.loads(json.dumps(dict(provenance or {}))),
            "coreset": writer.encode(fitted.coreset, "coreset"),
            "selector": writer.estimator(fitted.selector, f"{name} selector", state=False),
            "predictor": writer.encode(fitted.predictor, f"{name} predictor"),
            "model_check": writer.encode(fitted.model_check, "model_check"),
        }
        with open(tmp / ARRAYS, "wb") as handle:
            np.savez(handle, **writer.arrays)
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1), encoding="utf-8")
        backup = None
        if path.exists():
            backup = path.parent / f".{path.name}.old-{uuid.uuid4().hex[:8]}"
            os.replace(path, backup)
        os.replace(tmp, path)
        if backup is not None:  # only ever an empty folder or a saved selection
            shutil.rmtree(backup, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return path


def _refuse_pickles(path: Path) -> None:
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        with open(file, "rb") as handle:
            head = handle.read(2)
        # protocol 2+ pickles start with PROTO (0x80) and the protocol number
        if file.suffix.lower() in PICKLE_SUFFIXES or (head[:1] == b"\x80" and head[1:2]
                                                      and head[1] <= 5):
            raise ValidationError(f"{file} is a pickle; coreval never loads pickles (a saved "
                                  "selection is JSON, NPZ and NetCDF)")


def read_manifest(path: str | os.PathLike) -> dict[str, Any]:
    """The manifest of a saved selection, checked for format and coreval version."""
    path = Path(path)
    if not path.is_dir():
        raise ValidationError(f"--from {path}: no such folder (write one with "
                              "coreval select ... --save DIR)")
    if not is_saved_selection(path):
        raise ValidationError(f"--from {path} is not a saved selection (no {MANIFEST}; write "
                              "one with coreval select ... --save DIR)")
    _refuse_pickles(path)
    try:
        manifest = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValidationError(f"{path / MANIFEST} is not valid JSON: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ValidationError(f"{path / MANIFEST} is not a coreval saved selection")
    differs = []
    if manifest.get("format_version") != FORMAT_VERSION:
        differs.append(f"format version {manifest.get('format_version')} (this coreval reads "
                       f"{FORMAT_VERSION})")
    if manifest.get("coreval_version") != __version__:
        differs.append(f"coreval {manifest.get('coreval_version')} (this is coreval "
                       f"{__version__})")
    if differs:
        raise ValidationError(f"{path} was saved with {' and '.join(differs)}; run coreval "
                              "select ... --save again with this version")
    return manifest


def load_selection(path: str | os.PathLike) -> FittedMethod:
    """Read a selection written by :func:`save_selection`, ready to predict (no refit).

    Raises
    ------
    ValidationError
        Not a saved selection, a pickle in the folder, another coreval or format
        version, a class outside :data:`ALLOWED_PACKAGES`, or a method whose registered
        components differ from the saved ones (each message says what differs).
    """
    path = Path(path)
    manifest = read_manifest(path)
    missing = sorted(_MANIFEST_KEYS - set(manifest))
    unknown = sorted(set(manifest) - _MANIFEST_KEYS)
    if missing or unknown:
        raise ValidationError(f"{path / MANIFEST}: " + "; ".join(
            text for text in (missing and f"missing entries {preview(missing)}",
                              unknown and f"unknown entries {preview(unknown)}") if text))
    try:
        with np.load(path / ARRAYS, allow_pickle=False) as npz:
            arrays = {key: npz[key] for key in npz.files}
    except ValueError as exc:  # an object array needs pickle: refused
        raise ValidationError(f"{path / ARRAYS}: {exc}") from None
    reader = _Reader(path, arrays)
    method = get_method(manifest["method"])
    if manifest["selection"] == "random":  # selection="auto" put a random coreset in place
        method = random_variant(method, {})[0]
    try:
        options = reader.decode(manifest["options"])
        selector = reader.estimator(manifest["selector"])
        predictor = reader.decode(manifest["predictor"])
        coreset = reader.decode(manifest["coreset"])
        cv_residuals = reader.decode(manifest["cv_residuals"])
        cv_means = reader.decode(manifest["cv_means"])
        model_check = reader.decode(manifest["model_check"])
        source_items = reader.decode(manifest["source_items"])
    except (KeyError, TypeError, AttributeError) as exc:  # a hand-edited or damaged file
        raise ValidationError(f"{path / MANIFEST} is damaged ({type(exc).__name__}: {exc}); "
                              "save the selection again") from None
    expected = {"selector": type(method.make_selector(k=1, **options)),
                "predictor": type(method.make_predictor(**options))}
    for role, obj in (("selector", selector), ("predictor", predictor)):
        if type(obj) is not expected[role]:
            raise ValidationError(f"{path}: the saved {role} of {method.name} is "
                                  f"{type(obj).__name__}, but {method.name} now uses "
                                  f"{expected[role].__name__}")
    if not isinstance(coreset, Coreset):
        raise ValidationError(f"{path}: the saved coreset is not a Coreset")
    selector.coreset_ = coreset
    predictor.cache_ = None
    predictor.refit_ = predictor.fixed_coreset_refit
    fitted = FittedMethod(method, selector, predictor, coreset,
                          seconds=dict(manifest.get("seconds", {})),
                          calibration=manifest["calibration"],
                          cv_residuals=cv_residuals, cv_means=cv_means,
                          interval_scale=manifest["interval_scale"],
                          clip01=bool(manifest["clip01"]),
                          source_items=source_items,
                          n_source=int(manifest["n_source"]), seed=int(manifest["seed"]),
                          options=options, budget=manifest.get("budget"),
                          selection=manifest["selection"],
                          selection_rmse=manifest["selection_rmse"],
                          score_range=(None if manifest["score_range"] is None else
                                       tuple(map(float, manifest["score_range"]))),
                          model_check=model_check)
    return fitted
