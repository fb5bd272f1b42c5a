"""The DSTC10 Track 5 JSON list (``dialogue_id``, ``model``, ``annotations`` ...; a list of our JSON Lines records
reads the same way): one JSON document, read whole, each record checked as a JSON Lines row."""
from __future__ import annotations

import os

from core.data.decoding import json_document, read_text
from core.data.row_checks import BOTH_REFERENCE_KEYS, RowChecker, default_system, example_from_record, finish_rows
from core.data.schema import DataError, Example, Problem


def load_dstc10(path: str | os.PathLike, data: bytes | None = None) -> list[Example]:
    """DSTC10 Track 5 JSON: a list of ``{dialogue_id, model, context: "turns\\n...", response,
    reference: [...], annotations: {dim: [ratings]}}``; scores are the mean rating per dimension.
    Rows are numbered 1-based in list order. ``dialogue_id`` is shared by the systems answering one
    context, so it is the alignment key. A list of our JSONL records (``id``, ``system``, ``references``,
    ``scores``) reads the same way."""
    return dstc10_examples(str(path), read_text(path, data))


def dstc10_examples(path: str, text: str) -> list[Example]:
    """The examples of a DSTC10 text (:func:`load_dstc10`)."""
    recs = json_document(path, text)
    chk = RowChecker(path)
    if not isinstance(recs, list):
        raise DataError([Problem(path, None, None, "DSTC10 format must be a JSON list of objects")])
    out = []
    for i, rec in enumerate(recs, start=1):
        if not isinstance(rec, dict):
            chk.add(i, None, f"must be a JSON object, got {type(rec).__name__}")
            continue
        chk.aliases = {k: a for k, a in (("id", "dialogue_id"), ("system", "model"), ("references", "reference"),
                                         ("scores", "annotations")) if a in rec}
        if "reference" in rec and "references" in rec:  # one would be read and the other ignored
            chk.add(i, "references", BOTH_REFERENCE_KEYS)
        mapped = {"id": rec.get("dialogue_id", rec.get("id")),
                  "system": rec.get("model", rec.get("system", default_system(path))),
                  "context": rec.get("context"), **({"response": rec["response"]} if "response" in rec else {}),
                  "references": rec.get("reference", rec.get("references")),
                  "scores": rec.get("annotations", rec.get("scores")), "dataset": rec.get("dataset")}
        ex = example_from_record(chk, mapped, i, path, default_system(path))
        if ex:
            out.append(ex)
    return finish_rows(chk, out)
