"""The slow/dense marker rules of conftest.py: what ``make test-fast`` may leave out.

A test that starts a subprocess (directly, through a fixture, or through a helper of its
module) must be marked ``slow``, else collection fails; at run time, starting a
subprocess without ``slow`` or loading the real model without ``dense`` fails the test.
"""

from __future__ import annotations

import subprocess

import pytest
from conftest import _spawns, run_cli  # noqa: F401  (run_cli: named by the helpers below)

import receval.encoders.local


def _runs_the_cli(tmp_path):
    return run_cli("--help", cwd=tmp_path)


def _through_a_helper(tmp_path):
    return _runs_the_cli(tmp_path).returncode


def _pure(values):
    return sorted(values)


def _calls_subprocess_directly():
    return subprocess.check_output(["true"])


def test_the_source_check_follows_module_helpers():
    assert _spawns(_runs_the_cli) == "run_cli"
    assert _spawns(_through_a_helper) == "_runs_the_cli"
    assert _spawns(_calls_subprocess_directly) == "subprocess.check_output"
    assert _spawns(_pure) is None


def test_a_subprocess_without_the_slow_marker_fails_the_test():
    popen = getattr(subprocess, "Popen")  # hidden from the source check on purpose
    with pytest.raises(pytest.fail.Exception, match="starts a subprocess without @pytest.mark.slow"):
        popen(["true"])


def test_the_real_model_without_the_dense_marker_fails_the_test():
    with pytest.raises(pytest.fail.Exception, match="loads the real model without @pytest.mark.dense"):
        receval.encoders.local.load_sentence_transformer(None)


@pytest.mark.slow
def test_a_slow_test_may_start_a_subprocess():
    popen = getattr(subprocess, "Popen")
    assert popen(["true"]).wait() == 0


def test_no_test_module_imports_the_suite_as_a_package_named_tests():
    """ppi-python (a test dependency) installs a top-level ``tests`` package, so
    ``from tests.conftest import ...`` finds ppi's, not ours: import ``conftest``."""
    from pathlib import Path

    here = Path(__file__).parent
    offenders = [
        path.name for path in sorted(here.glob("*.py"))
        if any(line.startswith(("from tests.", "import tests")) for line in path.read_text(encoding="utf-8").splitlines())
    ]
    assert offenders == []
