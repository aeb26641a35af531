"""Data layer: the score matrix, readers/writers, simulation and model splits."""

from coreval.data.io import load_catalog, load_matrix, save_matrix
from coreval.data.lm_eval import read_lm_eval
from coreval.data.matrix import ScoreMatrix
from coreval.data.npz import read_npz, write_npz
from coreval.data.simulate import Simulation, simulate
from coreval.data.splits import Split, iter_splits, make_split
from coreval.data.tables import read_long, read_response_patterns, read_wide, write_table

__all__ = [
    "ScoreMatrix",
    "Simulation",
    "Split",
    "iter_splits",
    "load_catalog",
    "load_matrix",
    "make_split",
    "read_lm_eval",
    "read_long",
    "read_npz",
    "read_response_patterns",
    "read_wide",
    "save_matrix",
    "simulate",
    "write_npz",
    "write_table",
]
