"""Bytes to text and text to JSON values, as every format reads them: the file's bytes (:func:`read_bytes`), its
encoding (:func:`decode_text`: UTF-8, or UTF-16/32 announced by a byte-order mark; gzip looked through), its lines
(:func:`split_lines` on text, :func:`byte_lines` on bytes: the same rule), text that is not valid Unicode
(:func:`bad_unicode_at`), and JSON values with the problem of one that cannot be read (:func:`parse_json`,
:func:`json_document`, records pretty-printed over several lines: :func:`pretty_printed`)."""
from __future__ import annotations

import codecs
import json
import os
import re
from pathlib import Path
from typing import Any, Iterable, Iterator

from core.data.schema import DataError, Problem

LINE_BREAK = re.compile(r"\r\n|\r|\n")
"""What ends a line in every input: ``\\n``, ``\\r\\n`` or ``\\r``, never a Unicode line separator."""


def split_lines(text: str) -> list[str]:
    """``text`` cut at ``\\n``, ``\\r\\n`` and ``\\r`` only (``str.splitlines`` would also cut at U+2028,
    U+2029, U+0085 and form feeds, which JSON strings may hold, and shift every later row number)."""
    return LINE_BREAK.split(text)


def split_turns(text: str, sep: str = "\n") -> list[str]:
    """A context string cut into turns at ``sep`` (``"\\n"`` matches every line end); blank pieces are not
    turns (a trailing newline must not make the input utterance empty)."""
    parts = split_lines(text) if sep == "\n" else text.split(sep)
    return [t for t in parts if t.strip()]


