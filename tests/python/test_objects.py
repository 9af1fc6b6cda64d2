"""The object API (Scenario, Profile, RunResult, SweepResult, TuneResult, Trace) against the CLI: each
DataFrame must hold exactly the rows and values of the command's --format json for the same run, and
a field set on an object must act exactly as the same --set on the command line."""
import json
import math
import os

import pytest

import overlap_sim
from overlap_sim import Profile, Scenario, Trace

pd = pytest.importorskip("pandas")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT = "scenarios/llama3-70b-tp8-mlp.yaml"
TRACES = ["tests/data/trace/rank0.json", "tests/data/trace/rank1.json.gz"]


@pytest.fixture(autouse=True)
def _in_root(monkeypatch):
    monkeypatch.chdir(ROOT)


def flat(row, prefix=""):
    """A JSON row as the documented DataFrame columns: nested maps as dotted names, lists of maps left
    out (docs/guide/python.md "DataFrames"). Written here apart from overlap_sim/report.py so the test
    checks the rule, not the code against itself."""
    out = {}
    for k, v in row.items():
        if isinstance(v, dict):
            out.update(flat(v, f"{prefix}{k}."))
        elif not (isinstance(v, list) and any(isinstance(e, (dict, list)) for e in v)):
            out[f"{prefix}{k}"] = v
    return out


def same(a, b):
    if isinstance(b, float) and math.isnan(b):
        b = None
    if a is None or (isinstance(a, float) and math.isnan(a)):
        return b is None
    return a == b


def assert_frame_is_rows(df, rows, rename=None):
    """Every column of `df` is a key of some flattened row and every key is a column; every cell is
    the row's value (NaN where the row has no such key)."""
    flats = []
    for r in rows:
        f = flat(r)
        if rename:
            f = {(rename[1] + k[len(rename[0]):] if k.startswith(rename[0]) else k): v for k, v in f.items()}
        flats.append(f)
    keys = set().union(*flats)
    assert set(df.columns) == keys
    assert len(df) == len(rows)
    for i, f in enumerate(flats):
        for c in df.columns:
            cell = df.iloc[i][c]
            assert same(f.get(c), cell.item() if hasattr(cell, "item") else cell), (i, c, f.get(c), cell)


def test_run_schemes_frame_is_the_cli_report(cli_json):
    result = Scenario.load("llama3-70b-tp8-mlp").run()
    cli = cli_json("run", "llama3-70b-tp8-mlp", "--format", "json")
    assert dict(result.report) == cli
    df = result.schemes
    assert df.columns[0] == "scheme"
    assert_frame_is_rows(df, cli["results"])
    assert result.best == cli["best"]
    # The frame is a copy: changing it leaves the result's own intact.
    df.loc[0, "latency_us"] = -1
    assert result.schemes.loc[0, "latency_us"] == cli["results"][0]["latency_us"]


def test_fields_set_on_a_scenario_run_as_the_same_set_flags(cli_json):
    s = Scenario(DEFAULT)
    s.workload.tokens = 4096          # attribute access
    s["fidelity"] = "steps"           # item access, dotted or not
    s["schemes"] = [{"name": "no_overlap"}, {"name": "data_slicing", "params": {"chunks": 4}}]
    assert s.workload.tokens == 4096 and s["workload.tokens"] == 4096 and s.fidelity == "steps"
    assert s.sets == ["workload.tokens=4096", "fidelity=steps",
                      'schemes=[{"name": "no_overlap"}, {"name": "data_slicing", "params": {"chunks": 4}}]']
    cli = cli_json("run", DEFAULT, *[a for x in s.sets for a in ("--set", x)], "--format", "json")
    result = s.run()
    assert dict(result.report) == cli
    assert list(result.schemes["scheme"]) == ["no_overlap", "data_slicing"]
    assert result.schemes.loc[1, "params.chunks"] == 4


