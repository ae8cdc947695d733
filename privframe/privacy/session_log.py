"""The session file: an append-only log whose records are chained by their hashes.

A session file (format ``privframe-session/2``) is JSON Lines: the first line is the **header** (the
format, the session's total budget, a random session id, when and by which privframe it was created, and
how its records are sealed), and every further line is one **record** (a call admitted with its charge, a
call finished with its outcome and events). Every line carries ``seq`` (its position, the header is 0),
``prev`` (the ``hash`` of the line before it; 64 zeros for the header) and its own ``hash``: SHA-256, or
HMAC-SHA256 under a key the file never holds, over the line's canonical JSON without ``hash``.

The canonical JSON is the one way privframe writes a table: sorted keys, no whitespace, ASCII only, and
floats written by ``repr`` (Python's ``json`` writes the shortest string that reads back to the same
float, so every value round-trips bit for bit; ``NaN`` and ``Infinity`` are written as ``json`` spells
them). Every line of the file is exactly the canonical JSON of the record it holds, so any change to a
byte of it is seen.

:func:`read` recomputes the chain and refuses a file whose lines were edited, removed, reordered,
inserted or cut short, or whose header changed: a ``ConfigError`` at path ``session``. Removing the
*last* records of a file leaves a shorter chain that verifies, exactly like an older copy of the file:
only a head kept elsewhere (``expect_head``) or a session that already read those records can tell.

Records are only ever appended (one ``write`` per append, then ``fsync``), under the session's lock, so
an administrator may make the file append-only (``chattr +a``) without breaking privframe. An append that
fails is cut back (``ftruncate``) to the file's previous size, so the file still ends in a whole line.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import hmac
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from privframe.errors import ConfigError, PrivframeError

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: sessions in one process only, no witness
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "FORMAT",
    "GENESIS",
    "KEYED",
    "LEGACY_FORMAT",
    "MIN_KEY_BYTES",
    "UNKEYED",
    "Log",
    "Witness",
    "altered",
    "append",
    "canonical",
    "check_key",
    "create",
    "locked",
    "read",
    "reread",
    "seal",
]

FORMAT = "privframe-session/2"
LEGACY_FORMAT = "privframe-session/1"
GENESIS = "0" * 64
"""The ``prev`` of the header: no line comes before it."""
UNKEYED = "sha256"
KEYED = "hmac-sha256"
MIN_KEY_BYTES = 16

_TRUST = (
    "the session cannot be trusted and runs nothing; restore the file from a copy you trust "
    "(Session.open(path, expect_head=...) checks a copy against a head you kept elsewhere), "
    "or treat this dataset's budget as spent"
)


def altered(reason: str) -> ConfigError:
    """The error for a session file that is not what privframe wrote (``reason`` names the line, no value)."""
    return ConfigError(f"the session file was altered ({reason}): {_TRUST}", path="session")


def canonical(table: Mapping[str, Any]) -> str:
    """The canonical JSON of ``table``: sorted keys, no whitespace, ASCII, floats by ``repr``."""
    return json.dumps(table, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=True)


def check_key(key: bytes | None) -> bytes | None:
    """``key`` if it is usable for HMAC-SHA256 (bytes, at least 16 of them), else ``ConfigError`` at ``key``."""
    if key is None:
        return None
    if not isinstance(key, (bytes, bytearray)) or len(key) < MIN_KEY_BYTES:
        raise ConfigError(
            f"expected a secret of at least {MIN_KEY_BYTES} bytes (32 random bytes are usual)", path="key"
        )
    return bytes(key)


def _lines(records: Sequence[Mapping[str, Any]]) -> str:
    """``records`` as the lines of a session file."""
    return "".join(canonical(record) + "\n" for record in records)


def _digest(table: Mapping[str, Any], key: bytes | None) -> str:
    """SHA-256 (or HMAC-SHA256 under ``key``) of the canonical JSON of ``table``, in hex."""
    data = canonical(table).encode("ascii")
    if key is None:
        return hashlib.sha256(data).hexdigest()
    return hmac.new(key, data, "sha256").hexdigest()


def seal(body: Mapping[str, Any], seq: int, prev: str, key: bytes | None) -> dict[str, Any]:
    """``body`` as line ``seq`` of a log after the line whose hash is ``prev``: with ``seq``, ``prev``, ``hash``.

    The table is first passed through its canonical JSON, so what is sealed is exactly what the file will
    read back (tuples become lists, float subclasses plain floats).
    """
    table: dict[str, Any] = json.loads(canonical({**body, "seq": seq, "prev": prev}))
    table["hash"] = _digest(table, key)
    return table


@attrs.frozen
class Log:
    """The verified lines of a session file, the header first.

    Parameters
    ----------
    text : str
        The file's text, as read (or as this process wrote it).
    records : tuple of dict
        Every line as a table (``seq``, ``prev`` and ``hash`` included).
    """

    text: str
    records: tuple[dict[str, Any], ...]

    @property
    def header(self) -> dict[str, Any]:
        """The first line."""
        return self.records[0]

    @property
    def head(self) -> str:
        """The hash of the last line: it fixes every line before it."""
        return str(self.records[-1]["hash"])

    def holds(self, head: str) -> bool:
        """Whether some line's hash is ``head`` (the file extends a log whose last hash was ``head``)."""
        return any(record["hash"] == head for record in self.records)

    def extended(self, records: Sequence[dict[str, Any]]) -> Log:
        """This log with sealed ``records`` appended (what :func:`append` writes)."""
        return Log(self.text + _lines(records), (*self.records, *records))


