"""Shared fixtures of the overlap_sim tests: the CLI binary the module is compared with.

tools/test.sh runs these with PYTHONPATH=build/python (the module the release build makes) and
OVERLAP_SIM_CLI=build/tools/overlap-sim; after `pip install .` they run with the installed package
and the binary from build/ when there is one.
"""
import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def cli_path():
    p = os.environ.get("OVERLAP_SIM_CLI") or str(ROOT / "build" / "tools" / "overlap-sim")
    return p if os.access(p, os.X_OK) else None


@pytest.fixture(scope="session")
def cli():
    """cli(*args) -> (exit status, stdout, stderr) of the overlap-sim binary; skips without one."""
    path = cli_path()
    if path is None:
        pytest.skip("no overlap-sim binary (set OVERLAP_SIM_CLI or build build/tools/overlap-sim)")

    def call(*args):
        r = subprocess.run([path, *args], capture_output=True, text=True, cwd=ROOT)
        return r.returncode, r.stdout, r.stderr

    return call


@pytest.fixture(scope="session")
def cli_json(cli):
    """cli_json(*args) -> the parsed stdout of a command that must succeed."""

    def call(*args):
        rc, out, err = cli(*args)
        assert rc == 0, err
        return json.loads(out)

    return call
