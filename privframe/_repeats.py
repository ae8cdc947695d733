"""A hint when one process makes many plain (session-less) calls on the same data.

Every plain private call spends its own budget, and the budgets of calls on the same data add up: five
calls at 1-GDP are sqrt(5)-GDP together, whatever each result says on its own. A :class:`privframe.Session`
charges them against one total. This module notices the pattern and says so, once at the 5th plain call on
the same data, again at the 10th, 20th, 40th, ...

The data are recognised by a *private fingerprint*: an HMAC-SHA256, under a random key drawn from
:mod:`secrets` when the process first imports this module, of the array's bytes, shape and dtype. The key
never leaves the process and is never stored; the fingerprints live in a bounded in-memory table of counts
(the least recently seen are forgotten first) and are never written anywhere, so nothing here can be
matched against the data outside this process. Hashing is a few milliseconds at n = 1e6, well under a
percent of a call.

Whether the warning appears depends on the data only through whether the caller passed equal inputs again,
which the caller already knows: it releases nothing about the values.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import warnings
from collections import OrderedDict
from typing import Any

import numpy as np

from privframe.data.distributed import is_dask_array
from privframe.errors import PrivacyWarning, caller_stacklevel

__all__ = ["FIRST_HINT", "fingerprint", "forget", "note_plain_call"]

FIRST_HINT = 5
"""The plain call on the same data at which the hint first appears (then at twice as many, and so on)."""

_KEY = secrets.token_bytes(32)
_SIZE = 256  # fingerprints remembered at most
_counts: OrderedDict[bytes, int] = OrderedDict()
_lock = threading.Lock()


def fingerprint(x: Any) -> bytes | None:
    """A keyed hash of ``x``'s values, shape and dtype, or None for an input that is not held in memory.

    A NumPy array (or anything ``numpy.asarray`` turns into a numeric one without reading a remote source, such
    as a list or a pandas table) is hashed; a Dask array, or an input NumPy cannot take as numbers, is not (its
    schema is checked, and refused, by the call itself).
    """
    if is_dask_array(x) or isinstance(x, np.ma.MaskedArray):
        return None
    try:
        array = np.ascontiguousarray(x.to_numpy() if hasattr(x, "to_numpy") else x)
    except (TypeError, ValueError):
        return None
    if array.dtype.kind not in "biuf":
        return None
    mac = hmac.new(_KEY, f"{array.dtype.str}{array.shape}".encode(), "sha256")
    if array.size:  # (an empty view cannot be cast to bytes; its shape is already in the header)
        mac.update(array.data.cast("B"))
    return mac.digest()


def note_plain_call(print_: bytes | None) -> None:
    """Count one plain private call on the data with fingerprint ``print_``; warn at the 5th, 10th, 20th, ...

    The :class:`privframe.PrivacyWarning` points at the caller's line. ``None`` (an input that was not
    fingerprinted) counts nothing.
    """
    if print_ is None:
        return
    with _lock:
        count = _counts.pop(print_, 0) + 1
        _counts[print_] = count
        while len(_counts) > _SIZE:
            _counts.popitem(last=False)
    if count < FIRST_HINT or count % FIRST_HINT or (count // FIRST_HINT) & (count // FIRST_HINT - 1):
        return
    warnings.warn(
        PrivacyWarning(
            f"this is plain call {count} on the same data in this process: the budgets of repeated calls on "
            "one dataset add up (k calls at mu-GDP are sqrt(k) * mu-GDP together, k at epsilon-DP are "
            "k * epsilon-DP), and each result's own budget no longer describes what was released; charge the "
            "calls to one pf.Session(total_budget), which admits them against a total and keeps a ledger"
        ),
        stacklevel=caller_stacklevel(),
    )


def forget() -> None:
    """Forget every fingerprint (the counts start again from 0)."""
    with _lock:
        _counts.clear()
