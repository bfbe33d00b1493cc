"""A local process pool that stops when asked: the ranking's workers never outlive the ranking or their parent.

- Workers and the forkserver ignore SIGINT: Ctrl-C in a terminal reaches the whole process group, and only the
  parent should act on it (otherwise every worker prints its own KeyboardInterrupt traceback and the pool waits
  for them).
- When the ranking stops early (Ctrl-C, or one candidate's InputError), the parent cancels the queued tasks and
  terminates the running workers instead of waiting for their searches to finish.
- Each worker watches the process that started the pool and exits within a second when it is gone (SIGKILL of
  the app leaves no worker running); on Linux the kernel also signals it when its own parent (the forkserver)
  dies (prctl PR_SET_PDEATHSIG).
Workers fork from a forkserver (never from a threaded Streamlit server).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time
import types
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import contextmanager

PR_SET_PDEATHSIG = 1  # linux/prctl.h
PARENT_POLL_S = 1.0
# multiprocessing's resource tracker (a process of its own, sharing our stderr) unlinks the pool's semaphores if we
# end without doing so and warns about each. Ctrl-C can land between a semaphore's unlink and its unregister message
# (CPython's SemLock._cleanup), and the tracker then printed two UserWarnings after our one-line "interrupted" (1 run
# in 6 of tests/test_interrupts.py). The tracker is started with our interpreter's -W options
# (multiprocessing.util._args_from_interpreter_flags): it still cleans up, silently.
QUIET_TRACKER = "ignore::UserWarning:multiprocessing.resource_tracker"


def map_in_pool(
    fn: Callable, items: Sequence, workers: int, preload: str, progress: Callable[[int, int], None] | None = None
) -> list:
    """[fn(item) for item in items] on `workers` processes, in item order; the first exception stops the rest."""
    import multiprocessing as mp

    _quiet_tracker()
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["planner.capacity.forkserver_init", preload])  # SIGINT ignored before the import
    out: list = [None] * len(items)
    pool = ProcessPoolExecutor(
        max_workers=min(workers, len(items)), mp_context=ctx, initializer=_worker_init, initargs=(os.getpid(),)
    )
    try:
        with no_main_reimport():  # the forkserver and the workers start during submit
            futures = {pool.submit(fn, item): i for i, item in enumerate(items)}
        for k, fut in enumerate(as_completed(futures), start=1):
            out[futures[fut]] = fut.result()  # a worker's InputError arrives as itself (it pickles)
            if progress:
                progress(k, len(items))
    except BaseException as err:  # one bad candidate or Ctrl-C: stop now, not after every running search
        _stop(pool)
        if isinstance(err, KeyboardInterrupt):  # the process is ending: no worker may still be forked after it
            _stop_forkserver()
        raise
    pool.shutdown()
    return out


@contextmanager
def stoppable_pool(workers: int, preload: str):
    """A forkserver ProcessPoolExecutor with map_in_pool's guarantees for callers that schedule their own tasks
    (the ranking's bound-then-search): workers ignore SIGINT and die with their parent, and an exception or Ctrl-C
    inside the block terminates the running workers instead of waiting for them. Submit under no_main_reimport()."""
    import multiprocessing as mp

    _quiet_tracker()
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["planner.capacity.forkserver_init", preload])
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_worker_init, initargs=(os.getpid(),))
    try:
        yield pool
    except BaseException as err:
        _stop(pool)
        if isinstance(err, KeyboardInterrupt):
            _stop_forkserver()
        raise
    pool.shutdown()


def _quiet_tracker() -> None:
    """Before the first pool starts the resource tracker: its leak warnings off (QUIET_TRACKER)."""
    if QUIET_TRACKER not in sys.warnoptions:
        sys.warnoptions.append(QUIET_TRACKER)


def _stop(pool: ProcessPoolExecutor) -> None:
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in processes:
        proc.terminate()
    for proc in processes:
        proc.join(timeout=1.0)


def _stop_forkserver() -> None:
    """SIGTERM to the forkserver (a later pool starts a new one): Ctrl-C during its first seconds, while it still
    imports planner, would otherwise let it fork the queued workers after the parent has cleaned up."""
    from multiprocessing import forkserver

    pid = getattr(getattr(forkserver, "_forkserver", None), "_forkserver_pid", None)  # CPython 3.8-3.13
    if pid:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass


def _worker_init(parent_pid: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        except (OSError, AttributeError):
            pass
    threading.Thread(target=_exit_with_parent, args=(parent_pid,), daemon=True).start()


def _exit_with_parent(parent_pid: int) -> None:
    while True:
        time.sleep(PARENT_POLL_S)
        try:
            os.kill(parent_pid, 0)
        except ProcessLookupError:
            os._exit(1)
        except PermissionError:  # alive, under another user: not ours to judge
            pass


@contextmanager
def no_main_reimport():
    """Workers of a spawn/forkserver pool re-run the parent's __main__ file; under Streamlit (or AppTest) that
    is the page script. The pooled function needs only planner, so hide __main__ while the workers start."""
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        if saved is not None:
            sys.modules["__main__"] = saved
