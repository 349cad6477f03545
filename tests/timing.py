"""Waiting in tests without measuring the machine's speed.

A test on a loaded machine (CI on 2 shared cores, load 8 and more) may run ten times slower than
alone, so a wall-clock deadline can only detect a hang if it is far above any slowness, and a speed
claim ("returns within 0.5 s") cannot be a wall-clock measurement at all. These helpers decide by
*progress* instead:

* :func:`wait_child` / :func:`wait_until` wait for a forked child that computes, and call it hung
  only when it has used no CPU time for ``stall`` seconds: a deadlocked child sleeps on a futex
  forever, a slow one gains CPU time whenever it is scheduled.
* :func:`cpu_seconds` is a process's CPU time (all threads), which other processes' load does not
  inflate: "fast" and "stops promptly" are checked as CPU time spent, against the CPU time the slow
  (or uninterrupted) path needs.
* :func:`catches` tells whether a child has installed a signal handler yet, so that a signal is
  sent once the child is inside the code under test, however late the scheduler ran it.
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable

_TICK = os.sysconf("SC_CLK_TCK")


class Hung(AssertionError):
    """A child gained no CPU time for the stall period (its diagnosis is the message)."""


def cpu_seconds(pid: int | None = None) -> float:
    """CPU time (user + system, every thread) of ``pid`` (default: this process), in seconds."""
    if pid is None:
        return time.process_time()
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def catches(pid: int, signum: int) -> bool:
    """Whether ``pid`` has installed a handler for ``signum`` (the SigCgt mask in /proc)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("SigCgt:"):
                return bool(int(line.split()[1], 16) >> (signum - 1) & 1)
    return False


def _diagnose(pid: int) -> str:
    """State and kernel wait channel of each thread of ``pid`` (what a hang report needs)."""
    lines = []
    try:
        for tid in sorted(os.listdir(f"/proc/{pid}/task"), key=int):
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
            with open(f"/proc/{pid}/task/{tid}/wchan") as f:
                wchan = f.read().strip() or "-"
            lines.append(f"thread {tid}: state {state}, in {wchan}")
    except OSError as exc:
        lines.append(f"(could not read /proc/{pid}: {exc})")
    return "; ".join(lines)


def wait_until(cond: Callable[[], bool], pid: int, *, stall: float = 30.0, poll: float = 0.001) -> int | None:
    """Poll ``cond()`` while the child ``pid`` runs: None once it holds, or the child's wait
    status if the child ended first (it is then reaped). Raises :class:`Hung` (after killing and
    reaping the child) once the child has gained no CPU time for ``stall`` seconds. Only for
    children that compute: one that sleeps or waits on a pipe on purpose would be called hung."""
    last_cpu, last_change = -1.0, time.monotonic()
    while True:
        try:
            if cond():
                return None
        except OSError:         # /proc/PID going away: the child is ending
            pass
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        try:
            used = cpu_seconds(pid)
        except OSError:
            used = last_cpu
        now = time.monotonic()
        if used != last_cpu:
            last_cpu, last_change = used, now
        elif now - last_change > stall:
            why = f"child {pid} gained no CPU time for {stall:g} s (total {used:.2f} s): {_diagnose(pid)}"
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            raise Hung(why)
        time.sleep(poll)


def wait_child(pid: int, *, stall: float = 30.0) -> int:
    """The wait status of the child ``pid`` once it ends; :class:`Hung` as in :func:`wait_until`."""
    status = wait_until(lambda: False, pid, stall=stall, poll=0.005)
    assert status is not None
    return status


class Interrupter:
    """Sends the main thread a KeyboardInterrupt (as Ctrl-C does) from another thread as soon as
    a long kernel has reported progress, and records this process's CPU time at that moment.

    Pass :meth:`progress` as the kernel's ``progress=``; after the ``KeyboardInterrupt``,
    :meth:`cpu_after` is the CPU time spent since the interrupt: small when the kernel stops
    promptly, the rest of the job when it ignores the interrupt. A wall-clock timer instead could
    fire before the kernel starts on a loaded machine (testing nothing), and a wall-clock latency
    bound measures the load."""

    def __init__(self) -> None:
        import threading

        self._started = threading.Event()
        self._sent: float | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def progress(self, done: int, total: int) -> None:
        if done > 0:
            self._started.set()

    def _run(self) -> None:
        import _thread

        self._started.wait()
        self._sent = cpu_seconds()
        _thread.interrupt_main()

    def cpu_after(self) -> float:
        self._thread.join()
        assert self._sent is not None
        return cpu_seconds() - self._sent

