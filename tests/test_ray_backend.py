"""``dialeval score --backend ray``: the same bytes as a local run, block by block, in input order.

Every run here leaves ``DIALEVAL_THREADS`` unset, as a user would: the local run uses every core, each of two
Ray workers on a local instance cores // 2, and the bytes must still be the same (``core.models.blas``)."""
import json
import os
import pickle
import random
import subprocess
import sys
from pathlib import Path

import pytest

from core.backends import (Backend, BlockResult, ScoreJob, available_backends, backend_class, blocks, score_block,
                           stream_scores)
from core.data import DataError, Problem, load_file
from core.engine import score_examples
from core.formatting import clean_json
from core.scoring import Options

METRICS = "bleu,bert_ruber"


@pytest.fixture(scope="module")
def rows_file(tmp_path_factory, repo_root) -> Path:
    """24 demo rows: the first 12 contexts, answered by both systems; one reply made blank and one reference
    blank beside another, so the flags and the stderr notes are compared too."""
    lines = (repo_root / "demo" / "demo.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines[:12] + lines[60:72]]
    rows[3]["response"] = "  "
    rows[15]["references"] = [rows[15]["references"][0], ""]
    path = tmp_path_factory.mktemp("ray") / "rows.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def dialeval(*args: str, cwd: Path, **env_over: str) -> subprocess.CompletedProcess:
    """The installed console script with the default thread count, from a folder that is not the checkout;
    ``env_over`` sets variables (an empty value removes one)."""
    exe = Path(sys.executable).with_name("dialeval")
    env = {k: v for k, v in os.environ.items() if k != "DIALEVAL_THREADS"}
    for k, v in env_over.items():
        env.pop(k, None) if v == "" else env.__setitem__(k, v)
    return subprocess.run([str(exe), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def stderr_lines(text: str, prefix: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(prefix)]


@pytest.mark.slow  # a local Ray instance with two workers
def test_ray_output_is_byte_identical_to_local_and_to_the_default_command(rows_file, tmp_path):
    """Two Ray workers, blocks of 5 rows (5 blocks, finishing in any order): the file is the same bytes as
    ``--backend local`` and as the command without backend flags (on stdout); same notes, same signatures."""
    ray_out, local_out = tmp_path / "ray.jsonl", tmp_path / "local.jsonl"
    r = dialeval("score", str(rows_file), "--metrics", METRICS, "--backend", "ray", "--workers", "2",
                 "--block-size", "5", "--out", str(ray_out), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    each = max(1, (os.cpu_count() or 1) // 2)
    assert f"a local Ray instance: 2 worker(s), DIALEVAL_THREADS={each} each" in r.stderr
    assert "blocks 5/5" in r.stderr and "24/24" in r.stderr  # the progress bar counts rows and blocks
    local = dialeval("score", str(rows_file), "--metrics", METRICS, "--backend", "local", "--out", str(local_out),
                     "--quiet", cwd=tmp_path)
    assert local.returncode == 0, local.stderr
    default = dialeval("score", str(rows_file), "--metrics", METRICS, "--quiet", cwd=tmp_path)
    assert default.returncode == 0, default.stderr

    assert ray_out.read_bytes() == local_out.read_bytes() == default.stdout.encode("utf-8")
    out = [json.loads(line) for line in ray_out.read_text(encoding="utf-8").splitlines()]
    ids = [json.loads(line)["id"] for line in rows_file.read_text(encoding="utf-8").splitlines()]
    assert len(out) == 24 and [o["id"] for o in out] == ids
    assert out[3]["flags"] == ["blank response"] and out[3]["metrics"]["bleu"] is None
    for prefix in ("warning:", "bleu:", "bert_ruber:"):
        lines = stderr_lines(r.stderr, prefix)
        assert lines and lines == stderr_lines(local.stderr, prefix) == stderr_lines(default.stderr, prefix)
    assert f"wrote 24 rows to {ray_out}" in r.stderr
    assert not list(tmp_path.glob(".*.part"))  # the temporary file was renamed, nothing left beside it


@pytest.mark.slow  # a local Ray instance
def test_a_score_cache_that_outgrows_its_cap_on_the_workers_is_said_as_locally(rows_file, tmp_path):
    """With a tiny cache cap a local run says how many entries the cap dropped; a Ray run said nothing (the
    workers' caches are not the driver's), so a user could not tell why re-runs stayed slow."""
    capped = {"DIALEVAL_NO_CACHE": "", "DIALEVAL_CACHE_MAX_MB": "0.002"}
    rows = tmp_path / "new.jsonl"  # replies the shipped precomputed demo does not answer
    rows.write_text("".join(json.dumps({**json.loads(line), "response": json.loads(line)["response"] + " ok"}) + "\n"
                            for line in rows_file.read_text(encoding="utf-8").splitlines()), encoding="utf-8")
    local = dialeval("score", str(rows), "--metrics", "bleu", "--quiet", "--out", str(tmp_path / "l.jsonl"),
                     cwd=tmp_path, DIALEVAL_CACHE=str(tmp_path / "local-cache"), **capped)
    ray = dialeval("score", str(rows), "--metrics", "bleu", "--quiet", "--backend", "ray", "--workers", "1",
                   "--out", str(tmp_path / "r.jsonl"), cwd=tmp_path, DIALEVAL_CACHE=str(tmp_path / "ray-cache"),
                   **capped)
    assert local.returncode == 0 and ray.returncode == 0, local.stderr + ray.stderr
    mine = stderr_lines(local.stderr, "note: the score cache is capped at 0.002 MB and could not keep")
    theirs = stderr_lines(ray.stderr, "note: the score cache on the Ray workers is capped at 0.002 MB")
    assert len(mine) == 1 and len(theirs) == 1, local.stderr + ray.stderr
    count = mine[0].split(": ")[2].split(" of its entries")[0]
    assert int(count) > 0 and f": {count} of its entries were dropped" in theirs[0]  # one worker: the same count
    assert (tmp_path / "l.jsonl").read_bytes() == (tmp_path / "r.jsonl").read_bytes()


def test_a_damaged_score_cache_on_the_workers_is_said_as_locally(rows_file, tmp_path):
    """A worker passed a damaged cache by in silence: only the driver's own cache was said."""
    folder = tmp_path / "cache"
    folder.mkdir()
    (folder / "scores.sqlite3").write_bytes(b"this is not a database" * 100)
    ray = dialeval("score", str(rows_file), "--metrics", "bleu", "--quiet", "--backend", "ray", "--workers", "1",
                   "--out", str(tmp_path / "r.jsonl"), cwd=tmp_path, DIALEVAL_CACHE=str(folder), DIALEVAL_NO_CACHE="")
    assert ray.returncode == 0, ray.stderr
    said = stderr_lines(ray.stderr, "note: on the Ray workers, the score cache")
    assert len(said) == 1 and "is damaged (file is not a database): this run went on without it" in said[0]


def test_blockwise_local_scoring_gives_the_whole_file_bytes(rows_file):
    """The local backend in blocks of 1 and 7 rows writes exactly what one whole-file run serializes:
    per-row scores do not depend on the rows scored with them."""
    examples = load_file(rows_file)
    job = ScoreJob(tuple(METRICS.split(",")), Options(), with_details=True)
    table = score_examples(examples, list(job.metrics), job.options)
    whole = "".join(json.dumps(clean_json(rec), ensure_ascii=False) + "\n" for rec in table.to_records())
    for size in (1, 7):
        parts: list[str] = []
        with backend_class("local")() as backend:
            signatures = stream_scores(examples, job, backend, parts.append, block_size=size)
        assert "".join(parts) == whole, size
        assert len(parts) == -(-len(examples) // size)  # written block by block
        assert signatures == table.signatures()


def test_a_jsonl_input_is_read_block_by_block_and_scores_the_same_bytes(rows_file, monkeypatch):
    """``dialeval score`` reads JSON Lines in place (``core.data.open_examples``): the backend parses each block
    from the file when it scores it, never the whole file at once, and writes what the loaded list gives."""
    from core.data import JsonlRows, open_examples
    reads: list[tuple[int, int]] = []
    read = JsonlRows.read
    monkeypatch.setattr(JsonlRows, "read", lambda self, start, stop: reads.append((start, stop)) or read(self, start, stop))
    job = ScoreJob(("bleu",), Options(), with_details=True)
    in_place, loaded = [], []
    with backend_class("local")() as backend:
        stream_scores(open_examples(rows_file), job, backend, in_place.append, block_size=10)
        stream_scores(load_file(rows_file), job, backend, loaded.append, block_size=10)
    assert in_place == loaded and len(in_place) == 3
    assert reads == [(0, 10), (10, 20), (20, 24)]


class ShuffledBackend(Backend):
    """Finishes the blocks in a shuffled order (as workers do), scored here."""

    def run(self, parts, job, within=None):
        order = list(range(len(parts)))
        random.Random(13).shuffle(order)
        for index in order:
            yield index, score_block(parts[index], job)


def test_blocks_finished_out_of_order_are_written_in_input_order(rows_file):
    examples = load_file(rows_file)
    job = ScoreJob(("bleu",), Options(), with_details=False)
    written: list[str] = []
    seen: list[tuple[int, int, str]] = []
    stream_scores(examples, job, ShuffledBackend(), written.append, block_size=3,
                  progress=lambda done, total, desc: seen.append((done, total, desc)))
    expected = score_block(examples, job).lines
    assert "".join(written).splitlines() == expected
    assert seen[-1] == (24, 24, "blocks 8/8")
    assert [d for d, _, _ in seen] == sorted(d for d, _, _ in seen)  # rows written only go up


def test_a_block_scored_with_another_signature_is_refused(rows_file):
    """A worker with another version or checkpoint (a mixed cluster) stops the run before its rows are written."""
    examples = load_file(rows_file)

    class Mixed(Backend):
        def run(self, parts, job, within=None):
            for i, part in enumerate(parts):
                res = score_block(part, job)
                yield i, BlockResult(res.lines, {m: s + ("x" if i == 2 else "") for m, s in res.signatures.items()})

    written: list[str] = []
    with pytest.raises(ValueError, match="block 3 was scored with another bleu"):
        stream_scores(examples, ScoreJob(("bleu",), Options(), False), Mixed(), written.append, block_size=5)
    assert len(written) == 2


def test_jobs_options_and_errors_pickle():
    """What a Ray worker receives, and the errors it raises, travel by pickle and arrive the same."""
    job = ScoreJob(("bleu", "ubleu"), Options(pool="p.jsonl", retriever="bm25-u", dimension="overall"), False)
    assert pickle.loads(pickle.dumps(job)) == job
    error = DataError([Problem("pool.jsonl", 2, None, "malformed JSON")])
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is DataError and str(back) == str(error) and back.problems == error.problems
    assert list(blocks(list(range(11)), 5)) == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9], [10]]
    assert set(available_backends()) >= {"local", "ray"}


def test_missing_ray_exits_2_with_the_install_line(rows_file, monkeypatch, capsys):
    from core.cli import main
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    assert main(["score", str(rows_file), "--metrics", "bleu", "--backend", "ray", "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --backend ray needs Ray") and 'pip install "ray>=2.9"' in err[0]


def test_local_backend_refuses_ray_flags(rows_file, capsys):
    from core.cli import main
    assert main(["score", str(rows_file), "--metrics", "bleu", "--workers", "2", "--quiet"]) == 2
    from core.backends import BACKENDS
    takers = " or ".join(n for n, cls in BACKENDS.items() if cls.takes_workers)  # ray, and any backend added
    assert f"--workers and --address are for --backend {takers}; --backend local starts no workers" in \
        capsys.readouterr().err


def test_the_cli_and_a_local_run_never_import_ray(rows_file, tmp_path):
    code = ("import sys, core, core.cli\n"
            "core.cli.build_parser()\n"
            f"assert core.cli.main(['score', {str(rows_file)!r}, '--metrics', 'bleu', '--quiet', '--out', "
            f"{str(tmp_path / 'o.jsonl')!r}]) == 0\n"
            "assert 'ray' not in sys.modules, 'ray was imported'\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr


def test_smollm2_jobs_get_a_worker_per_two_cores_and_a_note_when_oversubscribed(monkeypatch):
    """MME's SmolLM2 passes always run on SMOLLM_THREADS threads: by default a local Ray instance gets one
    worker per that many cores (two workers on 2 cores ran MME 3.4x slower than one), a cluster actor reserves
    that many CPUs, and an explicit --workers that oversubscribes is run as asked, with a note."""
    from core.backends.ray_backend import RayBackend
    from core.models.encoders import SMOLLM_THREADS
    from core.scoring import fixed_pass_threads
    monkeypatch.delenv("DIALEVAL_THREADS", raising=False)
    assert fixed_pass_threads(["bleu", "bert_ruber"]) is None
    assert fixed_pass_threads(["bleu", "mme"]) == fixed_pass_threads(["mme_sm_nll"]) == SMOLLM_THREADS
    assert fixed_pass_threads(["mme_fm", "mme_rm"]) is None
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    assert RayBackend().worker_count() == 4
    assert RayBackend(pass_threads=2).worker_count() == 2
    local = RayBackend(pass_threads=2)
    local.started_here = True
    assert local.worker_threads() == ("2", 1) and not local.oversubscribed()
    cluster = RayBackend(pass_threads=2)
    assert cluster.worker_threads() == ("2", 2)  # DIALEVAL_THREADS for the actor, CPUs it reserves
    busy = RayBackend(workers=4, pass_threads=2)
    busy.started_here, busy.threads = True, "1"
    assert busy.oversubscribed()
    assert "note: SmolLM2's passes (MME) always run on 2 threads, so 4 workers on 4 cores" in busy.describe()
    assert "note" not in RayBackend(workers=4).describe()


def test_the_driver_s_settings_travel_to_the_workers(monkeypatch):
    """On an existing cluster the workers had the head's environment: --no-cache, DIALEVAL_CACHE and one's own
    DIALEVAL_CHECKPOINTS never reached them (they wrote the head's cache and scored with other checkpoints)."""
    from core.backends.ray_backend import worker_environment
    monkeypatch.setenv("DIALEVAL_NO_CACHE", "1")
    monkeypatch.setenv("DIALEVAL_CHECKPOINTS", "/my/checkpoints")
    monkeypatch.setenv("XDG_CACHE_HOME", "/my/cache")
    monkeypatch.setenv("DIALEVAL_THREADS", "7")
    env = worker_environment("2")
    assert env["DIALEVAL_NO_CACHE"] == "1" and env["DIALEVAL_CHECKPOINTS"] == "/my/checkpoints"
    assert env["XDG_CACHE_HOME"] == "/my/cache" and env["DIALEVAL_THREADS"] == "2" and "PATH" not in env
