#!/usr/bin/env bash
# Regenerates every figure of the documentation (docs/img/) from the built overlap-sim: nothing in
# docs/img is drawn by hand. Needs python3 + matplotlib (tools/setup.sh) and a build
# (bash tools/run.sh, or cmake --build build --target overlap-sim). Usage, from anywhere:
#   bash tools/make_figures.sh            # all figures
# Each page that shows a figure names this command and the commit the figure was made at.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
sim=${OVERLAP_SIM:-$root/build/tools/overlap-sim}
py=${PYTHON:-python3}
[ -x "$sim" ] || { echo "make_figures: $sim not found; build first (bash tools/run.sh)" >&2; exit 2; }
work="$root/build/figures"
mkdir -p "$work" "$root/docs/img"
cd "$root"

echo "make_figures: sweep heatmap (the default scenario's sweep: NVLink bandwidth x tokens)"
"$sim" sweep -o "$work/sweep.csv" --plot docs/img/sweep-heatmap.png

echo "make_figures: timeline (async_tp on the default scenario, ranks 0-1, CTA level)"
"$sim" run --scheme async_tp --trace "$work/async_tp.json" --trace-level cta --trace-ranks 0-1 \
      --plot docs/img/timeline-async_tp.png > /dev/null

echo "make_figures: validation scatter (the H100 calibration and the sources' published figures)"
OVERLAP_SIM="$sim" "$py" - "$root" <<'PY'
import os, sys
root = sys.argv[1]
sys.path.insert(0, os.path.join(root, "notebooks"))
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
from _overlap import validate, validate_dir

h100 = validate_dir("calibrate/results/nvidia-h100-80gb-hbm3-vm")
papers = validate()
fig, (left, right) = plt.subplots(1, 2, figsize=(13, 6))
# Left: every scored row of the H100 calibration, predicted against measured; fitted rows hollow.
for g in h100["groups"]:
    scored = [r for r in g["rows"] if not r["fitted"]]
    fitted = [r for r in g["rows"] if r["fitted"]]
    if not g["rows"]:
        continue
    pts = left.scatter([r["measured_us"] for r in scored], [r["predicted_us"] for r in scored], s=14,
                       label=f"{g['benchmark']} ({len(scored)})")
    if fitted:
        left.scatter([r["measured_us"] for r in fitted], [r["predicted_us"] for r in fitted], s=14,
                     facecolors="none", edgecolors=pts.get_facecolor())
vals = [v for g in h100["groups"] for r in g["rows"] for v in (r["measured_us"], r["predicted_us"])]
xs = [min(vals), max(vals)]
left.plot(xs, xs, color="black", lw=0.8)
left.fill_between(xs, [x * 0.95 for x in xs], [x * 1.05 for x in xs], color="grey", alpha=0.2, label="within 5 %")
left.set_xscale("log"); left.set_yscale("log")
left.set_xlabel("measured (us)"); left.set_ylabel("predicted (us)")
left.set_title(f"one H100: median |error| {h100['median_abs_error_pct']:.1f} % over {h100['rows_scored']} rows "
               "(hollow: fitted)", fontsize=9)
left.legend(fontsize=7, loc="upper left")
# Right: the sources' dimensionless figures (the ratio rows the median is taken over): the relative
# error of each, in validate's row order, coloured by verdict.
colors = {"ok": "#55a868", "explained": "#dd8452", "off": "#c44e52"}
rows = [(i + 1, r) for i, r in enumerate(papers["rows"]) if r["ratio"] and r["error_pct"] is not None]
for verdict, color in colors.items():
    sel = [(n, r) for n, r in rows if r["verdict"] == verdict]
    right.scatter([n for n, _ in sel], [r["error_pct"] for _, r in sel], s=16, color=color,
                  label=f"{verdict} ({len(sel)})")
right.axhline(0, color="black", lw=0.8)
right.set_xlabel("row of overlap-sim validate --papers"); right.set_ylabel("(predicted - published) / published (%)")
right.set_title(f"the sources' ratio figures: median |error| {papers['median_abs_error_pct']:.1f} % over "
                f"{papers['ratio_rows']} rows", fontsize=9)
right.legend(fontsize=8, loc="lower left")
fig.tight_layout()
out = os.path.join(root, "docs", "img", "validation-scatter.png")
tmp = out + ".tmp.png"
fig.savefig(tmp, dpi=110, metadata={"Software": None})
os.replace(tmp, out)
PY
echo "make_figures: wrote docs/img/sweep-heatmap.png docs/img/timeline-async_tp.png docs/img/validation-scatter.png"
