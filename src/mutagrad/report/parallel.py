"""Where the report's programs run: here, in worker processes (``--jobs N``), or on a dask cluster.

:func:`task_map` gives a ``map(function, items)`` that returns the results in
the items' order:

* ``jobs`` 1, no scheduler: the builtin ``map``, in this process (as the
  report always ran);
* ``jobs`` N > 1: a :class:`concurrent.futures.ProcessPoolExecutor` of N
  processes started with ``spawn`` (fresh interpreters: a worker owes nothing
  to the state of this process, and no thread of a peer engine is forked);
  a script that calls :func:`~mutagrad.report.run_report` with ``jobs`` > 1
  needs the usual ``if __name__ == "__main__":`` guard of ``spawn``. The
  workers ignore Ctrl-C (SIGINT): the caller decides. When the caller leaves
  early (an error, Ctrl-C), the tasks not yet started are cancelled and the
  workers are stopped at once, instead of running the rest of the queue;
* ``scheduler`` ADDRESS: a ``dask.distributed`` client connected to that
  scheduler, ``client.map`` over the items. dask is not a dependency of
  mutagrad (the extra ``cluster`` brings it) and is imported only here, only
  for a scheduler. Its workers need mutagrad (and the peers that run), the
  same versions, and for a corpus given as a file, that file at the same
  path. They run tasks in threads, where the per-call time limit is raised by
  a timer thread (:mod:`mutagrad.testing.limits`): it interrupts Python code,
  not a blocking call into C such as ``time.sleep``. Start the workers with
  one thread each (``dask worker ADDRESS --nthreads 1``) when the timings or
  the memory figures matter: threads of one process share its CPU time and
  tracemalloc.

What runs is the runner's business (:func:`mutagrad.report.runner.run_task`):
a task is plain data that any process can run, never a function.
"""

from __future__ import annotations

import contextlib
import functools
import multiprocessing
import os
import signal
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")

DASK_HINT = "pip install \"dask[distributed]\" (or pip install -e '.[cluster]' in a clone)"

MAX_CHUNK = 8

Mapper = Callable[[Callable[[T], R], Sequence[T]], Iterator[R]]


class SchedulerError(RuntimeError):
    """``--scheduler`` cannot be used: dask is not installed, or the scheduler does not answer."""


def default_jobs() -> int:
    """The CPUs this process may run on (``os.cpu_count()`` where affinity is unknown)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def _dask_client(address: str, timeout: float) -> Any:
    try:
        from dask.distributed import Client
    except ImportError as missing:
        raise SchedulerError(
            f"--scheduler runs the programs on a dask.distributed cluster, and dask is not "
            f"installed here: {DASK_HINT}"
        ) from missing
    try:
        return Client(address, timeout=timeout)
    except (OSError, TimeoutError) as error:
        raise SchedulerError(
            f"cannot connect to the dask scheduler at {address}: {error}"
        ) from error


def _dask_map(client: Any, function: Callable[[T], R], items: Sequence[T]) -> Iterator[R]:
    # Submitted now, as ProcessPoolExecutor.map does, so that tasks mapped one after the
    # other run side by side. Closing the client releases whatever is left (after an error).
    futures = client.map(function, list(items), pure=False)
    return (future.result() for future in futures)


@contextlib.contextmanager
def task_map(
    jobs: int = 1, scheduler: str | None = None, connect_timeout: float = 30.0
) -> Iterator[Mapper]:
    """A ``map(function, items)`` running in ``jobs`` processes or on a dask cluster, in order.

    In processes and on a cluster the tasks are submitted when ``map`` is
    called, and run while the caller maps more; here they run as the caller
    takes the results.
    """
    if scheduler:
        client = _dask_client(scheduler, connect_timeout)
        try:
            yield functools.partial(_dask_map, client)
        finally:
            client.close()
    elif jobs <= 1:
        yield map
    else:
        context = multiprocessing.get_context("spawn")
        pool = ProcessPoolExecutor(
            max_workers=jobs, mp_context=context, initializer=_ignore_interrupts
        )

        def mapper(function: Callable[[T], R], items: Sequence[T]) -> Iterator[R]:
            return pool.map(function, items, chunksize=chunk_size(len(items), jobs))

        try:
            yield mapper
        except BaseException:
            _stop(pool)
            raise
        pool.shutdown(wait=True)


def _ignore_interrupts() -> None:
    """A worker's first step: Ctrl-C reaches the whole process group, and only the caller acts."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _stop(pool: ProcessPoolExecutor) -> None:
    """Cancel the tasks not started and end the workers now (the caller is leaving)."""
    terminate = getattr(pool, "terminate_workers", None)  # Python 3.14
    if terminate is not None:
        terminate()
        return
    # Before 3.14 the executor has no public way to end running tasks: its processes,
    # taken before shutdown() forgets them.
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.terminate()
    for process in processes:
        process.join(timeout=5)


def chunk_size(tasks: int, jobs: int) -> int:
    """Tasks sent to a worker at once: a few per round trip, yet about eight rounds per worker,
    so that a worker with slow programs does not hold many others back."""
    return max(1, min(MAX_CHUNK, tasks // (jobs * 8)))
