"""Bad input from Python: the CLI's checks and message, raised as overlap_sim.InputError (a
ValueError) with file, line and key; internal errors as RuntimeError; never a crash."""
import os
import textwrap

import pytest

import overlap_sim

BAD_KEY = textwrap.dedent("""\
    name: bad
    hardware: h100-sxm-8x-nvswitch
    workload:
      kind: mlp_tpsp
      tp: 8
      model: llama3-70b
      tokenz: 8192
    """)


def test_bad_key_in_a_file_names_file_line_and_key(tmp_path, cli):
    path = tmp_path / "bad.yaml"
    path.write_text(BAD_KEY)
    with pytest.raises(overlap_sim.InputError) as info:
        overlap_sim.run(str(path))
    e = info.value
    assert isinstance(e, ValueError)
    assert e.file == str(path)
    assert e.line == 7  # `tokenz:` is on the file's 7th line
    assert e.key == "workload.tokenz"
    # The CLI's message, word for word.
    rc, _, err = cli("run", str(path))
    assert rc == 2
    assert err.strip() == f"overlap-sim: error: {e}"


def test_bad_key_in_a_dict_names_the_key():
    tree = {"hardware": "h100-sxm-8x-nvswitch",
            "workload": {"kind": "mlp_tpsp", "tp": 8, "model": "llama3-70b", "tokenz": 8192}}
    with pytest.raises(overlap_sim.InputError) as info:
        overlap_sim.run(tree)
    e = info.value
    assert e.key == "workload.tokenz"
    assert e.file == overlap_sim.DICT_FILE
    assert e.line is None
    assert str(e).startswith("<dict>: workload.tokenz: unknown key")
    # The temporary file the dict went through is gone and not named.
    assert "overlap_sim-" not in str(e)


def test_bad_set_value_names_the_key():
    with pytest.raises(overlap_sim.InputError) as info:
        overlap_sim.run("scenarios/llama3-70b-tp8-mlp.yaml", sets={"workload.tp": -3})
    assert info.value.key == "workload.tp"


def test_missing_file_is_an_input_error(tmp_path):
    with pytest.raises(overlap_sim.InputError) as info:
        overlap_sim.run(str(tmp_path / "none.yaml"))
    assert "none.yaml" in str(info.value)


def test_usage_errors_are_input_errors_without_a_location(cli):
    with pytest.raises(overlap_sim.InputError) as info:
        overlap_sim.run(scheme="nope")
    assert info.value.file is None and info.value.line is None and info.value.key is None
    rc, _, err = cli("run", "--scheme", "nope")
    assert rc == 2 and err.strip() == f"overlap-sim: error: {info.value}"
    with pytest.raises(overlap_sim.InputError):
        overlap_sim.collective("all_reduce", min_bytes="lots")
    with pytest.raises(overlap_sim.InputError):
        overlap_sim.validate()
    with pytest.raises(overlap_sim.InputError):
        overlap_sim.profile_show("no-such-profile")


def test_the_interpreter_survives_many_errors():
    for _ in range(50):
        with pytest.raises(overlap_sim.InputError):
            overlap_sim.run({"workload": {"kind": "nonsense"}})
    assert overlap_sim.run(scheme="no_overlap")["results"][0]["scheme"] == "no_overlap"


def test_exports_are_written_as_the_cli_writes_them_and_refused_over_special_files(tmp_path, cli):
    # tune --export te-userbuffers FILE: the same file as the CLI's (the tune is deterministic).
    tree = {"hardware": "h100-sxm-8x-nvswitch",
            "workload": {"kind": "mlp_tpsp", "tp": 8, "model": "llama3-70b", "tokens": 2048},
            "schemes": ["te_userbuffers"]}
    scenario = tmp_path / "te.yaml"
    scenario.write_text(__import__("json").dumps(tree))
    ours, theirs = tmp_path / "py.yaml", tmp_path / "cli.yaml"
    overlap_sim.tune(str(scenario), export=("te-userbuffers", ours))
    rc, _, err = cli("tune", str(scenario), "--format", "json", "--export", "te-userbuffers", str(theirs))
    assert rc == 0, err
    strip = lambda p: [line for line in p.read_text().splitlines() if not line.startswith("#")]
    assert strip(ours) == strip(theirs) and "fc2_fprop:" in ours.read_text()
    # collective --export nccl-tuner FILE.
    csv = tmp_path / "tuner.csv"
    overlap_sim.collective("all_reduce", ranks=8, min_bytes="1M", max_bytes="4M", export=("nccl-tuner", csv))
    assert csv.read_text().strip()
    # Never over a directory or a socket (cost_model/atomic_file.hpp resolve_output): refused as the
    # CLI refuses it, before anything runs. (A character device such as /dev/null is written in place.)
    import socket
    sock_path = str(tmp_path / "s.sock")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(sock_path)
    for special in (str(tmp_path), sock_path):
        with pytest.raises(overlap_sim.InputError):
            overlap_sim.tune(str(scenario), export=("te-userbuffers", special))
        with pytest.raises(overlap_sim.InputError):
            overlap_sim.collective("all_reduce", ranks=8, export=("nccl-tuner", special))
    with pytest.raises(overlap_sim.InputError):
        overlap_sim.tune(str(scenario), export=("flashoverlap", tmp_path / "x.json"))
    with pytest.raises(overlap_sim.InputError):
        overlap_sim.tune(str(scenario), export="te-userbuffers")
    sock.close()
