"""The numpy path of ``distinct_subsets`` gives the compiled loop's rows from the same words.

Both paths must agree bit for bit and leave the Generator in the same state, or a seed would define
different resamples depending on whether numba happened to be loaded.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from privframe_std.samplers import _kernels

IntArray = npt.NDArray[np.int64]
Case = tuple[IntArray, npt.NDArray[np.bool_], int, int]


def _random_case(rng: np.random.Generator) -> Case:
    size = int(rng.integers(1, 5001))
    rows = int(rng.integers(0, 24))
    k = rng.integers(0, size // 2 + 1, size=rows).astype(np.int64)
    k[rng.random(rows) < 0.1] = 0
    complement = rng.random(rows) < 0.4
    start = int(rng.integers(0, 10_000))
    return k, complement, start, start + size


EDGE_CASES: list[Case] = [
    (np.zeros(0, np.int64), np.zeros(0, bool), 0, 10),
    (np.zeros(3, np.int64), np.array([False, True, False]), 5, 6),  # size 1: nothing or everything
    (np.array([0, 1, 0]), np.array([True, False, False]), 0, 2),
    (np.array([1, 1, 1, 1]), np.array([False, True, True, False]), 3, 5),
    (np.zeros(4, np.int64), np.array([True, False, True, True]), 0, 1000),  # no word used by any row
    (np.array([2500, 2500]), np.array([False, True]), 100, 5100),
    (np.array([1, 2, 3, 4, 5, 6, 7]), np.zeros(7, bool), 0, 2**20),
]


def _assert_paths_agree(case: Case, seed: int) -> None:
    k, complement, start, stop = case
    numpy_rng, compiled_rng = np.random.default_rng(seed), np.random.default_rng(seed)
    by_numpy = _kernels._distinct_subsets_numpy(numpy_rng, k, complement, start, stop)
    by_numba = _kernels._distinct_subsets_compiled(compiled_rng, k, complement, start, stop)
    assert by_numpy.dtype == by_numba.dtype == np.intp
    np.testing.assert_array_equal(by_numpy, by_numba)
    assert numpy_rng.bit_generator.state == compiled_rng.bit_generator.state
    assert not _kernels._bitmap("present", stop - start).any()


@pytest.mark.parametrize("seed", range(8))
def test_numpy_path_matches_compiled_on_random_cases(seed: int) -> None:
    cases = np.random.default_rng([seed, 17])
    for i in range(25):
        _assert_paths_agree(_random_case(cases), seed * 100 + i)


@pytest.mark.parametrize("index", range(len(EDGE_CASES)))
def test_numpy_path_matches_compiled_on_edge_cases(index: int) -> None:
    for seed in range(3):
        _assert_paths_agree(EDGE_CASES[index], seed)


@pytest.mark.parametrize("words", [1, 2, 5])
def test_numpy_path_matches_compiled_when_words_run_out(monkeypatch: pytest.MonkeyPatch, words: int) -> None:
    # With a few words a draw, rows run past the words (some several times) and resume in the next draw.
    calls: dict[str, list[int]] = {"numpy": [], "numba": []}
    path = ["numpy"]

    def few(k: Any, size: int) -> int:
        calls[path[0]].append(k.size)
        return words

    monkeypatch.setattr(_kernels, "words_for_subsets", few)
    cases = np.random.default_rng([words, 23])
    for i in range(12):
        k, complement, start, stop = _random_case(cases)
        k = np.minimum(k, 300)  # keeps the number of draws (and the time) small
        calls["numpy"].clear()
        calls["numba"].clear()
        numpy_rng, compiled_rng = np.random.default_rng(i), np.random.default_rng(i)
        path[0] = "numpy"
        by_numpy = _kernels._distinct_subsets_numpy(numpy_rng, k, complement, start, stop)
        path[0] = "numba"
        by_numba = _kernels._distinct_subsets_compiled(compiled_rng, k, complement, start, stop)
        np.testing.assert_array_equal(by_numpy, by_numba)
        assert numpy_rng.bit_generator.state == compiled_rng.bit_generator.state
        assert calls["numpy"] == calls["numba"]  # the same draws, each asked for the same rows
        if k.size and k.max() > 2 * words:  # a row needs more values than a draw has halves
            assert len(calls["numpy"]) > 1


def test_rows_are_uniform_subsets_of_the_requested_sizes() -> None:
    k = np.array([0, 3, 7, 10, 0, 5], dtype=np.int64)
    complement = np.array([False, False, True, True, True, False])
    out = _kernels._distinct_subsets_numpy(np.random.default_rng(3), k, complement, 40, 60)
    lengths = np.where(complement, 20 - k, k)
    assert out.size == lengths.sum()
    for row in np.split(out, np.cumsum(lengths)[:-1]):
        assert np.all(np.diff(row) > 0)
        assert np.all((row >= 40) & (row < 60))


def _run_fresh(code: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, check=True, timeout=300
    )
    return result.stdout.strip()


def test_fresh_process_takes_the_numpy_path_for_small_work_only() -> None:
    small = _run_fresh(
        """
        import sys
        import numpy as np
        from privframe_std.samplers import _kernels
        out = _kernels.distinct_subsets(np.random.default_rng(0), np.full(128, 145), np.zeros(128, bool), 0, 1000)
        print(out.size, "numba" in sys.modules, "privframe_std.samplers._jit" in sys.modules)
        """
    )
    assert small == "18560 False False"
    large = _run_fresh(
        """
        import sys
        import numpy as np
        from privframe_std.samplers import _kernels
        rows = _kernels.NUMPY_PATH_ROWS + 1
        out = _kernels.distinct_subsets(np.random.default_rng(0), np.full(rows, 2), np.zeros(rows, bool), 0, 100)
        print(out.size == 2 * rows, "numba" in sys.modules)
        """
    )
    assert large == "True True"


def _forbid(name: str) -> Any:
    def forbidden(*args: Any) -> None:
        raise AssertionError(f"{name} must not run here")

    return forbidden


CASE: Case = (np.array([3, 4]), np.array([False, True]), 0, 10)


def test_numba_once_loaded_is_always_used(monkeypatch: pytest.MonkeyPatch) -> None:
    import privframe_std.samplers._jit  # noqa: F401

    monkeypatch.setattr(_kernels, "_distinct_subsets_numpy", _forbid("the numpy path"))
    _kernels.distinct_subsets(np.random.default_rng(0), *CASE)


def test_numpy_path_runs_while_numba_is_not_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "privframe_std.samplers._jit", raising=False)
    monkeypatch.setattr(_kernels, "_numpy_path_seconds", 0.0)
    monkeypatch.setattr(_kernels, "_distinct_subsets_compiled", _forbid("the compiled path"))
    expected = _kernels._distinct_subsets_numpy(np.random.default_rng(0), *CASE)
    np.testing.assert_array_equal(_kernels.distinct_subsets(np.random.default_rng(0), *CASE), expected)


@pytest.mark.parametrize("limit", ["rows", "values", "seconds"])
def test_large_work_takes_the_compiled_path(monkeypatch: pytest.MonkeyPatch, limit: str) -> None:
    monkeypatch.delitem(sys.modules, "privframe_std.samplers._jit", raising=False)
    monkeypatch.setattr(_kernels, "_numpy_path_seconds", 0.0)
    monkeypatch.setattr(_kernels, "_distinct_subsets_numpy", _forbid("the numpy path"))
    k, complement, start, stop = CASE
    if limit == "rows":
        monkeypatch.setattr(_kernels, "NUMPY_PATH_ROWS", k.size - 1)
    elif limit == "values":
        monkeypatch.setattr(_kernels, "NUMPY_PATH_VALUES", 3 + 6 - 1)  # one value short of the output
    else:
        monkeypatch.setattr(_kernels, "_numpy_path_seconds", _kernels.NUMPY_PATH_SECONDS)
    out = _kernels.distinct_subsets(np.random.default_rng(0), k, complement, start, stop)
    assert out.size == 9