def read(file: Path, key: bytes | None) -> Log:
    """The log in ``file``, its chain verified under ``key``; ``ConfigError`` at ``session`` otherwise."""
    return _from_text(_read_text(file), key)


def reread(file: Path, key: bytes | None, known: Log) -> Log:
    """The log in ``file``, which must extend ``known`` (only the lines after it are parsed and verified)."""
    text = _read_text(file)
    if not text.startswith(known.text):
        _from_text(text, key)  # a broken chain says which line broke
        raise altered(
            "lines this session already read are not there any more: the file was cut short, rewritten "
            "or replaced by an older copy"
        )
    start = len(known.records)
    lines = _split_tail(text[len(known.text) :], start)
    records = [_parse(line, seq, header=False) for seq, line in enumerate(lines, start=start)]
    _verify(records, key, known.head, start)
    return Log(text, (*known.records, *records))


def _from_text(text: str, key: bytes | None) -> Log:
    _refuse_legacy(text)
    if not text:
        raise altered("it is empty: even its header is gone")
    lines = _split_tail(text, 0)
    header = _parse(lines[0], 0, header=True)
    _check_header(header, key)
    records = [header, *(_parse(line, seq, header=False) for seq, line in enumerate(lines[1:], start=1))]
    _verify(records, key, GENESIS, 0)
    return Log(text, tuple(records))


def _read_text(file: Path) -> str:
    try:
        return file.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise altered("it is gone: it was deleted or moved while the session was open") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError("cannot read the session file (not UTF-8 JSON)", path="session") from exc
    except OSError as exc:
        raise PrivframeError(f"cannot read the session file ({exc.strerror})", path="session") from exc


def _split_tail(text: str, start: int) -> list[str]:
    """The lines of ``text`` (line ``start + 1`` first); the last must end in a newline."""
    lines = text.split("\n")
    if lines[-1] != "":
        raise altered(f"line {start + len(lines)} is cut short")
    return lines[:-1]


def _refuse_legacy(text: str) -> None:
    """A ``privframe-session/1`` file (one JSON document, no chain) is refused with what to do."""
    if not text.startswith("{"):
        return
    try:
        table = json.loads(text)
    except json.JSONDecodeError:
        return
    if isinstance(table, Mapping) and table.get("format") == LEGACY_FORMAT:
        raise ConfigError(
            f"this is a {LEGACY_FORMAT} file, which has no hash chain, so nothing can verify that its calls "
            f"were not edited or removed; convert it once with pf.Session.upgrade(path), which keeps the old "
            f"file beside it and starts a {FORMAT} chain that records its past as unverified",
            path="session",
        )


def _parse(line: str, seq: int, *, header: bool) -> dict[str, Any]:
    """Line ``seq`` as a table; it must be the canonical JSON of that table."""
    try:
        table = json.loads(line)
    except json.JSONDecodeError:
        table = None
    if not isinstance(table, dict):
        if header:
            raise ConfigError(f"not a privframe session file (expected a '{FORMAT}' header line)", path="session")
        raise altered(f"line {seq + 1} is not a record")
    if canonical(table) != line:
        raise altered(f"line {seq + 1} is not as privframe writes it")
    return table


def _check_header(header: Mapping[str, Any], key: bytes | None) -> None:
    """The header's format, and its sealing against the ``key`` given (or not)."""
    if header.get("format") != FORMAT:
        raise ConfigError(f"not a privframe session file (expected format '{FORMAT}')", path="session")
    mac = header.get("mac")
    if mac == KEYED and key is None:
        raise ConfigError(
            "this session file is sealed with a key (HMAC-SHA256): open it with the same key= "
            "(privframe run: --session-key-file)",
            path="session",
        )
    if mac == UNKEYED and key is not None:
        raise altered("it was sealed without a key, but a key was given: a keyed session's file was replaced")
    if mac not in (KEYED, UNKEYED):
        raise altered("line 1 names no sealing")


