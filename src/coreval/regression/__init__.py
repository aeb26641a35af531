"""The regression engine: reference λ grids and batched leave-one-out ridge fits."""

from coreval.regression.ridge_loo import (
    alpha_grid,
    default_alphas,
    kernel_ridge_loo_batch,
    ridge_loo_batch,
)

__all__ = ["alpha_grid", "default_alphas", "kernel_ridge_loo_batch", "ridge_loo_batch"]
