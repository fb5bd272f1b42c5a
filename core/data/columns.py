"""Column-dictionary JSON (``{contexts: [...], responses: [...], ...}``, row i = item i of every list): one JSON
document, read whole, each row checked as a JSON Lines row."""
from __future__ import annotations

import os

from core.data.decoding import json_document, read_text
from core.data.row_checks import RowChecker, default_system, example_from_record, finish_rows
from core.data.schema import DataError, Example, Problem

COLUMN_KEYS = ("contexts", "responses", "references", "reference", "models", "scores", "ids")


def load_columns(path: str | os.PathLike, data: bytes | None = None) -> list[Example]:
    """Column-dictionary JSON: ``{contexts: [[turns]], responses: [...], references: [[...]],
    models: [...], scores: [{dim: "3.2", ...}]}``, all lists of equal length (row i = item i);
    ``reference`` is read as ``references`` and ``ids`` as the ids."""
    return column_examples(str(path), read_text(path, data))


def column_examples(path: str, text: str) -> list[Example]:
    """The examples of a column-dictionary text (:func:`load_columns`)."""
    obj = json_document(path, text)
    if not isinstance(obj, dict):
        raise DataError([Problem(path, None, None, "column format must be a JSON object of lists")])
    chk = RowChecker(path)
    for required in ("contexts", "responses"):
        if required not in obj:
            chk.add(None, required, "column is missing")
    if "references" in obj and "reference" in obj:
        chk.add(None, "reference", "both 'references' and 'reference' are given; keep one")
    cols = {("references" if k == "reference" else k): v for k, v in obj.items() if k in COLUMN_KEYS}
    for k, v in cols.items():
        if not isinstance(v, list):
            chk.add(None, k, f"column must be a list, got {type(v).__name__}")
    if chk.problems:
        raise DataError(chk.problems)
    lengths = {k: len(v) for k, v in cols.items()}
    if len(set(lengths.values())) > 1:
        desc = ", ".join(f"{k}={n}" for k, n in lengths.items())
        raise DataError([Problem(path, None, None, f"columns have unequal lengths ({desc})")])
    n = lengths["responses"]
    out = []
    chk.aliases = {"id": "ids", "context": "contexts", "response": "responses", "system": "models"}
    for i in range(n):
        row = i + 1
        sc = cols.get("scores", [None] * n)[i]
        if isinstance(sc, dict):
            sc = {k: v for k, v in sc.items() if k != "id"}  # 'id' inside a score dict is an index, not a rating
        rec = {"id": cols["ids"][i] if "ids" in cols else None, "context": cols["contexts"][i],
               "response": cols["responses"][i], "references": cols.get("references", [None] * n)[i],
               "system": cols["models"][i] if "models" in cols else default_system(path), "scores": sc}
        ex = example_from_record(chk, rec, row, path, default_system(path))
        if ex:
            out.append(ex)
    return finish_rows(chk, out)
