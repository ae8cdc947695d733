"""The on-disk cache of private-variance split searches (``plan_cache``): the same plan from disk as from a
search, nothing privacy-relevant taken from a file, and a cache that can be turned off or cannot be written."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path

import pytest

import privframe as pf
from privframe_std.methods import private_variance as pv
from privframe_std.methods.private_variance import core, plan_cache

N, BUDGET, CONFIDENCE, SPELLING = 137, pf.GDP(1.0), 0.9, "gaussian"  # the quickest search (0.3-0.6 s)
SHARES = (float(core._SHARES[0]), float(core._SHARES[-1]))


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty cache folder of this test's own, and no plan in memory before or after."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv(plan_cache.ENVIRONMENT, raising=False)
    _forget()
    yield tmp_path / "privframe" / "plans"
    _forget()


def _forget() -> None:
    """Drop the plans kept in memory (``plan`` and the searches are each cached per process)."""
    core.plan.cache_clear()
    core._search_split.cache_clear()


def _entry_file(folder: Path) -> Path:
    (path,) = folder.glob("*.json")
    return path


def test_a_stored_search_gives_the_same_plan(cache: Path) -> None:
    searched = pv.plan(N, (2.0, 7.0), BUDGET, CONFIDENCE)
    record = json.loads(_entry_file(cache).read_text())
    assert float.fromhex(record["share"]) == searched.share
    _forget()
    assert pv.plan(N, (2.0, 7.0), BUDGET, CONFIDENCE) == searched  # from the file this time
    entry = plan_cache.load(N, BUDGET, CONFIDENCE, SPELLING, SHARES)
    assert entry is not None
    share, k, criterion = entry
    stored = core._plan_at(N, 0.0, 1.0, 1.0, BUDGET, CONFIDENCE, SPELLING, share, stored=(k, criterion))
    assert stored == core._searched_split(N, BUDGET, CONFIDENCE, SPELLING)


@pytest.mark.parametrize(
    "change",
    [
        {"share": (2.0).hex()},
        {"inflation": math.nan.hex()},
        {"inflation": (-1.0).hex()},
        {"criterion": "not a number"},
        {"key": "another search"},
    ],
)
def test_an_unusable_entry_is_searched_again(cache: Path, change: dict[str, str]) -> None:
    searched = pv.plan(N, (0.0, 1.0), BUDGET, CONFIDENCE)
    path = _entry_file(cache)
    path.write_text(json.dumps({**json.loads(path.read_text()), **change}))
    assert plan_cache.load(N, BUDGET, CONFIDENCE, SPELLING, SHARES) is None
    _forget()
    assert pv.plan(N, (0.0, 1.0), BUDGET, CONFIDENCE) == searched


def test_a_corrupt_file_is_searched_again(cache: Path) -> None:
    searched = pv.plan(N, (0.0, 1.0), BUDGET, CONFIDENCE)
    _entry_file(cache).write_text("{ truncated")
    _forget()
    assert pv.plan(N, (0.0, 1.0), BUDGET, CONFIDENCE) == searched


def test_a_stored_share_never_decides_the_budget(cache: Path) -> None:
    """An edited share inside the search's range changes the split, and the releases still compose to the
    caller's budget: they are rebuilt from it, not read."""
    budget = pf.GDP(0.7)
    pv.plan(N, (0.0, 1.0), budget, CONFIDENCE)
    path = _entry_file(cache)
    path.write_text(json.dumps({**json.loads(path.read_text()), "share": (0.55).hex()}))
    _forget()
    plan = pv.plan(N, (0.0, 1.0), budget, CONFIDENCE)
    assert plan.share == 0.55
    mus = [release.budget.mu for release in plan.releases]  # type: ignore[union-attr]
    assert math.hypot(*mus) <= 0.7
    assert mus[0] ** 2 == pytest.approx(0.55 * 0.7**2)


def test_the_key_names_the_code_and_the_search(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another calibration (another source digest) does not read this one's entries, nor does another n,
    budget or confidence."""
    pv.plan(N, (0.0, 1.0), BUDGET, CONFIDENCE)
    assert plan_cache.load(N, BUDGET, CONFIDENCE, SPELLING, SHARES) is not None
    others: list[tuple[int, pf.Budget, float]] = [(N + 1, BUDGET, CONFIDENCE), (N, pf.GDP(1.5), CONFIDENCE)]
    for other in [*others, (N, BUDGET, 0.95)]:
        assert plan_cache.load(*other, SPELLING, SHARES) is None
    monkeypatch.setattr(plan_cache, "_fingerprint", lambda: "other code")
    assert plan_cache.load(N, BUDGET, CONFIDENCE, SPELLING, SHARES) is None


@pytest.mark.parametrize("value", ["0", "off", "False", " no "])
def test_the_switch_turns_the_cache_off(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(plan_cache.ENVIRONMENT, value)
    assert plan_cache.folder() is None
    monkeypatch.setenv(plan_cache.ENVIRONMENT, "1")
    assert plan_cache.folder() is not None


def test_nothing_is_written_with_the_cache_off(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(plan_cache.ENVIRONMENT, "0")
    pv.plan(N, (0.0, 1.0), BUDGET, CONFIDENCE)
    assert not cache.exists()


def test_a_folder_that_cannot_be_written_is_left_alone(cache: Path) -> None:
    cache.parent.mkdir(parents=True)
    cache.write_text("a file where the folder would be")
    searched = pv.plan(N, (0.0, 1.0), BUDGET, CONFIDENCE)
    assert cache.read_text() == "a file where the folder would be"
    _forget()
    assert pv.plan(N, (0.0, 1.0), BUDGET, CONFIDENCE) == searched


def test_no_cache_where_the_sources_cannot_be_read(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plan_cache, "_fingerprint", lambda: None)
    searched = pv.plan(N, (0.0, 1.0), BUDGET, CONFIDENCE)
    assert not cache.exists()
    assert plan_cache.load(N, BUDGET, CONFIDENCE, SPELLING, SHARES) is None
    _forget()
    assert pv.plan(N, (0.0, 1.0), BUDGET, CONFIDENCE) == searched
