"""overlap_sim against the CLI: each function returns exactly what the command prints with
--format json (the same C++ core, called in-process), so every number must be identical."""
import os

import pytest

import overlap_sim

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT = "scenarios/llama3-70b-tp8-mlp.yaml"


@pytest.fixture(autouse=True)
def _in_root(monkeypatch):
    # Relative paths as a user in the source tree types them (the CLI fixture runs there too).
    monkeypatch.chdir(ROOT)


def test_run_default_scenario_matches_cli(cli_json):
    py = overlap_sim.run(DEFAULT)
    assert py == cli_json("run", DEFAULT, "--format", "json")
    # The report is a whole one: every scheme that applies, each with a latency and the best named.
    assert py["results"] and all(r["latency_ps"] > 0 for r in py["results"])
    assert py["best"]["scheme"] in {r["scheme"] for r in py["results"]}


def test_run_no_scenario_is_the_default_one():
    assert overlap_sim.run() == overlap_sim.run(DEFAULT)


def test_run_scheme_params_fidelity_and_sets_match_cli(cli_json):
    py = overlap_sim.run(DEFAULT, sets={"workload.tokens": 4096}, scheme="data_slicing", fidelity="steps",
                         params=["chunks=4"])
    cli = cli_json("run", DEFAULT, "--set", "workload.tokens=4096", "--scheme", "data_slicing", "--fidelity",
                   "steps", "--param", "chunks=4", "--format", "json")
    assert py == cli
    assert [r["scheme"] for r in py["results"]] == ["data_slicing"]
    assert py["results"][0]["params"]["chunks"] == 4


def test_run_placeholder_check_matches_cli(cli_json):
    # H100's profile has guessed values with ranges: "never" skips their re-runs and says so, exactly as
    # the command's --placeholder-check never; "always" checks them as the default does on this small run.
    never = overlap_sim.run(DEFAULT, placeholder_check="never")
    assert never == cli_json("run", DEFAULT, "--placeholder-check", "never", "--format", "json")
    assert never["placeholder_sensitivity"]["skipped"] == "--placeholder-check never"
    always = overlap_sim.run(DEFAULT, placeholder_check="always")
    assert always == overlap_sim.run(DEFAULT)
    assert "skipped" not in always["placeholder_sensitivity"]
    assert never["results"] == always["results"]
    with pytest.raises(overlap_sim.OptionError, match="placeholder_check"):
        overlap_sim.run(DEFAULT, placeholder_check="sometimes")


def test_dict_scenario_is_the_file_it_spells():
    # The default scenario's keys written as a dict (its sweep block left out: `run` does not use it).
    tree = {
        "name": "llama3-70b-tp8-mlp",
        "hardware": "h100-sxm-8x-nvswitch",
        "workload": {"kind": "mlp_tpsp", "tp": 8, "model": "llama3-70b", "tokens": 8192, "dtype": "bf16"},
        "fidelity": "curve",
    }
    from_dict = overlap_sim.run(tree)
    from_file = overlap_sim.run(DEFAULT)
    assert from_dict["results"] == from_file["results"]
    assert from_dict["best"] == from_file["best"]


def test_sweep_matches_cli(cli_json):
    py = overlap_sim.sweep(DEFAULT, sweeps={"workload.tokens": [2048, 4096]}, only_axes=True, jobs=1)
    cli = cli_json("sweep", DEFAULT, "--sweep", "workload.tokens=2048,4096", "--only-axes", "-j", "1",
                   "--format", "json")
    assert py == cli
    assert py["points"] == 2


def test_collective_matches_cli(cli_json):
    py = overlap_sim.collective("all_reduce", min_bytes="1M", max_bytes="64M", ranks=8)
    cli = cli_json("collective", "all_reduce", "-b", "1M", "-e", "64M", "-g", "8", "--format", "json")
    assert py == cli
    # -f 2 from 1 MiB to 64 MiB: seven sizes, doubling.
    sizes = [r["size"] for r in py["results"]]
    assert sizes == [2**20 * 2**i for i in range(7)]


def test_tune_operator_level_matches_cli(cli_json):
    args = dict(hardware="a800-8x-nvlink", gemm="8192x8192x4096", dtype="fp16", primitive="all_reduce", ranks=4)
    py = overlap_sim.tune(**args)
    cli = cli_json("tune", "--hardware", "a800-8x-nvlink", "--gemm", "8192x8192x4096", "--dtype", "fp16",
                   "--primitive", "all_reduce", "--ranks", "4", "--format", "json")
    # search_ms is the tuner's own wall-clock time: the one field that differs run to run.
    py.pop("search_ms")
    cli.pop("search_ms")
    assert py == cli


def test_validate_papers_matches_cli(cli_json):
    py = overlap_sim.validate(papers=True, sources=["commfuse"])
    cli = cli_json("validate", "--papers", "--source", "commfuse", "--format", "json")
    assert py == cli
    assert sum(py["counts"].values()) >= len(py["rows"]) > 0


def test_profile_show_matches_cli(cli_json):
    py = overlap_sim.profile_show("h100-sxm-8x-nvswitch", sets=["gpu.sm_count=100"])
    cli = cli_json("profile", "show", "h100-sxm-8x-nvswitch", "--set", "gpu.sm_count=100", "--format", "json")
    assert py == cli
    assert py["gpu"]["sm_count"] == 100


def test_dataframe_has_a_row_per_scheme():
    pd = pytest.importorskip("pandas")
    report = overlap_sim.run(DEFAULT)
    df = report.to_dataframe()
    assert isinstance(df, pd.DataFrame)
    assert list(df["scheme"]) == [r["scheme"] for r in report["results"]]
    assert list(df["latency_ps"]) == [r["latency_ps"] for r in report["results"]]
    assert overlap_sim.run(DEFAULT, as_dataframe=True).equals(df)
