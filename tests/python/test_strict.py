"""Python as strict as the CLI: what the command line cannot be given (a NUL, an argument longer than
the OS passes, -j out of its range) is refused from Python too, with a message that shows the whole
value; a dict that cannot be written leaves no file; and the exception classes and their attributes."""
import errno
import os
import re
import subprocess
import tempfile

import pytest

import overlap_sim
from overlap_sim import Profile, Scenario, Trace

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT = "scenarios/llama3-70b-tp8-mlp.yaml"


@pytest.fixture(autouse=True)
def _in_root(monkeypatch):
    monkeypatch.chdir(ROOT)


# -- a NUL character ------------------------------------------------------------------------------

NUL_PATH = DEFAULT + "\0junk"  # cut at the NUL, this would be the default scenario, which runs


@pytest.mark.parametrize("call", [
    lambda: overlap_sim.run(NUL_PATH),
    lambda: overlap_sim.sweep(NUL_PATH),
    lambda: overlap_sim.tune(NUL_PATH),
    lambda: overlap_sim.validate(NUL_PATH),
    lambda: overlap_sim.profile_show("scenarios/hardware/h100-sxm-8x-nvswitch.yaml\0x"),
    lambda: overlap_sim.collective("all_reduce", "h100-sxm-8x-nvswitch\0x"),
    lambda: overlap_sim.trace(["tests/data/trace/rank0.json\0x"]),
    lambda: overlap_sim.tune(DEFAULT, export=("te-userbuffers", "/tmp/ub.yaml\0x")),
    lambda: overlap_sim.run(os.fsencode(NUL_PATH)),
    lambda: Scenario(NUL_PATH),
    lambda: Profile("h100-sxm-8x-nvswitch\0x"),
    lambda: Trace(["tests/data/trace/rank0.json\0x"]),
    lambda: overlap_sim.run(DEFAULT, scheme="no_overlap\0x"),
], ids=["run", "sweep", "tune", "validate", "profile_show", "collective", "trace", "export", "bytes", "Scenario",
        "Profile", "Trace", "scheme"])
def test_a_nul_in_a_path_or_name_is_refused_not_cut(call):
    with pytest.raises(overlap_sim.OptionError) as info:
        call()
    # The whole value is in the message, the NUL written as \0: nothing after it is lost.
    assert "\\0" in str(info.value) and "\0" not in str(info.value)
    assert info.value.key is not None


def test_a_nul_in_a_set_value_is_refused_with_the_whole_value_shown():
    with pytest.raises(overlap_sim.OptionError) as info:
        overlap_sim.run(DEFAULT, sets={"name": "before\0after"})
    assert "before\\0after" in str(info.value) and info.value.key == "name"
    with pytest.raises(overlap_sim.OptionError):
        overlap_sim.run(DEFAULT, sets=["name=a\0b"])
    s = Scenario(DEFAULT)
    with pytest.raises(overlap_sim.OptionError):
        s.name = "a\0b"
    assert s.sets == []


def test_a_nul_in_a_dict_value_names_the_key():
    tree = {"hardware": "h100-sxm-8x-nvswitch", "workload": {"kind": "mlp_tpsp", "tp": 8, "model": "llama3-70b\0x"}}
    with pytest.raises(overlap_sim.InputError) as info:
        overlap_sim.run(tree)
    e = info.value
    assert (e.file, e.line, e.key) == ("<dict>", None, "workload.model")
    assert "llama3-70b\\0x" in str(e)


def test_a_nul_a_file_brings_into_a_message_does_not_cut_it(tmp_path, cli):
    # YAML's "\0" escape puts a NUL in the value; the loader quotes the value in its error. The core
    # keeps the message whole (its what() is a C string, cut at the NUL): the part after it is there.
    path = tmp_path / "nul.yaml"
    path.write_text('hardware: h100-sxm-8x-nvswitch\nworkload:\n  kind: "mlp\\0tpsp"\n  tp: 8\n')
    with pytest.raises(overlap_sim.InputError) as info:
        overlap_sim.run(str(path))
    e = info.value
    assert (e.file, e.line, e.key) == (str(path), 3, "workload.kind")
    assert "mlp\\0tpsp" in str(e) and "mlp\\0tpsp" in e.detail
    assert str(e).endswith(e.detail)


# -- jobs: the CLI's -j range ---------------------------------------------------------------------

def test_jobs_cap_is_the_clis(cli):
    # The CLI states its range in --help ("INT in [1 - N]"); the package refuses the same values.
    rc, out, _ = cli("tune", "--help")
    lo, hi = map(int, re.search(r"-j,--jobs INT:INT in \[(\d+) - (\d+)\]", out).groups())
    assert (lo, hi) == (1, overlap_sim.MAX_JOBS)
    rc, _, err = cli("tune", DEFAULT, "-j", str(hi + 1))
    assert rc == 2
    for bad in (hi + 1, 1000000, -1):
        for call in (lambda: overlap_sim.tune(DEFAULT, jobs=bad), lambda: overlap_sim.sweep(DEFAULT, jobs=bad),
                     lambda: Scenario(DEFAULT).tune(jobs=bad), lambda: Scenario(DEFAULT).sweep(jobs=bad)):
            with pytest.raises(overlap_sim.OptionError) as info:
                call()
            assert info.value.key == "jobs" and str(hi) in str(info.value)
    for bad in (True, 2.0, "4"):
        with pytest.raises(overlap_sim.OptionError):
            overlap_sim.sweep(DEFAULT, jobs=bad)


