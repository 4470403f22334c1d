"""The machine a run was timed on: the facts that explain its latencies.

A run stores them in ``run.json`` as ``machine``: the CPU model, logical cores, the
cores this process may use (its CPU affinity, and a container's CPU quota when one is
set), the threads the numeric libraries use (``torch`` when loaded, BLAS/OpenMP pools
as threadpoolctl sees them, the ``*_NUM_THREADS`` variables set, and an onnx encoder's
own as ``<stage>.encoder``), and the load average (1, 5 and 15 minutes) when the run
started and when it ended.

**Very different load.** A run's *load per core* is the 1-minute load average at its
start divided by the cores it may use. The report warns when it shows latencies of
runs whose loads per core differ by more than :data:`LOAD_GAP` (1.0: on 2 cores, more
than two extra busy processes; past about one busy process per core a run's threads
wait for a CPU, and its latencies grow with the queue). The start is used, not the
end: the end counts the run's own work (a dense run's threads), which differs between
the runs compared. No ratio rule: near-idle loads (0.05 against 0.3) differ by large
factors with no effect on latency. A sweep's earlier jobs still count in the next
job's 1-minute average, so a long job followed by a short one can look loaded when
it was not; the warning names both loads so a reader can judge.
"""

from __future__ import annotations

import os
import platform
import sys
import warnings
from pathlib import Path

LOAD_GAP = 1.0  # loads per core (at the start) further apart than this: very different
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def give_back_memory() -> None:
    """Hand the heap's free memory back to the system between steps (glibc's
    ``malloc_trim``; nothing where there is none): a step's many small temporaries
    leave free holes that would otherwise stay resident under the next step's peak."""
    import ctypes

    trim = getattr(ctypes.CDLL(None), "malloc_trim", None)
    if trim is not None:
        trim(0)


def load_average() -> list[float] | None:
    """The 1, 5 and 15 minute load averages (None where the system has none)."""
    try:
        return [round(value, 2) for value in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def cpu_model() -> str:
    """The CPU's model name as the system states it (``/proc/cpuinfo`` on Linux)."""
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "Hardware", "cpu model") and value.strip():
                return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def usable_cores() -> int:
    """Cores this process may run on: its CPU affinity where the system has one."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def cpu_quota() -> float | None:
    """A container's CPU limit in cores (cgroup v2 ``cpu.max``), if one is set."""
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()[:2]
        return None if quota == "max" else round(int(quota) / int(period), 2)
    except (OSError, ValueError):
        return None


def memory_bytes() -> int | None:
    """The memory this process may use, in bytes: the machine's RAM, or a container's
    limit (cgroup v2 ``memory.max``) when it is lower; None when neither is known."""
    known = []
    try:
        known.append(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        pass
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        if limit != "max":
            known.append(int(limit))
    except (OSError, ValueError):
        pass
    known = [value for value in known if value > 0]
    return min(known) if known else None


def cores() -> int:
    """Whole cores this process may keep busy: a container's CPU quota when set (rounded
    down, at least 1), else the cores its affinity allows."""
    quota = cpu_quota()
    return max(1, int(quota)) if quota else usable_cores()


def threads() -> dict:
    """Threads the numeric libraries use: torch's (when loaded), each BLAS/OpenMP pool
    threadpoolctl finds (when installed), and the thread variables that are set."""
    found: dict = {}
    torch = sys.modules.get("torch")
    if torch is not None:
        found["torch"] = int(torch.get_num_threads())
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        pass
    else:
        with warnings.catch_warnings():  # its notes about mixed OpenMP runtimes are not ours to show
            warnings.simplefilter("ignore")
            for pool in threadpool_info():
                found[str(pool.get("internal_api") or pool.get("user_api"))] = int(pool.get("num_threads") or 0)
    env = {name: os.environ[name] for name in THREAD_VARIABLES if os.environ.get(name)}
    if env:
        found["env"] = env
    return found


def started() -> dict:
    """What is read when a run starts: the load average."""
    return {"load_start": load_average()}


def facts(at_start: dict, stage_threads: dict | None = None) -> dict:
    """``run.json``'s ``machine``: the facts above, ``at_start`` from :func:`started`;
    ``stage_threads``: threads the run's own stages set (an onnx encoder's)."""
    out = {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "usable_cores": usable_cores(),
        "threads": {**threads(), **(stage_threads or {})},
        "load_start": at_start.get("load_start"),
        "load_end": load_average(),
    }
    quota = cpu_quota()
    if quota is not None:
        out["cpu_quota"] = quota
    return out


def load_per_core(machine: dict | None) -> float | None:
    """The 1-minute load average at the run's start per core it could use (None if unknown)."""
    if not isinstance(machine, dict):
        return None
    load = machine.get("load_start")
    cores = machine.get("cpu_quota") or machine.get("usable_cores") or machine.get("cores")
    if not isinstance(load, list) or not load or not isinstance(load[0], (int, float)):
        return None
    if not isinstance(cores, (int, float)) or cores <= 0:
        return None
    return float(load[0]) / float(cores)


def load_warning(runs: list[tuple[str, dict | None]]) -> str | None:
    """One sentence when the runs' latencies were measured under very different load
    (see the module docstring), naming the least and the most loaded run; ``runs``:
    (label, ``run.json``'s ``machine``) pairs. None when they are comparable or unknown."""
    known = [(label, lpc) for label, lpc in ((label, load_per_core(m)) for label, m in runs) if lpc is not None]
    if len(known) < 2:
        return None
    low = min(known, key=lambda item: item[1])
    high = max(known, key=lambda item: item[1])
    if high[1] - low[1] <= LOAD_GAP:
        return None
    return (
        f"latencies were measured under very different load: {high[0]} started at {high[1]:.2f} per core, "
        f"{low[0]} at {low[1]:.2f} (1-minute load average / cores; apart by more than {LOAD_GAP:g}), so "
        "their p50/p95 compare the machine as much as the runs; time them again on a quiet machine"
    )
