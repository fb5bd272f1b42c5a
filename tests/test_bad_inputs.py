"""Nothing lost, nothing misread: the CLI walked over a table of bad and unusual inputs, as a new user would
try them (issue 21).

Every bad input must end with exit code 2, a message naming the file, row, field or flag (the ``mention``
strings), no traceback, an earlier output file left exactly as it was and no temporary file left behind.
Every valid-but-unusual input must be read: exit 0 and exactly one output row per input row.

The test runs each case in-process through ``core.cli.main`` with the bleu metric (fast, no model). Run as a
script, the same table goes through the installed ``dialeval`` command (one process per case, signals and a
closed pipe included) and prints the table of classes and results for the closing note::

    .venv/bin/python tests/test_bad_inputs.py            # markdown table + "N bad inputs tried, ..." line
"""
from __future__ import annotations

import codecs
import gzip
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest

PREVIOUS = "previous output line 1\nprevious output line 2\nprevious output line 3\n"
FAST = ["--n-boot", "100", "--n-perm", "20"]  # compare: the numbers are not the point here


def rec(i: int = 1, **over) -> dict:
    """A valid JSONL record; ``over`` replaces or (value ``...``) removes fields."""
    r = {"id": f"r{i}", "system": "s", "context": [f"how was your day {i}?"], "response": f"it was fine {i}",
         "references": [f"pretty good day {i}"], "scores": {"overall": 3}}
    for k, v in over.items():
        if v is ...:
            r.pop(k, None)
        else:
            r[k] = v
    return r


def jl(*records, end: str = "\n") -> bytes:
    text = end.join(r if isinstance(r, str) else json.dumps(r, ensure_ascii=False) for r in records) + end
    return text.encode("utf-8", "backslashreplace")  # a lone surrogate stays a JSON escape, as a producer writes it


def good(n: int = 2, **over) -> bytes:
    return jl(*[rec(i, **over) for i in range(1, n + 1)])


def dstc10(*records) -> bytes:
    """DSTC10 Track 5 JSON of one valid item per record, each record's keys over it (a key set to ... left out)."""
    items = [{"dialogue_id": f"d{i}", "model": "m", "context": "hi\nhow are you?", "response": "fine",
              "reference": ["good"], "annotations": {"overall": [3, 4]}, **r} for i, r in enumerate(records, 1)]
    return json.dumps([{k: v for k, v in item.items() if v is not ...} for item in items]).encode()


def columns(**over) -> bytes:
    obj = {"contexts": [["hi", "how are you?"], ["yo"]], "responses": ["fine", "hey"], "references": [["good"], ["hi"]],
           "models": ["m", "m"], "scores": [{"Overall": "3.2"}, {"Overall": "4"}]}
    for k, v in over.items():
        if v is ...:
            obj.pop(k)
        else:
            obj[k] = v
    return json.dumps(obj).encode()


CSV = b"id,system,context,response,references,scores.overall\n1,s,hi,hello there,hello,3\n2,s,yo,hey you,hey,4\n"


@dataclass
class Case:
    """One try: ``files`` are written into a fresh folder that is also the working directory; ``args`` follow
    ``dialeval``. ``expect``: "error" (exit 2 naming ``mention``), "ok" (exit 0; ``rows`` output rows in
    ``out.jsonl`` when given), or an exit code for signals and closed pipes."""

    kind: str
    name: str
    args: list[str]
    files: dict[str, bytes] = field(default_factory=dict)
    expect: str | int = "error"
    mention: tuple[str, ...] = ()
    rows: int | None = None
    env: dict[str, str] = field(default_factory=dict)
    setup: Callable[[Path], None] | None = None
    subprocess_only: bool = False  # signals and pipes need a process of their own

    @property
    def id(self) -> str:
        return f"{self.kind}: {self.name}"


def score(inp: str = "in.jsonl", *more: str) -> list[str]:
    return ["score", inp, "--metrics", "bleu", "--out", "out.jsonl", *more]


def chmod(name: str, mode: int) -> Callable[[Path], None]:
    return lambda d: os.chmod(d / name, mode)


def symlink(name: str, target: str) -> Callable[[Path], None]:
    return lambda d: os.symlink(target, d / name)


def hardlink(name: str, target: str) -> Callable[[Path], None]:
    return lambda d: os.link(d / target, d / name)


WRITE_ONLY = Path("/proc/sys/vm/compact_memory")  # mode 0200: unreadable even for root


def unreadable(name: str) -> Callable[[Path], None]:
    """``name`` cannot be read: mode 000, or (root reads any file) a link to a write-only /proc file."""
    def make(d: Path) -> None:
        if is_root() and WRITE_ONLY.exists():
            (d / name).unlink(missing_ok=True)
            os.symlink(WRITE_ONLY, d / name)
        else:
            os.chmod(d / name, 0)
    return make


def mkdir(name: str) -> Callable[[Path], None]:
    return lambda d: (d / name).mkdir()


def unix_socket(name: str) -> Callable[[Path], None]:
    def make(d: Path) -> None:
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(d / name))  # left bound: a socket file, which cannot be opened for reading
    return make


def big_jsonl(n: int) -> bytes:
    return b"".join(json.dumps(rec(i)).encode() + b"\n" for i in range(1, n + 1))


S = "\ud800"  # a lone surrogate, written escaped by json.dumps
DEEP = b"[" * 100_000 + b"]" * 100_000
J = "in.jsonl"

