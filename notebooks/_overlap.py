"""Helpers the notebooks share: the simulator's commands as parsed JSON.

They call the `overlap_sim` Python package (docs/guide/python.md) where it is importable: installed
with `pip install .`, or built by tools/test.sh into build/python under the repository root (the
notebooks live in notebooks/, one level below it). The package returns what the CLI's `--format json`
prints, so the figures are the same either way. Without it (or with OVERLAP_NOTEBOOKS_CLI=1) they run
the binary: $OVERLAP_SIM, else build/tools/overlap-sim. A failing call raises (overlap_sim.InputError,
or RuntimeError with the CLI's stderr), so a notebook cell fails loudly instead of plotting nothing.
"""
import json
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
BINARY = os.environ.get("OVERLAP_SIM") or os.path.join(ROOT, "build", "tools", "overlap-sim")

_sim = None
if not os.environ.get("OVERLAP_NOTEBOOKS_CLI"):
    _built = os.path.join(ROOT, "build", "python")
    if os.path.isdir(_built) and _built not in sys.path:
        sys.path.insert(0, _built)
    try:
        import overlap_sim as _sim
    except ImportError:
        _sim = None
# Which one the notebooks use, for a notebook to print.
BACKEND = "overlap_sim package" if _sim else "overlap-sim binary"


def _path(p):
    """A repository-relative path, absolute (the package resolves paths from the working directory)."""
    return p if os.path.isabs(p) else os.path.join(ROOT, p)


def _call(args):
    proc = subprocess.run([BINARY] + args, cwd=ROOT, capture_output=True, text=True)
    if proc.returncode not in (0,):
        raise RuntimeError(f"overlap-sim {' '.join(args)} failed ({proc.returncode}): {proc.stderr.strip()}")
    return json.loads(proc.stdout)


def run(scenario, sets=(), schemes=None):
    """`overlap-sim run SCENARIO --format json` with --set overrides; `schemes` replaces the list."""
    if _sim:
        extra = ["schemes=" + json.dumps(schemes)] if schemes is not None else []
        return dict(_sim.run(_path(scenario), sets=list(sets) + extra))
    args = ["run", scenario, "--format", "json"]
    for s in sets:
        args += ["--set", s]
    if schemes is not None:
        args += ["--set", "schemes=" + json.dumps(schemes)]
    return _call(args)


def validate(source=None):
    """`overlap-sim validate --papers --format json` (one source, or all)."""
    if _sim:
        return dict(_sim.validate(papers=True, sources=[source] if source else ()))
    args = ["validate", "--papers", "--format", "json"]
    if source:
        args += ["--source", source]
    return _call(args)


def validate_dir(directory):
    """`overlap-sim validate DIR --format json`: a calibration results directory's predictions against
    its measurements (README "Calibration")."""
    if _sim:
        return dict(_sim.validate(_path(directory)))
    return _call(["validate", directory, "--format", "json"])


def tune(hardware, gemm, primitive, ranks, dtype="bf16", search="simulate", sm_margin=False):
    """`overlap-sim tune` at the operator level (FlashOverlap's wave groups for one GEMM) as JSON."""
    if _sim:
        return dict(_sim.tune(hardware=hardware, gemm=gemm, dtype=dtype, primitive=primitive, ranks=ranks,
                              search=search, sm_margin=sm_margin))
    args = ["tune", "--hardware", hardware, "--gemm", gemm, "--dtype", dtype, "--primitive", primitive,
            "--ranks", str(ranks), "--search", search, "--format", "json"]
    return _call(args + (["--sm-margin"] if sm_margin else []))


def tune_scenario(scenario, export=None):
    """`overlap-sim tune SCENARIO --format json` (every scheme's knobs); `export=(FORMAT, FILE)` is
    `--export FORMAT FILE` (e.g. TransformerEngine's ub_cfgs YAML: ("te-userbuffers", path))."""
    if _sim:
        return dict(_sim.tune(_path(scenario), export=export))
    args = ["tune", scenario, "--format", "json"]
    if export:
        args += ["--export", export[0], os.fspath(export[1])]
    return _call(args)


def collective(primitive, hardware, ranks, lo="8", hi="1G", factor="2", sets=()):
    """`overlap-sim collective` as JSON: the model's nccl-tests table."""
    if _sim:
        return dict(_sim.collective(primitive, hardware, ranks, min_bytes=lo, max_bytes=hi, step_factor=factor,
                                    sets=list(sets)))
    args = ["collective", primitive, "--hardware", hardware, "--ranks", str(ranks), "-b", lo, "-e", hi, "-f", factor,
            "--format", "json"]
    for s in sets:
        args += ["--set", s]
    return _call(args)


def result(report, scheme, **params):
    """The result of `scheme` whose params include `params`."""
    for r in report["results"]:
        if r["scheme"] == scheme and all(r["params"].get(k) == v for k, v in params.items()):
            return r
    raise KeyError(f"no {scheme} {params} in {report['scenario']}")


def rows_table(report, fields=("location", "figure", "published", "predicted", "error_pct", "verdict")):
    """validate rows as aligned text (no pandas needed)."""
    def cell(r, f):
        v = r.get(f, "")
        if f == "figure" and r.get("variant"):
            v = f"{v} [{r['variant']}]"  # "paper setting" / "shipped default" pairs
        return f"{v:.4g}" if isinstance(v, float) else str(v)
    rows = [[cell(r, f) for f in fields] for r in report["rows"]]
    widths = [max(len(f), *(len(row[i]) for row in rows)) for i, f in enumerate(fields)]
    lines = ["  ".join(f.ljust(w) for f, w in zip(fields, widths))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)) for row in rows]
    return "\n".join(lines)


def trace(files, hardware=None):
    """`overlap-sim trace FILE... --format json`: compute, communication and exposed communication per
    rank and step of profiler traces; with `hardware`, the model's prediction beside each kernel class."""
    args = ["trace"] + list(files) + ["--format", "json"]
    if hardware:
        args += ["--hardware", hardware]
    return _call(args)
