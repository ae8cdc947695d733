"""The hint at many plain (session-less) calls on the same data (privframe._repeats).

- The 5th plain private call on the same array warns with a typed ``pf.PrivacyWarning`` pointing at the caller
  and at ``pf.Session``; the 4th does not; then the 10th, 20th, ... and nothing in between.
- A different array (other values, or the same bytes in another shape or dtype) is counted apart.
- Calls through a session, non-private calls and calls refused before they read the data never count.
- The message depends on the count only, never on the values; the fingerprint is keyed (a per-process random
  key), and the table of counts is bounded.
"""

from __future__ import annotations

import hashlib
import warnings
from typing import Any

import numpy as np
import pytest

import privframe as pf
from privframe import _repeats

N = 300


@pytest.fixture
def x() -> np.ndarray:
    return np.random.default_rng(0).uniform(size=N)


def _plain(data: Any, **kw: Any) -> pf.IntervalResult:
    return pf.confidence_interval(data, "mean", method="cr-gs", budget=pf.GDP(1.0), bounds=(0, 1), **kw)


def _hints(calls: int, data: Any) -> list[warnings.WarningMessage]:
    """The repeat hints among the warnings of ``calls`` plain calls on ``data``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for seed in range(calls):
            _plain(data, rng=seed)
    return [w for w in caught if issubclass(w.category, pf.PrivacyWarning) and "plain call" in str(w.message)]


def test_four_plain_calls_do_not_warn_and_the_fifth_does(x: np.ndarray) -> None:
    assert _hints(4, x) == []
    hints = _hints(1, x)
    assert len(hints) == 1
    message = str(hints[0].message)
    assert "plain call 5 on the same data" in message
    assert "add up" in message
    assert "pf.Session" in message
    assert hints[0].filename == __file__  # points at the caller's line, not inside privframe


def test_the_hint_comes_again_at_10_and_20_and_not_in_between(x: np.ndarray) -> None:
    hints = _hints(20, x)
    assert [str(w.message).split(" on ")[0] for w in hints] == [
        "this is plain call 5",
        "this is plain call 10",
        "this is plain call 20",
    ]


def test_a_different_array_is_counted_apart(x: np.ndarray) -> None:
    assert _hints(4, x) == []
    assert _hints(1, np.random.default_rng(1).uniform(size=N)) == []
    assert _hints(4, x.astype(np.float32)) == []  # the same values in another dtype
    pairs = x.reshape(N // 2, 2)
    assert _repeats.fingerprint(pairs) != _repeats.fingerprint(x)  # the same bytes in another shape
    assert len(_hints(1, x)) == 1  # x itself is still counted


def test_equal_values_are_the_same_data_whatever_the_container(x: np.ndarray) -> None:
    assert _hints(2, x) == []
    assert _hints(2, x.copy()) == []
    assert len(_hints(1, list(x))) == 1  # a list of the same floats is the 5th call on the same data
    assert _repeats.fingerprint(list(x)) == _repeats.fingerprint(x)
    assert _repeats.fingerprint(x[::-1][::-1]) == _repeats.fingerprint(x)  # a non-contiguous view


def test_session_calls_never_count(x: np.ndarray) -> None:
    assert _hints(4, x) == []
    session = pf.Session(pf.GDP(10.0))
    with warnings.catch_warnings():
        warnings.simplefilter("error", pf.PrivacyWarning)
        for seed in range(10):
            session.confidence_interval(x, "mean", method="cr-gs", budget=pf.GDP(1.0), bounds=(0, 1), rng=seed)
    assert len(_hints(1, x)) == 1  # the 5th plain call: the ten session calls were not counted


def test_non_private_and_refused_calls_never_count(x: np.ndarray) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", pf.PrivacyWarning)
        for _ in range(6):
            pf.confidence_interval(x, "mean", method="bootstrap", budget=None, bounds=(0, 1), B=50, rng=1)
            with pytest.raises(pf.ConfigError):  # refused while its options are checked: nothing was spent
                _plain(x, m=1)
    assert _hints(4, x) == []
    assert len(_hints(1, x)) == 1


def test_the_message_depends_on_the_count_only(x: np.ndarray) -> None:
    first = _hints(5, x)
    second = _hints(5, np.random.default_rng(2).uniform(size=N) * 0.5)
    assert len(first) == len(second) == 1
    assert str(first[0].message) == str(second[0].message)


def test_the_fingerprint_is_keyed_and_kept_in_a_bounded_table(x: np.ndarray, monkeypatch: pytest.MonkeyPatch) -> None:
    print_ = _repeats.fingerprint(x)
    assert print_ is not None
    assert print_ != hashlib.sha256(x.tobytes()).digest()  # not a plain hash anyone could recompute
    monkeypatch.setattr(_repeats, "_KEY", b"another process's key" + bytes(11))
    assert _repeats.fingerprint(x) != print_
    monkeypatch.undo()
    for i in range(_repeats._SIZE + 10):
        _repeats.note_plain_call(i.to_bytes(8, "big"))
    assert len(_repeats._counts) == _repeats._SIZE
    assert (0).to_bytes(8, "big") not in _repeats._counts  # the least recently seen is forgotten first


def test_inputs_that_are_not_numbers_in_memory_are_not_fingerprinted() -> None:
    assert _repeats.fingerprint(np.array(["a", "b", "c"])) is None
    assert _repeats.fingerprint(np.ma.masked_array([1.0, 2.0, 3.0])) is None
    assert _repeats.fingerprint(object()) is None
    assert _repeats.fingerprint(np.zeros((0, 3))) != _repeats.fingerprint(np.zeros((3, 0)))  # empty: the shape
    _repeats.note_plain_call(None)  # counts nothing
    assert len(_repeats._counts) == 0
