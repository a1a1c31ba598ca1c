"""Shared fixtures of colmet's Python tests.

COLMET_BIN names the bin directory of a build (CTest sets it; default: the
build/bin of this source tree). The pipeline tests need root and the built
programs; they skip with the reason otherwise."""

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.dirname(HERE)
sys.path.insert(0, PYTHON_DIR)   # the colmet package of this tree
sys.path.insert(0, HERE)         # synth, browser, pipeline helpers

SOURCE_DIR = os.path.dirname(PYTHON_DIR)
COLMET_BIN = os.environ.get("COLMET_BIN") or os.path.join(SOURCE_DIR, "build", "bin")


def report_command():
    """colmet-report as the tests run it: this tree's package with this Python."""
    return [sys.executable, "-m", "colmet.report"]


def report_env():
    env = dict(os.environ)
    env["PYTHONPATH"] = PYTHON_DIR + os.pathsep + env.get("PYTHONPATH", "")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


@pytest.fixture(scope="session")
def colmet_bin():
    missing = [p for p in ("colmet-job", "colmet-node", "colmet-collector", "colmet-ctl", "colmet-workload",
                           "colmet-cputime") if not os.access(os.path.join(COLMET_BIN, p), os.X_OK)]
    if missing:
        pytest.skip(f"not built in {COLMET_BIN}: {', '.join(missing)}")
    return COLMET_BIN


@pytest.fixture(scope="session")
def root(colmet_bin):
    if os.geteuid() != 0:
        pytest.skip("needs root to create cgroups, count perf events and read /proc/PID/io")
    return colmet_bin
