"""What the dashboard shows, computed without Streamlit (so the CLI and tests can reuse it).

The pages in ``views/`` only draw; everything they display comes from here or from ``core.verdict``'s
verdict: loading an upload into a ``Comparison``, the per-example table (both systems side by side, every
metric, the difference A - B), the verdict as a display table, υBLEU's extended references and MME's
sub-metrics as rows, metric-vs-human correlations, votes for the judge, and CSV / JSONL exports.

Conventions: the comparison is scored as one list, A's rows then B's (``core.engine``); pair ``i`` is
row ``i`` of the per-example table; the two responses to one context form one resampling cluster.
"""
from __future__ import annotations

import hashlib
import io
import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from core.data import (Comparison, CsvMapping, DataError, Example, Problem, compare_systems, csv_delimiter,
                       decode_text, detect_format, dimensions, load_file, pair_files, systems_in)
from core.engine import DEFAULT_METRICS, ComparisonScores, ScoreTable
from core.html_report import InputFile, input_file
from core.judges.pairs import MIN_VOTE_CONTEXTS, MIN_VOTES, Pair, enough_votes  # noqa: F401 (the pages use them)
from core.report import SIGNIFICANT_DIGITS, could_miss, fmt_num
from core.scoring import metric_class
from core.settings import cache_dir
from core.verdict import Verdict, human_tie_margin, pair_winner

if TYPE_CHECKING:
    import pandas as pd


def _frame(*args, **kwargs) -> pd.DataFrame:
    """``pandas.DataFrame(*args, **kwargs)``. pandas is imported when the first table is built, not with this
    module: the home page draws its verdict before any table, so a first visit shows it without waiting for
    pandas' import (~0.6 s on 2 cores)."""
    import pandas as pd
    return pd.DataFrame(*args, **kwargs)


DEMO_NAME = "built-in demo (chitchat: C-BM25 vs SmolLM2-135M)"
RATED_DEMO_NAME = "built-in human-rated sample (engagement-dd: generated vs human replies)"
MAX_UPLOAD_MB = 50  # must match server.maxUploadSize in .streamlit/config.toml (a test checks)


# ------------------------------------------------------------------------------------------------
# loading


@dataclass
class Loaded:
    """What the user loaded: all examples of the file(s), the chosen comparison, and a key that
    identifies the content (file bytes + chosen systems) for caching scores."""

    name: str
    examples: list[Example]
    comparison: Comparison
    key: str
    files: list[str] = field(default_factory=list)
    inputs: list[InputFile] = field(default_factory=list)  # name, size, SHA-256 of every input file
    recipe: dict[str, Any] = field(default_factory=dict)  # how to load it again (:func:`reopen`)

    @property
    def n(self) -> int:
        return len(self.comparison.pairs)

    @property
    def dimensions(self) -> list[str]:
        return dimensions(self.comparison.examples())

    @property
    def has_human_scores(self) -> bool:
        return bool(self.dimensions)


def smollm_in_float32() -> bool:
    """Whether SmolLM2 runs in float32 on this machine (a CPU without bfloat16 kernels, most laptops:
    ``core.models.device.smollm_dtype``); the time estimates then use the paces measured on such a CPU."""
    from core.models.device import smollm_dtype
    return smollm_dtype() == "float32"


class JudgeTime:
    """About how long the judge takes for a number of pairs: both orders through the MiniLM cross-encoder, the
    SmolLM2 reading of both replies where this process has not read them (``core.models.smollm_reading``: the
    judge's reader and MME's context PMI share it), and the rest of MME-CRS for the replies MME has not scored
    (the judge's mix weighs MME-CRS); an idle 2-core laptop CPU's pace for this kind of CPU (docs/dashboard.md,
    "Time estimates"; ``benchmarks/estimates.py`` measures it), scaled by how much slower than that pace this
    process's last run over :attr:`MIN_PAIRS` or more pairs was (:meth:`record`), which tells a busy machine from an
    idle one. A run with nothing to read (SmolLM2 and MME hold every reply, as after scoring them) loads only the
    judge's own models and has almost no start: on 3 such pairs the dashboard used to say 13 s for what took 3."""

    LOAD_SECONDS = 8.0  # loading the judge's MiniLM and SmolLM2 (2026-11-25; MME's models, which the mix reads
    # since 2026-11-26, were not re-measured on that kind: ScoreTime gives MME 15 s there)
    START_SECONDS = 5.0  # a run that reads: new batch shapes, the last batch of each length group part empty
    # (MiniLM cross-encoder both orders and the mix, SmolLM2's reading of both replies, the rest of MME-CRS for both
    # replies), seconds a pair: 2 AVX-512 BF16 cores (SmolLM2 in bfloat16), and 2 AVX2 cores (SmolLM2 in float32)
    SECONDS_PER_PAIR, READ_SECONDS_PER_PAIR, MME_SECONDS_PER_PAIR = 0.035, 0.13, 0.09
    FLOAT32_PACE = (0.074, 0.65, 0.58)  # benchmarks/estimates.py, 2026-11-28: 60 fresh pairs took 82 s, not 20
    # 2 AVX2 cores, 2026-11-28: 3 fresh pairs took 23.8 s in a new process and 7.2 s with the models loaded
    FLOAT32_LOAD_SECONDS, FLOAT32_START_SECONDS = 16.6, 3.3
    # a run with nothing to read, both kinds (measured on 2 AVX2 cores after MME had scored the pairs, 2026-11-28:
    # loading the judge's own models 0.35 s; 3, 10, 20 and 40 pairs 0.25, 0.88, 1.6 and 3.2 s, a start of ~0.1 s)
    OWN_LOAD_SECONDS, QUICK_START_SECONDS = 0.5, 0.3
    MIN_PAIRS = 20  # fewer pairs say more about the start than about the pace
    MIN_SLOWDOWN = 0.02  # a recorded run at most 50 times the idle pace (a GPU): a run within its start says 0

    def __init__(self, float32: bool | None = None) -> None:
        float32 = smollm_in_float32() if float32 is None else float32
        self.seconds_per_pair, self.read_seconds_per_pair, self.mme_seconds_per_pair = (
            self.FLOAT32_PACE if float32 else
            (self.SECONDS_PER_PAIR, self.READ_SECONDS_PER_PAIR, self.MME_SECONDS_PER_PAIR))
        self.load_seconds, self.start_seconds = ((self.FLOAT32_LOAD_SECONDS, self.FLOAT32_START_SECONDS) if float32
                                                 else (self.LOAD_SECONDS, self.START_SECONDS))
        self.slowdown: float | None = None  # the last run's seconds / the idle pace's seconds for its work

    def idle_work(self, n_pairs: int, mme_pairs: int = 0, read_pairs: int | None = None) -> float:
        """Seconds of work (start and loading aside) for ``n_pairs``, ``mme_pairs`` of them new to MME and
        ``read_pairs`` (default: all) new to the SmolLM2 reading, at the idle pace."""
        read = n_pairs if read_pairs is None else read_pairs
        return (self.seconds_per_pair * n_pairs + self.read_seconds_per_pair * read
                + self.mme_seconds_per_pair * mme_pairs)

    @staticmethod
    def reads(n_pairs: int, mme_pairs: int = 0, read_pairs: int | None = None) -> bool:
        """Whether a run reads replies with SmolLM2 or scores them with MME."""
        return (n_pairs if read_pairs is None else read_pairs) > 0 or mme_pairs > 0

    def start(self, n_pairs: int, mme_pairs: int = 0, read_pairs: int | None = None) -> float:
        """The start of a run: :attr:`start_seconds` where it reads (:meth:`reads`), else
        :attr:`QUICK_START_SECONDS`."""
        return self.start_seconds if self.reads(n_pairs, mme_pairs, read_pairs) else self.QUICK_START_SECONDS

    def estimate(self, n_pairs: int, loaded: bool, mme_pairs: int = 0, read_pairs: int | None = None,
                 reading_loaded: bool = False) -> float:
        """Seconds for ``n_pairs``, plus loading unless ``loaded`` (the judge's models): all of them where the run
        reads and SmolLM2's reading is not loaded yet (``reading_loaded``: MME's scoring loaded it, and MME's models
        with it), else the judge's own; the start and the work of :meth:`idle_work` times the recorded slowdown."""
        full_load = self.reads(n_pairs, mme_pairs, read_pairs) and not reading_loaded
        work = self.idle_work(n_pairs, mme_pairs, read_pairs) * (1.0 if self.slowdown is None else self.slowdown)
        load = 0.0 if loaded else self.load_seconds if full_load else self.OWN_LOAD_SECONDS
        return load + self.start(n_pairs, mme_pairs, read_pairs) + work

    def record(self, n_pairs: int, seconds: float, mme_pairs: int = 0, read_pairs: int | None = None) -> None:
        """A run over ``n_pairs`` (``mme_pairs`` of them new to MME, ``read_pairs`` new to the reading) that took
        ``seconds`` with the models already loaded: from now on estimates are scaled by its slowdown against the
        idle pace."""
        if n_pairs >= self.MIN_PAIRS:
            work = self.idle_work(n_pairs, mme_pairs, read_pairs)
            self.slowdown = max(self.MIN_SLOWDOWN, (seconds - self.start(n_pairs, mme_pairs, read_pairs)) / work)