def _verify(records: Sequence[Mapping[str, Any]], key: bytes | None, prev: str, start: int) -> None:
    """Every line's ``seq``, ``prev`` and ``hash``: the chain from line ``start + 1`` (after ``prev``) on."""
    for seq, record in enumerate(records, start=start):
        if record.get("seq") != seq or record.get("prev") != prev:
            raise altered(f"line {seq + 1} does not follow line {seq} (a line was removed, inserted or moved)")
        claimed = record.get("hash")
        body = {name: value for name, value in record.items() if name != "hash"}
        if not isinstance(claimed, str) or not hmac.compare_digest(claimed, _digest(body, key)):
            hint = " or the key is not the session's" if key is not None else ""
            raise altered(f"line {seq + 1} does not match its hash{hint}")
        prev = claimed


def create(file: Path, records: Sequence[Mapping[str, Any]]) -> None:
    """Write a new log of sealed ``records`` (the header first); refuse a file that already exists.

    A write that fails removes the new file again: no half-written session file is left behind.
    """
    try:
        handle = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise ConfigError(
            "the session file already exists and is never overwritten; save to a new path", path="session"
        ) from None
    except OSError as exc:
        raise ConfigError(f"cannot create the session file {file.name} ({exc.strerror})", path="session") from exc
    try:
        _write_all(handle, records)
    except BaseException as exc:
        os.close(handle)
        with contextlib.suppress(OSError):
            os.unlink(file)  # created above with O_EXCL, under the session's lock: this call's own file
        if isinstance(exc, OSError):
            raise ConfigError(
                f"cannot write the session file {file.name} ({exc.strerror}); it was not created", path="session"
            ) from exc
        raise
    os.close(handle)


def append(file: Path, records: Sequence[Mapping[str, Any]]) -> None:
    """Append sealed ``records`` to the log in ``file`` (the caller holds the session's lock), all or nothing.

    The records go out in one buffer; if writing or flushing them fails (a full disk, an I/O error), the file
    is cut back to its size before the call, so it still ends in a whole line and nothing was recorded.
    """
    try:
        handle = os.open(file, os.O_WRONLY | os.O_APPEND)
    except OSError as exc:
        raise ConfigError(
            f"cannot write the session file {file.name} ({exc.strerror}); nothing was recorded", path="session"
        ) from exc
    try:
        try:
            size = os.fstat(handle).st_size  # no other writer: the caller holds the lock
        except OSError as exc:
            raise ConfigError(
                f"cannot write the session file {file.name} ({exc.strerror}); nothing was recorded", path="session"
            ) from exc
        try:
            _write_all(handle, records)
        except OSError as exc:
            raise _failed_append(file, handle, size, exc) from exc
    finally:
        os.close(handle)


def _failed_append(file: Path, handle: int, size: int, exc: OSError) -> ConfigError:
    """The error for an append that failed, after cutting ``file`` back to ``size`` bytes (its last whole line)."""
    reason = f"cannot write the session file {file.name} ({exc.strerror})"
    try:
        os.ftruncate(handle, size)
        os.fsync(handle)
    except OSError as undo:
        return ConfigError(
            f"{reason}, and the part written could not be removed ({undo.strerror}): the file may now end in a "
            "cut-short line, which the next open reports; restore it from a copy you trust",
            path="session",
        )
    return ConfigError(f"{reason}; nothing was recorded (the file is as it was)", path="session")


def _write_all(handle: int, records: Sequence[Mapping[str, Any]]) -> None:
    """Write ``records`` as lines from one buffer and flush them to disk (``OSError`` when that fails)."""
    data = memoryview(_lines(records).encode("ascii"))
    while data:
        written = os.write(handle, data)
        if written <= 0:  # a regular file never takes nothing without an error; do not spin on one that does
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        data = data[written:]
    os.fsync(handle)


WITNESS_BYTES = 512
"""Size of a lock file's record (its JSON, a newline and spaces): one fixed block, rewritten in place."""