def bad_unicode_at(text: str) -> int | None:
    """Index of the first character that cannot be written as UTF-8 (a lone surrogate), else None."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        return e.start
    return None


BYTE_ORDER_MARKS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF8, "utf-8-sig"),
                    (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))
"""The byte-order marks a file may start with, and the encoding each announces."""


def read_bytes(path: str | os.PathLike) -> bytes:
    """The bytes of ``path``; a missing, unreadable or non-file path is a :class:`DataError` naming it."""
    name = str(path)
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        why = f"file not found (looked for {Path(path).absolute()})"
    except IsADirectoryError:
        why = "is a folder, not a file"
    except PermissionError:
        why = "cannot be read: permission denied"
    except OSError as e:
        raise cannot_read(name, e) from None
    raise DataError([Problem(name, None, None, why)])


def cannot_read(name: str, error: OSError) -> DataError:
    """The error of a file that exists but cannot be read (whole, or a block of it read again)."""
    return DataError([Problem(name, None, None, f"cannot be read: {error.strerror or error}")])


def not_utf8(name: str, line: int, byte: int, offset: int) -> DataError:
    """The error of a file whose ``byte`` at ``offset`` (on ``line``) is not UTF-8, read whole or line by line."""
    return DataError([Problem(name, line, None, f"is not valid UTF-8 (byte 0x{byte:02x} at offset {offset}); save "
                              "the file as UTF-8")])


# the first bytes of files people export instead of text: what each is, and what to do
BINARY_FORMATS = ((b"PK\x03\x04", "a zip archive (an Excel .xlsx workbook, or a .zip)", "unzip it, or export the sheet as "
                                                                                   "CSV (UTF-8)"),
                  (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "an old Excel (.xls) or Word file", "export it as CSV (UTF-8)"),
                  (b"PAR1", "a Parquet file", "write it with pandas' to_json(orient='records', lines=True) or to_csv"),
                  (b"SQLite format 3\x00", "an SQLite database", "export the table as CSV or JSON Lines"),
                  (b"%PDF", "a PDF document", "give the rows as JSON Lines or CSV"),
                  *((b"\x80" + bytes([protocol]), "a Python pickle", "write it with pandas' "
                     "to_json(orient='records', lines=True)") for protocol in (2, 3, 4, 5)))


def binary_format(name: str, head: bytes) -> DataError | None:
    """The error of a file whose first bytes say it is not text of any kind (an Excel workbook, a Parquet file,
    a zip, ...): what it is and how to export it; None for any other file."""
    for magic, what, how in BINARY_FORMATS:
        if head.startswith(magic):
            return DataError([Problem(name, None, None, f"is {what}, not text: {how}")])
    return None


def decode_text(name: str, data: bytes) -> str:
    """Bytes to text: UTF-8 (a byte-order mark is dropped), or UTF-16/32 announced by a byte-order mark.
    Other encodings are refused with the line of the first undecodable byte."""
    if data[:2] == b"\x1f\x8b":  # gzip (rows.jsonl.gz): read decompressed, whole
        import gzip
        import zlib
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as e:
            why = f"is gzip-compressed but cannot be decompressed ({e})"
            raise DataError([Problem(name, None, None, why)]) from None
    binary = binary_format(name, data[:16])
    if binary is not None:
        raise binary
    encoding = next((enc for bom, enc in BYTE_ORDER_MARKS if data.startswith(bom)), "utf-8")
    if encoding == "utf-8" and b"\x00" in data[:4]:
        head = data[:64]
        utf16 = max(head[0::2].count(0), head[1::2].count(0)) >= 0.75 * (len(head) // 2)  # ASCII as UTF-16
        raise DataError([Problem(name, 1, None, "holds NUL bytes: it looks like UTF-16 without a byte-order mark; "
                                                "save the file as UTF-8" if utf16 else
                                                "holds NUL bytes: it is not a text file; give JSON Lines, JSON or CSV "
                                                "saved as UTF-8")])
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as e:
        if encoding == "utf-8":
            line = len(split_lines(data[: e.start].decode("utf-8", errors="replace")))
            raise not_utf8(name, line, data[e.start], e.start) from None
        message = f"is not valid {encoding.upper()} despite its byte-order mark (offset {e.start})"
        raise DataError([Problem(name, None, None, message)]) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    if not text.strip():
        raise DataError([Problem(name, None, None, "is empty")])
    return text


def read_text(path: str | os.PathLike, data: bytes | None = None) -> str:
    """Read a file (or the uploaded ``data`` under that name) as text (:func:`decode_text`), naming the line
    of the first undecodable byte; a missing, unreadable, empty or non-text file is a :class:`DataError`."""
    return decode_text(str(path), read_bytes(path) if data is None else data)


def parse_json(text: str, file: str, row: int | None) -> tuple[Any, Problem | None]:
    """``(value, None)`` or ``(None, problem)``: malformed JSON, nesting too deep for the parser, an integer
    too long to read, or a key given twice in one object (which value was meant?) is a problem of ``row``."""
    duplicates: list[str] = []

    def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(pairs)
        if len(obj) != len(pairs):
            seen: set[str] = set()
            duplicates.extend(k for k, _ in pairs if k in seen or seen.add(k))
        return obj

    try:
        value = json.loads(text, object_pairs_hook=unique_keys)
    except json.JSONDecodeError as e:
        where = f"column {e.colno}" if row is not None else f"line {e.lineno}, column {e.colno}"
        msg = e.msg[:-3] if e.msg.endswith(" at") else e.msg  # "Unterminated string starting at" + where
        return None, Problem(file, row, None, f"malformed JSON ({msg} at {where})")
    except RecursionError:
        return None, Problem(file, row, None, "malformed JSON (nested too deeply to read)")
    except ValueError as e:  # an integer literal longer than Python's int/str conversion limit
        what = "a number with too many digits" if "digits" in str(e) else str(e)
        return None, Problem(file, row, None, f"malformed JSON ({what})")
    if duplicates:
        return None, Problem(file, row, duplicates[0], "appears twice in one JSON object; keep one")
    return value, None


def without_gz(path: str) -> str:
    """``path`` without a trailing ``.gz`` (``rows.jsonl.gz`` is read as ``rows.jsonl``)."""
    return path[:-3] if path.lower().endswith(".gz") else path


def pretty_printed(path: str, n: int, row: int | None = None) -> Problem:
    """The problem of ``n`` JSON records written over several lines each (from ``row`` on)."""
    return Problem(path, row, None, f"{'from here on ' if row else ''}holds {n} JSON object{'s' * (n != 1)} written "
                   "over several lines each (as `jq .` prints them), not one object per line (JSON Lines); put each "
                   "record on a line of its own (`jq -c .` writes them so)")


def objects_over_lines(text: str) -> int:
    """How many JSON objects ``text`` holds one after another when that is all it holds (pretty-printed records,
    each over several lines), else 0."""
    decoder, pos, n = json.JSONDecoder(), 0, 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos == len(text):
            return n
        try:
            value, pos = decoder.raw_decode(text, pos)
        except (ValueError, RecursionError):  # not JSON, or nested too deeply to read (parse_json says which)
            return 0
        if not isinstance(value, dict):
            return 0
        n += 1


def json_document(path: str, text: str) -> Any:
    """The value of a file that is one JSON document (DSTC10, columns); a :class:`DataError` when it cannot be read
    (records written one after another, each over several lines, are named as such)."""
    value, problem = parse_json(text, path, None)
    if problem is not None:
        n = objects_over_lines(text)
        lines = [line for line in text.splitlines() if line.strip()]
        if n > 1 and n == len(lines) and objects_over_lines(lines[0]) == 1:  # JSON Lines, read as one document
            raise DataError([Problem(path, None, None, f"holds {n} JSON objects, one per line (JSON Lines), not one "
                                     "JSON document: read it as JSON Lines (--input-format jsonl, or leave "
                                     "--input-format out)")])
        raise DataError([pretty_printed(path, n) if n > 1 else problem])
    return value


_BYTE_LINE_END = re.compile(rb"\r\n|\r|\n")


def byte_lines(chunks: Iterable[bytes], line: int = 1, offset: int = 0) -> Iterator[tuple[int, int, bytes]]:
    """``(line number, byte offset, bytes without the line end)`` for every line of the bytes ``chunks``
    that start at ``offset`` on line ``line``. Lines end at ``\r\n``, ``\r`` or ``\n`` (:func:`split_lines`'
    rule; UTF-8 never uses those bytes inside a character, so bytes can be cut before they are decoded). The
    text after the last line end is a line too, as :func:`split_lines` makes it."""
    rest = b""
    for chunk in chunks:
        buf = rest + chunk
        pos = 0
        for m in _BYTE_LINE_END.finditer(buf):
            if m.group() == b"\r" and m.end() == len(buf):
                break  # a \r at the chunk's end may be the first half of \r\n
            yield line, offset + pos, buf[pos:m.start()]
            line, pos = line + 1, m.end()
        offset += pos
        rest = buf[pos:]
    if rest.endswith(b"\r"):
        yield line, offset, rest[:-1]
        line, offset, rest = line + 1, offset + len(rest), b""
    yield line, offset, rest

