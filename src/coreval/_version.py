"""The package version (one place; read by the package, the model cards and the CLI)."""

__version__ = "0.1.0"
