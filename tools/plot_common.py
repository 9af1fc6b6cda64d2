"""What the plotting scripts (plot_sweep.py, plot_timeline.py) share."""
import os
import tempfile


def pyplot(fail):
    """matplotlib's pyplot with the Agg backend (no display needed); a missing matplotlib goes to
    `fail` (exit status 2) with how to install it."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        fail("matplotlib is not installed (python3 -m pip install matplotlib, or tools/setup.sh)")
    return plt


def save_png(fig, path, dpi, prefix, fail):
    """Writes `fig` to `path` as a PNG atomically: into a temporary file beside it (named with
    `prefix`), renamed over it, so a failed run leaves the target as it was. An unwritable path goes
    to `fail` (exit status 2)."""
    out_dir = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=".png", dir=out_dir)
    except OSError as e:
        fail(f"cannot write {path}: {e.strerror}")
    os.close(fd)
    try:
        fig.savefig(tmp, dpi=dpi, format="png")
        # mkstemp makes the file private (0600); give the PNG the permissions a new file gets.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except OSError as e:
        fail(f"cannot write {path}: {e.strerror}")
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