class ScoreTime:
    """About how long scoring rows with a metric takes on an idle 2-core laptop CPU of this kind, plus loading its
    models the first time this process runs it; after a run of :attr:`MIN_ROWS` or more rows with the models
    loaded, that run's pace. Rows the score cache holds are the caller's to leave out. Paces: with SmolLM2 in
    bfloat16 (2 AVX-512 BF16 cores; README's growth table: 1,000 rows of mme took 89 s, of bert_ruber 9.9 s, of
    ubleu 10.8 s), and with SmolLM2 in float32 (2 AVX2 cores, ``benchmarks/estimates.py``)."""

    SECONDS_PER_ROW = {"bleu": 0.001, "ubleu": 0.008, "ubleu_paper": 0.01, "bert_ruber": 0.008, "ruber": 0.004,
                       "ruber_ubleu": 0.01, "adem": 0.008, "mme": 0.085, "mme_avg": 0.085}
    # benchmarks/estimates.py, 2026-11-28 (mme 0.619 s a row: the bfloat16 pace said 7 times too little)
    FLOAT32_SECONDS_PER_ROW = {"bleu": 0.001, "ubleu": 0.012, "ubleu_paper": 0.011, "bert_ruber": 0.017,
                               "ruber": 0.002, "ruber_ubleu": 0.013, "adem": 0.019, "mme": 0.62, "mme_avg": 0.62}
    OTHER_PER_ROW = 0.05  # a metric not timed here (an MME sub-metric, one added by a plug-in)
    LOAD_SECONDS = {"bleu": 0.0, "ubleu": 8.0, "ubleu_paper": 8.0, "ruber_ubleu": 10.0, "mme": 15.0, "mme_avg": 15.0}
    OTHER_LOAD = 5.0
    MIN_ROWS = 50

    def __init__(self, float32: bool | None = None) -> None:
        float32 = smollm_in_float32() if float32 is None else float32
        self.per_row = self.FLOAT32_SECONDS_PER_ROW if float32 else self.SECONDS_PER_ROW
        self.pace: dict[str, float] = {}
        self.loaded: set[str] = set()

    def estimate(self, metric: str, n_rows: int) -> float:
        """Seconds for ``n_rows`` new rows of ``metric``, loading included unless it ran in this process."""
        pace = self.pace.get(metric, self.per_row.get(metric, self.OTHER_PER_ROW))
        load = 0.0 if metric in self.loaded else self.LOAD_SECONDS.get(metric, self.OTHER_LOAD)
        return load + pace * n_rows

    def record(self, metric: str, n_rows: int, seconds: float) -> None:
        """A run of ``metric`` over ``n_rows`` that took ``seconds`` (its models are loaded from now on)."""
        if metric in self.loaded and n_rows >= self.MIN_ROWS:
            self.pace[metric] = seconds / n_rows
        self.loaded.add(metric)


def time_so_far(elapsed: float, estimate: float) -> str:
    """A long run's overall clock beside its step's: ``" · 12 s of about 40 s"``; past the estimate
    ``" · 52 s (about 40 s was estimated)"``; "" for runs estimated under 3 s."""
    if estimate < 3:
        return ""
    if elapsed <= estimate:
        return f" · {elapsed:.0f} s of about {estimate:.0f} s"
    return f" · {elapsed:.0f} s (about {estimate:.0f} s was estimated)"


def content_key(*parts: bytes | str) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else p.encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()[:16]