CASES: list[Case] = [
    # -- the input file itself -----------------------------------------------------------------------------
    Case("input file", "missing", score("nope.jsonl"), mention=("nope.jsonl", "file not found")),
    Case("input file", "a folder", score("adir"), setup=mkdir("adir"), mention=("adir", "folder")),
    Case("input file", "empty (0 bytes)", score(), {J: b""}, mention=(J, "empty")),
    Case("input file", "only blank lines", score(), {J: b"\n  \n\t\n"}, mention=(J, "empty")),
    Case("input file", "binary garbage", score(), {J: bytes(range(128, 256)) * 4}, mention=(J, "UTF-8")),
    Case("input file", "Latin-1 bytes on row 2", score(), {J: good(1) + '{"context": ["café"]}\n'.encode("latin-1")},
         mention=(J, "row 2", "UTF-8")),
    Case("input file", "gzip-compressed, cut short", score(), {J: gzip.compress(good(2))[:40]},
         mention=(J, "gzip-compressed but cannot be decompressed")),
    Case("input file", "UTF-16 without byte-order mark", score(), {J: good(2).decode().encode("utf-16-le")},
         mention=(J, "UTF-16")),
    Case("input file", "an Excel workbook", score("in.xlsx"), {"in.xlsx": b"PK\x03\x04\x14\x00\x06\x00" + bytes(200)},
         mention=("in.xlsx", "zip archive (an Excel .xlsx workbook", "export the sheet as CSV")),
    Case("input file", "a Parquet file named .jsonl", score(), {J: b"PAR1" + bytes(range(256)) + b"PAR1"},
         mention=(J, "is a Parquet file, not text")),
    Case("input file", "binary bytes with NULs", score(), {J: bytes([0x89, 0, 0x13, 0xFE]) + bytes(
        (i * 37 + 11) % 256 for i in range(500))},
         mention=(J, "it is not a text file")),
    Case("input file", "symlink loop", score("loop.jsonl"), setup=symlink("loop.jsonl", "loop.jsonl"),
         mention=("loop.jsonl",)),
    Case("input file", "a socket", score("sock"), setup=unix_socket("sock"), mention=("sock", "cannot be read")),
    Case("input file", "unreadable (permission denied)", score(), {J: good(2)}, setup=unreadable(J),
         mention=(J, "permission denied")),
    Case("input file", "second file of compare missing", ["compare", "--no-judge", "a.jsonl", "b.jsonl", "--metrics", "bleu"],
         {"a.jsonl": good(2)}, mention=("b.jsonl", "file not found")),
    # -- JSONL rows ------------------------------------------------------------------------------------------
    Case("JSONL", "malformed line", score(), {J: jl(rec(1), "{not json}", rec(3))}, mention=(J, "row 2", "malformed")),
    Case("JSONL", "truncated last line", score(), {J: jl(rec(1), rec(2)) + b'{"id": "r3", "cont'},
         mention=("row 3", "malformed")),
    Case("JSONL", "trailing comma", score(), {J: jl(rec(1), '{"context": ["a"], "response": "b",}')},
         mention=("row 2", "malformed")),
    Case("JSONL", "comment line", score(), {J: jl("// a comment", rec(1))}, mention=("row 1", "malformed")),
    Case("JSONL", "Python dict repr", score(), {J: jl(rec(1), "{'context': ['a'], 'response': 'b'}")},
         mention=("row 2", "malformed")),
    Case("JSONL", "raw NUL inside a string", score(), {J: jl(rec(1)) + b'{"context": ["a\x00"], "response": "b"}\n'},
         mention=("row 2", "malformed")),
    Case("JSONL", "row is an array", score(), {J: jl(rec(1), [1, 2])}, mention=("row 2", "JSON object")),
    Case("JSONL", "row is a number", score(), {J: jl(rec(1), "42")}, mention=("row 2", "JSON object")),
    Case("JSONL", "row is null", score(), {J: jl(rec(1), "null")}, mention=("row 2", "JSON object")),
    Case("JSONL", "row is a string", score(), {J: jl(rec(1), '"hello"')}, mention=("row 2", "JSON object")),
    Case("JSONL", "pretty-printed object", score(), {J: json.dumps(rec(1), indent=2).encode()},
         mention=(J, "one JSON object over several lines")),
    Case("JSONL", "pretty-printed list in a .jsonl file", score(), {J: json.dumps([rec(1), rec(2)], indent=2).encode()},
         mention=(J, "one JSON list, not one object per line", ".json")),
    Case("JSONL", "a JSON list in a .jsonl file", score(), {J: json.dumps([rec(1), rec(2)]).encode()},
         mention=(J, "one JSON list, not one object per line", ".json")),  # it said 'row 1: must be a JSON object'
    Case("JSONL", "a JSON list beside good rows", score(), {J: jl(rec(1), [rec(2)])}, mention=("row 2", "JSON object")),
    Case("JSONL", "response missing", score(), {J: jl(rec(1), rec(2, response=...))},
         mention=("row 2", "'response'", "missing")),
    Case("JSONL", "response null: a blank reply, as pandas' to_json writes a missing one", score(),
         {J: jl(rec(1, response=None))}, expect="ok", rows=1),
    Case("JSONL", "response a number", score(), {J: jl(rec(1, response=5))}, mention=("row 1", "'response'", "string")),
    Case("JSONL", "both references and reference", score(), {J: jl(rec(1, reference=["b"]))},
         mention=("row 1", "both 'references' and 'reference'")),
    Case("JSONL", "response a list", score(), {J: jl(rec(1, response=["a"]))}, mention=("row 1", "'response'")),
    Case("JSONL", "response an object", score(), {J: jl(rec(1, response={"t": "a"}))}, mention=("row 1", "'response'")),
    Case("JSONL", "response a boolean", score(), {J: jl(rec(1, response=True))}, mention=("row 1", "'response'")),
    Case("JSONL", "context missing", score(), {J: jl(rec(1, context=...))}, mention=("row 1", "'context'", "missing")),
    Case("JSONL", "context a number", score(), {J: jl(rec(1, context=3))}, mention=("row 1", "'context'")),
    Case("JSONL", "context an object", score(), {J: jl(rec(1, context={"a": 1}))}, mention=("row 1", "'context'")),
    Case("JSONL", "context with a number turn", score(), {J: jl(rec(1, context=["a", 2]))}, mention=("row 1", "'context'")),
    Case("JSONL", "context with a null turn", score(), {J: jl(rec(1, context=[None]))}, mention=("row 1", "'context'")),
    Case("JSONL", "context nested lists", score(), {J: jl(rec(1, context=[["a"]]))}, mention=("row 1", "'context'")),
    Case("JSONL", "context an empty list", score(), {J: jl(rec(1), rec(2, context=[]))},
         mention=("row 2", "'context'", "empty")),
    Case("JSONL", "context an empty string", score(), {J: jl(rec(1, context=""))}, mention=("row 1", "'context'", "empty")),
    Case("JSONL", "context only blank turns", score(), {J: jl(rec(1, context=["  ", "\t"]))},
         mention=("row 1", "'context'", "empty")),
    Case("JSONL", "references a number", score(), {J: jl(rec(1, references=7))}, mention=("row 1", "'references'")),
    Case("JSONL", "references an object", score(), {J: jl(rec(1, references={"a": "b"}))},
         mention=("row 1", "'references'")),
    Case("JSONL", "references with a null item", score(), {J: jl(rec(1, references=["a", None]))},
         mention=("row 1", "'references'")),
    Case("JSONL", "scores a string", score(), {J: jl(rec(1, scores="good"))}, mention=("row 1", "'scores'")),
    Case("JSONL", "scores a list", score(), {J: jl(rec(1, scores=[3]))}, mention=("row 1", "'scores'")),
    Case("JSONL", "score not numeric", score(), {J: jl(rec(1), rec(2, scores={"overall": "good"}))},
         mention=("row 2", "'scores.overall'", "numeric")),
    Case("JSONL", "score Infinity literal", score(), {J: b'{"context": ["a"], "response": "b", "scores": {"o": -Infinity}}\n'},
         mention=("row 1", "'scores.o'", "finite")),
    Case("JSONL", "score NaN literal (issue 52: was read as not rated)", score(),
         {J: jl(rec(1)) + b'{"context": ["a"], "response": "b", "scores": {"o": NaN}}\n'},
         mention=(J, "row 2", "'scores.o'", "NaN")),
    Case("JSONL", "score the text nan", score(), {J: jl(rec(1, scores={"o": "nan"}))},
         mention=("row 1", "'scores.o'", "NaN")),
    Case("JSONL", "score 1e400", score(), {J: b'{"context": ["a"], "response": "b", "scores": {"o": 1e400}}\n'},
         mention=("row 1", "'scores.o'", "finite")),
    Case("JSONL", "score an integer too large for a float", score(),
         {J: b'{"context": ["a"], "response": "b", "scores": {"o": 1' + b"0" * 400 + b'}}\n'},
         mention=("row 1", "'scores.o'", "too large")),
    Case("JSONL", "score with 5000 digits", score(),
         {J: jl(rec(1)) + b'{"context": ["a"], "response": "b", "scores": {"o": ' + b"9" * 5000 + b'}}\n'},
         mention=("row 2", "digits")),
    Case("JSONL", "score a boolean", score(), {J: jl(rec(1, scores={"o": True}))}, mention=("row 1", "'scores.o'")),
    Case("JSONL", "score an object", score(), {J: jl(rec(1, scores={"o": {"x": 1}}))}, mention=("row 1", "'scores.o'")),
    Case("JSONL", "score ratings with a string", score(), {J: jl(rec(1, scores={"o": [3, "x"]}))},
         mention=("row 1", "'scores.o'")),
    Case("JSONL", "id a float", score(), {J: jl(rec(1, id=1.5))}, mention=("row 1", "'id'")),
    Case("JSONL", "id a boolean", score(), {J: jl(rec(1, id=True))}, mention=("row 1", "'id'")),
    Case("JSONL", "id a list", score(), {J: jl(rec(1, id=["a"]))}, mention=("row 1", "'id'")),
    Case("JSONL", "id an object", score(), {J: jl(rec(1, id={"a": 1}))}, mention=("row 1", "'id'")),
    Case("JSONL", "duplicate id", score(), {J: jl(rec(1), rec(2), rec(1))}, mention=("row 3", "'id'", "duplicate")),
    Case("JSONL", "system a number", score(), {J: jl(rec(1, system=3))}, mention=("row 1", "'system'")),
    Case("JSONL", "system null", score(), {J: jl(rec(1, system=None))}, mention=("row 1", "'system'")),
    Case("JSONL", "dataset a number", score(), {J: jl(rec(1, dataset=5))}, mention=("row 1", "'dataset'")),
    Case("JSONL", "lone surrogate in an id", score(), {J: jl(rec(1), rec(2, id="x" + S))},
         mention=("row 2", "'id'", "surrogate")),
    Case("JSONL", "lone surrogate in a response", score(), {J: jl(rec(1, response="a" + S))},
         mention=("row 1", "'response'", "surrogate")),
    Case("JSONL", "lone surrogate in a context turn", score(), {J: jl(rec(1, context=["ok", S]))},
         mention=("row 1", "'context[1]'", "surrogate")),
    Case("JSONL", "lone surrogate in a reference", score(), {J: jl(rec(1, references=[S]))},
         mention=("row 1", "'references[0]'", "surrogate")),
    Case("JSONL", "lone surrogate in a system", score(), {J: jl(rec(1, system=S))}, mention=("row 1", "'system'")),
    Case("JSONL", "lone surrogate in a dimension", score(), {J: jl(rec(1, scores={S: 3}))}, mention=("row 1", "'scores'")),
    Case("JSONL", "nesting 100,000 deep", score(), {J: jl(rec(1)) + DEEP + b"\n"}, mention=("row 2", "deeply")),
    Case("JSONL", "a key given twice", score(), {J: jl(rec(1), '{"context": ["a"], "response": "b", "response": "c"}')},
         mention=("row 2", "'response'", "twice")),
    Case("JSONL", "60 broken rows", score(), {J: jl(*["{oops"] * 60)}, mention=("60 problem(s)", "rows 1, 2, 3 and 57 "
                                                                                   "more: malformed JSON")),
    Case("JSONL", "60 rows broken differently", score(), {J: jl(*[rec(i, scores={"overall": f"good{i}"})
                                                                for i in range(1, 61)])},
         mention=("row 1", "row 50", "10 more")),
    Case("JSONL", "one row without its system among named ones", score(), {J: jl(rec(1), rec(2, system=...), rec(3))},
         mention=("row 2", "'system'", "is missing or blank, where other rows name theirs (row 1: 's')")),
    Case("JSONL", "a row without its system, compared", ["compare", "--no-judge", J, "--metrics", "bleu"],
         {J: jl(rec(1), rec(1, system="t"), rec(2), rec(2, system=...))}, mention=("row 4", "'system'", "is missing")),
    # -- DSTC10 JSON --------------------------------------------------------------------------------------------
    Case("DSTC10 JSON", "list of numbers", score("in.json"), {"in.json": b"[1, 2]"}, mention=("row 1", "JSON object")),
    Case("JSONL", "one dimension in two cases in a row", score(), {J: jl(dict(rec(1), scores={"Overall": 4, "overall": 5}))},
         mention=("row 1", "names one dimension twice, 'Overall' and 'overall'")),  # it was read as two dimensions
    Case("DSTC10 JSON", "JSON Lines read as DSTC10", score(J, "--input-format", "dstc10"), {J: jl(rec(1), rec(2))},
         mention=(J, "one per line (JSON Lines), not one JSON document", "--input-format jsonl")),  # said 'jq .'
    Case("DSTC10 JSON", "both reference and references", score("in.json"),
         {"in.json": dstc10({"references": ["other"]})}, mention=("in.json", "row 1", "both 'references' and 'reference'")),
    Case("input file", "a pandas pickle", score("in.pkl"), {"in.pkl": b"\x80\x05\x95" + bytes(100)},
         mention=("in.pkl", "is a Python pickle, not text")),
    Case("DSTC10 JSON", "response missing", score("in.json"), {"in.json": dstc10({}, {"response": ...})},
         mention=("in.json", "row 2", "'response'", "is missing")),
    Case("DSTC10 JSON", "response null: a blank reply", score("in.json"), {"in.json": dstc10({}, {"response": None})},
         expect="ok", rows=2),
    Case("DSTC10 JSON", "annotation not numeric", score("in.json"), {"in.json": dstc10({"annotations": {"o": ["x"]}})},
         mention=("row 1", "'annotations.o'")),
    Case("DSTC10 JSON", "annotation list with a NaN (issue 52: was left out)", score("in.json"),
         {"in.json": dstc10({}, {"annotations": {"o": [3, float("nan")]}})},
         mention=("in.json", "row 2", "'annotations.o'", "NaN")),
    Case("DSTC10 JSON", "annotation list empty (not rated)", score("in.json"),
         {"in.json": dstc10({"annotations": {"o": []}})}, expect="ok", rows=1),
    Case("DSTC10 JSON", "context a number", score("in.json"), {"in.json": dstc10({"context": 5})},
         mention=("row 1", "'context'")),
    Case("DSTC10 JSON", "reference a number", score("in.json"), {"in.json": dstc10({"reference": 5})},
         mention=("row 1", "'reference'")),
    Case("DSTC10 JSON", "truncated file", score("in.json"), {"in.json": dstc10({}, {})[:-30]},
         mention=("in.json", "malformed", "line 1")),
    Case("DSTC10 JSON", "trailing comma in the list", score("in.json"), {"in.json": dstc10({})[:-1] + b",]"},
         mention=("in.json", "malformed")),
    Case("DSTC10 JSON", "nested 100,000 deep", score("in.json"), {"in.json": DEEP}, mention=("in.json", "deeply")),
    Case("DSTC10 JSON", "empty list", score("in.json"), {"in.json": b"[]"}, mention=("in.json", "no examples")),
    Case("DSTC10 JSON", "lone surrogate in a dialogue_id", score("in.json"), {"in.json": dstc10({"dialogue_id": S})},
         mention=("row 1", "'dialogue_id'", "surrogate")),
    # -- column JSON ---------------------------------------------------------------------------------------------
    Case("column JSON", "unequal lengths", score("in.json"), {"in.json": columns(models=["m"])},
         mention=("in.json", "unequal lengths")),
    Case("column JSON", "responses missing", score("in.json"), {"in.json": columns(responses=...)},
         mention=("'responses'", "missing")),
    Case("column JSON", "contexts not a list", score("in.json"), {"in.json": columns(contexts="hi")},
         mention=("'contexts'", "list")),
    Case("column JSON", "a response not a string", score("in.json"), {"in.json": columns(responses=["a", 3])},
         mention=("row 2", "'responses'")),
    Case("column JSON", "a score entry not an object", score("in.json"), {"in.json": columns(scores=[{"o": 1}, 5])},
         mention=("row 2", "'scores'")),
    Case("column JSON", "a score \"NaN\" (issue 52: was read as not rated)", score("in.json"),
         {"in.json": columns(scores=[{"Overall": "3"}, {"Overall": "NaN"}])},
         mention=("in.json", "row 2", "'scores.Overall'", "NaN")),
    Case("column JSON", "reference and references both", score("in.json"),
         {"in.json": columns(reference=[["a"], ["b"]])}, mention=("'reference'", "both")),
    Case("column JSON", "truncated", score("in.json"), {"in.json": columns()[:-20]}, mention=("in.json", "malformed")),
    Case("column JSON", "all columns empty", score("in.json"),
         {"in.json": columns(contexts=[], responses=[], references=[], models=[], scores=[])},
         mention=("in.json", "no examples")),
    # -- CSV / TSV ----------------------------------------------------------------------------------------------
    Case("CSV", "header only", score("in.csv"), {"in.csv": b"context,response\n"}, mention=("in.csv", "no examples")),
    Case("CSV", "both references and reference columns", score("in.csv"),
         {"in.csv": b"context,response,references,reference\nhi,yo,a,b\n"},
         mention=("in.csv", "both 'references' and 'reference'", "--columns references=NAME")),
    Case("CSV", "no response column", score("in.csv"), {"in.csv": b"context,reply\nhi,yo\n"},
         mention=("in.csv", "'response'", "not found")),
    Case("CSV", "no context column", score("in.csv"), {"in.csv": b"ctx,response\nhi,yo\n"},
         mention=("in.csv", "'context'", "not found")),
    Case("CSV", "a row with an extra cell", score("in.csv"), {"in.csv": b"context,response\nhi,yo\nhi,yo,extra\n"},
         mention=("row 3", "cells")),
    Case("CSV", "a row with a missing cell", score("in.csv"), {"in.csv": b"context,response\nhi\n"},
         mention=("row 2", "cells")),
    Case("CSV", "unterminated quote", score("in.csv"), {"in.csv": b'context,response\nhi,yo\n"hi,yo\n'},
         mention=("in.csv", "not valid CSV")),
    Case("CSV", "text after a closing quote", score("in.csv"), {"in.csv": b'context,response\n"hi"x,yo\n'},
         mention=("row 2", "not valid CSV")),
    Case("CSV", "a column name twice", score("in.csv"), {"in.csv": b"context,response,response\nhi,yo,ya\n"},
         mention=("row 1", "'response'", "more than once")),
    Case("CSV", "score column not found", score("in.csv", "--score-columns", "q"), {"in.csv": CSV},
         mention=("'q'", "not found")),
    Case("CSV", "score cell not numeric", score("in.csv"), {"in.csv": CSV.replace(b",4\n", b",good\n")},
         mention=("row 3", "'scores.overall'", "numeric")),
    Case("CSV", "score cell nan (issue 52: was read as not rated)", score("in.csv"),
         {"in.csv": CSV.replace(b",4\n", b",nan\n")}, mention=("in.csv", "row 3", "'scores.overall'", "NaN")),
    Case("CSV", "score cell NaN in a chosen column", score("in.tsv", "--score-columns", "q"),
         {"in.tsv": b"context\tresponse\tq\nhi\tyo\tNaN\n"}, mention=("in.tsv", "row 2", "'scores.q'", "NaN")),
    Case("CSV", "prose named .txt (issue 52: was read as CSV)", score("in.txt"),
         {"in.txt": b"I went out today, and it rained.\nThe bus was late.\nWe had tea, cake, and a long talk.\n"
                    b"Then home.\n"}, mention=("in.txt", "not a table", "JSON Lines")),
    Case("CSV", "one sentence a line named .txt", score("in.txt"), {"in.txt": b"Hello there.\nHow are you?\n"},
         mention=("in.txt", "not a table")),
    Case("CSV", "--columns with an unknown field", score("in.csv", "--columns", "reply=response"), {"in.csv": CSV},
         mention=("--columns", "reply")),
    Case("CSV", "--columns response left empty", score("in.csv", "--columns", "response="), {"in.csv": CSV},
         mention=("--columns", "response")),
    Case("CSV", "--columns names a missing column", score("in.csv", "--columns", "id=uid"), {"in.csv": CSV},
         mention=("'uid'", "not found")),
    Case("CSV", "--score-columns empty", score("in.csv", "--score-columns", ","), {"in.csv": CSV},
         mention=("--score-columns",)),
    Case("CSV", "--context-sep empty", score("in.csv", "--context-sep", ""), {"in.csv": CSV},
         mention=("--context-sep", "empty")),
    Case("CSV", "empty context cell", score("in.csv"), {"in.csv": b"context,response\nhi,yo\n,yo\n"},
         mention=("row 3", "'context'", "empty")),
    Case("CSV", "Latin-1 bytes", score("in.csv"), {"in.csv": "context,response\nhi,yo\ncafé,x\n".encode("latin-1")},
         mention=("in.csv", "row 3", "UTF-8")),
    Case("CSV", "a blank system cell among named ones", score("in.csv"),
         {"in.csv": b"system,context,response\na,hi,yo\n,hi,ya\n"}, mention=("row 3", "'system'", "is missing or blank")),
    Case("CSV", "CSV options on a JSONL file", score(J, "--score-columns", "q"), {J: good(2)},
         mention=(J, "CSV columns", "jsonl")),
    # -- flags ----------------------------------------------------------------------------------------------------
    Case("flags", "--metrics empty", ["score", J, "--metrics", ""], {J: good(2)}, mention=("--metrics", "no metric")),
    Case("flags", "--metrics only commas", ["score", J, "--metrics", " , "], {J: good(2)}, mention=("--metrics",)),
    Case("flags", "--metrics unknown", ["score", J, "--metrics", "bleu,blue"], {J: good(2)},
         mention=("--metrics", "blue")),
    Case("flags", "--n-boot -1", ["compare", "--no-judge", J, "--system-a", "s", "--system-b", "t", "--n-boot", "-1"], {J: good(2)},
         mention=("--n-boot",)),
    Case("flags", "--n-boot 0", ["compare", "--no-judge", J, "--n-boot", "0"], {J: good(2)}, mention=("--n-boot",)),
    Case("flags", "--n-boot 1", ["compare", "--no-judge", J, "--n-boot", "1"], {J: good(2)}, mention=("--n-boot", "100")),
    Case("flags", "meta-eval --n-boot 99", ["meta-eval", J, "--n-boot", "99"], {J: good(2)}, mention=("--n-boot", "100")),
    Case("flags", "--n-boot abc", ["compare", "--no-judge", J, "--n-boot", "abc"], {J: good(2)}, mention=("--n-boot", "whole number")),
    Case("flags", "--n-perm -5", ["compare", "--no-judge", J, "--n-perm", "-5"], {J: good(2)}, mention=("--n-perm",)),
    Case("flags", "--level 1.5", ["compare", "--no-judge", J, "--level", "1.5"], {J: good(2)}, mention=("--level",)),
    Case("flags", "--level 0", ["compare", "--no-judge", J, "--level", "0"], {J: good(2)}, mention=("--level",)),
    Case("flags", "--level nan", ["compare", "--no-judge", J, "--level", "nan"], {J: good(2)}, mention=("--level",)),
    Case("flags", "--level 95", ["judge", J, "--level", "95"], {J: good(2)}, mention=("--level",)),
    Case("flags", "--seed -1", ["compare", "--no-judge", J, "--seed", "-1"], {J: good(2)}, mention=("--seed",)),
    Case("flags", "report --level 1.5", ["report", "--no-judge", J, "--out", "r.html", "--level", "1.5"], {J: good(2)},
         mention=("--level",)),
    Case("flags", "leaderboard --n-boot -1", ["leaderboard", "--no-judge", J, "--n-boot", "-1"], {J: good(2)}, mention=("--n-boot",)),
    # too many resamples are refused while the flags are read: the input (missing here) is never opened or scored
    Case("flags", "compare --n-boot 2000000", ["compare", "--no-judge", "missing.jsonl", "--n-boot", "2000000"], {},
         mention=("--n-boot", "at most 1,000,000")),
    Case("flags", "report --n-perm 5000000", ["report", "--no-judge", "missing.jsonl", "--out", "r.html", "--n-perm", "5000000"], {},
         mention=("--n-perm", "at most 1,000,000")),
    Case("flags", "leaderboard --n-boot 2000000", ["leaderboard", "--no-judge", "missing.jsonl", "--n-boot", "2000000"], {},
         mention=("--n-boot", "at most 1,000,000")),
    Case("flags", "meta-eval --n-boot 2000000", ["meta-eval", "missing.jsonl", "--n-boot", "2000000"], {},
         mention=("--n-boot", "at most 1,000,000")),
    Case("flags", "train judge on one vote", ["train", "judge", "--votes", "v.jsonl", "--out-dir", "ck"],
         {"v.jsonl": jl({"context": ["hi"], "response_a": "hello there", "response_b": "no", "vote": "A"})},
         mention=("too few votes to re-fit the judge", "1 of the 10 A/B votes needed")),
    Case("flags", "train judge on votes in CSV", ["train", "judge", "--votes", "v.csv", "--out-dir", "ck"],
         {"v.csv": b"context,response_a,response_b,vote\nhi,hello,no,A\n"}, mention=("v.csv", "votes are JSON Lines")),
    Case("flags", "train judge on a vote with a blank context", ["train", "judge", "--votes", "v.jsonl", "--out-dir",
                                                                 "ck"],
         {"v.jsonl": jl({"context": ["  "], "response_a": "hello there", "response_b": "no", "vote": "A"})},
         mention=("row 1", "'context'", "non-blank turn")),
    Case("flags", "train judge --votes with --members", ["train", "judge", "--votes", "v.jsonl", "--members", "3",
                                                         "--out-dir", "ck"], {},
         mention=("--members", "the re-fit on votes does not use it")),
    Case("flags", "train judge --folds 0", ["train", "judge", "--votes", "v.jsonl", "--folds", "0"], {},
         mention=("--folds must be 2 or more",)),
    Case("flags", "train rater --epochs 0", ["train", "rater", "--epochs", "0"], {}, mention=("--epochs must be 1",)),
    Case("flags", "train judge --out-dir unwritable", ["train", "judge", "--votes", "v.jsonl", "--out-dir",
                                                       "afile/sub"], {"afile": b"x"}, mention=("--out-dir",)),
    Case("flags", "leaderboard --systems empty", ["leaderboard", "--no-judge", J, "--metrics", "bleu", "--systems", " , "],
         {J: good(2)}, mention=("--systems", "name one or more systems")),
    Case("flags", "leaderboard --metrics unknown", ["leaderboard", "--no-judge", J, "--metrics", "blue"], {J: good(2)},
         mention=("--metrics", "blue")),
    Case("flags", "leaderboard --metrics none --no-judge", ["leaderboard", "--no-judge", J, "--metrics", "none"],
         {J: jl(*(rec(1, system=s, scores=...) for s in "abc"))}, mention=("--metrics none", "no human ratings",
                                                                            "--no-judge")),
    Case("flags", "compare --metrics none --no-judge without ratings", ["compare", "--no-judge", J, "--metrics", "none"],
         {J: jl(*(rec(1, system=s, scores=...) for s in "ab"))}, mention=("--metrics none", "no human ratings",
                                                                          "--no-judge")),
    Case("flags", "compare --metrics none --no-human", ["compare", "--no-judge", J, "--metrics", "none", "--no-human"],
         {J: jl(*(rec(1, system=s) for s in "ab"))}, mention=("--no-human", "--no-judge")),
    Case("flags", "leaderboard --rank-by unknown", ["leaderboard", "--no-judge", J, "--metrics", "bleu", "--rank-by", "blue"],
         {J: jl(*(rec(1, system=s) for s in "abc"))}, mention=("rank by 'blue'", "human:overall", "bleu")),
    Case("flags", "leaderboard --rank-by a metric not scored", ["leaderboard", "--no-judge", J, "--metrics", "bleu",
                                                                "--rank-by", "ubleu"],
         {J: jl(*(rec(1, system=s) for s in "abc"))}, mention=("--rank-by ubleu", "add it to --metrics")),
    Case("flags", "--max-rows 0", ["meta-eval", J, "--metrics", "bleu", "--max-rows", "0"], {J: good(2)},
         mention=("--max-rows",)),
    Case("flags", "--format unknown", ["compare", "--no-judge", J, "--format", "xml"], {J: good(2)}, mention=("--format", "xml")),
    Case("flags", "--input-format unknown", ["compare", "--no-judge", J, "--input-format", "xls"], {J: good(2)},
         mention=("--input-format",)),
    Case("flags", "--retriever unknown", score(J, "--retriever", "tfidf"), {J: good(2)}, mention=("--retriever",)),
    Case("flags", "--system-a not in the file", ["compare", "--no-judge", J, "--system-a", "x", "--system-b", "s", "--metrics", "bleu"],
         {J: good(2)}, mention=(J, "'x'", "not found")),
    Case("flags", "--system-a equals --system-b", ["compare", "--no-judge", J, "--system-a", "s", "--system-b", "s", "--metrics", "bleu"],
         {J: good(2)}, mention=("two different systems",)),
    Case("flags", "three systems, none chosen", ["compare", "--no-judge", J, "--metrics", "bleu"],
         {J: jl(rec(1, system="a"), rec(2, system="b"), rec(3, system="c"))}, mention=(J, "3 systems", "--system-a")),
    Case("flags", "no pair can be formed", ["compare", "--no-judge", "a.jsonl", "b.jsonl", "--metrics", "bleu"],
         {"a.jsonl": jl(rec(1)), "b.jsonl": jl(rec(2, system="t", context=["other"]))},
         mention=("paired", "'s'", "'t'")),
    Case("flags", "unknown command", ["frobnicate"], mention=("frobnicate", "invalid choice")),
    Case("flags", "no arguments", [], mention=("usage",)),
    Case("flags", "train without a trainer", ["train"], mention=("NAME",)),
    Case("flags", "--pool missing", score(J, "--pool", "nopool.jsonl"), {J: good(2)}, mention=("nopool.jsonl", "--pool")),
    Case("flags", "--pool a folder", score(J, "--pool", "pdir"), {J: good(2)}, setup=mkdir("pdir"),
         mention=("pdir", "--pool")),
    Case("flags", "--pool of plain text", ["score", J, "--metrics", "ubleu", "--pool", "pool.txt"],
         {J: good(2), "pool.txt": b"hello there\nhow are you\n"},
         mention=("pool.txt", "is not a \u03c5BLEU reference pool", "__eou__")),
    Case("flags", "--pool empty", ["score", J, "--metrics", "ubleu", "--pool", "pool.jsonl"],
         {J: good(2), "pool.jsonl": b""}, mention=("pool.jsonl", "is empty (the \u03c5BLEU reference pool)")),
    Case("flags", "--votes missing", ["judge", J, "--votes", "v.jsonl"], {J: jl(rec(1), rec(1, system="t"))},
         mention=("v.jsonl", "--votes")),
    Case("flags", "judge --dimension unknown", ["judge", J, "--dimension", "fluency"],
         {J: jl(rec(1), rec(1, system="t"))}, mention=("--dimension", "fluency")),
    Case("flags", "meta-eval --dimension unknown", ["meta-eval", J, "--metrics", "bleu", "--dimension", "fluency"],
         {J: good(3)}, mention=("fluency",)),
    Case("flags", "meta-eval without human scores", ["meta-eval", J, "--metrics", "bleu"], {J: good(3, scores=...)},
         mention=("no human scores",)),
    Case("flags", "compare a file of one system", ["compare", "--no-judge", J, "--metrics", "bleu"], {J: good(2)},
         mention=("holds one system ('s')", "another system's file")),
    Case("flags", "plan --by with two criteria", ["plan", J, "--by", "bleu,judge", "--effect", "1"], {J: good(2)},
         mention=("name criteria one at a time", "names 2")),  # it said "unknown metric(s) 'bleu,judge'"
    Case("flags", "plan --power below an even chance", ["plan", J, "--by", "bleu", "--effect", "1", "--power", "0.01"],
         {J: good(2)}, mention=("--power", ">= 0.5")),  # it planned for a difference to go unseen
    Case("flags", "-o where no output file is written", ["plan", J, "--effect", "1", "-o", "x.json"], {J: good(2)},
         mention=("dialeval plan: error: unrecognized arguments: -o x.json",)),
    Case("flags", "a flag's prefix is not the flag", ["compare", "--no-judge", J, "--metric", "bleu"], {J: good(2)},
         mention=("unrecognized arguments: --metric bleu", "did you mean --metrics?")),
    Case("flags", "train: a misspelt flag", ["train", "judge", "--thread", "2"], {},
         mention=("unrecognized arguments: --thread 2", "did you mean --threads?")),
    Case("flags", "--columns names a field twice", ["score", "in.csv", "--metrics", "bleu", "--columns",
                                                     "response=reply,context=history,response=gold"],
         {"in.csv": b"history,reply,gold\nhi,yo,yo there\n"}, mention=("response column twice", "'response=gold'")),
    Case("flags", "meta-eval where every rated row repeats its reference", ["meta-eval", J, "--metrics", "bleu"],
         {J: good(3, response="the same words", references=["the same words"])},
         mention=("repeats its reference", "--keep-reference-copies")),
    Case("flags", "meta-eval of a CSV without score columns", ["meta-eval", "in.csv", "--metrics", "bleu"],
         {"in.csv": b"context,response,references\nhi,yo,yo\nho,ya,ye\n"}, mention=("--score-columns",)),
    # -- where the output goes -------------------------------------------------------------------------------------
    Case("output", "--out is the input", ["score", J, "--metrics", "bleu", "--out", J], {J: good(2)},
         mention=("--out", "input file")),
    Case("output", "--out is the input, spelled ./", ["score", J, "--metrics", "bleu", "--out", "./" + J], {J: good(2)},
         mention=("--out", "input file")),
    Case("output", "--out is a symlink to the input", ["score", J, "--metrics", "bleu", "--out", "link.jsonl"],
         {J: good(2)}, setup=symlink("link.jsonl", J), mention=("--out", "input file")),
    Case("output", "--out is a hard link to the input", ["score", J, "--metrics", "bleu", "--out", "hard.jsonl"],
         {J: good(2)}, setup=hardlink("hard.jsonl", J), mention=("--out", "input file")),
    Case("output", "compare --out is input B", ["compare", "--no-judge", "a.jsonl", "b.jsonl", "--metrics", "bleu", "--out", "b.jsonl"],
         {"a.jsonl": good(2), "b.jsonl": good(2)}, mention=("--out", "input file")),
    Case("output", "judge --out is the input", ["judge", J, "--out", J], {J: jl(rec(1), rec(1, system="t"))},
         mention=("--out", "input file")),
    Case("output", "meta-eval --out is an input", ["meta-eval", J, "--metrics", "bleu", "--out", J], {J: good(3)},
         mention=("--out", "input file")),
    Case("output", "--out is the --pool file", score(J, "--pool", "out.jsonl"), {J: good(2)},
         mention=("--out", "input file")),
    Case("output", "--out is a folder", ["score", J, "--metrics", "bleu", "--out", "odir"], {J: good(2)},
         setup=mkdir("odir"), mention=("--out", "folder")),
    Case("output", "--out in a missing folder", ["score", J, "--metrics", "bleu", "--out", "no/such/out.jsonl"],
         {J: good(2)}, mention=("--out", "does not exist")),
    Case("output", "--out read-only file", score(), {J: good(2)}, setup=chmod("out.jsonl", 0o444),
         mention=("--out", "read-only")),
    Case("output", "--out in a read-only folder", ["score", J, "--metrics", "bleu", "--out", "ro/out.jsonl"], {J: good(2)},
         setup=lambda d: ((d / "ro").mkdir(), (d / "ro" / "out.jsonl").write_text(PREVIOUS), os.chmod(d / "ro", 0o555)),
         mention=("--out", "read-only")),
    Case("output", "--out on a full disk (/dev/full)", ["score", J, "--metrics", "bleu", "--out", "/dev/full"], {J: good(2)},
         mention=("/dev/full", "no space left")),
    Case("output", "--out empty", ["score", J, "--metrics", "bleu", "--out", ""], {J: good(2)}, mention=("--out", "empty")),
    Case("output", "report --out is input B", ["report", "--no-judge", "a.jsonl", "b.jsonl", "--metrics", "bleu", "--out", "b.jsonl"],
         {"a.jsonl": good(2), "b.jsonl": good(2)}, mention=("--out", "input file")),
    Case("output", "report --out is a folder", ["report", "--no-judge", J, "--metrics", "bleu", "--out", "odir"],
         {J: jl(rec(1), rec(1, system="t"))}, setup=mkdir("odir"), mention=("--out", "folder")),
    Case("output", "leaderboard --out is the input", ["leaderboard", "--no-judge", J, "--metrics", "bleu", "--out", J],
         {J: jl(rec(1, system="a"), rec(1, system="b"), rec(1, system="c"))}, mention=("--out", "input file")),
    Case("output", "leaderboard --out in a missing folder", ["leaderboard", "--no-judge", J, "--metrics", "bleu", "--out",
         "no/such/lb.txt"], {J: jl(rec(1, system="a"), rec(1, system="b"), rec(1, system="c"))},
         mention=("--out", "does not exist")),
    # -- the environment ---------------------------------------------------------------------------------------------
    Case("environment", "DIALEVAL_THREADS=-3", score(), {J: good(2)}, env={"DIALEVAL_THREADS": "-3"},
         mention=("DIALEVAL_THREADS", "-3")),
    Case("environment", "DIALEVAL_THREADS=abc", score(), {J: good(2)}, env={"DIALEVAL_THREADS": "abc"},
         mention=("DIALEVAL_THREADS",)),
    Case("environment", "DIALEVAL_THREADS=1.5", score(), {J: good(2)}, env={"DIALEVAL_THREADS": "1.5"},
         mention=("DIALEVAL_THREADS",)),
    Case("environment", "DIALEVAL_PRECISION=fp16", score(), {J: good(2)}, env={"DIALEVAL_PRECISION": "fp16"},
         mention=("DIALEVAL_PRECISION", "float32", "bfloat16")),
    Case("environment", "DIALEVAL_CACHE is a file", score(), {J: good(2), "afile": b"x"},
         env={"DIALEVAL_CACHE": "afile", "DIALEVAL_NO_CACHE": ""},
         mention=("the cache folder", "chosen by $DIALEVAL_CACHE", "point DIALEVAL_CACHE at a writable folder")),
    # -- signals and pipes (a process of their own) --------------------------------------------------------------------
    Case("signals", "Ctrl-C (SIGINT) while scoring", score(), {J: big_jsonl(60_000)}, expect=130,
         mention=("interrupted",), subprocess_only=True),
    Case("signals", "SIGTERM while scoring", score(), {J: big_jsonl(60_000)}, expect=143, mention=("terminated",),
         subprocess_only=True),
    Case("signals", "stdout closed early (| head -1)", ["score", J, "--metrics", "bleu", "--quiet"],
         {J: big_jsonl(20_000)}, expect=141, subprocess_only=True),
    # one block (under --block-size's 2,048 rows) of output larger than the pipe's buffer: exited 0, output cut short
    Case("signals", "stdout closed early, one block", ["score", J, "--metrics", "bleu", "--quiet"],
         {J: big_jsonl(1_500)}, expect=141, subprocess_only=True),
    # -- valid but unusual: read, one output row per input row -------------------------------------------------------------
    Case("valid", "UTF-8 byte-order mark", score(), {J: codecs.BOM_UTF8 + good(3)}, expect="ok", rows=3),
    Case("valid", "context as chat messages (role and content)", score(),
         {J: jl(rec(1, context=[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]))},
         expect="ok", rows=1),
    Case("valid", "-o is --out", ["score", J, "--metrics", "bleu", "-o", "out.jsonl"], {J: good(3)}, expect="ok",
         rows=3),
    Case("valid", "CRLF line ends", score(), {J: good(3).replace(b"\n", b"\r\n")}, expect="ok", rows=3),
    Case("valid", "CR line ends", score(), {J: good(3).replace(b"\n", b"\r")}, expect="ok", rows=3),
    Case("valid", "mixed line ends, no final newline", score(), {J: jl(rec(1), rec(2), rec(3), end="\r\n")[:-2]
                                                                   .replace(b"\r\n", b"\n", 1)}, expect="ok", rows=3),
    Case("valid", "blank lines between rows", score(), {J: b"\n" + jl(rec(1)) + b"\n\n" + jl(rec(2)) + b"  \n"},
         expect="ok", rows=2),
    Case("valid", "U+2028 and U+2029 inside strings", score(),
         {J: jl(rec(1, response="a\u2028b"), rec(2, context=["x\u2029y"]), rec(3))}, expect="ok", rows=3),
    Case("valid", "U+0085, form feed escapes, vertical tab escape", score(),
         {J: jl(rec(1, response="a\u0085b"), rec(2, response="c\fd\ve"), rec(3))}, expect="ok", rows=3),
    Case("valid", "files concatenated with their byte-order marks", score(),
         {J: codecs.BOM_UTF8 + good(2) + codecs.BOM_UTF8 + jl(rec(3))}, expect="ok", rows=3),
    Case("valid", "UTF-16 LE with byte-order mark", score(), {J: good(3).decode().encode("utf-16")}, expect="ok", rows=3),
    Case("valid", "UTF-16 BE with byte-order mark", score(),
         {J: codecs.BOM_UTF16_BE + good(3).decode().encode("utf-16-be")}, expect="ok", rows=3),
    Case("valid", "emoji, CJK and right-to-left text", score(),
         {J: jl(rec(1, response="👍🏽 好的"), rec(2, context=["مرحبا"], response="שלום"))}, expect="ok", rows=2),
    Case("valid", "a context string with CRLF turns", score(), {J: jl(rec(1, context="hi\r\nhow are you?\r\n"))},
         expect="ok", rows=1),
    Case("valid", "a 1 MB response", score(), {J: jl(rec(1, response="word " * 200_000), rec(2))}, expect="ok", rows=2),
    Case("valid", "integer ids and no ids", score(), {J: jl(rec(1, id=7), rec(2, id=...), rec(3))}, expect="ok", rows=3),
    # not rated, as an empty CSV score cell: null (pandas' to_json for NaN), "", "N/A", no annotators' ratings
    Case("valid", "scores null, blank, N/A and an empty rating list", score(),
         {J: jl(rec(1, scores={"o": None, "p": 3}), rec(2, scores={"o": []}), rec(3, scores={"o": " "}),
                rec(4, scores={"o": "N/A"}))}, expect="ok", rows=4),
    Case("valid", "a semicolon CSV with decimal commas in its ratings", score("in.csv"),
         {"in.csv": b"context;response;scores.o\nhi, you;yo;4,5\nho;ya;3\n"}, expect="ok", rows=2),
    Case("valid", "a CSV score cell of NA or null", score("in.csv"),
         {"in.csv": b"context,response,scores.o\nhi,yo,null\nho,ya,NA\nhe,ye,3\n"}, expect="ok", rows=3),
    Case("valid", "a spreadsheet's empty trailing columns and a row of commas only", score("in.csv"),
         {"in.csv": b"context,response,,\nhi,yo,,\nho,ya,,\n,,,\n"}, expect="ok", rows=2),
    Case("valid", "pandas' unnamed index column", score("in.csv"),
         {"in.csv": b",context,response\n0,hi,yo\n1,ho,ya\n"}, expect="ok", rows=2),
    Case("valid", "a score of 1e300", score(), {J: jl(rec(1, scores={"o": 1e300}))}, expect="ok", rows=1),
    Case("valid", "gzip-compressed JSONL", score(), {J: gzip.compress(good(2))}, expect="ok", rows=2),
    Case("valid", "gzip-compressed TSV named .tsv.gz", score("in.tsv.gz"),
         {"in.tsv.gz": gzip.compress(b"context\tresponse\treferences\nhi there\thello\thello you\n")},
         expect="ok", rows=1),
    Case("valid", ".ndjson extension", score("in.ndjson"), {"in.ndjson": good(2)}, expect="ok", rows=2),
    Case("valid", "JSONL named .txt", score("in.txt"), {"in.txt": good(2)}, expect="ok", rows=2),
    Case("valid", "CSV named .txt", score("in.txt"), {"in.txt": CSV}, expect="ok", rows=2),
    Case("valid", "DSTC10 JSON", score("in.json"), {"in.json": dstc10({}, {})}, expect="ok", rows=2),
    Case("valid", "DSTC10 JSON with byte-order mark and CRLF", score("in.json"),
         {"in.json": codecs.BOM_UTF8 + json.dumps(json.loads(dstc10({}, {})), indent=1).replace("\n", "\r\n").encode()},
         expect="ok", rows=2),
    Case("valid", "column JSON with byte-order mark", score("in.json"), {"in.json": codecs.BOM_UTF8 + columns()},
         expect="ok", rows=2),
    Case("valid", "column JSON with 'reference'", score("in.json"),
         {"in.json": columns(references=..., reference=[["a"], ["b"]])}, expect="ok", rows=2),
    Case("valid", "a JSON list of our records", score("in.json"), {"in.json": json.dumps([rec(1), rec(2)]).encode()},
         expect="ok", rows=2),
    Case("valid", "TSV file", score("in.tsv"), {"in.tsv": CSV.replace(b",", b"\t")}, expect="ok", rows=2),
    Case("valid", "CSV with the JSONL field names", score("in.csv"), {"in.csv": CSV}, expect="ok", rows=2),
    Case("valid", "CSV with byte-order mark and CRLF", score("in.csv"), {"in.csv": codecs.BOM_UTF8 + CSV.replace(b"\n", b"\r\n")},
         expect="ok", rows=2),
    Case("valid", "CSV with CR line ends", score("in.csv"), {"in.csv": CSV.replace(b"\n", b"\r")}, expect="ok", rows=2),
    Case("valid", "CSV separated by semicolons", score("in.csv"), {"in.csv": CSV.replace(b",", b";")}, expect="ok", rows=2),
    Case("valid", "CSV cell of 200,000 characters", score("in.csv"),
         {"in.csv": b"context,response\nhi,yo\n" + b'"' + b"long " * 40_000 + b'",yo\n'}, expect="ok", rows=2),
    Case("valid", "CSV quoted multi-line context", score("in.csv"),
         {"in.csv": b'context,response\n"hi\r\nhow are you?",fine\nyo,hey\n'}, expect="ok", rows=2),
    Case("valid", "CSV columns chosen with --columns", score("in.csv", "--columns", "response=reply,context=history,id=",
                                                              "--context-sep", "|||"),
         {"in.csv": b"history,reply\nhi|||how are you?,fine\nyo,hey\n"}, expect="ok", rows=2),
    Case("valid", "CSV with an empty score cell", score("in.csv"), {"in.csv": CSV.replace(b",4\n", b",\n")},
         expect="ok", rows=2),
    Case("valid", "meta-eval of a CSV with --score-columns", ["meta-eval", "in.csv", "--metrics", "bleu", "--score-columns", "q"],
         {"in.csv": b"context,response,references,q\n" + b"".join(f"c{i},r{i} x,r{i} y,{i % 5}\n".encode() for i in range(12))},
         expect="ok"),
    Case("valid", "a blank response (flagged null)", score(), {J: jl(rec(1), rec(2, response="  "))}, expect="ok", rows=2,
         mention=("blank response", "row 2")),
    Case("valid", "a blank reference (ignored, flagged)", score(), {J: jl(rec(1, references=["", "ok"]), rec(2))},
         expect="ok", rows=2, mention=("blank reference",)),
    Case("valid", "no reference (bleu null, flagged)", score(), {J: jl(rec(1, references=[]), rec(2))}, expect="ok",
         rows=2, mention=("no reference",)),
    Case("valid", "compare two CRLF files with byte-order marks", ["compare", "--no-judge", "a.jsonl", "b.jsonl", "--metrics", "bleu", *FAST],
         {"a.jsonl": codecs.BOM_UTF8 + good(3).replace(b"\n", b"\r\n"),
          "b.jsonl": codecs.BOM_UTF8 + jl(*[rec(i, system="t", response="other") for i in (1, 2, 3)])}, expect="ok"),
    Case("valid", "--out is standard output (-)", ["score", J, "--metrics", "bleu", "--out", "-"], {J: good(2)},
         expect="ok"),
]


