"""What a smooth-bound (propose-test-release) mechanism releases: one value, or a batch of independent ones."""

from __future__ import annotations

import attrs
import numpy as np
import numpy.typing as npt

from privframe._typing import Array

__all__ = ["SmoothRelease", "SmoothReleaseBatch"]


@attrs.frozen
class SmoothRelease:
    """What a smooth-bound (propose-test-release) mechanism released.

    Parameters
    ----------
    value : ndarray
        The noisy value.
    bound : float
        The bound the noise was scaled to: the privately proposed ``b`` (variant "bound"), the public
        proposal ``b_0`` (variant "classic", test passed) or the global sensitivity (fallback). All of these
        are released quantities, never the non-private smooth bound itself.
    noise_scale : float
        Standard deviation of the release noise.
    passed : bool
        False when the test failed and the fallback was used.
    """

    value: Array
    bound: float
    noise_scale: float
    passed: bool = True


@attrs.frozen(eq=False)
class SmoothReleaseBatch:
    """``N`` independent releases of a smooth-bound mechanism (row i is one :class:`SmoothRelease`).

    Parameters
    ----------
    value : ndarray
        ``(N, d)`` noisy values; NaN in a row that was not released.
    bound : ndarray
        ``(N,)`` bounds the noise was scaled to (NaN where not released).
    noise_scale : ndarray
        ``(N,)`` standard deviations of the release noise.
    passed : ndarray
        ``(N,)`` test outcomes (False where the test failed, released through a fallback or not at all).
    released : ndarray
        ``(N,)`` False where the test failed and nothing was released (``PTRFailed`` for a single release).
    """

    value: Array
    bound: Array
    noise_scale: Array
    passed: npt.NDArray[np.bool_]
    released: npt.NDArray[np.bool_]