def parse_upload(name: str, data: bytes, fmt: str | None = None, csv_mapping: CsvMapping | None = None) -> list[Example]:
    """Examples from uploaded bytes (``fmt`` None = detect from name and content). Raises ``DataError``
    naming file, row and field of every problem; an upload above the size limit is refused too."""
    if len(data) > MAX_UPLOAD_MB * 1024 * 1024:
        raise DataError([Problem(name, None, None, f"is {len(data) / 2**20:.1f} MB; the limit is {MAX_UPLOAD_MB} MB")])
    return load_file(name, fmt=fmt or None, data=data, csv_mapping=csv_mapping)


def is_delimited(name: str, data: bytes, fmt: str | None = None) -> bool:
    """Whether an upload is read as CSV/TSV (so its columns can be mapped): the format chosen, else the name
    (``.csv``/``.tsv``), else the content as the loader detects it (pasted text is named ``.txt``)."""
    if fmt is not None:
        return fmt == "csv"
    if name.lower().endswith((".csv", ".tsv")):
        return True
    try:
        return detect_format(name, data) == "csv"
    except DataError:
        return False  # the loader will say what is wrong with it


def csv_header(data: bytes, name: str = "") -> list[str]:
    """Column names of an uploaded CSV (for the column-mapping widgets)."""
    return next(iter(csv_rows(data, 0, name)), [])


def csv_rows(data: bytes, n: int = 50, name: str = "") -> list[list[str]]:
    """The header and the first ``n`` records of an uploaded delimited file, split as the loader splits it
    (``core.data.csv_delimiter``: tabs for ``.tsv``, a header's tabs or semicolons when it has no comma)."""
    import csv
    try:
        text = decode_text(name, data)  # as the loader reads it: gzip, byte-order marks
    except DataError:
        text = data.decode("utf-8-sig", errors="replace")  # the loader will say what is wrong with it
    out = []
    for k, row in enumerate(csv.reader(io.StringIO(text, newline=""), delimiter=csv_delimiter(name, text))):
        out.append(row)
        if k >= n:
            break
    return out


# words in a column name that say what it holds (the name is split on _, -, space and case changes)
ROLE_WORDS = {
    "response": ("response", "reply", "hypothesis", "hyp", "output", "generation", "generated", "answer",
                 "prediction", "pred", "completion"),
    "context": ("context", "history", "dialog", "dialogue", "input", "prompt", "query", "utterance", "utt", "post",
                "conversation", "source", "turns"),
    "id": ("id", "idx", "index", "key", "uid"),
    "system": ("system", "model", "bot", "version", "variant", "agent", "engine"),
    "references": ("reference", "references", "ref", "refs", "gold", "target", "truth", "groundtruth", "human"),
}
# names that may say "id" as a column's whole name ("Example" holding q0, q1, ...; "example_reply" is a reply):
# tried only when no column is named for the id, and only on cells that look like ids (:func:`_id_like`)
ID_NAMES = ("example", "item", "no", "row")


def _name_words(name: str) -> list[str]:
    import re
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", name)
    return [w for w in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if w]


def _is_number(cell: str) -> bool:
    try:
        return math.isfinite(float(cell))
    except ValueError:
        return False


def numeric_columns(rows: Sequence[Sequence[str]]) -> list[str]:
    """Columns of a CSV (``rows[0]`` the header) whose non-empty cells are all numbers: candidates for
    human scores. A text column is never one."""
    if not rows:
        return []
    header, body = rows[0], rows[1:]
    out = []
    for k, h in enumerate(header):
        cells = [r[k].strip() for r in body if k < len(r) and r[k].strip()]
        if h and cells and all(_is_number(c) for c in cells):
            out.append(h)
    return out


def guess_csv_mapping(header: Sequence[str], rows: Sequence[Sequence[str]] | None = None) -> dict[str, Any]:
    """A first guess of which column is which (the user can change every choice): each role takes the first
    column whose name holds one of its words (``ROLE_WORDS``; 'bot_reply' is a response, 'history' a context,
    'example_id' an id, 'bot_version' a system, 'gold' a reference), each column at most one role; where no
    column is named for the id, one named just 'Example', 'Item', 'No' or 'Row' (``ID_NAMES``) whose cells look
    like ids (``rows`` needed). Human-score
    columns are only columns whose cells are all numbers (``rows``: the header and some records; without
    them no score column is guessed). A role nothing matches stays None: the user must choose it."""
    taken: set[str] = set()
    guess: dict[str, Any] = {}
    numeric = numeric_columns(rows) if rows else []
    for role in ("id", "response", "context", "references", "system"):
        pick = None
        for exact in (True, False):  # a column named exactly like the role wins over one that contains a word
            for h in header:
                words = _name_words(h)
                if h in taken or not words or (role in ("response", "context", "references") and h in numeric):
                    continue
                hit = (h.lower() in ROLE_WORDS[role]) if exact else any(w in ROLE_WORDS[role] for w in words)
                if hit and not (role == "id" and not exact and words[-1] not in ROLE_WORDS["id"]):
                    pick = h
                    break
            if pick:
                break
        guess[role] = pick
        if pick:
            taken.add(pick)
    if guess["id"] is None and rows:  # a spreadsheet's 'Example' or 'No' column, where its cells look like ids
        guess["id"] = next((h for h in header if h not in taken and h.strip().lower() in ID_NAMES
                            and _id_like(rows, h, guess["system"])), None)
    # a row number is never a human score
    guess["scores"] = [h for h in numeric
                       if h not in taken and h != guess["id"] and h.strip().lower() not in ID_NAMES]
    return guess


def _id_like(rows: Sequence[Sequence[str]], column: str, system: str | None) -> bool:
    """Whether the cells of ``column`` (``rows[0]`` the header) could be ids: every one non-empty, without spaces,
    and none repeated within a system (``system``'s column; the whole file without one)."""
    header = list(rows[0])
    k, s = header.index(column), header.index(system) if system in header else None
    seen = set()
    for r in rows[1:]:
        cell = r[k].strip() if k < len(r) else ""
        key = (r[s] if s is not None and s < len(r) else "", cell)
        if not cell or any(c.isspace() for c in cell) or key in seen:
            return False
        seen.add(key)
    return len(rows) > 1


SEPARATORS = {"newline": "\n", "|||": "|||", "__eou__": "__eou__", "|": "|", "tab": "\t"}


