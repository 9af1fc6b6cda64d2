"""The objects the notebooks read besides a run's schemes (RunResult.row and .placeholders,
Profile.tune_gemm, Trace.predictions and .fit_profile, Validation) against the CLI: each must hold
exactly the command's --format json, as the other objects do (tests/python/test_objects.py)."""
import os

import pytest

import overlap_sim
from overlap_sim import Profile, Scenario, Trace, Validation

pd = pytest.importorskip("pandas")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TRACES = ["tests/data/trace/rank0.json", "tests/data/trace/rank1.json.gz"]
H100_RESULTS = "calibrate/results/nvidia-h100-80gb-hbm3-vm"


@pytest.fixture(autouse=True)
def _in_root(monkeypatch):
    monkeypatch.chdir(ROOT)


def test_row_is_the_schemes_row_of_that_scheme_and_knobs():
    r = Scenario.load("async-tp-llama3-70b").run()
    results = r.report["results"]
    want = next(i for i, x in enumerate(results)
                if x["scheme"] == "async_tp" and x["params"].get("streams") == 1
                and x["params"].get("transport") == "copy_engine")
    row = r.row("async_tp", transport="copy_engine", streams=1)
    assert row["latency_us"] == results[want]["latency_us"]
    assert list(row.index) == list(r.schemes.columns)
    assert row.equals(r.schemes.iloc[want])
    with pytest.raises(KeyError):
        r.row("async_tp", streams=7)


def test_placeholders_are_the_runs_sensitivity_check(cli_json):
    # Every shipped profile gives its guesses ranges: the default H100 run checks them.
    r = Scenario.load("llama3-70b-tp8-mlp").run()
    cli = cli_json("run", "llama3-70b-tp8-mlp", "--format", "json")
    assert r.placeholders == cli["placeholder_sensitivity"]
    ranges = overlap_sim.profile_show("h100-sxm-8x-nvswitch")["placeholders"]
    assert sorted(r.placeholders["checked"]) == sorted(ranges)


def test_tune_gemm_is_the_operator_level_tune(cli_json):
    t = Profile("rtx4090-4x-pcie").tune_gemm("2048x8192x8192", "all_reduce", 4, dtype="fp16", sm_margin=True)
    cli = cli_json("tune", "--hardware", "rtx4090-4x-pcie", "--gemm", "2048x8192x8192", "--dtype", "fp16",
                   "--primitive", "all_reduce", "--ranks", "4", "--sm-margin", "--format", "json")
    for key in ("waves", "groups_waves", "speedup_vs_no_overlap", "engine_runs", "simulated_us"):
        assert t[key] == cli[key], key
    assert len(t.candidates) == len(cli["candidates"])
    assert list(t.candidates["groups_waves"]) == [c["groups_waves"] for c in cli["candidates"]]
    with pytest.raises(NotImplementedError):
        Profile("rtx4090-4x-pcie", ["gpu.sm_count=100"]).tune_gemm("2048x8192x8192", "all_reduce", 4)


def test_trace_predictions_and_fit_profile(cli_json, tmp_path):
    t = Trace(TRACES, hardware="h100-sxm-8x-nvswitch")
    cli = cli_json("trace", *TRACES, "--hardware", "h100-sxm-8x-nvswitch", "--format", "json")
    rows = cli["predictions"]["rows"]
    p = t.predictions
    assert len(p) == len(rows) > 0
    assert list(p["class"]) == [r["class"] for r in rows]
    assert list(p["measured_ns"]) == [r["measured_ns"] for r in rows]
    # Without hardware there is nothing predicted.
    assert Trace(TRACES).predictions.empty

    out = tmp_path / "fit.yaml"
    fitted, keys = Trace(TRACES).fit_profile(out, hardware="h100-sxm-8x-nvswitch")
    cli_out = tmp_path / "cli.yaml"
    report = cli_json("profile", "fit", *TRACES, "--hardware", "h100-sxm-8x-nvswitch", "-o", str(cli_out),
                      "--format", "json")
    assert out.read_text() == cli_out.read_text()
    assert list(keys["key"]) == [k["key"] for k in report["keys"]]
    assert list(keys["fitted"]) == [k["fitted"] for k in report["keys"]]
    def fields(p):  # the resolved profile, less the file it was read from
        return {k: v for k, v in p.to_dict().items() if k != "source_file"}
    assert fields(fitted) == fields(Profile(str(cli_out)))
    with pytest.raises(overlap_sim.InputError):
        Trace(TRACES).fit_profile(tmp_path / "x.yaml", hardware="no-such-profile")


def test_validation_papers_rows_and_summary(cli_json):
    v = Validation.papers("dtp")
    cli = cli_json("validate", "--papers", "--source", "dtp", "--format", "json")
    assert dict(v.report) == cli
    assert len(v.rows) == len(cli["rows"])
    assert list(v.rows["predicted"]) == [r["predicted"] for r in cli["rows"]]
    s = v.summary
    assert list(s.columns) == ["location", "figure", "published", "predicted", "error_pct", "verdict"]
    first = cli["rows"][0]
    want = f"{first['figure']} [{first['variant']}]" if first.get("variant") else first["figure"]
    assert s["figure"][0] == want
    assert v.median_abs_error_pct == cli["median_abs_error_pct"]
    assert v.groups.empty


def test_validation_of_a_results_directory(cli_json):
    v = Validation.results(H100_RESULTS)
    cli = cli_json("validate", H100_RESULTS, "--format", "json")
    assert dict(v.report) == cli
    groups = cli["groups"]
    assert list(v.groups["benchmark"]) == [g["benchmark"] for g in groups]
    assert list(v.groups["rows_scored"]) == [g["rows_scored"] for g in groups]
    rows = v.rows
    assert rows.columns[0] == "benchmark"
    assert len(rows) == sum(len(g["rows"]) for g in groups)
    first = groups[0]
    assert list(rows[rows["benchmark"] == first["benchmark"]]["measured_us"]) == [r["measured_us"] for r in first["rows"]]
    with pytest.raises(ValueError):
        Validation(H100_RESULTS, sources=["dtp"])