# ------------------------------------------------------------------------------------------------
# running one case


@dataclass
class Outcome:
    code: int
    stdout: str
    stderr: str
    clean: bool
    why: str  # what was wrong when not clean
    rows_lost: int


def prepare(case: Case, folder: Path) -> None:
    for name, data in case.files.items():
        (folder / name).write_bytes(data)
    if "out.jsonl" in case.args and not (folder / "out.jsonl").exists():
        (folder / "out.jsonl").write_text(PREVIOUS)  # an earlier output that must survive any failure
    if case.setup:
        case.setup(folder)


def judge_outcome(case: Case, folder: Path, code: int, stdout: str, stderr: str) -> Outcome:
    problems = []
    lost = 0
    if "Traceback" in stderr or "Traceback" in stdout:
        problems.append("traceback")
    leftovers = [p.name for p in folder.rglob("*.part")]
    if leftovers:
        problems.append(f"temporary files left: {leftovers}")
    out = folder / "out.jsonl"
    want = {"error": 2, "ok": 0}.get(case.expect, case.expect)
    if code != want:
        problems.append(f"exit {code}, expected {want}")
    missing = [m for m in case.mention if m not in stderr]
    if missing:
        problems.append(f"message lacks {missing}")
    if case.expect == "ok":
        if case.rows is not None and code == 0:
            got = len([ln for ln in out.read_text(encoding="utf-8").split("\n") if ln.strip()])
            lost = abs(case.rows - got)
            if got != case.rows:
                problems.append(f"{got} output rows for {case.rows} input rows")
    else:
        if case.expect == "error" and "error" not in stderr:
            problems.append("no error message")
        if case.expect == 141 and stderr.strip():
            problems.append(f"not quiet: {stderr.strip()[:80]!r}")
        if out.exists() and "out.jsonl" in case.args and out.read_text() != PREVIOUS:
            lost = PREVIOUS.count("\n")
            problems.append("the previous output was changed")
    return Outcome(code, stdout, stderr, not problems, "; ".join(problems), lost)


