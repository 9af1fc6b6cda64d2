"""A command's JSON report as a dict, and the one rule that turns its rows into a DataFrame.

Rows (one per scheme, sweep point and scheme, kernel group, ...) become DataFrame rows; a nested map
becomes dotted columns (``params.chunks``, ``point.workload.tokens``); a list of maps (a scheme's
``collectives``, ``utilization``) is left out of the frame and stays in the report; a list of plain
values stays one cell. The values are the JSON's: nothing is rounded or converted beyond what pandas
does for a column with missing cells (NaN).
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Sequence


def flatten(row: Dict[str, Any], prefix: str = "") -> Dict[str, Any]:
    """One JSON row as {column: value} by the rule above."""
    out: Dict[str, Any] = {}
    for k, v in row.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flatten(v, name + "."))
        elif isinstance(v, list) and any(isinstance(e, (dict, list)) for e in v):
            continue
        else:
            out[name] = v
    return out


def frame(rows: Iterable[Dict[str, Any]], first: Sequence[str] = (), rename: Optional[Dict[str, str]] = None):
    """The rows as a pandas DataFrame, columns in the JSON's order with ``first`` (those present)
    ahead; ``rename`` maps a column prefix to another (e.g. ``{"point.": ""}``). Needs pandas."""
    try:
        import pandas as pd
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("overlap_sim's DataFrames need pandas (pip install pandas, or tools/setup.sh)") from e
    flat: List[Dict[str, Any]] = []
    columns: Dict[str, None] = {}
    for r in rows:
        f = flatten(r)
        if rename:
            f = {_renamed(k, rename): v for k, v in f.items()}
        flat.append(f)
        columns.update(dict.fromkeys(f))
    order = [c for c in first if c in columns] + [c for c in columns if c not in first]
    return pd.DataFrame(flat, columns=order)


def _renamed(column: str, rename: Dict[str, str]) -> str:
    for old, new in rename.items():
        if column.startswith(old):
            return new + column[len(old):]
    return column


class Report(dict):
    """A command's JSON report as a dict, with :meth:`to_dataframe` for its table of rows."""

    #: The key of the report's list of rows (one per scheme, sweep point or message size).
    rows_key: Optional[str] = None

    def to_dataframe(self):
        """The report's rows as a pandas DataFrame (nested values flattened to dotted columns).

        Needs pandas (imported only here)."""
        try:
            import pandas as pd
        except ImportError as e:  # pragma: no cover - depends on the environment
            raise ImportError("to_dataframe() needs pandas (pip install pandas)") from e
        rows = self.get(self.rows_key, []) if self.rows_key else []
        return pd.json_normalize(rows)