def guess_separator(cells: Sequence[str]) -> str:
    """The context-turn separator the cells use: '|||', '__eou__', a newline, a tab or '|' when at least half
    of the non-empty cells contain it (tried in that order), else a newline (a cell without one is one turn)."""
    cells = [c for c in cells if c and c.strip()]
    for sep in ("|||", "__eou__", "\n", "\t", "|"):
        if cells and sum(sep in c for c in cells) >= max(1, (len(cells) + 1) // 2):
            return sep
    return "\n"


def csv_preview(examples: Sequence[Example], n: int = 3) -> pd.DataFrame:
    """The first ``n`` parsed rows as the loader read them: how many turns each context split into."""
    rows = [{"row": e.row, "system": e.system, "id": e.id, "turns": len(e.context),
             "context (turns split)": " ⏎ ".join(e.context), "response": e.response,
             "references": " | ".join(e.references)} for e in list(examples)[:n]]
    return _frame(rows)


def make_loaded(name: str, examples_a: list[Example], examples_b: list[Example] | None, system_a: str | None,
                system_b: str | None, key_parts: Sequence[bytes | str]) -> Loaded:
    """One multi-system file (``examples_b`` None; pick two of its systems) or two files."""
    if examples_b is None:
        systems = systems_in(examples_a)
        if system_a is None or system_b is None:
            if len(systems) < 2:
                raise DataError([Problem(name, None, "system", f"the file holds only {systems}; a comparison "
                                         "needs two systems (a 'system' field, or upload a second file)")])
            system_a, system_b = systems[0], systems[1]
        comp = compare_systems(examples_a, system_a, system_b)
        everything = list(examples_a)
    else:
        source_a = examples_a[0].source if examples_a else name
        source_b = examples_b[0].source if examples_b else name
        comp = pair_files(source_a, examples_a, source_b, examples_b, system_a or None, system_b or None)
        everything = ([e for e in examples_a if system_a in (None, "", e.system)]
                      + [e for e in examples_b if system_b in (None, "", e.system)])
    try:
        comp.require_pairs()  # the command line's message, as a problem of the upload
    except ValueError as e:
        raise DataError([Problem(name, None, None, str(e))]) from None
    return Loaded(name, everything, comp, content_key(*key_parts, comp.system_a, comp.system_b),
                  files=sorted({e.source for e in everything}))


def load_demo(path: str | Path, name: str = DEMO_NAME, kind: str = "demo") -> Loaded:
    """A built-in file beside the app: the demo (``demo/demo.jsonl``, made by ``scripts/make_demo.py``) or the
    human-rated sample (``demo/rated_sample.jsonl``, ``scripts/make_rated_sample.py``)."""
    data = Path(path).read_bytes()
    exs = parse_upload(str(path), data)
    out = make_loaded(name, exs, None, None, None, [data])
    out.inputs = [input_file(str(path), data)]
    out.recipe = {"kind": kind, "path": Path(path).name}
    return out


def load_uploads(name: str, uploads: Sequence[tuple[str, bytes]], fmt: str | None,
                 mappings: Sequence[CsvMapping | None], system_a: str | None, system_b: str | None,
                 parsed: Sequence[list[Example]] | None = None) -> Loaded:
    """A comparison from uploaded files: one multi-system file (pick ``system_a`` and ``system_b``) or two
    files, one system each. ``parsed`` skips parsing again. The result remembers how it was made
    (``recipe``) and the files' hashes (``inputs``), so it can be kept (:func:`keep_upload`) and reopened."""
    if parsed is None:
        parsed = [parse_upload(n, d, fmt, m) for (n, d), m in zip(uploads, mappings)]
    key_parts = [d for _, d in uploads] + [repr(m) for m in mappings]
    out = make_loaded(name, parsed[0], parsed[1] if len(parsed) > 1 else None, system_a, system_b, key_parts)
    out.inputs = [input_file(n, d) for n, d in uploads]
    out.recipe = {"kind": "upload", "name": name, "fmt": fmt, "system_a": system_a, "system_b": system_b,
                  "files": [{"name": n, "sha256": f.sha256} for (n, _), f in zip(uploads, out.inputs)],
                  "mappings": [None if m is None else asdict(m) for m in mappings]}
    return out


def upload_dir() -> Path:
    """Where uploads are kept so a link reopens them: ``<cache>/uploads`` (files by SHA-256, recipes by key)."""
    d = cache_dir() / "uploads"
    d.mkdir(parents=True, exist_ok=True)
    return d


def keep_upload(data: Loaded, uploads: Sequence[tuple[str, bytes]] = ()) -> None:
    """Keep what is needed to reopen ``data`` later (after a refresh, from a link): its recipe under its key
    and the uploaded files under their SHA-256 (the same file is stored once)."""
    from core.outputs import atomic_path, write_text
    d = upload_dir()
    for (_, raw), f in zip(uploads, data.inputs):
        target = d / f"{f.sha256}.bin"
        if not target.exists():
            with atomic_path(target) as tmp:  # whole or not at all (core.outputs)
                tmp.write_bytes(raw)
    write_text(d / f"{data.key}.json", json.dumps(data.recipe))


def reopen(key: str, demo_dir: str | Path) -> Loaded | None:
    """The comparison kept under ``key`` (:func:`keep_upload`), loaded again from its files; None when the key
    is unknown or its files are gone. Built-in files are read from ``demo_dir``."""
    if not key or not all(c in "0123456789abcdef" for c in key):
        return None
    path = upload_dir() / f"{key}.json"
    if not path.exists():
        return None
    r = json.loads(path.read_text(encoding="utf-8"))
    if r.get("kind") in ("demo", "rated-demo"):
        name = DEMO_NAME if r["kind"] == "demo" else RATED_DEMO_NAME
        return load_demo(Path(demo_dir) / r["path"], name, r["kind"])
    files = []
    for f in r["files"]:
        blob = upload_dir() / f"{f['sha256']}.bin"
        if not blob.exists():
            return None
        files.append((f["name"], blob.read_bytes()))
    mappings = [None if m is None else CsvMapping(**m) for m in r["mappings"]]
    out = load_uploads(r["name"], files, r["fmt"], mappings, r["system_a"], r["system_b"])
    return out if out.key == key else None


def default_metrics(available: Sequence[str]) -> list[str]:
    """``core.engine.DEFAULT_METRICS`` that are registered (the same defaults as the CLI)."""
    return [m for m in DEFAULT_METRICS if m in available] or list(available)[:1]


# ------------------------------------------------------------------------------------------------
# scores


def _short(texts: Sequence[str]) -> str:
    return " ⏎ ".join(texts)


def per_example_frame(cs: ComparisonScores) -> pd.DataFrame:
    """One row per pair: id, context (turns joined with ⏎), both responses, the reference, each
    metric for A and B and the difference A - B, and human scores when present."""
    comp = cs.comparison
    rows = []
    dims = dimensions(comp.examples())
    for i, (a, b) in enumerate(comp.pairs):
        row: dict[str, Any] = {"pair": i, "id": a.id, "context": _short(a.context), "response A": a.response,
                               "response B": b.response, "reference": a.reference or b.reference}
        for m in cs.metrics:
            va, vb = float(cs.a(m)[i]), float(cs.b(m)[i])
            row[f"{m} A"], row[f"{m} B"] = va, vb
            row[f"{m} A-B"] = va - vb
        for d in dims:
            ha, hb = a.scores.get(d, math.nan), b.scores.get(d, math.nan)
            row[f"human {d} A"], row[f"human {d} B"] = ha, hb
        rows.append(row)
    return _frame(rows)


def filter_frame(df: pd.DataFrame, text: str = "", winner: str = "all", metric: str | None = None) -> pd.DataFrame:
    """Rows whose context/responses/reference contain ``text`` (case-insensitive) and, for ``metric``,
    where the metric's winner of the pair (``core.verdict.pair_winner``: higher or lower is better as the
    metric says, the one tie rule) is ``winner`` ("A", "B" or "tie")."""
    out = df
    if text:
        t = text.lower()
        cols = ["id", "context", "response A", "response B", "reference"]
        mask = np.zeros(len(out), dtype=bool)
        for c in cols:
            mask |= out[c].astype(str).str.lower().str.contains(t, regex=False).to_numpy()
        out = out[mask]
    if metric and winner != "all" and f"{metric} A" in out:
        hib = metric_class(metric).higher_is_better
        calls = [pair_winner(a, b, hib) for a, b in zip(out[f"{metric} A"], out[f"{metric} B"])]
        out = out[np.array([c == winner for c in calls], dtype=bool)]
    return out


def long_scores(cs: ComparisonScores) -> pd.DataFrame:
    """Tidy frame (metric, system, value) for distribution plots."""
    rows = []
    for m in cs.metrics:
        for side, name in (("a", cs.comparison.system_a), ("b", cs.comparison.system_b)):
            vals = cs.a(m) if side == "a" else cs.b(m)
            rows += [{"metric": m, "system": name, "value": float(v)} for v in vals if np.isfinite(v)]
    return _frame(rows, columns=["metric", "system", "value"])


def _ci(m, lo, hi, signed: bool = False) -> str:
    """``m [lo, hi]`` to 3 decimals; ``m [-]`` without an interval (fewer than 5 contexts), ``-`` without m."""
    if m is None or not np.isfinite(m):
        return "-"
    f = "{:+.3f}" if signed else "{:.3f}"
    if not (np.isfinite(lo) and np.isfinite(hi)):  # no interval: too few contexts to resample
        return f"{f.format(m)} [-]"
    return f"{f.format(m)} [{f.format(lo)}, {f.format(hi)}]"


def rate_interval(lc) -> str:
    """A length-controlled win rate (``core.stats.LengthControlled``) as ``r% [lo%, hi%]``, or why it has none."""
    if not np.isfinite(lc.rate):
        return f"- (not estimated: {lc.why_none or 'fewer than 5 contexts'})"
    if not (np.isfinite(lc.low) and np.isfinite(lc.high)):
        return f"{lc.rate:.1%} [-]"
    return f"{lc.rate:.1%} [{lc.low:.1%}, {lc.high:.1%}]"


def headline_frame(verdict: Verdict) -> pd.DataFrame:
    """Display form of the verdict's rows, direction in words first: which system is better and by how much
    (the better system's mean minus the other's, with its interval), then both means, p, A/tie/B and n: narrow
    enough to read without scrolling sideways on a laptop with the sidebar open (A - B with its interval for
    every metric is the chart below it; the means' intervals are in the report and the command line's table)."""
    out = []
    for r in verdict.metrics:
        name = f"human: {r.metric[len('human:'):]}" if r.kind == "human" else r.metric
        margin = could_miss(r) or "-"
        if r.winner == "A":
            margin = _ci(r.diff, r.low, r.high, True)
        elif r.winner == "B":
            margin = _ci(-r.diff, -r.high, -r.low, True)
        out.append({"metric": name,
                    "better": "not scored" if r.n == 0 else r.better(verdict.system_a, verdict.system_b),
                    "better by [95% CI]": margin, "A mean": fmt_num(r.mean_a), "B mean": fmt_num(r.mean_b),
                    "p": fmt_num(r.p_randomization, p=True),
                    "A/tie/B": f"{r.wins}/{r.ties}/{r.losses}", "n": r.n})
    return _frame(out)


def drivers_frame(verdict: Verdict, shown: int = 3) -> pd.DataFrame:
    """``verdict.drivers`` as a table: per metric that scored pairs, whether its verdict survives leaving the
    most pushing 5 % out (first: what a reader looks for), the comparison without them, and the ``shown`` pairs
    that push its difference most."""
    names = {"A": verdict.system_a, "B": verdict.system_b}
    rows = [{"metric": d.metric,
             "pushes toward": names[d.direction] if d.top else "neither (every pair ties)",
             "verdict survives": d.survival,
             "A-B without them [95% CI]": _ci(d.diff_without, d.low_without, d.high_without, True),
             "p without": "-" if d.p_without is None else fmt_num(d.p_without, p=True),
             "left out": f"{d.n_left_out} of {d.n_pairs}",
             "top pairs (A-B)": ", ".join(f"{t['id']} ({t['diff']:+.3g})" for t in d.top[:shown])}
            for d in verdict.drivers if d.n_pairs]
    return _frame(rows, columns=["metric", "pushes toward", "verdict survives", "A-B without them [95% CI]",
                                 "p without", "left out", "top pairs (A-B)"])


def slice_frame(rows, system_a: str, system_b: str) -> pd.DataFrame:
    """``core.slices.slice_comparison`` rows as a table: slice, pairs, means, A - B with interval, p, better."""
    return _frame([{"slice": r.metric, "pairs": r.n, "mean A": r.mean_a, "mean B": r.mean_b,
                    "A-B [95% CI]": _ci(r.diff, r.low, r.high, True), "p": fmt_num(r.p_randomization, p=True),
                    "better": r.better(system_a, system_b)} for r in rows])


def ubleu_reference_rows(details: dict[str, Any] | None) -> list[dict[str, Any]]:
    """υBLEU's extended references of one example as table rows (kind, text, source utterance,
    similarity, the rater's weight, sign) — sorted as the metric stored them."""
    if not details:
        return []
    rows = []
    for r in details.get("references", []):
        w = r.get("weight")
        rows.append({"kind": r.get("kind", ""), "weight": w, "sign": "+" if w is not None and w > 0 else
                     "-" if w is not None and w < 0 else "0", "reference": r.get("text", ""),
                     "source utterance": r.get("source_utterance") or "", "similarity": r.get("similarity")})
    return rows


def example_metric_values(cs: ComparisonScores, i: int) -> pd.DataFrame:
    """Each metric's value for pair ``i``: A, B, A - B."""
    rows = []
    for m in cs.metrics:
        a, b = float(cs.a(m)[i]), float(cs.b(m)[i])
        rows.append({"metric": m, "A": a, "B": b, "A-B": a - b})
    return _frame(rows, columns=["metric", "A", "B", "A-B"])


# ------------------------------------------------------------------------------------------------
# correlations with human scores


def rows_kept(examples: Sequence[Example], keep_reference_copies: bool = False) -> np.ndarray:
    """Which rows the correlations use: all, or (default) those whose reply does not copy its reference
    (``core.engine.is_reference_copy``), as ``dialeval meta-eval`` leaves those out."""
    from core.engine import is_reference_copy
    return np.array([keep_reference_copies or not is_reference_copy(e) for e in examples], dtype=bool)


def correlation_rows(cs: ComparisonScores, methods: Sequence[str] = ("spearman", "pearson"),
                     n_boot: int = 1000, seed: int = 13, keep_reference_copies: bool = False) -> list[dict[str, Any]]:
    """Turn-level correlation of each metric with each human dimension over both systems' rows, rows whose
    reply copies its reference left out as ``dialeval meta-eval`` leaves them out
    (``core.engine.is_reference_copy``: a referenced metric scores them perfectly whatever people said;
    ``keep_reference_copies`` keeps them). The two responses to one context form a cluster (``groups``), so
    intervals resample contexts."""
    from core.stats import correlate
    from core.verdict import context_groups
    comp = cs.comparison
    exs = comp.examples()
    keep = rows_kept(exs, keep_reference_copies)
    groups = [g for g, k in zip(context_groups(exs), keep) if k]
    rows = []
    for d in dimensions(exs):
        h = np.array([e.scores.get(d, math.nan) for e in exs], dtype=float)[keep]
        for m in cs.metrics:
            x = np.asarray(cs.table.column(m), dtype=float)[keep]
            row: dict[str, Any] = {"metric": m, "dimension": d}
            for meth in methods:
                c = correlate(x, h, method=meth, groups=groups, n_boot=n_boot, seed=seed)
                row.update({f"{meth}": c.r, f"{meth} low": c.low, f"{meth} high": c.high, f"{meth} p": c.p,
                            "n": c.n})
            row["reference copies left out"] = int((~keep).sum())
            rows.append(row)
    return rows


def scatter_frame(cs: ComparisonScores, metric: str, dimension: str,
                  keep_reference_copies: bool = False) -> pd.DataFrame:
    """The rows :func:`correlation_rows` correlates for ``metric`` and ``dimension`` (both values present;
    replies that copy their reference left out as there), one point per row."""
    comp = cs.comparison
    rows = []
    for side, exs, vals in (("A", comp.a, cs.a(metric)), ("B", comp.b, cs.b(metric))):
        name = comp.system_a if side == "A" else comp.system_b
        for e, v, kept in zip(exs, vals, rows_kept(exs, keep_reference_copies)):
            h = e.scores.get(dimension, math.nan)
            if np.isfinite(v) and np.isfinite(h) and kept:
                rows.append({"id": e.id, "system": name, metric: float(v), dimension: float(h)})
    return _frame(rows, columns=["id", "system", metric, dimension])


def default_scatter_metric(cs: ComparisonScores, dimension: str | None = None) -> str | None:
    """The metric the scatter opens on: the first of ``cs.metrics`` with a finite score on a row that has a
    human score (on ``dimension`` when given, else on any dimension), so the first plot a user sees is not
    empty (BLEU and υBLEU score nothing on a file without references, such as the shipped rated sample). The
    first metric when no metric has such a row; None without metrics."""
    if not cs.metrics:
        return None
    exs = cs.comparison.examples()
    if dimension is not None:
        rated = np.array([np.isfinite(e.scores.get(dimension, math.nan)) for e in exs], dtype=bool)
    else:
        rated = np.array([any(np.isfinite(v) for v in e.scores.values()) for e in exs], dtype=bool)
    for m in cs.metrics:
        if np.isfinite(np.asarray(cs.table.column(m), dtype=float)[rated]).any():
            return m
    return cs.metrics[0]


def fit_line(x: Sequence[float], y: Sequence[float]) -> tuple[float, float] | None:
    """Least-squares slope and intercept (None when x is constant or fewer than 2 points)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if len(x) < 2 or np.ptp(x) == 0:
        return None
    slope, intercept = np.polyfit(x, y, 1)
    return float(slope), float(intercept)


def system_level_rows(cs: ComparisonScores) -> list[dict[str, Any]]:
    """Per metric and dimension: which system the metric prefers (higher mean, or lower when lower is
    better) and which the humans prefer (higher mean), and whether they agree. A side with no score at all
    (a metric that needs references on rows without any, a dimension one system was not rated on) says
    ``"no scores"`` / ``"no ratings"`` and its agreement is "-", never a tie. Numbers as the command line
    writes them (``core.report.fmt_num``). With two systems this
    is the only honest system-level view; a system-level correlation needs more systems."""
    comp = cs.comparison
    rows = []
    for d in dimensions(comp.examples()):
        ha, hb = (_finite_mean([ex.scores.get(d, math.nan) for ex in side]) for side in (comp.a, comp.b))
        human = _preferred(ha, hb, True, comp.system_a, comp.system_b, "no ratings")
        for m in cs.metrics:
            ma, mb = _finite_mean(cs.a(m)), _finite_mean(cs.b(m))
            pref = _preferred(ma, mb, metric_class(m).higher_is_better, comp.system_a, comp.system_b, "no scores")
            known = pref != "no scores" and human != "no ratings"
            rows.append({"dimension": d, "metric": m, "metric mean A": fmt_num(ma), "metric mean B": fmt_num(mb),
                         "human mean A": fmt_num(ha), "human mean B": fmt_num(hb), "metric prefers": pref,
                         "humans prefer": human, "agree": ("yes" if pref == human else "no") if known else "-"})
    return rows


def _finite_mean(values: Any) -> float:
    """The mean of the finite values (NaN when there are none)."""
    arr = np.asarray(values, float)
    arr = arr[np.isfinite(arr)]
    return float(arr.mean()) if arr.size else math.nan


def _preferred(a: float, b: float, higher_is_better: bool, name_a: str, name_b: str, missing: str) -> str:
    """The system whose mean is better, ``"tie"`` for equal means, ``missing`` when a side has none."""
    if not (math.isfinite(a) and math.isfinite(b)):
        return missing
    if a == b:
        return "tie"
    return name_a if (a > b) == higher_is_better else name_b


def system_correlations(table: ScoreTable, metrics: Sequence[str], method: str = "spearman",
                        n_boot: int = 500, seed: int = 13, keep_reference_copies: bool = False
                        ) -> list[dict[str, Any]]:
    """System-level correlation over every system of a multi-system file (``table`` scored all its rows):
    mean metric vs mean human score per system (``core.stats.system_correlation``), as ``dialeval meta-eval``
    computes it: rows that copy their reference left out (a system of reference copies drops out whole),
    contexts resampled for the interval."""
    from core.stats import system_correlation
    from core.verdict import context_groups
    keep = rows_kept(table.examples, keep_reference_copies)
    exs = [e for e, k in zip(table.examples, keep) if k]
    systems = [e.system for e in exs]
    gone = [s for s in dict.fromkeys(e.system for e in table.examples) if s not in set(systems)]
    items = context_groups(exs)
    rows = []
    for d in dimensions(exs):
        h = np.array([e.scores.get(d, math.nan) for e in exs], dtype=float)
        for m in metrics:
            x = np.asarray(table.column(m), dtype=float)[keep]
            sc = system_correlation(x, h, systems, method=method, items=items, n_boot=n_boot, seed=seed)
            rows.append({"metric": m, "dimension": d, "r": sc.r, "low": sc.low, "high": sc.high, "p": sc.p,
                         "systems": sc.n_systems, "reference copies left out": int((~keep).sum()),
                         "systems left out (every reply a reference)": ", ".join(gone),
                         "warning": sc.warning or ""})
    return rows


# ------------------------------------------------------------------------------------------------
# A/B judge


def judge_status() -> tuple[bool, str]:
    """(available, message): whether the shipped judge's weights are where the engine looks for them."""
    from core.judges.pairwise import CHECKPOINT
    from core.models.checkpoints import paths
    weights, _ = paths(CHECKPOINT)
    if not weights.exists():
        return False, (f"The A/B judge's trained weights ({weights.name}) are not in {weights.parent}; train them "
                       "with `dialeval train judge` (this page runs the judge as soon as they exist).")
    return True, "ok"


def judge_frame(comp: Comparison, p_a: Sequence[float], verdict: Sequence[str]) -> pd.DataFrame:
    rows = []
    for i, ((a, b), p, v) in enumerate(zip(comp.pairs, p_a, verdict)):
        rows.append({"pair": i, "id": a.id, "context": _short(a.context), "response A": a.response,
                     "response B": b.response, "P(A preferred)": float(p), "judge": v})
    return _frame(rows)


def votes_from_comparison(comp: Comparison, dimension: str) -> list[Pair]:
    """Votes for the loaded pairs whose human scores on ``dimension`` differ by the human tie margin (a quarter
    of the scale, ``core.verdict``); the other pairs get no vote (they are "the rest")."""
    from core.verdict import human_preferences
    votes = []
    for (a, b), h in zip(comp.pairs, human_preferences(comp, dimension)[0]):
        if h in ("A", "B"):
            votes.append(Pair(list(a.context), a.response, b.response, 1.0 if h == "A" else 0.0, a.dataset,
                              a.id, a.scores.get(dimension), b.scores.get(dimension)))
    return votes


def vote_margin(comp: Comparison, dimension: str) -> float:
    """The human tie margin for ``dimension`` (a quarter of its scale, known or observed)."""
    return human_tie_margin(dimension, [e.scores.get(dimension, math.nan) for e in comp.examples()])


def default_vote_dimension(dims: Sequence[str]) -> int:
    """Index of the dimension that stands for overall preference (``core.verdict``), else 0."""
    from core.verdict import PREFERENCE_DIMENSIONS
    for d in PREFERENCE_DIMENSIONS:
        if d in dims:
            return list(dims).index(d)
    return 0


def majority_share(votes: Sequence[Pair]) -> float:
    """The share of the A/B votes that go to the side most of them go to: the agreement of a judge that always
    names that side (NaN without A/B votes). With one-sided votes it, not 50 %, is what agreement must beat."""
    a = sum(v.vote == "A" for v in votes)
    b = sum(v.vote == "B" for v in votes)
    return max(a, b) / (a + b) if a + b else math.nan


def learning_curve_figure(df, title: str = "Learning curve of the A/B judge", majority: float | None = None):
    """Agreement with held-out votes vs number of training votes (min-max band over folds), chance at 50 %,
    the shipped judge (0 votes) as the first point; with ``majority`` (:func:`majority_share`) above 55 % a
    second line where a judge that always names the side most votes name would stand."""
    import plotly.graph_objects as go
    x = list(df["n_train"])
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=x + x[::-1], y=list(df["high"] * 100) + list(df["low"] * 100)[::-1],
                             fill="toself", line={"width": 0}, fillcolor="rgba(31,119,180,0.15)",
                             name="fold min-max", hoverinfo="skip"))
    fig.add_trace(go.Scatter(x=x, y=list(df["agreement"] * 100), mode="lines+markers", name="judge",
                             line={"color": "rgb(31,119,180)"}))
    fig.add_hline(y=50, line_dash="dot", annotation_text="chance")
    if majority is not None and math.isfinite(majority) and majority > 0.55:
        fig.add_hline(y=100 * majority, line_dash="dash", line_color="firebrick",
                      annotation_text=f"always the side most votes name ({majority:.0%})")
    fig.update_layout(title=title, xaxis_title="training votes (0 = shipped judge)",
                      yaxis_title="agreement with held-out votes (%)", yaxis_range=[40, 100])
    return fig


