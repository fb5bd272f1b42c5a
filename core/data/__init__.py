"""One schema for a rated dialogue example, loaders for every supported input format, and alignment
of two systems into a comparison.

Every problem in an input file is reported with the file, the row (1-based line number for JSONL and
CSV, 1-based record number for JSON lists / column dictionaries) and the field. Loaders collect all
problems of a file before raising, so a user fixes a broken upload in one round. Nothing is silently
dropped: rows without a partner in a comparison are listed in ``Comparison.unmatched_a/_b``.
:func:`open_examples` gives the same rows for one pass in order (``dialeval score``), reading JSON Lines and
delimited files in place (:class:`JsonlRows`, :class:`CsvRows`: checked first, then parsed block by block) so
memory stays bounded.

One reading path: each format has one reader of its rows (``jsonl.jsonl_rows`` over numbered lines,
``delimited.csv_rows`` over a text stream; DSTC10 and column JSON are one document each), and every row of every
format passes the same checks (``row_checks``). :func:`load_file` runs the reader over the whole decoded text and
collects its rows; :func:`open_examples` runs the same reader over the file's bytes, keeping only where rows start,
and leaves to :func:`load_file` what only a whole read can word (a file of no good row, a possibly repeated id,
records pretty-printed over several lines). So every check and message exists once.

What every loader accepts and refuses (docs/inputs.md has the full table):

- **Encodings**: UTF-8 with or without a byte-order mark; UTF-16 and UTF-32 with a byte-order mark. Anything
  else is refused with the line of the first undecodable byte (BOM-less UTF-16 is named). A gzip file
  (``rows.jsonl.gz``) is read decompressed, whole.
- **Line ends**: ``\\n``, ``\\r\\n`` and a lone ``\\r``, mixed freely. Nothing else ends a line: U+2028, U+2029
  and U+0085 may stand unescaped inside JSON strings, so lines are never split with ``str.splitlines``.
- **Text**: every string must be valid Unicode (a lone surrogate such as ``"\\ud800"`` is refused at load
  time with its row and field, before any scoring); a context needs at least one non-blank turn.
- **JSON**: malformed lines, duplicate keys in one object, nesting too deep for the parser and integers too
  long to read are problems of their row, never a traceback.

The modules: ``schema`` (:class:`Example`, :class:`Problem`, :class:`DataError`), ``decoding`` (bytes, encodings,
lines, JSON values), ``row_checks`` (the checks of every row), one module per format (``jsonl``, ``dstc10``,
``columns``, ``delimited``), ``in_place`` (what reading a file in place needs, whatever its format), ``reading``
(format detection, :func:`load_file`, :func:`open_examples`) and ``alignment`` (:class:`Comparison` and how rows
pair). Every public name is importable from ``core.data``.
"""
from __future__ import annotations

from core.data.schema import (FORMATS, DataError, Example, Problem, case_blind_name, context_key, dimensions,
                              look_alike, meant_system, system_not_found, systems_in, turn_key)
from core.data.decoding import (LINE_BREAK, bad_unicode_at, byte_lines, decode_text, parse_json, read_bytes, read_text,
                                split_lines, split_turns, without_gz)
from core.data.row_checks import (NAN_ADVICE, NAN_TEXTS, NO_RATING_TEXTS, RECORD_FIELDS, chat_turns, field_suggestion,
                                  is_nan_rating, is_no_rating, row_metadata)
from core.data.in_place import RowsInPlace
from core.data.jsonl import JSONL_SUFFIXES, JsonlRows, iter_json_lines, load_jsonl
from core.data.dstc10 import load_dstc10
from core.data.columns import COLUMN_KEYS, load_columns
from core.data.delimited import (CSV_SUFFIXES, FIELD_ALIASES, SCORE_PREFIX, STANDARD, CsvMapping, CsvRows, csv_delimiter,
                                 load_csv)
from core.data.reading import TABLE_FORMATS, detect_format, format_of_text, load_file, open_examples
from core.data.alignment import (ID_MISMATCH_ADVICE, Comparison, align, alignment_rule, alignment_words,
                                 mismatched_pairs_words, repeated_contexts_words,
                                 chosen_systems, compare_systems, file_labels, load_comparison, one_system, pair_files,
                                 references_for, rows_of_files, share_references)

__all__ = ["COLUMN_KEYS", "CSV_SUFFIXES", "Comparison", "CsvMapping", "FIELD_ALIASES", "CsvRows", "DataError", "Example", "FORMATS",
           "ID_MISMATCH_ADVICE", "JSONL_SUFFIXES", "mismatched_pairs_words", "repeated_contexts_words", "JsonlRows", "LINE_BREAK", "NAN_ADVICE", "NAN_TEXTS",
           "NO_RATING_TEXTS", "Problem", "RECORD_FIELDS", "RowsInPlace", "SCORE_PREFIX", "STANDARD", "TABLE_FORMATS",
           "align", "alignment_rule", "alignment_words", "bad_unicode_at", "byte_lines", "chosen_systems",
           "case_blind_name", "chat_turns", "compare_systems", "look_alike", "meant_system", "system_not_found", "context_key", "csv_delimiter", "decode_text", "field_suggestion", "detect_format", "dimensions", "file_labels",
           "format_of_text", "is_nan_rating", "is_no_rating", "iter_json_lines", "load_columns", "load_comparison",
           "load_csv", "load_dstc10", "load_file", "load_jsonl", "one_system", "open_examples", "pair_files",
           "references_for", "share_references",
           "parse_json", "read_bytes", "read_text", "row_metadata", "rows_of_files", "split_lines", "split_turns",
           "systems_in", "turn_key", "without_gz"]