def test_a_bad_field_raises_at_once_with_the_clis_message_and_is_not_kept(cli):
    s = Scenario(DEFAULT)
    with pytest.raises(overlap_sim.InputError) as info:
        s.workload.tokenz = 8
    e = info.value
    assert (e.file, e.line, e.key) == ("--set workload.tokenz=8", None, "workload.tokenz")
    rc, _, err = cli("run", DEFAULT, "--set", "workload.tokenz=8")
    assert rc == 2 and err.strip() == f"overlap-sim: error: {e}"
    assert s.sets == []  # the bad field was not kept: the scenario still runs
    with pytest.raises(overlap_sim.InputError) as info:
        s["workload.tp"] = -3
    assert info.value.key == "workload.tp" and s.sets == []


def test_check_false_leaves_the_error_to_the_run():
    s = Scenario(DEFAULT)
    s.set("workload.tokenz", 8, check=False)
    assert s.sets == ["workload.tokenz=8"]
    with pytest.raises(overlap_sim.InputError) as info:
        s.run()
    assert info.value.key == "workload.tokenz"


def test_update_sets_fields_that_are_only_valid_together():
    s = Scenario(DEFAULT)
    # A GEMM + all-reduce workload needs its own keys: each alone would be refused.
    with pytest.raises(overlap_sim.InputError):
        s.workload.kind = "gemm_collective"
    s.update({"workload": {"kind": "gemm_collective", "tp": 8, "m": 4096, "n": 8192, "k": 8192,
                           "primitive": "all_reduce", "dtype": "bf16"}})
    assert s.workload.kind == "gemm_collective" and s.workload.m == 4096
    assert s.run().schemes["latency_us"].gt(0).all()


def test_to_dict_is_the_file_as_written(tmp_path):
    yaml = pytest.importorskip("yaml")
    with open(DEFAULT) as f:
        written = yaml.safe_load(f)
    s = Scenario(DEFAULT)
    assert s.to_dict() == written
    assert s.keys() == list(written)
    assert s.workload == written["workload"]
    assert s["sweep"] == written["sweep"]  # `sweep` is also a method: read it as an item
    with pytest.raises(AttributeError):
        s.sweep = {}
    with pytest.raises(AttributeError):
        s.no_such_key
    assert s.get("no.such.key", 7) == 7 and "workload.tokens" in s and "workload.nope" not in s


def test_dict_scenario_runs_as_its_file_and_is_copied():
    with open(DEFAULT) as f:
        pytest.importorskip("yaml")
        import yaml
        tree = yaml.safe_load(f)
    s = Scenario.from_dict(tree)
    tree["workload"]["tokens"] = 1  # a later change to the caller's dict is not the scenario's
    assert s.workload.tokens == 8192
    assert s.run().report["results"] == Scenario(DEFAULT).run().report["results"]
    with pytest.raises(overlap_sim.InputError) as info:
        s.workload.tokenz = 8
    assert info.value.key == "workload.tokenz"


def test_copy_is_independent():
    a = Scenario(DEFAULT, {"workload.tokens": 2048})
    b = a.copy(fidelity="steps")
    b.workload.tokens = 4096
    assert a.sets == ["workload.tokens=2048"]
    assert b.sets == ["workload.tokens=2048", "fidelity=steps", "workload.tokens=4096"]


def test_profile_fields_and_a_profile_as_a_scenarios_hardware(cli_json):
    p = Profile("h100-sxm-8x-nvswitch")
    p.gpu.sm_count = 100
    assert p["gpu.sm_count"] == 100
    shown = cli_json("profile", "show", "h100-sxm-8x-nvswitch", "--set", "gpu.sm_count=100", "--format", "json")
    assert p.to_dict() == shown
    with pytest.raises(overlap_sim.InputError) as info:
        p.gpu.sm_count = -1
    assert info.value.key == "hardware.gpu.sm_count" or info.value.key == "gpu.sm_count"
    assert p.sets == ["gpu.sm_count=100"]
    s = Scenario(DEFAULT)
    s.hardware = p
    cli = cli_json("run", DEFAULT, "--set", "hardware.gpu.sm_count=100", "--format", "json")
    assert s.run().report["results"] == cli["results"]
    assert "h100-sxm-8x-nvswitch" in Profile.names()