def run_in_process(case: Case, folder: Path) -> Outcome:
    """``core.cli.main`` in this process, with ``folder`` as working directory and the case's environment."""
    import contextlib
    import io

    from core.cli import main
    prepare(case, folder)
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    out, err = io.StringIO(), io.StringIO()
    try:
        os.environ.update(case.env)
        os.chdir(folder)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(case.args)
            except BaseException as e:  # noqa: BLE001 - anything escaping main is a failure of this test
                import traceback
                err.write("Traceback (escaped main):\n" + traceback.format_exc())
                code = -1 if not isinstance(e, SystemExit) else e.code
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    return judge_outcome(case, folder, code, out.getvalue(), err.getvalue())


def dialeval_command() -> list[str]:
    exe = Path(sys.executable).with_name("dialeval")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "core"]


def run_subprocess(case: Case, folder: Path) -> Outcome:
    """The installed ``dialeval`` command in ``folder``; signals are sent once scoring has begun (the first
    progress line on stderr), a closed pipe is ``| head -1``."""
    prepare(case, folder)
    env = {**os.environ, **case.env}
    cmd = dialeval_command() + case.args
    if case.expect in (130, 143):
        proc = subprocess.Popen(cmd, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        first = os.read(proc.stderr.fileno(), 1)  # the progress bar's first draw: the run is scoring
        proc.send_signal(signal.SIGINT if case.expect == 130 else signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=600)
        return judge_outcome(case, folder, proc.returncode, stdout.decode("utf-8", "replace"),
                             (first + stderr).decode("utf-8", "replace"))
    if case.expect == 141:
        proc = subprocess.Popen(cmd, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        proc.stdout.readline()
        proc.stdout.close()  # the reader goes away, as `| head -1` does
        stderr = proc.stderr.read().decode("utf-8", "replace")
        proc.wait(timeout=600)
        return judge_outcome(case, folder, proc.returncode, "", stderr)
    r = subprocess.run(cmd, cwd=folder, env=env, capture_output=True, text=True, timeout=600)
    return judge_outcome(case, folder, r.returncode, r.stdout, r.stderr)


def is_progress_draw(line: str) -> bool:
    """A draw of ``core.progress.ProgressBar`` (``DESCRIPTION [###.....] done/total (time)``), whatever it
    describes (``score`` counts rows and blocks, other commands a metric's batches)."""
    return " [" in line and "] " in line and line.split(" [", 1)[1].split("]", 1)[0].strip("#.") == ""


def is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


# ------------------------------------------------------------------------------------------------
# the test


@pytest.mark.parametrize("case", [c for c in CASES if not c.subprocess_only], ids=lambda c: c.id)
def test_the_cli_handles_every_case_cleanly(case, tmp_path):
    if "/dev/full" in case.args and not Path("/dev/full").exists():
        pytest.skip("no /dev/full here")
    outcome = run_in_process(case, tmp_path)
    assert outcome.clean, f"{case.id}: {outcome.why}\n--- stderr:\n{outcome.stderr[-3000:]}"


@pytest.mark.parametrize("case", [c for c in CASES if c.subprocess_only], ids=lambda c: c.id)
def test_signals_and_a_closed_pipe_end_cleanly(case, tmp_path):
    """SIGINT -> 130 and SIGTERM -> 143 with one line, the previous output intact and no temporary file left;
    a reader that goes away (``| head -1``) -> 141 without a word."""
    outcome = run_subprocess(case, tmp_path)
    assert outcome.clean, f"{case.id}: {outcome.why}\n--- stderr:\n{outcome.stderr[-3000:]}"
    if case.expect in (130, 143):
        assert len([ln for ln in outcome.stderr.replace("\r", "\n").split("\n")
                    if ln.strip() and not is_progress_draw(ln)]) == 1


def test_the_table_covers_every_class_and_format():
    kinds = {c.kind for c in CASES}
    assert {"input file", "JSONL", "DSTC10 JSON", "column JSON", "CSV", "flags", "output", "environment", "signals",
            "valid"} <= kinds
    assert len(CASES) >= 150


# ------------------------------------------------------------------------------------------------
# the table for the closing note


def first_message(stderr: str) -> str:
    lines = [ln.strip() for ln in stderr.replace("\r", "\n").split("\n")
             if ln.strip() and not ln.lstrip().startswith(("bleu ", "bleu:", "wrote "))]
    for i, ln in enumerate(lines):
        if ln.startswith("error: ") and "problem(s) in the input:" in ln and i + 1 < len(lines):
            return f"{ln[len('error: '):]} {lines[i + 1]}"  # the count, then the first problem itself
        if ln.startswith(("error", "dialeval", "warning", "interrupted", "terminated", "- ")):
            return ln
    return lines[0] if lines else ""


def print_table() -> int:
    import tempfile
    t0 = time.time()
    rows, clean, lost = [], 0, 0
    for case in CASES:
        with tempfile.TemporaryDirectory() as d:
            try:
                o = run_subprocess(case, Path(d))
            finally:
                for p in Path(d).rglob("*"):
                    if p.is_dir() and not p.is_symlink():
                        os.chmod(p, 0o755)
        clean += o.clean
        lost += o.rows_lost
        msg = first_message(o.stderr)
        if case.kind == "valid" and case.rows is not None:
            msg = f"{case.rows} rows in, {case.rows - o.rows_lost} out" + (f"; {msg}" if msg else "")
        rows.append(f"| {case.kind} | {case.name.replace('|', '/')} | {o.code} | {msg[:160].replace('|', '/')} | "
                     f"{'yes' if o.clean else 'NO: ' + o.why} |")
    print("| class | input | exit | message (first line) | handled cleanly |")
    print("|---|---|---|---|---|")
    print("\n".join(rows))
    n = len(rows)
    print(f"\n{n} bad inputs tried, {clean} handled cleanly, {lost} rows lost")
    print(f"({sum(c.kind == 'valid' for c in CASES)} of the {n} are valid-but-unusual inputs that must be read, "
          f"one output row per input row; {time.time() - t0:.0f}s)")
    return 0 if clean == n and not lost else 1


if __name__ == "__main__":
    sys.exit(print_table())