def rest_frame(comp: Comparison, rest: Sequence[int], p_shipped: Sequence[float], p_tuned: Sequence[float],
               verdict: Sequence[str]) -> pd.DataFrame:
    """The loaded pairs ``rest`` (those without a vote) with the shipped and the vote-tuned judge's P(A)."""
    sub = Comparison(comp.system_a, comp.system_b, [comp.pairs[i] for i in rest])
    df = judge_frame(sub, p_tuned, verdict)
    df["pair"] = list(rest)
    df.insert(df.columns.get_loc("P(A preferred)"), "P(A) shipped", [float(p) for p in p_shipped])
    return df


def votes_path(key: str) -> Path:
    """Where the votes given in place on one loaded comparison are kept: ``<cache>/votes/<key>.jsonl``."""
    d = cache_dir() / "votes"
    d.mkdir(parents=True, exist_ok=True)
    return d / f"{key}.jsonl"


def pair_votes(comp: Comparison, votes: dict[int, str]) -> list[Pair]:
    """Votes given on pairs of ``comp`` (pair index -> 'A' / 'tie' / 'B') as :class:`Pair` votes, in pair order
    (the votes-file format ``core.judges.pairs.load_votes`` reads: context, both replies, vote)."""
    out = []
    for i in sorted(votes):
        v = votes[i]
        if v not in ("A", "B", "tie"):
            continue
        a, b = comp.pairs[i]
        out.append(Pair(list(a.context), a.response, b.response, {"A": 1.0, "B": 0.0, "tie": 0.5}[v], a.dataset,
                        a.id))
    return out


