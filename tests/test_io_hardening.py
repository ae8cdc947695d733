"""Saving and reading results and session files: all or nothing, typed errors, documents that hold together."""

from __future__ import annotations

import errno
import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import privframe as pf
from privframe.privacy import session_log
from privframe.results import load_result
from privframe.session import SessionCall

X = np.random.default_rng(0).beta(2, 5, size=2000)
SMALL = np.random.default_rng(1).uniform(size=200)


@pytest.fixture(scope="module")
def res() -> pf.IntervalResult:
    return pf.confidence_interval(X, "mean", method="cr-gs", budget=pf.GDP(1.0), bounds=(0, 1), rng=7)


@pytest.fixture(scope="module")
def approx() -> pf.IntervalResult:
    return pf.confidence_interval(X, "mean", method="cr-gs", budget=pf.ApproxDP(1.0, 1e-6), bounds=(0, 1), rng=7)


@pytest.fixture(scope="module")
def region() -> pf.RegionResult:
    ball = np.random.default_rng(1).normal(0.0, 0.2, size=(2000, 2))
    return pf.confidence_region(ball, "mean", method="cr-gs", budget=pf.GDP(1.0), bounds=pf.L2Ball(1.0), rng=7)


def _doc(result: pf.IntervalResult | pf.RegionResult, **changes: Any) -> dict[str, Any]:
    table: dict[str, Any] = json.loads(result.to_json())
    table.update(changes)
    return table


def _privacy(result: pf.IntervalResult | pf.RegionResult, **changes: Any) -> dict[str, Any]:
    table = _doc(result)
    privacy = {**table["privacy"], **changes}
    for key in [key for key, value in changes.items() if value is _DROP]:
        del privacy[key]
    return {**table, "privacy": privacy}


_DROP = object()


# ---------------------------------------------------------------------------------------------------------
# to_json: a file written whole or not at all, typed errors