def test_profile_collective_frame_is_the_cli_table(cli_json):
    df = Profile("h100-sxm-8x-nvswitch").collective("all_reduce", 8, min_bytes="1M", max_bytes="16M")
    cli = cli_json("collective", "all_reduce", "--hardware", "h100-sxm-8x-nvswitch", "-g", "8", "-b", "1M", "-e",
                   "16M", "--format", "json")
    assert_frame_is_rows(df, cli["results"])


def test_sweep_grid_is_the_cli_rows_with_swept_keys_as_columns(cli_json):
    result = Scenario(DEFAULT).sweep({"workload.tokens": [2048, 4096]}, only_axes=True, jobs=1)
    cli = cli_json("sweep", DEFAULT, "--sweep", "workload.tokens=2048,4096", "--only-axes", "-j", "1", "--format",
                   "json")
    assert dict(result.report) == cli
    assert result.swept == ["workload.tokens"] and result.points == 2
    grid = result.grid
    assert list(grid.columns[:2]) == ["workload.tokens", "scheme"]
    assert_frame_is_rows(grid, cli["rows"], rename=("point.", ""))
    assert sorted(set(grid["workload.tokens"])) == [2048, 4096]


def test_tune_frames_are_the_cli_report(cli_json):
    s = Scenario(DEFAULT, {"workload.tokens": 2048})
    result = s.tune(jobs=2)
    cli = cli_json("tune", DEFAULT, "--set", "workload.tokens=2048", "-j", "2", "--format", "json")
    report = dict(result.report)
    report.pop("search_ms")  # the tuner's own wall-clock time: the one field that differs run to run
    cli.pop("search_ms")
    assert report == cli
    assert_frame_is_rows(result.schemes, cli["schemes"])
    candidates = [dict({"scheme": s["scheme"]}, **c) for s in cli["schemes"] for c in s["candidates"]]
    assert_frame_is_rows(result.candidates, candidates)
    assert result.best == cli["best"]


def test_trace_frames_are_the_cli_reports(cli_json):
    t = Trace(TRACES)
    cli = cli_json("trace", *TRACES, "--format", "json")
    assert dict(t.report) == cli
    assert t.overall == cli["overall"]
    ranks = [{"rank": r["rank"], "file": r["file"], "format": r["format"], **r["figures"]} for r in cli["ranks"]]
    assert_frame_is_rows(t.ranks, ranks)
    steps = [dict({"rank": r["rank"]}, **s) for r in cli["ranks"] for s in r["steps"]]
    assert_frame_is_rows(t.steps, steps)

    kern = cli_json("trace", *TRACES, "--kernels", "--format", "json")
    assert dict(t.kernel_report) == kern
    rows = [dict({"rank": r["rank"], "file": r["file"]}, **k) for r in kern["ranks"] for k in r["kernels"]]
    assert_frame_is_rows(t.kernels, rows)
    # by_kind: the kernels summed per (class, kind) over every rank, largest total first.
    sums = {}
    for k in rows:
        g = sums.setdefault((k["class"], k["kind"]), [0, 0, 0])
        g[0] += 1
        g[1] += k["count"]
        g[2] += k["total_ns"]
    table = t.by_kind
    assert {(r["class"], r["kind"]): [r["groups"], r["count"], r["total_ns"]] for r in table.to_dict("records")} == sums
    assert list(table["total_ns"]) == sorted(table["total_ns"], reverse=True)
    assert table["total_ns"].sum() == sum(k["total_ns"] for k in rows)


def test_trace_with_hardware_matches_cli(cli_json):
    t = Trace(TRACES, hardware="h100-sxm-8x-nvswitch")
    assert dict(t.report) == cli_json("trace", *TRACES, "--hardware", "h100-sxm-8x-nvswitch", "--format", "json")


def test_trace_errors_are_the_clis(cli, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{ not json")
    with pytest.raises(overlap_sim.InputError) as info:
        Trace([str(bad)])
    rc, _, err = cli("trace", str(bad))
    assert rc == 2 and err.strip() == f"overlap-sim: error: {info.value}"


def test_results_show_in_a_notebook():
    r = Scenario(DEFAULT).run()
    assert "<table" in r._repr_html_() and "RunResult" in repr(r)
    assert json.loads(json.dumps(r.report)) == r.report
