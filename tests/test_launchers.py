"""Shipped launcher configs: Ray (a real head on 127.0.0.1) and Slurm (composes).

The Ray test needs the ``ray`` extra (``make test`` installs it): it starts a head with
token authentication (``ray start --head --block`` in its own process group), runs a
2-job sweep with ``hydra/launcher=receval_ray`` joining it -- from another working
directory, with the package folder shipped by ``py_modules`` as the README's recipe
does; from an editable clone that folder has no ``conf/`` -- compares the results with
the basic launcher's, re-runs it to check resume, and stops the head.
"""

from __future__ import annotations

import importlib.util
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import run_cli

import receval
from receval.results.format import RESULTS

# every test here that starts a Ray head runs in one xdist worker (make test: --dist loadgroup)
pytestmark = pytest.mark.xdist_group("ray")

SWEEP = ["retriever=bm25,tfidf", "chunking.max_words=40"]


def _importable(*names: str) -> bool:
    try:
        return all(importlib.util.find_spec(name) is not None for name in names)
    except ModuleNotFoundError:
        return False


def _compose_hydra(launcher: str, tmp_path: Path) -> str:
    done = run_cli(f"hydra/launcher={launcher}", "--cfg", "hydra", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.slow
@pytest.mark.skipif(not _importable("hydra_plugins.hydra_submitit_launcher"), reason="needs hydra-submitit-launcher")
def test_slurm_config_composes(tmp_path):
    out = _compose_hydra("receval_slurm", tmp_path)
    assert "SlurmLauncher" in out and "mem_gb: 8" in out and "timeout_min: 60" in out


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def ray_head(head_dir: Path, cpus: int = 2):
    """A Ray head on 127.0.0.1 with token authentication (``ray start --head --block`` in its
    own process group, working in ``head_dir``); yields (port, the environment a driver
    needs to join it), and stops the whole group afterwards."""
    port = _free_port()
    env = {
        **os.environ,
        "RAY_AUTH_MODE": "token",  # the head and the driver must both have it
        "RAY_AUTH_TOKEN": secrets.token_hex(16),
        "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",  # keep every Ray address on 127.0.0.1
        "RAY_USAGE_STATS_ENABLED": "0",
    }
    ray_cli = Path(sys.executable).with_name("ray")
    head = subprocess.Popen(
        [str(ray_cli), "start", "--head", f"--port={port}", "--node-ip-address=127.0.0.1",
         f"--num-cpus={cpus}", "--include-dashboard=false", "--disable-usage-stats", "--block"],
        cwd=head_dir, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert head.poll() is None, "ray start --head exited"
            assert time.monotonic() < deadline, "the Ray head did not come up in 60 s"
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.2)
        yield port, env
    finally:
        _stop_group(head)
        _forget_head(port)


def _forget_head(port: int) -> None:
    """Delete Ray's note of the latest head on this machine when it is this stopped one:
    left behind (a killed head cannot remove it), it sends any later ``ray.init()``
    without an address to a dead port for minutes."""
    from ray._common.utils import get_ray_address_file

    current = Path(get_ray_address_file(None))  # /tmp/ray/ray_current_cluster
    try:
        if current.read_text().strip() == f"127.0.0.1:{port}":
            current.unlink()
    except OSError:
        pass


def _results(job: Path):
    table = pq.read_table(job / RESULTS)
    return table.drop_columns([c for c in table.column_names if c.startswith("latency_ms")])


@pytest.mark.slow
@pytest.mark.skipif(
    not _importable("ray", "hydra_plugins.hydra_ray_launcher"),
    reason="needs the ray extra: pip install -e '.[ray]' (make test installs it)",
)
def test_ray_launcher_joins_a_head_and_gives_the_basic_launchers_results(tmp_path):
    out = _compose_hydra("receval_ray", tmp_path)
    assert "object_store_memory: null" in out and "max_retries: 0" in out
    head_dir = tmp_path / "head"  # the head's working directory: where relative sweep dirs would land
    head_dir.mkdir()
    with ray_head(head_dir) as (port, env):
        driver_dir = tmp_path / "driver"
        driver_dir.mkdir()
        package = os.path.dirname(receval.__file__)
        ray_args = [
            *SWEEP, "hydra/launcher=receval_ray", f"hydra.launcher.ray.init.address=127.0.0.1:{port}",
            f"++hydra.launcher.ray.init.runtime_env.py_modules=[{package}]",
            f"hydra.sweep.dir={tmp_path}/ray", "-m",
        ]
        on_ray = run_cli(*ray_args, cwd=driver_dir, env=env)
        assert on_ray.returncode == 0, on_ray.stderr[-3000:]
        assert "receval: 2 jobs ran, 0 skipped" in on_ray.stdout
        basic = run_cli(*SWEEP, f"hydra.sweep.dir={tmp_path}/basic", "-m", cwd=driver_dir)
        assert basic.returncode == 0, basic.stderr
        for job in ("0", "1"):
            assert _results(tmp_path / "ray" / job).equals(_results(tmp_path / "basic" / job))
        assert not list(head_dir.rglob(RESULTS))  # nothing written relative to the head
        again = run_cli(*ray_args, cwd=driver_dir, env=env)
        assert again.returncode == 0, again.stderr[-3000:]
        assert "receval: 0 jobs ran, 2 skipped" in again.stdout


def _stop_group(head: subprocess.Popen) -> None:
    """SIGTERM the head's process group (ray start, gcs_server, raylet, workers), then
    SIGKILL whatever is still in it after 30 s."""
    os.killpg(head.pid, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        head.poll()
        try:
            os.killpg(head.pid, 0)  # anyone left in the group?
        except ProcessLookupError:
            return
        time.sleep(0.2)
    try:
        os.killpg(head.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    head.wait()