@attrs.frozen
class Witness:
    """The lock file beside a session file, held locked, and the last line privframe wrote, kept in it.

    After every write privframe records the session's id, the last line's ``seq`` and its hash in the
    lock file. A session file that no longer holds that line (its calls emptied, its last lines removed,
    an older copy put back) or that was deleted is then refused, unless the lock file was removed too: a
    tripwire against a careless reset, not a defence against someone who knows to remove both (only a
    head kept elsewhere is that).

    Parameters
    ----------
    handle : int or None
        The open, locked lock file (None for a session in memory or without ``fcntl``).
    name : str
        The lock file's name, for messages.
    """

    handle: int | None
    name: str

    def read(self) -> dict[str, Any] | None:
        """What the lock file records (None when it records nothing: new, or from privframe-session/1)."""
        if self.handle is None:
            return None
        text = os.pread(self.handle, 1 << 12, 0).decode("ascii", errors="replace").strip()
        if not text:
            return None
        try:
            table = json.loads(text)
        except json.JSONDecodeError:
            table = None
        if not isinstance(table, dict) or not isinstance(table.get("seq"), int):
            raise ConfigError(f"{self.name}, the session's lock file, was altered: {_TRUST}", path="session")
        return table

    def write(self, log: Log) -> None:
        """Record the last line of ``log`` (after it was written to the session file).

        The record is padded to ``WITNESS_BYTES`` and written over the old one in place, with no truncation
        first: a write that fails leaves the previous record (still a line the session file holds) rather
        than an empty lock file, which would disarm the tripwire, or half a record, which would lock the
        session out. A failure is a ``ConfigError`` that says the session file holds the line.
        """
        if self.handle is None:
            return
        data = canonical({"session": log.header.get("session"), "seq": len(log.records) - 1, "head": log.head})
        record = (data + "\n").ljust(WITNESS_BYTES).encode("ascii")
        try:
            written = os.pwrite(self.handle, record, 0)
            if written != len(record):
                raise OSError(errno.EIO, os.strerror(errno.EIO))
            if os.fstat(self.handle).st_size > len(record):  # a longer record of an earlier version
                os.ftruncate(self.handle, len(record))
        except OSError as exc:
            raise ConfigError(
                f"the session file holds its last line, but the lock file {self.name} could not record it "
                f"({exc.strerror}): the next open may refuse the file as altered; keep Session.head elsewhere",
                path="session",
            ) from exc

    def check(self, log: Log) -> None:
        """Refuse ``log`` if it does not hold the last line the lock file records."""
        seen = self.read()
        if seen is None:
            return
        if seen.get("session") != log.header.get("session"):
            raise altered(f"{self.name} beside it records another session: the file was replaced")
        seq = int(seen["seq"])
        if not 0 <= seq < len(log.records) or log.records[seq]["hash"] != seen.get("head"):
            raise altered(
                f"it does not hold line {seq + 1}, which privframe wrote ({self.name} records it): it was cut "
                "short, its calls removed, or replaced by an older copy of itself"
            )

    def refuse_missing(self) -> None:
        """A missing session file whose lock file records lines: it was deleted or moved."""
        seen = self.read()
        if seen is not None:
            raise ConfigError(
                f"the session file is gone, yet {self.name} beside it records {int(seen['seq']) + 1} lines of it: "
                f"it was deleted or moved. Restore it; only for data no call has read yet, remove {self.name} "
                "too and start a new session",
                path="session",
            )


@contextlib.contextmanager
def locked(file: Path | None) -> Iterator[Witness]:
    """An exclusive lock on ``file.lock``, as the :class:`Witness` it holds (nothing for ``file=None``).

    A lock file this call created is removed again when the block raises before anything was recorded in
    it, so a refused open or save leaves no stray lock file beside a session file that was never written.
    """
    if file is None or fcntl is None:
        yield Witness(None, "")
        return
    lock = file.with_name(file.name + ".lock")
    handle, created = _acquire(lock)
    try:
        yield Witness(handle, lock.name)
    except BaseException:
        if created:
            _remove_blank(lock, handle)
        raise
    finally:
        os.close(handle)  # closing releases the lock


def _acquire(lock: Path) -> tuple[int, bool]:
    """The open lock file, locked, and whether this call created it.

    A holder may remove a lock file it created (:func:`locked`), so a process that waited on the old file
    checks, once it holds the lock, that the name still points at that file, and starts over if not.
    """
    assert fcntl is not None
    while True:
        created = True
        try:
            handle = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
        except FileExistsError:
            created = False
            try:
                handle = os.open(lock, os.O_RDWR)
            except FileNotFoundError:
                continue  # removed between the two opens: create it
            except OSError as exc:
                raise _lock_error(exc) from exc
        except OSError as exc:
            raise _lock_error(exc) from exc
        try:
            fcntl.flock(handle, fcntl.LOCK_EX)
            if _names(lock, handle):
                return handle, created
        except BaseException:
            os.close(handle)
            raise
        os.close(handle)


def _remove_blank(lock: Path, handle: int) -> None:
    """Remove the lock file this process created and still holds, unless it records a line by now."""
    with contextlib.suppress(OSError):
        if os.fstat(handle).st_size == 0:
            os.unlink(lock)  # still under the lock; a waiter sees the name gone and starts over


def _names(lock: Path, handle: int) -> bool:
    """Whether the name ``lock`` still refers to the open file ``handle``."""
    try:
        named = os.stat(lock)
    except FileNotFoundError:
        return False
    held = os.fstat(handle)
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)


def _lock_error(exc: OSError) -> ConfigError:
    return ConfigError(f"cannot open the session's lock file ({exc.strerror})", path="session")
