"""Executors: where the cells of an experiment run.

An executor maps a picklable, module-level function over tasks and yields the results **as they
finish** (so each finished cell can be saved at once). Results never depend on the executor: every
cell draws its randomness from its own seeds (:mod:`privframe.experiments.cells`).

- ``serial``: in this process, in order.
- ``processes``: a ``concurrent.futures.ProcessPoolExecutor`` with ``workers`` processes (default: the
  CPU count). Workers ignore Ctrl-C; the parent cancels and terminates them.
- ``dask``: a ``dask.distributed`` client for the scheduler at ``scheduler`` (its workers must have
  privframe and the same plugins installed), or a ``LocalCluster`` of ``workers`` workers when no
  address is given. Needs the ``dask`` extra (``pip install "privframe[dask]"``).
"""

from __future__ import annotations

import concurrent.futures
import importlib
import logging
import os
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, ClassVar, Protocol, TypeVar

import attrs

from privframe.errors import ConfigError

__all__ = ["EXECUTORS", "DaskExecutor", "Executor", "ProcessExecutor", "SerialExecutor", "make_executor"]

T = TypeVar("T")
R = TypeVar("R")


class Executor(Protocol):
    """Runs a function over tasks and yields results in completion order."""

    name: ClassVar[str]

    def imap_unordered(self, fn: Callable[[T], R], tasks: Sequence[T]) -> Iterator[R]:
        """Yield ``fn(task)`` for every task as each finishes; stopping early cancels the rest."""


@attrs.frozen
class SerialExecutor:
    """Run every task in this process, in order."""

    name: ClassVar[str] = "serial"

    def imap_unordered(self, fn: Callable[[T], R], tasks: Sequence[T]) -> Iterator[R]:
        """Yield ``fn(task)`` in task order."""
        for task in tasks:
            yield fn(task)


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _check_workers(workers: int | None) -> None:
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ConfigError("must be an integer >= 1", path="workers")


@attrs.frozen
class ProcessExecutor:
    """A pool of worker processes (``concurrent.futures``).

    Parameters
    ----------
    workers : int, optional
        Number of processes (default: the CPU count).
    """

    name: ClassVar[str] = "processes"
    workers: int | None = attrs.field(default=None)

    def __attrs_post_init__(self) -> None:
        _check_workers(self.workers)

    def imap_unordered(self, fn: Callable[[T], R], tasks: Sequence[T]) -> Iterator[R]:
        """Submit every task, yield results as they complete; on exit cancel and stop the workers."""
        workers = min(self.workers or os.cpu_count() or 1, max(1, len(tasks)))
        pool = concurrent.futures.ProcessPoolExecutor(max_workers=workers, initializer=_ignore_sigint)
        finished = False
        try:
            futures = [pool.submit(fn, task) for task in tasks]
            for future in concurrent.futures.as_completed(futures):
                yield future.result()
            finished = True
        finally:
            if finished:
                pool.shutdown(wait=True)
            else:
                # Interrupted (Ctrl-C) or a cell failed: drop queued cells and stop the running ones now.
                processes: dict[int, Any] = dict(getattr(pool, "_processes", None) or {})
                pool.shutdown(wait=False, cancel_futures=True)
                for process in processes.values():
                    process.terminate()
                for process in processes.values():
                    process.join(timeout=5)


def _distributed() -> Any:
    """``dask.distributed``, imported on first use (the ``dask`` extra is optional; it is untyped here)."""
    try:
        return importlib.import_module("dask.distributed")
    except ImportError as exc:
        raise ConfigError(
            'the dask executor needs the dask extra (pip install "privframe[dask]")', path="executor"
        ) from exc


@attrs.frozen
class DaskExecutor:
    """A ``dask.distributed`` cluster: an existing scheduler, or a local cluster.

    Parameters
    ----------
    scheduler : str, optional
        Address of a running scheduler (``tcp://host:8786``). Without it a ``LocalCluster`` is started
        and closed again after the run.
    workers : int, optional
        Workers of the local cluster (default: the CPU count); ignored with ``scheduler``.
    processes : bool, default True
        Local cluster workers as processes (True) or threads in this process (False, quicker to start).
    """

    name: ClassVar[str] = "dask"
    scheduler: str | None = None
    workers: int | None = attrs.field(default=None)
    processes: bool = True

    def __attrs_post_init__(self) -> None:
        _check_workers(self.workers)

    def _client(self) -> tuple[Any, Any]:
        distributed = _distributed()
        if self.scheduler is not None:
            return distributed.Client(self.scheduler), None
        # Worker processes inherit an ignored SIGINT (and Python then keeps it ignored), so Ctrl-C reaches
        # only this process, which stops the cluster, instead of every worker printing a traceback.
        main = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
        try:
            cluster = distributed.LocalCluster(
                n_workers=self.workers or os.cpu_count() or 1,
                threads_per_worker=1,
                processes=self.processes,
                dashboard_address=None,
                silence_logs=logging.ERROR,
            )
        finally:
            if previous is not None:
                signal.signal(signal.SIGINT, previous)
        return distributed.Client(cluster), cluster

    def imap_unordered(self, fn: Callable[[T], R], tasks: Sequence[T]) -> Iterator[R]:
        """Submit every task to the cluster and yield results as they complete."""
        client, cluster = self._client()
        futures: list[Any] = []
        try:
            futures = [client.submit(fn, task, pure=False) for task in tasks]
            for future in _distributed().as_completed(futures):
                yield future.result()
        finally:
            client.cancel(futures)
            client.close()
            if cluster is not None:
                cluster.close()


EXECUTORS: dict[str, type[SerialExecutor] | type[ProcessExecutor] | type[DaskExecutor]] = {
    "serial": SerialExecutor,
    "processes": ProcessExecutor,
    "dask": DaskExecutor,
}


def make_executor(name: str | Executor, *, workers: int | None = None, scheduler: str | None = None) -> Executor:
    """An executor by name (``serial``, ``processes``, ``dask``), or the given executor object."""
    if not isinstance(name, str):
        return name
    if name not in EXECUTORS:
        raise ConfigError(f"expected one of {', '.join(EXECUTORS)}", path="executor")
    if scheduler is not None and name != "dask":
        raise ConfigError("only meaningful with the dask executor", path="scheduler")
    if name == "serial":
        if workers is not None and workers != 1:
            raise ConfigError("the serial executor runs one cell at a time", path="workers")
        return SerialExecutor()
    if name == "processes":
        return ProcessExecutor(workers)
    return DaskExecutor(scheduler, workers)