def votes_jsonl(votes: Sequence[Pair]) -> bytes:
    """Votes as the JSONL file ``load_votes`` and ``dialeval train judge --votes`` read."""
    return "".join(json.dumps({"id": p.id, "context": p.context, "response_a": p.response_a,
                               "response_b": p.response_b, "vote": p.vote}, ensure_ascii=False) + "\n"
                   for p in votes).encode("utf-8")


def save_pair_votes(key: str, comp: Comparison, votes: dict[int, str]) -> Path:
    """Write the votes given on ``comp``'s pairs to :func:`votes_path` (replaced whole, atomically)."""
    from core.outputs import atomic_path
    path = votes_path(key)
    with atomic_path(path) as tmp:
        tmp.write_bytes(votes_jsonl(pair_votes(comp, votes)))
    return path


def load_pair_votes(key: str, comp: Comparison) -> dict[int, str]:
    """The votes kept for ``comp`` (:func:`save_pair_votes`) as pair index -> vote; {} when none."""
    from core.judges.pairs import load_votes, votes_for_pairs
    path = votes_path(key)
    if not path.exists() or not path.read_bytes().strip():
        return {}
    got = votes_for_pairs(comp, load_votes(path))
    return {i: v for i, v in enumerate(got) if v is not None}


def curve_sizes(n_votes: int, folds: int) -> list[int]:
    """Learning-curve sizes: 100, 200, ... 900 votes, clipped to what the training folds hold;
    for fewer than 200 trainable votes, five even steps instead, none below ``MIN_VOTES`` (a re-fit on fewer is
    refused everywhere: on 2 votes the judge said "A" to every pair)."""
    max_train = int(n_votes * (folds - 1) / folds)
    if max_train >= 200:
        return sorted({s for s in range(100, 1000, 100) if s < max_train} | {min(max_train, 900)})
    return sorted({s for k in range(1, 6) if (s := round(max_train * k / 5)) >= MIN_VOTES} | {max_train})


