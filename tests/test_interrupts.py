"""Clean interrupts: Ctrl-C on `recommend` ends with one line and exit 130, and no worker process outlives the
ranking or its parent (SIGKILL of the parent too). Real processes: the CLI runs as a subprocess in its own session,
Ctrl-C is SIGINT to its process group (what a terminal sends)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from conftest import ROOT
from process_tree import descendants

RECOMMEND = [
    sys.executable,
    "-m",
    "planner",
    "recommend",
    "--gpus",
    "H100-SXM,L40S,A100-80GB",
    "--target-rate",
    "5",
    "--workers",
    "2",
    # 20,000 requests per search keep the ranking running ~9 s: at the default length it ends in ~1.6 s with this
    # fit (3 deployments searched), sometimes before the poll below sees both workers
    "--num-requests",
    "20000",
]


def _alive(pid: int) -> bool:
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _start_with_workers(stderr=subprocess.PIPE) -> tuple[subprocess.Popen, list[int]]:
    """The ranking, once its two workers run (forkserver + resource tracker + 2 workers); polled, not timed."""
    proc = subprocess.Popen(
        RECOMMEND,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=stderr,
        text=True,
        start_new_session=True,
        # a job started with `&` by a non-interactive shell (CI, a background run) inherits SIGINT ignored, and
        # Python then installs no KeyboardInterrupt handler: give the child the terminal's default, as a user has
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    for _ in range(240):  # at most ~2 minutes on a loaded machine
        found = descendants(proc.pid)
        if len(found) >= 4:
            return proc, found
        time.sleep(0.5)
    proc.kill()
    raise AssertionError("the workers never started")


def _wait_gone(pids: list[int]) -> list[int]:
    for _ in range(40):  # a worker polls its parent every second
        left = [p for p in pids if _alive(p)]
        if not left:
            return []
        time.sleep(0.25)
    return left


def test_ctrl_c_on_recommend_is_one_line_exit_130_and_no_worker_left():
    proc, workers = _start_with_workers()
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    lines = [line for line in err.replace("\r", "\n").splitlines() if line.strip()]
    assert proc.returncode == 130, err
    assert lines[-1] == "interrupted" and "Traceback" not in err, err
    assert not [line for line in lines if "deployments searched" not in line and line != "interrupted"], err
    assert _wait_gone(workers) == []


def test_workers_die_with_a_killed_parent():
    proc, workers = _start_with_workers(stderr=subprocess.DEVNULL)  # no pipe the orphans would hold open
    proc.kill()  # SIGKILL to the parent alone: no handler, no cleanup runs
    proc.wait(timeout=60)
    assert _wait_gone(workers) == []


def _cpu_s(pid: int) -> float:
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# Long single-process runs (each well under the work budget, each tens of seconds of CPU): Ctrl-C mid-run.
LONG_RUNS = {
    "fleet": ["fleet", "--rate", "50", "--num-requests", "200000", "--replicas", "4"],
    # at 2 req/s (small batches, more steps): 13.4 CPU-seconds; at 50 req/s the run took 4.6 in all with this fit,
    # so the interrupt at 4 landed in the interpreter's exit (the work budget caps the requests)
    "simulate": ["simulate", "--rate", "2", "--num-requests", "200000"],
    "capacity search": ["capacity", "--target-rate", "20", "--num-requests", "100000"],
    "disagg search": ["disagg", "--target-rate", "20", "--num-requests", "100000"],
}


@pytest.mark.parametrize("name", list(LONG_RUNS))
def test_ctrl_c_mid_run_is_one_line_exit_130(name):
    proc = subprocess.Popen(
        [sys.executable, "-m", "planner", *LONG_RUNS[name]],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as in _start_with_workers
    )
    for _ in range(480):  # polled: past the imports (~2 CPU-seconds) and into the simulation
        if _cpu_s(proc.pid) >= 4.0 or proc.poll() is not None:
            break
        time.sleep(0.25)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert err.strip() == "interrupted", err


def test_the_resource_tracker_cleans_up_a_half_released_semaphore_without_a_warning():
    # What Ctrl-C can leave (CPython's SemLock._cleanup interrupted between unlink and unregister): a semaphore the
    # tracker still lists but that is gone. Before worker_pool.QUIET_TRACKER the tracker printed two UserWarnings
    # after our one-line "interrupted"; now it cleans up in silence.
    code = (
        "import os, _multiprocessing, multiprocessing as mp\n"
        "from planner.capacity.worker_pool import map_in_pool\n"
        "assert map_in_pool(abs, [-1], 1, 'planner.capacity.forkserver_init') == [1]\n"
        "lock = mp.get_context('forkserver').Lock()\n"
        "_multiprocessing.sem_unlink(lock._semlock.name)\n"
        "os._exit(0)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr  # run() returns once the tracker, holding our stderr, has exited
    assert "resource_tracker" not in done.stderr and "leaked" not in done.stderr, done.stderr
