"""Benchmarks that cannot rot: every ``benchmarks/*.py`` script runs in its small mode
(``--small``: tiny sizes, the real code path) and writes its figures; the committed
figures file (``benchmarks/figures.json``, the benchmarks page's source) names no figure
its script no longer writes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "benchmarks"
COMMITTED = json.loads((BENCH / "figures.json").read_text())

# each script's small mode; the model-loading ones are dense, Ray's shares the ray worker
RUNS = [
    pytest.param("bm25_vs_bm25s.py", [], id="bm25_vs_bm25s"),
    pytest.param("cjk_figure.py", [], id="cjk_figure"),
    pytest.param("encode_throughput.py", [], id="encode_throughput", marks=pytest.mark.dense),
    pytest.param("lancedb_scale.py", [], id="lancedb_scale"),
    pytest.param("latency_drift.py", [], id="latency_drift"),
    pytest.param("metrics_vs_pytrec.py", [], id="metrics_vs_pytrec"),
    pytest.param("onnx_encoding.py", [], id="onnx_encoding", marks=pytest.mark.dense),
    pytest.param("ray_encoding.py", [], id="ray_encoding", marks=[pytest.mark.dense, pytest.mark.xdist_group("ray")]),
    pytest.param("report_scale.py", [], id="report_scale"),
    pytest.param("rouge_l_long.py", [], id="rouge_l_long"),
    pytest.param("scale.py", [], id="scale"),
    pytest.param("scale.py", ["--compare", "bm25s"], id="scale_compare"),
    pytest.param("sql_warehouse.py", [], id="sql_warehouse"),
    pytest.param("sweep_overhead.py", [], id="sweep_overhead"),
    pytest.param("verdict_level.py", [], id="verdict_level"),
]


def test_every_script_has_a_small_run():
    scripts = {p.name for p in BENCH.glob("[!_]*.py")}
    assert scripts == {param.values[0] for param in RUNS}


def family(key: str) -> str:
    """An entry's script and the flags that choose what it measures (not its sizes)."""
    return key.split(" ")[0] + (" --compare" if "--compare" in key else "")


@pytest.mark.slow
@pytest.mark.parametrize(("script", "extra"), RUNS)
def test_small_mode_runs_and_writes_its_figures(tmp_path, script, extra):
    figures = tmp_path / "figures.json"
    before = (BENCH / "figures.json").read_bytes()
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    done = subprocess.run([sys.executable, str(BENCH / script), "--small", "--figures", str(figures), *extra],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    assert (BENCH / "figures.json").read_bytes() == before  # small mode never touches the committed figures
    (key, entry), = json.loads(figures.read_text()).items()
    assert key == " ".join([script, *extra])  # the small sizes name no entry of their own
    assert entry["figures"] and all(isinstance(v, (int, float)) for v in entry["figures"].values())
    assert {"command", "date", "load_average", "machine"} <= entry.keys()
    # the committed entries of this script (any size) hold only figures it still writes;
    # a peer left out in small mode leaves its figures unchecked here
    skipped = "skipped the peer" in done.stdout
    for name, committed in COMMITTED.items():
        if family(name) == family(key) and not skipped:
            missing = set(committed["figures"]) - set(entry["figures"])
            assert not missing, f"benchmarks/figures.json {name!r} names figures {script} no longer writes: {missing}"