# ------------------------------------------------------------------------------------------------
# export


def export_csv(df: pd.DataFrame, comp: Comparison | None = None) -> bytes:
    """``df`` as CSV. With the comparison, a table of pairs (a ``pair`` column) gets each pair's context back
    as its turns, one per line of the cell (the table shows them joined with ⏎ on one line), so the file loads
    again with its turns (``--context-sep`` newline, the default guess). Floats keep ``SIGNIFICANT_DIGITS``
    (``core.report``), as the command line's outputs."""
    if comp is not None and "pair" in df.columns and "context" in df.columns:
        df = df.assign(context=["\n".join(comp.pairs[int(i)][0].context) for i in df["pair"]])
    return df.to_csv(index=False, float_format=f"%.{SIGNIFICANT_DIGITS}g").encode("utf-8")


def export_jsonl(cs: ComparisonScores, pairs: Sequence[int] | None = None) -> bytes:
    """One JSON object per pair (``pairs``: these pair indices in this order, e.g. the filtered and sorted
    table; default all): both examples (core.data fields), each metric for A and B, details."""
    from core.report import jsonl_line
    comp = cs.comparison
    lines = []
    for i in (range(len(comp.pairs)) if pairs is None else pairs):
        a, b = comp.pairs[i]
        rec = {"pair": i, "id": a.id, "system_a": comp.system_a, "system_b": comp.system_b,
               "context": a.context, "references": a.references or b.references,
               "response_a": a.response, "response_b": b.response,
               "scores_a": {m: float(cs.a(m)[i]) for m in cs.metrics},
               "scores_b": {m: float(cs.b(m)[i]) for m in cs.metrics},
               "human_a": a.scores, "human_b": b.scores,
               "signatures": cs.table.signatures()}
        det = {}
        for m in cs.metrics:
            da, db = cs.table.details(m, i), cs.table.details(m, cs.n + i)
            if da is not None or db is not None:
                det[m] = {"a": da, "b": db}
        if det:
            rec["details"] = det
        lines.append(jsonl_line(rec))
    return ("\n".join(lines) + "\n").encode("utf-8")


def mme_drilldown_rows(details: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Rows for a drill-down of one ``mme`` (or ``mme_avg``) score: each sub-metric, its group, its normalized
    score, its CRS weight for the chosen dimension and its share of the final score."""
    from core.metrics.mme import GROUPS
    if not details:
        return []
    subs = details.get("sub_scores", {})
    w = details.get("weights") or {k: 1.0 / max(len(subs), 1) for k in subs}
    group = {s: g for g, ss in GROUPS.items() if "+" not in g for s in ss}
    tot = sum(w.get(k, 0.0) for k, v in subs.items() if v is not None) or 1.0
    return [{"sub_metric": f"mme_{k}", "group": group.get(k, ""), "score": v, "weight": round(w.get(k, 0.0), 4),
             "contribution": None if v is None else round(w.get(k, 0.0) * v / tot, 4)} for k, v in subs.items()]
