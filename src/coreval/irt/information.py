"""Item characteristic curves and Fisher information of logistic IRT models.

Slope-intercept parameterisation: ``P(theta) = c + (1 - c) sigmoid(a . theta + d)``
(2PL when ``c`` is None or 0). Unidimensional calls take ``theta`` of shape
``(n,)`` and ``a`` of shape ``(items,)``; multidimensional calls take ``theta``
``(n, D)`` and ``a`` ``(items, D)``, and the information is then a ``D x D``
matrix per item. All functions are pure and accept NumPy arrays or JAX arrays
(the result has the type of the input).

References
----------
Birnbaum, A. (1968). Some latent trait models and their use in inferring an
examinee's ability. In Lord & Novick, Statistical Theories of Mental Test
Scores, ch. 17-20 (item information of the 3PL).
Lord, F. M. (1980). Applications of Item Response Theory to Practical Testing
Problems, ch. 5 (item and test information functions).
Reckase, M. D. (2009). Multidimensional Item Response Theory, ch. 5
(information matrix ``a a^T P Q`` of the compensatory M2PL).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import expit

from coreval.errors import ValidationError

__all__ = [
    "directional_information",
    "icc",
    "information_trace",
    "item_information",
    "standard_error",
    "test_information",
]


def _xp(*arrays: Any):
    """NumPy, or jax.numpy when any input is a JAX array."""
    for arr in arrays:
        if arr is not None and type(arr).__module__.startswith("jax"):
            import jax.numpy as jnp

            return jnp
    return np


def _sigmoid(xp, z):
    if xp is np:
        return expit(z)
    import jax

    return jax.nn.sigmoid(z)


def _linear(theta, a, d, c):
    """Return ``(xp, z, multidim, a2, c)``: the linear predictor of shape (n, items)."""
    xp = _xp(theta, a, d, c)
    theta = xp.asarray(theta, dtype=float)
    a, d = xp.asarray(a, dtype=float), xp.asarray(d, dtype=float)
    if a.ndim not in (1, 2) or d.ndim != 1 or a.shape[0] != d.shape[0]:
        raise ValidationError(f"a must be (items,) or (items, D) and d (items,), got shapes "
                              f"{tuple(a.shape)} and {tuple(d.shape)}")
    multidim = a.ndim == 2
    if multidim:
        theta2 = theta.reshape(-1, 1) if theta.ndim <= 1 and a.shape[1] == 1 else theta
        if theta2.ndim != 2 or theta2.shape[1] != a.shape[1]:
            raise ValidationError(f"theta must be (n, {a.shape[1]}) for a of shape "
                                  f"{tuple(a.shape)}, got {tuple(theta.shape)}")
        z = theta2 @ a.T + d
    else:
        if theta.ndim > 1:
            raise ValidationError(f"theta must be 1-D for 1-D a, got shape {tuple(theta.shape)}")
        z = xp.reshape(theta, (-1, 1)) * a + d
    if c is not None:
        c = xp.asarray(c, dtype=float)
        if c.shape != d.shape:
            raise ValidationError(f"c must have shape {tuple(d.shape)}, got {tuple(c.shape)}")
    return xp, z, multidim, a, c


def icc(theta, a, d, c=None):
    """Item characteristic curves ``P(correct | theta)``.

    Parameters
    ----------
    theta : array, shape (n,) or (n, D)
        Abilities.
    a : array, shape (items,) or (items, D)
        Slopes (discriminations).
    d : array, shape (items,)
        Intercepts.
    c : array, shape (items,), optional
        Lower asymptotes (3PL guessing); None means 0 (2PL).

    Returns
    -------
    array, shape (n, items)
        ``c + (1 - c) sigmoid(a . theta + d)``.
    """
    xp, z, _, _, c = _linear(theta, a, d, c)
    p = _sigmoid(xp, z)
    return p if c is None else c + (1.0 - c) * p


def _weight(theta, a, d, c):
    """The scalar factor ``w`` with information ``a a^T w`` (per person and item).

    2PL: ``w = P Q`` (Lord 1980, ch. 5). 3PL: ``w = (Q / P) ((P - c) / (1 - c))^2``
    (Birnbaum 1968), which equals ``P* Q (P - c) / ((1 - c) P)`` with
    ``P* = sigmoid(z)``; this form stays finite where ``P`` underflows.
    """
    xp, z, multidim, a, c = _linear(theta, a, d, c)
    s = _sigmoid(xp, z)
    one_minus = _sigmoid(xp, -z)
    if c is None:
        return xp, s * one_minus, multidim, a
    p = c + (1.0 - c) * s
    q = (1.0 - c) * one_minus
    return xp, s * q * (p - c) / ((1.0 - c) * p), multidim, a


def item_information(theta, a, d, c=None):
    """Fisher information of each item about theta.

    Parameters
    ----------
    theta, a, d, c
        As in :func:`icc`.

    Returns
    -------
    array
        Unidimensional (1-D ``a``): shape ``(n, items)``, ``a^2 P Q`` for the 2PL
        and ``a^2 (Q / P) ((P - c) / (1 - c))^2`` for the 3PL.
        Multidimensional (2-D ``a``): shape ``(n, items, D, D)``, the matrices
        ``a_j a_j^T w`` (Reckase 2009, ch. 5); use :func:`information_trace` or
        :func:`directional_information` to reduce them to scalars.
    """
    _, w, multidim, a = _weight(theta, a, d, c)
    if not multidim:
        return a**2 * w
    outer = a[:, :, None] * a[:, None, :]
    return w[:, :, None, None] * outer[None]


def test_information(theta, a, d, c=None):
    """Test information: the sum of the item informations (Lord 1980, ch. 5).

    Returns
    -------
    array
        Shape ``(n,)`` for 1-D ``a``; ``(n, D, D)`` for 2-D ``a``.
    """
    return item_information(theta, a, d, c).sum(axis=1)


test_information.__test__ = False  # a library function, not a pytest test


def information_trace(info):
    """Trace of information matrices over their last two axes (A-optimality summary).

    Parameters
    ----------
    info : array, shape (..., D, D)
        Output of :func:`item_information` or :func:`test_information` for D > 1.

    Returns
    -------
    array, shape (...)
    """
    xp = _xp(info)
    return xp.trace(info, axis1=-2, axis2=-1)


def directional_information(theta, a, d, direction, c=None):
    """Information in the unit direction ``u``: ``(a . u)^2 w`` (Reckase 2009, ch. 5).

    Parameters
    ----------
    theta, a, d, c
        As in :func:`icc`, with 2-D ``a``.
    direction : array, shape (D,)
        Direction in theta space; normalised to unit length.

    Returns
    -------
    array, shape (n, items)
    """
    xp, w, _, a = _weight(theta, a, d, c)
    u = xp.asarray(direction, dtype=float)
    if a.ndim != 2 or u.shape != (a.shape[1],):
        raise ValidationError(f"direction must have shape ({a.shape[-1]},) and a must be 2-D")
    u = u / xp.linalg.norm(u)
    return (a @ u) ** 2 * w


def standard_error(theta, a, d, c=None):
    """Asymptotic standard error of the ML ability estimate, ``1 / sqrt(I(theta))``.

    Returns
    -------
    array
        Shape ``(n,)`` for 1-D ``a``. For 2-D ``a``, shape ``(n, D)``: square roots
        of the diagonal of the inverse test-information matrix (infinite where
        that matrix is singular, e.g. D > number of items).
    """
    info = test_information(theta, a, d, c)
    xp = _xp(info)
    if info.ndim == 1:
        return 1.0 / xp.sqrt(info)
    det = xp.linalg.det(info)
    eye = xp.eye(info.shape[-1])
    # Singular matrices give an infinite standard error instead of an exception.
    safe = xp.where((xp.abs(det) > 1e-300)[:, None, None], info, eye)
    var = xp.diagonal(xp.linalg.inv(safe), axis1=-2, axis2=-1)
    return xp.where((xp.abs(det) > 1e-300)[:, None], xp.sqrt(var), xp.inf)