def test_a_failed_write_leaves_the_old_file_whole_and_no_temporary(
    tmp_path: Path, res: pf.IntervalResult, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "res.json"
    path.write_text("the old file\n", encoding="utf-8")

    def full_disk(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(pf.ConfigError) as info:
        res.to_json(path)
    assert info.value.path == "path"
    assert "res.json" in str(info.value)
    assert "No space left" in str(info.value)
    assert f"{res.low:.6g}"[:6] not in str(info.value)  # the file's name, never the data
    assert path.read_text(encoding="utf-8") == "the old file\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["res.json"]


def test_an_interrupted_write_leaves_the_old_file_whole(
    tmp_path: Path, res: pf.IntervalResult, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "res.json"
    path.write_text("the old file\n", encoding="utf-8")

    def interrupted(source: Any, target: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        res.to_json(path)
    assert path.read_text(encoding="utf-8") == "the old file\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["res.json"]


def test_a_written_file_replaces_the_old_one_keeping_its_mode_and_its_link(
    tmp_path: Path, res: pf.IntervalResult
) -> None:
    target = tmp_path / "real.json"
    target.write_text("old", encoding="utf-8")
    target.chmod(0o640)
    link = tmp_path / "link.json"
    link.symlink_to(target)
    text = res.to_json(link)
    assert link.is_symlink()
    assert target.read_text(encoding="utf-8") == text + "\n"
    assert target.stat().st_mode & 0o777 == 0o640
    assert pf.IntervalResult.from_json(link).low == res.low
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.json", "real.json"]


def test_a_path_that_cannot_be_written_is_a_config_error_naming_the_file(
    tmp_path: Path, res: pf.IntervalResult
) -> None:
    for path, reason in ((tmp_path / "missing" / "r.json", "No such file"), (tmp_path, "directory")):
        with pytest.raises(pf.ConfigError, match=reason) as info:
            res.to_json(path)
        assert info.value.path == "path"
        assert str(path) in str(info.value)
    with pytest.raises(pf.ConfigError) as info:
        res.to_json(1)  # type: ignore[arg-type]
    assert info.value.path == "path"
    assert list(tmp_path.iterdir()) == []


def test_permission_denied_is_a_config_error(
    tmp_path: Path, res: pf.IntervalResult, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_open = os.open

    def refused(name: Any, flags: int, mode: int = 0o777) -> int:
        if str(name).endswith(".tmp"):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
        return real_open(name, flags, mode)

    monkeypatch.setattr(os, "open", refused)
    with pytest.raises(pf.ConfigError, match="Permission denied") as info:
        res.to_json(tmp_path / "r.json")
    assert info.value.path == "path"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root writes through permissions")
def test_a_folder_without_write_permission_is_a_config_error(tmp_path: Path, res: pf.IntervalResult) -> None:
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        with pytest.raises(pf.ConfigError, match="Permission denied") as info:
            res.to_json(folder / "r.json")
        assert info.value.path == "path"
    finally:
        folder.chmod(0o700)


@pytest.mark.parametrize("indent", ["2", -1, True, 1.5])
def test_indent_is_a_number_of_spaces_or_none(indent: Any, res: pf.IntervalResult, tmp_path: Path) -> None:
    with pytest.raises(pf.ConfigError) as info:
        res.to_json(tmp_path / "r.json", indent=indent)
    assert info.value.path == "indent"
    assert list(tmp_path.iterdir()) == []


def test_valid_indents_write_valid_json(res: pf.IntervalResult) -> None:
    assert "\n" not in res.to_json(indent=None)
    assert json.loads(res.to_json(indent=0)) == json.loads(res.to_json(indent=np.int64(4)))  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------------------
# from_dict: a document that does not hold together is refused, naming the key


@pytest.mark.parametrize(
    ("changes", "path"),
    [
        ({"low": 0.5, "high": 0.4}, "low"),
        ({"low": "nan"}, "low"),
        ({"high": "nan"}, "high"),
        ({"center": "nan"}, "center"),
        ({"confidence": 2}, "confidence"),
        ({"confidence": 0}, "confidence"),
        ({"confidence": 1.0}, "confidence"),
        ({"confidence": "nan"}, "confidence"),
        ({"privacy": None}, "privacy"),
        ({"privacy": {}}, "privacy.total"),
    ],
)
def test_an_inconsistent_interval_is_refused(changes: dict[str, Any], path: str, res: pf.IntervalResult) -> None:
    with pytest.raises(pf.ConfigError) as info:
        pf.IntervalResult.from_dict(_doc(res, **changes))
    assert info.value.path == path


@pytest.mark.parametrize(
    ("changes", "path"),
    [
        ({"total": _DROP}, "privacy.total"),
        ({"events": _DROP}, "privacy.events"),
        ({"accountant": _DROP}, "privacy.accountant"),
        ({"total": None}, "privacy.total"),  # events, yet "non-private"
        ({"events": []}, "privacy.events"),  # a total, yet no events
        ({"total": {"unit": "gdp", "mu": 0.5}}, "privacy.total"),  # not what the events compose
        ({"total": {"unit": "gdp", "mu": 1.0, "delta": 1e-9}}, "privacy.total"),
        ({"total": {"unit": "pure-dp", "epsilon": 1.0}}, "privacy.total"),  # another unit
    ],
)
def test_a_privacy_table_that_does_not_hold_together_is_refused(
    changes: dict[str, Any], path: str, res: pf.IntervalResult
) -> None:
    with pytest.raises(pf.ConfigError) as info:
        pf.IntervalResult.from_dict(_privacy(res, **changes))
    assert info.value.path == path


def test_an_approx_dp_total_is_checked_against_its_events(approx: pf.IntervalResult) -> None:
    assert approx.privacy.accountant == "approx-dp"
    assert load_result(approx.to_dict()).privacy == approx.privacy
    total = approx.to_dict()["privacy"]["total"]
    with pytest.raises(pf.ConfigError) as info:
        pf.IntervalResult.from_dict(_privacy(approx, total={**total, "epsilon": total["epsilon"] / 2}))
    assert info.value.path == "privacy.total"


def test_repeated_approx_dp_releases_need_at_least_their_own_delta() -> None:
    event = pf.PrivacyEvent("select", "exponential", pf.ApproxDP(0.1, 1e-7), count=10)
    doc = pf.IntervalResult(0.1, 0.3, 0.2, 0.9, "x", {}, {}, pf.Ledger([event], pf.ApproxDP(0.9, 2e-6), "approx-dp"))
    assert pf.IntervalResult.from_dict(doc.to_dict()).privacy.total == pf.ApproxDP(0.9, 2e-6)
    table = doc.to_dict()
    table["privacy"]["total"]["delta"] = 1e-7  # below the 10 x 1e-7 the events spend on their own
    with pytest.raises(pf.ConfigError) as info:
        pf.IntervalResult.from_dict(table)
    assert info.value.path == "privacy.total"


def test_a_non_private_document_has_no_events(res: pf.IntervalResult) -> None:
    reference = pf.IntervalResult(0.1, 0.3, 0.2, 0.9, "bootstrap", {}, {}, pf.Ledger([], None, ""))
    assert not pf.IntervalResult.from_dict(reference.to_dict()).privacy.private
    table = reference.to_dict()
    table["privacy"]["events"] = _doc(res)["privacy"]["events"]
    with pytest.raises(pf.ConfigError) as info:
        pf.IntervalResult.from_dict(table)
    assert info.value.path == "privacy.total"


def test_a_plugin_accountants_total_is_taken_at_its_word() -> None:
    ledger = pf.Ledger([pf.PrivacyEvent("center", "gaussian", pf.GDP(1.0))], pf.GDP(0.7), "someone-elses")
    doc = pf.IntervalResult(0.1, 0.3, 0.2, 0.9, "x", {}, {}, ledger).to_dict()
    assert pf.IntervalResult.from_dict(doc).privacy == ledger


def test_unbounded_ends_and_an_uninformative_radius_still_load(region: pf.RegionResult) -> None:
    ledger = pf.Ledger([pf.PrivacyEvent("center", "gaussian", pf.GDP(1.0))], pf.GDP(1.0), "gdp")
    open_ended = pf.IntervalResult(-math.inf, math.inf, 0.0, 0.9, "x", {}, {}, ledger)
    back = pf.IntervalResult.from_json(open_ended.to_json())
    assert (back.low, back.high) == (-math.inf, math.inf)
    for radius in ("nan", "inf"):
        loaded = pf.RegionResult.from_dict(_doc(region, radius=radius))
        assert not math.isfinite(loaded.radius)


@pytest.mark.parametrize(
    ("changes", "path"),
    [({"radius": -1.0}, "radius"), ({"radius": "-inf"}, "radius"), ({"center": [0.0, "x"]}, "center[1]")],
)
def test_an_inconsistent_region_is_refused(changes: dict[str, Any], path: str, region: pf.RegionResult) -> None:
    with pytest.raises(pf.ConfigError) as info:
        pf.RegionResult.from_dict(_doc(region, **changes))
    assert info.value.path == path


def test_json_that_is_not_an_object_says_so(tmp_path: Path) -> None:
    with pytest.raises(pf.ConfigError, match=r"expected a JSON object .* not a JSON array") as info:
        pf.IntervalResult.from_json("[]")
    assert info.value.path == "source"
    file = tmp_path / "list.json"
    file.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(pf.ConfigError, match="not a JSON array"):
        load_result(file)
    with pytest.raises(pf.ConfigError) as info:
        pf.IntervalResult.from_json(3)  # type: ignore[arg-type]
    assert info.value.path == "source"


# ---------------------------------------------------------------------------------------------------------
# contains, summary_table, plots: typed errors naming the parameter


@pytest.mark.parametrize("value", ["a", "0.2", [1, 2], None, True, math.nan])
def test_interval_contains_needs_a_number(value: Any, res: pf.IntervalResult) -> None:
    with pytest.raises(pf.DataError) as info:
        res.contains(value)
    assert info.value.path == "value"


def test_interval_contains_takes_numpy_numbers(res: pf.IntervalResult) -> None:
    assert res.contains(np.float64(res.center))
    assert res.contains(np.float32(res.center))
    assert not res.contains(math.inf)


@pytest.mark.parametrize("value", ["a", ["a", "b"], [0.0, math.nan], [True, False], [0.0, None], [0.0, 0.0, 0.0]])
def test_region_contains_needs_one_number_per_coordinate(value: Any, region: pf.RegionResult) -> None:
    with pytest.raises(pf.DataError) as info:
        region.contains(value)
    assert info.value.path == "value"
    assert region.contains(region.center)


def test_summary_table_and_plots_name_the_parameter(res: pf.IntervalResult) -> None:
    import matplotlib

    matplotlib.use("Agg")
    for call, path in (
        (lambda: pf.summary_table(1), "results"),  # type: ignore[arg-type]
        (lambda: pf.summary_table([res], labels=1), "labels"),  # type: ignore[arg-type]
        (lambda: pf.summary_table([res], labels=[1]), "labels[0]"),  # type: ignore[list-item]
        (lambda: pf.forest_plot(1), "results"),  # type: ignore[arg-type]
        (lambda: pf.forest_plot([res], ax="x"), "ax"),  # type: ignore[arg-type]
        (lambda: pf.plot_result(res, ax=object()), "ax"),  # type: ignore[arg-type]
    ):
        with pytest.raises(pf.ConfigError) as info:
            call()
        assert info.value.path == path


# ---------------------------------------------------------------------------------------------------------
# Ledger.summary: the target delta


@pytest.mark.parametrize("delta", [0, -1, 0.5, math.nan, "x", None, True])
def test_summary_refuses_a_delta_it_cannot_translate_at(delta: Any, res: pf.IntervalResult) -> None:
    for ledger in (res.privacy, pf.Ledger([], None, "")):
        with pytest.raises(pf.BudgetError) as info:
            ledger.summary(delta)
        assert info.value.path == "delta"
    with pytest.raises(pf.BudgetError):
        res.privacy.to_dict(delta)


def test_summary_at_a_valid_delta(res: pf.IntervalResult) -> None:
    assert res.privacy.summary(1e-5).startswith("1-GDP = (")
    assert res.privacy.summary(np.float64(0.1)).endswith("0.1)-DP")


# ---------------------------------------------------------------------------------------------------------
# Session files: an append is all or nothing, a refusal leaves no file behind


def _cheap(session: pf.Session, budget: pf.Budget, rng: int = 1) -> pf.IntervalResult:
    return session.confidence_interval(SMALL, "mean", method="cr-gs", budget=budget, bounds=(0, 1), B=20, rng=rng)


class _Disk:
    """``os`` for session_log, with a ``write`` that takes part of the bytes and then fails (a full disk)."""

    def __init__(self, *, truncate_fails: bool = False) -> None:
        self.failures = 0
        self.truncate_fails = truncate_fails

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def write(self, fd: int, data: Any) -> int:
        self.failures += 1
        if self.failures == 1:
            return os.write(fd, bytes(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def ftruncate(self, fd: int, size: int) -> None:
        if self.truncate_fails:
            raise OSError(errno.EPERM, os.strerror(errno.EPERM))
        os.ftruncate(fd, size)


def test_a_failed_append_leaves_the_file_as_it_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.jsonl"
    session = pf.Session.open(path, pf.GDP(1.0))
    _cheap(session, pf.GDP(0.3))
    before = path.read_bytes()
    disk = _Disk()
    with monkeypatch.context() as patch:
        patch.setattr(session_log, "os", disk)
        with pytest.raises(pf.ConfigError, match="nothing was recorded") as info:
            _cheap(session, pf.GDP(0.3), rng=2)
    assert disk.failures == 2  # half the line went out before the disk filled up
    assert info.value.path == "session"
    assert "s.jsonl" in str(info.value)
    assert path.read_bytes() == before
    reopened = pf.Session.open(path)  # not "altered": the file ends in a whole line
    assert reopened.calls == session.calls
    assert [call.outcome for call in reopened.calls] == ["released"]
    _cheap(session, pf.GDP(0.3), rng=3)  # the disk has room again: the same session goes on
    assert len(pf.Session.open(path).calls) == 2


def test_an_anchor_gets_the_files_head_back_when_the_line_cannot_be_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The anchor hears the new head before the line goes out; when the disk is full it hears the file's
    head again, so ``expect_head`` with what it holds opens the file that is as it was."""
    path = tmp_path / "s.jsonl"
    heads: list[str] = []
    session = pf.Session.open(path, pf.GDP(1.0), anchor=heads.append)
    _cheap(session, pf.GDP(0.3))
    kept = session.head
    with monkeypatch.context() as patch:
        patch.setattr(session_log, "os", _Disk())
        with pytest.raises(pf.ConfigError, match="nothing was recorded"):
            _cheap(session, pf.GDP(0.3), rng=2)
    assert heads[-2] != kept  # the head of the line that was not written ...
    assert heads[-1] == kept  # ... then the file's own head
    assert pf.Session.open(path, expect_head=heads[-1]).head == kept


def test_an_anchor_that_refuses_the_old_head_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.jsonl"
    heads: list[str] = []

    def anchor(head: str) -> None:
        if heads and head in heads:
            raise OSError("the anchor store is read-only now")
        heads.append(head)

    session = pf.Session.open(path, pf.GDP(1.0), anchor=anchor)
    with monkeypatch.context() as patch:
        patch.setattr(session_log, "os", _Disk())
        with pytest.raises(pf.ConfigError, match="refused the file's head after it") as info:
            _cheap(session, pf.GDP(0.3))
    assert info.value.path == "session"
    assert "nothing was recorded" in str(info.value)
    assert isinstance(info.value.__cause__, OSError)


class _FullLockDisk:
    """``os`` for the session log, except that rewriting the lock file's record fails (a full disk)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def pwrite(self, fd: int, data: Any, offset: int) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_a_lock_file_that_cannot_record_the_line_keeps_its_last_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The record is rewritten in place, never truncated first: a failed write leaves the previous record
    (a line the session file still holds), so the tripwire stays armed and the session opens; the failure
    is a ConfigError at ``session``, not a bare OSError."""
    path = tmp_path / "s.jsonl"
    lock = tmp_path / "s.jsonl.lock"
    session = pf.Session.open(path, pf.GDP(1.0))
    _cheap(session, pf.GDP(0.3))
    before = lock.read_bytes()
    assert len(before) == session_log.WITNESS_BYTES
    with monkeypatch.context() as patch:
        patch.setattr(session_log, "os", _FullLockDisk())
        with pytest.raises(pf.ConfigError, match="could not record it") as info:
            _cheap(session, pf.GDP(0.3), rng=2)
    assert info.value.path == "session"
    assert isinstance(info.value.__cause__, OSError)
    assert lock.read_bytes() == before
    reopened = pf.Session.open(path)  # the previous record names a line the file holds
    assert len(reopened.calls) == 2
    path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 3])  # cut short: still refused
    with pytest.raises(pf.ConfigError, match="altered"):
        pf.Session.open(path)


def test_a_lock_file_of_an_earlier_version_is_rewritten_to_the_fixed_record(tmp_path: Path) -> None:
    """A shorter record (written before the padding) is read as before and replaced by a padded one; a
    longer one left by hand is cut to the new record, so no stale bytes follow it."""
    path = tmp_path / "s.jsonl"
    lock = tmp_path / "s.jsonl.lock"
    session = pf.Session.open(path, pf.GDP(1.0))
    _cheap(session, pf.GDP(0.3))
    record = lock.read_text().strip()
    lock.write_text(record + "\n")  # the unpadded form
    session = pf.Session.open(path)
    _cheap(session, pf.GDP(0.3), rng=2)
    assert len(lock.read_bytes()) == session_log.WITNESS_BYTES
    lock.write_text(lock.read_text().strip() + "\n" + " " * 3000)
    _cheap(pf.Session.open(path), pf.GDP(0.3), rng=3)
    assert len(lock.read_bytes()) == session_log.WITNESS_BYTES
    assert len(pf.Session.open(path).calls) == 3


def test_an_append_that_cannot_be_undone_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.jsonl"
    session = pf.Session.open(path, pf.GDP(1.0))
    with monkeypatch.context() as patch:
        patch.setattr(session_log, "os", _Disk(truncate_fails=True))
        with pytest.raises(pf.ConfigError, match="could not be removed") as info:
            _cheap(session, pf.GDP(0.3))
    assert info.value.path == "session"


def test_a_failed_create_leaves_no_session_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.jsonl"
    with monkeypatch.context() as patch:
        patch.setattr(session_log, "os", _Disk())
        with pytest.raises(pf.ConfigError, match="not created") as info:
            pf.Session.open(path, pf.GDP(1.0))
        with pytest.raises(pf.ConfigError, match="not created"):
            pf.Session(pf.GDP(1.0)).save(path)
    assert info.value.path == "session"
    assert list(tmp_path.iterdir()) == []
    assert pf.Session.open(path, pf.GDP(1.0)).calls == ()


@pytest.mark.parametrize(
    ("kwargs", "error", "path"),
    [
        ({"budget": pf.GDP(1.0), "anchor": 1}, pf.ConfigError, "anchor"),
        ({"budget": 1}, pf.BudgetError, "budget"),
        ({"budget": pf.GDP(1.0), "allow_asymptotic": 1}, pf.ConfigError, "allow_asymptotic"),
        ({"budget": pf.GDP(1.0), "key": "secret"}, pf.ConfigError, "key"),
        ({"budget": pf.GDP(1.0), "expect_head": 1}, pf.ConfigError, "expect_head"),
        ({}, pf.ConfigError, "session-budget"),  # refused under the lock: its new lock file goes again
    ],
)
def test_a_refused_open_leaves_no_file_behind(
    tmp_path: Path, kwargs: dict[str, Any], error: type[Exception], path: str
) -> None:
    with pytest.raises(error) as info:
        pf.Session.open(tmp_path / "s.jsonl", **kwargs)
    assert getattr(info.value, "path", None) == path
    assert list(tmp_path.iterdir()) == []


def test_a_failing_anchor_or_a_bad_path_leaves_no_file_behind(tmp_path: Path) -> None:
    def anchor(head: str) -> None:
        raise RuntimeError("the anchor store is down")

    with pytest.raises(RuntimeError):
        pf.Session.open(tmp_path / "s.jsonl", pf.GDP(1.0), anchor=anchor)
    with pytest.raises(pf.ConfigError) as info:
        pf.Session.open(1, pf.GDP(1.0))  # type: ignore[arg-type]
    assert info.value.path == "path"
    with pytest.raises(pf.ConfigError) as info:
        pf.Session(pf.GDP(1.0)).save(tmp_path / "t.jsonl", key=b"short")
    assert info.value.path == "key"
    with pytest.raises(pf.ConfigError) as info:
        pf.Session.upgrade(tmp_path / "u.json", anchor="x")  # type: ignore[arg-type]
    assert info.value.path == "anchor"
    assert list(tmp_path.iterdir()) == []


def test_a_lock_file_that_records_a_line_is_never_removed(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    pf.Session.open(path, pf.GDP(1.0))
    lock = tmp_path / "s.jsonl.lock"
    recorded = lock.read_bytes()
    path.unlink()
    with pytest.raises(pf.ConfigError, match="deleted or moved"):
        pf.Session.open(path, pf.GDP(1.0))
    assert lock.read_bytes() == recorded


def test_a_waiter_on_a_lock_file_that_was_removed_takes_the_new_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A holder removes a lock file it created when it is refused; whoever waited on that file meanwhile must
    not go on holding a lock nobody else can see."""
    lock = tmp_path / "s.jsonl.lock"
    real_flock = session_log.fcntl.flock  # type: ignore[union-attr]
    calls: list[int] = []

    def flock(handle: int, operation: int) -> None:
        real_flock(handle, operation)
        calls.append(handle)
        if len(calls) == 1:
            lock.unlink()  # as if the previous holder removed it just before this process got the lock

    monkeypatch.setattr(session_log.fcntl, "flock", flock)
    with session_log.locked(tmp_path / "s.jsonl") as witness:
        assert witness.handle is not None
        assert os.fstat(witness.handle).st_ino == lock.stat().st_ino
    assert len(calls) == 2


@pytest.mark.parametrize(
    "calls",
    [
        [1],
        1,
        "call 1",
        [SessionCall("first", pf.GDP(0.1), pf.GDP(0.1), "released")],
        [SessionCall("call 2", pf.GDP(0.1), pf.GDP(0.1), "released")],
    ],
)
def test_a_session_takes_only_numbered_session_calls(calls: Any) -> None:
    with pytest.raises(pf.ConfigError) as info:
        pf.Session(pf.GDP(1.0), calls=calls)
    assert info.value.path == "calls"


def test_recorded_calls_are_saved_and_read_back(tmp_path: Path) -> None:
    calls = [SessionCall("call 1", pf.GDP(0.3), pf.GDP(0.3), "released")]
    session = pf.Session(pf.GDP(1.0), calls=iter(calls))  # type: ignore[arg-type]
    session.save(tmp_path / "s.jsonl")
    assert pf.Session.open(tmp_path / "s.jsonl").calls == tuple(calls)


@pytest.mark.parametrize("bad", [1.0, "gdp", {"unit": "gdp", "mu": 1.0}])
def test_session_fits_refuses_what_is_not_a_budget(bad: object) -> None:
    session = pf.Session(pf.GDP(1.0))
    with pytest.raises(pf.ConfigError, match=r"^budget: expected pf.GDP"):
        session.fits(bad)  # type: ignore[arg-type]
    assert session.fits(None) is False
    assert session.fits(pf.GDP(0.5)) is True
