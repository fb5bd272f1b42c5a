"""Table rendering shared by ``compare``, ``meta-eval`` and the benchmarks: text, markdown, CSV, JSON."""
from __future__ import annotations

import csv
import io
import json
import math
from typing import Any, Sequence

import numpy as np


def fmt_num(x: Any, digits: int = 3, signed: bool = False, p: bool = False) -> str:
    """A number for a table: '-' for None/NaN; p-values below 0.001 as '<0.001'."""
    if x is None:
        return "-"
    try:
        v = float(x)
    except (TypeError, ValueError):
        return str(x)
    if math.isnan(v):
        return "-"
    if p:
        return "<0.001" if v < 0.001 else f"{v:.3f}"
    return f"{v:+.{digits}f}" if signed else f"{v:.{digits}f}"


def clean_json(obj: Any) -> Any:
    """NaN/inf -> None and numpy scalars -> Python, so the output is valid JSON."""
    if isinstance(obj, dict):
        return {str(k): clean_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean_json(v) for v in obj]
    if isinstance(obj, (np.floating, float)):
        v = float(obj)
        return v if math.isfinite(v) else None
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.ndarray):
        return clean_json(obj.tolist())
    return obj


def to_json(obj: Any) -> str:
    return json.dumps(clean_json(obj), indent=2, ensure_ascii=False)


def render(rows: Sequence[dict[str, Any]], columns: Sequence[tuple[str, str]], fmt: str = "text") -> str:
    """``rows`` of already formatted cells; ``columns`` = [(key, header)]; fmt text | markdown | csv."""
    heads = [h for _, h in columns]
    cells = [["" if r.get(k) is None else (fmt_num(r[k]) if isinstance(r[k], float) else str(r[k]))
              for k, _ in columns] for r in rows]
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow([k for k, _ in columns])
        for r in rows:
            w.writerow(["" if r.get(k) is None or (isinstance(r.get(k), float) and math.isnan(r[k]))
                        else r[k] for k, _ in columns])
        return buf.getvalue().rstrip("\n")
    if fmt == "markdown":
        out = ["| " + " | ".join(heads) + " |", "|" + "|".join("---" for _ in heads) + "|"]
        out += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in cells]
        return "\n".join(out)
    if fmt == "text":
        widths = [max([len(h)] + [len(row[i]) for row in cells]) for i, h in enumerate(heads)]
        line = lambda vals: "  ".join(v.ljust(w) for v, w in zip(vals, widths)).rstrip()  # noqa: E731
        return "\n".join([line(heads), line(["-" * w for w in widths])] + [line(row) for row in cells])
    raise ValueError(f"unknown format {fmt!r}; choose text, markdown, csv or json")