# -- the size of an assignment ---------------------------------------------------------------------

def test_an_assignment_longer_than_the_command_line_takes_is_refused(cli):
    long_value = "x" * overlap_sim.MAX_ASSIGNMENT_BYTES
    # The command line cannot be given it at all: the OS refuses the argument (E2BIG).
    with pytest.raises(OSError) as os_info:
        subprocess.run(["true", "--set", f"name={long_value}"])
    assert os_info.value.errno == errno.E2BIG
    for call in (lambda: overlap_sim.run(DEFAULT, sets={"name": long_value}),
                 lambda: overlap_sim.run(DEFAULT, scheme="data_slicing", params={"chunks": long_value}),
                 lambda: overlap_sim.sweep(DEFAULT, sweeps={"name": [long_value]}),
                 lambda: Scenario(DEFAULT).set("name", long_value)):
        with pytest.raises(overlap_sim.OptionError) as info:
            call()
        assert info.value.key == "name" or info.value.key == "chunks"
        assert len(str(info.value)) < 1000  # the value quoted a line's worth, the rest counted
    # Many assignments, each short enough, are refused together past what a command line holds.
    many = [f"name={'y' * 100000}"] * (overlap_sim.MAX_ASSIGNMENTS_TOTAL_BYTES // 100000 + 1)
    with pytest.raises(overlap_sim.OptionError):
        overlap_sim.run(DEFAULT, sets=many)
    # Under the cap the value reaches the loader, which takes a long name.
    assert overlap_sim.run(DEFAULT, sets={"name": "z" * 1000}, scheme="no_overlap")["results"]


# -- a dict that cannot be written ----------------------------------------------------------------

@pytest.mark.parametrize("bad, key", [
    (object(), "workload.tokens"),
    (float("nan"), "workload.tokens"),
    ({1: 2}, "workload.tokens"),
    (b"8192", "workload.tokens"),
])
def test_a_dict_that_cannot_be_written_leaves_no_file(tmp_path, monkeypatch, bad, key):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    tree = {"hardware": "h100-sxm-8x-nvswitch",
            "workload": {"kind": "mlp_tpsp", "tp": 8, "model": "llama3-70b", "tokens": bad}}
    for call in (lambda: overlap_sim.run(tree), lambda: Scenario(tree), lambda: overlap_sim.tune(tree)):
        with pytest.raises(overlap_sim.InputError) as info:
            call()
        assert info.value.file == "<dict>" and info.value.key == key
    assert os.listdir(tmp_path) == []
    # A good dict's file is gone after the run too.
    tree["workload"]["tokens"] = 2048
    overlap_sim.run(tree, scheme="no_overlap")
    assert os.listdir(tmp_path) == []


# -- the exception classes ------------------------------------------------------------------------

def test_exception_hierarchy():
    E = overlap_sim
    for cls in (E.InputError, E.OutOfMemoryError, E.InternalError):
        assert issubclass(cls, E.OverlapSimError)
    for cls in (E.OptionError, E.OutputError, E.CannotSimulateError):
        assert issubclass(cls, E.InputError)
    assert issubclass(E.InputError, ValueError)          # as before the classes were split
    assert issubclass(E.InternalError, RuntimeError)
    assert issubclass(E.OutOfMemoryError, MemoryError)
    assert issubclass(E.SchemeFailedWarning, RuntimeWarning)
    e = E.InputError("f.yaml:3: a.b: bad", "f.yaml", 3, "a.b", "bad")
    assert (e.message, e.file, e.line, e.key, e.detail, str(e)) == ("f.yaml:3: a.b: bad", "f.yaml", 3, "a.b", "bad",
                                                                    "f.yaml:3: a.b: bad")


def test_each_cli_error_kind_raises_its_class(tmp_path, cli):
    # An option value: OptionError, no location, the CLI's message.
    with pytest.raises(overlap_sim.OptionError) as info:
        overlap_sim.run(scheme="nope")
    assert (info.value.file, info.value.line, info.value.key) == (None, None, None)
    rc, _, err = cli("run", "--scheme", "nope")
    assert rc == 2 and err.strip() == f"overlap-sim: error: {info.value}"
    # An output that cannot be written: OutputError, nothing written.
    with pytest.raises(overlap_sim.OutputError) as info:
        overlap_sim.tune(DEFAULT, export=("te-userbuffers", str(tmp_path)))
    rc, _, err = cli("tune", DEFAULT, "--export", "te-userbuffers", str(tmp_path))
    assert rc == 2 and err.strip() == f"overlap-sim: error: {info.value}"
    # A value in a file: InputError itself, located.
    path = tmp_path / "bad.yaml"
    path.write_text("hardware: h100-sxm-8x-nvswitch\nworkload:\n  kind: mlp_tpsp\n  tp: 8\n  tokens: -5\n")
    with pytest.raises(overlap_sim.InputError) as info:
        overlap_sim.run(str(path))
    assert type(info.value) is overlap_sim.InputError
    assert (info.value.file, info.value.line, info.value.key) == (str(path), 5, "workload.tokens")
