"""The command line on real files, as a user runs it: the installed ``dialeval`` command from a folder that is
not the repository; one output line per input row, in order; bad input exits 2 with a message.

``make setup`` installs the package editable, so that command runs the checkout's code; what ``pip install .``
installs (the modules, the shipped checkpoints) is checked on a wheel built from the checkout (the last test)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture
def dialeval(tmp_path):
    """Run the installed console script ``dialeval`` in a fresh folder (never the checkout)."""
    exe = Path(sys.executable).with_name("dialeval")
    work = tmp_path / "elsewhere"
    work.mkdir()

    def run(*args, timeout=600):
        return subprocess.run([str(exe), *args], cwd=work, capture_output=True, text=True, timeout=timeout)
    return run


def test_score_real_file_bleu(dialeval, shared, tmp_path):
    src = shared("eval/usr-persona.jsonl")
    out = tmp_path / "out.jsonl"
    r = dialeval("score", str(src), "--metrics", "bleu", "--out", str(out), "--quiet")
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    ids = [json.loads(line)["id"] for line in src.read_text().splitlines() if line.strip()]
    assert [row["id"] for row in rows] == ids
    assert all(0 <= row["metrics"]["bleu"] <= 100 + 1e-9 for row in rows)
    assert "metric:bleu|variant:n:2,smooth:exp,tok:13a,lc:0" in r.stderr  # the signature, even with --quiet
    assert "wrote" not in r.stderr  # --quiet leaves routine notes out (it said 'wrote N rows to PATH')
    said = dialeval("score", str(src), "--metrics", "bleu", "-o", str(tmp_path / "again.jsonl"))
    assert said.returncode == 0 and f"wrote {len(rows)} rows to " in said.stderr
    assert (tmp_path / "again.jsonl").read_text() == out.read_text()
    # the gold reply scored against itself is 100
    gold = [row for row in rows if row["system"] == "Original Ground Truth"]
    assert gold and all(abs(row["metrics"]["bleu"] - 100) < 1e-9 for row in gold)


@pytest.mark.slow  # MiniLM and the pool index in a child process: ~12 s
def test_score_ubleu_on_a_real_slice(dialeval, shared, tmp_path):
    lines = shared("eval/usr-topical.jsonl").read_text().splitlines()[:6]
    src = tmp_path / "slice.jsonl"  # a temporary slice, never stored in the repository
    src.write_text("\n".join(lines) + "\n")
    r = dialeval("score", str(src), "--metrics", "bleu,ubleu", "--quiet")
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert len(rows) == 6
    refs = rows[0]["details"]["ubleu"]["references"]
    assert [x["kind"] for x in refs].count("retrieved") == 50 and refs[0]["kind"] == "original"
    assert all(0 <= x["weight"] <= 1 for x in refs)  # the similarity rater's weights


def test_bad_input_exit_code(dialeval, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"context": ["hi"], "response": "yo"}\n{"context": ["hi"], "reply": "ok"}\n')
    r = dialeval("score", str(bad), "--metrics", "bleu")
    assert r.returncode == 2
    assert "bad.jsonl, row 2, field 'response': is missing (the row has 'reply'" in r.stderr and "Traceback" not in r.stderr
    r = dialeval("score", str(tmp_path / "missing.jsonl"))
    assert r.returncode == 2 and "file not found" in r.stderr
    r = dialeval("score", str(bad), "--metrics", "nosuchmetric")
    assert r.returncode == 2 and "unknown metric" in r.stderr
    assert dialeval("frobnicate").returncode == 2


def test_an_error_no_check_foresaw_exits_3_not_the_gates_fail(tmp_path, capsys, monkeypatch):
    """A bug exited 1 with its traceback, which a CI reads as the gate's FAIL: it exits 3 and says it is a bug."""
    import core.cli
    from core.scoring import metric_class
    bleu = metric_class("bleu")  # the class the registry holds (a test that reloads modules leaves another)
    monkeypatch.setattr(bleu, "compute", lambda self, examples, progress=None: 1 / 0)
    src = tmp_path / "a.jsonl"
    # a row no other test scores (this process keeps rows it scored: BLEU would not be asked again)
    src.write_text(json.dumps({"context": ["hi"], "response": f"yo {tmp_path.name}", "references": ["yo"]}) + "\n")
    assert core.cli.main(["score", str(src), "--metrics", "bleu", "--quiet"]) == core.cli.EXIT_INTERNAL == 3
    err = capsys.readouterr().err
    assert "ZeroDivisionError" in err and "internal error (exit code 3): a bug in dialeval" in err
    monkeypatch.setattr(bleu, "compute", lambda self, examples, progress=None: {}["bleu_result"])
    assert core.cli.main(["score", str(src), "--metrics", "bleu", "--quiet"]) == 3  # a KeyError is no unknown name
    assert "KeyError: 'bleu_result'" in capsys.readouterr().err
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-abcdefghijkl")
    monkeypatch.setattr(bleu, "compute", lambda self, examples, progress=None: (_ for _ in ()).throw(
        RuntimeError("request with Authorization: Bearer sk-test-abcdefghijkl failed")))
    assert core.cli.main(["score", str(src), "--metrics", "bleu", "--quiet"]) == 3
    err = capsys.readouterr().err
    assert "RuntimeError" in err and "abcdefghijkl" not in err  # the key never printed


def test_metrics_list(dialeval):
    r = dialeval("metrics")
    assert r.returncode == 0 and "bleu" in r.stdout and "ubleu" in r.stdout


@pytest.mark.slow  # loads MiniLM and SmolLM2 in a child process: ~35 s on 2 cores
def test_installed_command_scores_the_default_metrics_from_another_folder(dialeval, repo_root, tmp_path):
    """``dialeval score FILE --metrics bleu,ubleu,bert_ruber,mme`` from a folder that is not the checkout: the
    shipped checkpoints are found and every metric gives a number."""
    lines = (repo_root / "demo" / "demo.jsonl").read_text().splitlines()[:4]
    src = tmp_path / "four.jsonl"
    src.write_text("\n".join(lines) + "\n")
    r = dialeval("score", str(src), "--metrics", "bleu,ubleu,bert_ruber,mme", "--quiet", "--no-details")
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert len(rows) == 4
    assert all(isinstance(row["metrics"][m], float) for row in rows for m in ("bleu", "ubleu", "bert_ruber", "mme"))
    assert "metric:mme|" in r.stderr and "metric:ubleu|" in r.stderr


@pytest.mark.slow  # MiniLM and a pool index built in a child process: ~8 s
def test_pool_reaches_the_ubleu_inside_ruber_ubleu(dialeval, tmp_path):
    """``--pool`` travels in the options object to the υBLEU part of RUBER+υBLEU: it runs (no TypeError) and
    the signature names the pool."""
    pool = tmp_path / "pool.jsonl"
    pool.write_text("\n".join(json.dumps({"utterance": u, "response": r}) for u, r in [
        ("any plans for the weekend?", "i am going hiking with friends"),
        ("what do you do for fun?", "i play the guitar and read"),
        ("do you like dogs?", "yes, i have two of them"),
        ("where are you from?", "i grew up near the coast")]) + "\n")
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"id": "1", "context": ["any plans for the weekend?"], "response": "hiking with friends",
                               "references": ["i am going to the beach"]}) + "\n")
    r = dialeval("score", str(src), "--metrics", "ruber_ubleu", "--pool", str(pool), "--retriever", "bm25-u",
                 "--quiet")
    assert r.returncode == 0, r.stderr
    row = json.loads(r.stdout.splitlines()[0])
    assert 0 <= row["metrics"]["ruber_ubleu"] <= 1
    sig = next(line for line in r.stderr.splitlines() if line.startswith("ruber_ubleu:"))
    assert "|pool:pool-" in sig and "ret:bm25-u" in sig  # the υBLEU part used the pool and the retriever
    assert row["details"]["ruber_ubleu"]["s_R"] is not None


def test_a_trainer_with_nowhere_to_write_says_so_before_it_trains(tmp_path, monkeypatch, capsys):
    """Outside the checkout `dialeval train rater` trained for 83 s, then found no folder to write to and named
    an option it does not have. Here in-process, as a copy installed by ``pip install .`` sees it (the tests' own
    install is editable: the checkout's checkpoints/ is always there to write to); the last test runs such a copy."""
    import core.settings
    from core.cli import main
    monkeypatch.delenv("DIALEVAL_CHECKPOINTS", raising=False)
    monkeypatch.setattr(core.settings, "_SOURCE_ROOT", tmp_path / "site-packages")  # where an installed copy lives
    monkeypatch.chdir(tmp_path)
    assert main(["train", "rater", "--epochs", "1"]) == 2
    err = capsys.readouterr().err
    assert "no checkpoint folder to write to" in err
    assert "train adem, judge and ruber also take --out-dir" in err and "epoch" not in err


def test_checkpoints_of_ones_own_do_not_hide_the_shipped_ones(tmp_path, monkeypatch):
    """DIALEVAL_CHECKPOINTS pointed at a folder of one's own trained weights is searched first; what it lacks
    still comes from the shipped checkpoints (it used to replace them, so every other metric failed)."""
    import shutil

    from core.models import checkpoints
    from core.settings import checkpoint_dirs, checkpoint_file
    shipped = checkpoint_file("adem.safetensors")
    own = tmp_path / "mine"
    own.mkdir()
    shutil.copy(shipped.with_suffix(".json"), own / "adem.json")
    shutil.copy(shipped, own / "adem.safetensors")
    monkeypatch.setenv("DIALEVAL_CHECKPOINTS", str(own))
    assert checkpoint_dirs()[0] == own and len(checkpoint_dirs()) == 2
    assert checkpoints.paths("adem")[0] == own / "adem.safetensors"
    assert checkpoints.paths("judge")[0] == shipped.parent / "judge.safetensors"
    assert checkpoint_file("crs_weights.json") == shipped.parent / "crs_weights.json"
    with pytest.raises(checkpoints.CheckpointError, match=f"not found in {own} or {shipped.parent}"):
        checkpoints.load("no-such-checkpoint")
    # a path is looked for where it points, and said so (it said "not found in <the checkpoint folders>")
    with pytest.raises(checkpoints.CheckpointError, match=f"no {tmp_path / 'gone'}.safetensors and "):
        checkpoints.load(str(tmp_path / "gone"))


def test_an_input_named_dash_is_standard_input(tmp_path, monkeypatch, capsys):
    """`... | dialeval score - ...` reads the rows from standard input, formats detected from the content."""
    import io

    from core.cli import main
    csv_rows = b"id,context,response,reference\n1,hi there,hello friend,hello there\n2,how are you,fine,good\n"
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(csv_rows)))
    assert main(["score", "-", "--metrics", "bleu", "--quiet", "--no-details"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["id"], r["system"]) for r in rows] == [("1", "stdin"), ("2", "stdin")]
    assert rows[0]["metrics"]["bleu"] == 50.0
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(csv_rows)))
    assert main(["compare", "--no-judge", "-", "-", "--metrics", "bleu", "--quiet"]) == 2
    assert "standard input (-) can be read only once" in capsys.readouterr().err


def test_an_unknown_mme_dimension_is_said(capsys, tmp_path, monkeypatch):
    import argparse
    monkeypatch.chdir(tmp_path)
    Path("p.jsonl").write_text("".join(json.dumps({"utterance": f"hi {i}", "response": f"hello {i}"}) + "\n"
                                       for i in range(60)))

    from core.cli import options_from
    args = dict(pool=None, retriever=None, device="cpu", metrics=["bleu", "mme"])
    assert options_from(argparse.Namespace(**args, dimension="nonsense")).dimension == "nonsense"
    assert "--mme-dimension 'nonsense' is not a dimension MME-CRS has weights for" in capsys.readouterr().err
    options_from(argparse.Namespace(**args, dimension="Engaging"))
    assert capsys.readouterr().err == ""
    options_from(argparse.Namespace(**args, dimension="fluencyy"))  # a typo a word stem reads as grammar: said
    assert "--mme-dimension 'fluencyy' is read as 'grammar' (a word stem of it)" in capsys.readouterr().err
    options_from(argparse.Namespace(**{**args, "metrics": ["bleu"]}, dimension="grammar"))
    assert "--mme-dimension 'grammar' has no effect" in capsys.readouterr().err
    options_from(argparse.Namespace(**{**args, "metrics": ["bleu"], "pool": "p.jsonl"}, dimension=None))
    assert "--pool p.jsonl has no effect: it reaches ruber_ubleu, ubleu, ubleu_paper" in capsys.readouterr().err
    options_from(argparse.Namespace(**{**args, "metrics": ["ubleu"], "pool": "p.jsonl"}, dimension=None))
    assert capsys.readouterr().err == ""


def test_mme_dimension_and_its_older_name_must_not_disagree(capsys):
    from core.cli import build_parser, main
    assert main(["compare", "--no-judge", "x.jsonl", "--mme-dimension", "overall", "--dimension", "engaging"]) == 2
    assert "given twice with different values ('overall', then 'engaging' in --dimension)" in capsys.readouterr().err
    args = build_parser().parse_args(["compare", "--no-judge", "x.jsonl", "--dimension", "engaging", "--mme-dimension", "engaging"])
    assert args.dimension == "engaging"


def test_a_judge_checkpoint_goes_with_the_learned_judge_only(tmp_path, capsys):
    """compare/report/gate/leaderboard take --checkpoint (a judge re-fitted on votes); with --no-judge or another
    judge it is refused before anything loads."""
    from core.cli import main
    a = tmp_path / "a.jsonl"
    a.write_text('{"id": "1", "system": "a", "context": ["hi"], "response": "hello"}\n'
                 '{"id": "1", "system": "b", "context": ["hi"], "response": "yo"}\n')
    assert main(["compare", str(a), "--no-judge", "--checkpoint", "mine", "--metrics", "bleu"]) == 2
    assert "--checkpoint names the learned judge's checkpoint, and --no-judge leaves" in capsys.readouterr().err
    assert main(["leaderboard", str(a), "--judge", "llm", "--checkpoint", "mine", "--metrics", "bleu"]) == 2
    assert "the llm judge has none" in capsys.readouterr().err
    assert main(["gate", str(a), "--checkpoint", str(tmp_path / "nowhere"), "--metrics", "bleu", "--quiet"]) == 2
    assert "nowhere" in capsys.readouterr().err


def test_a_votes_file_s_repeats_contradictions_and_identical_replies_are_said():
    from core.judges.pairs import Pair, vote_notes
    votes = [Pair(["hi"], "hello there", "no", 1.0), Pair(["hi"], "no", "hello there", 1.0),  # the same pair, B won
             Pair(["yo"], "hey", "hey", 0.0), Pair(["sup"], "fine", "ok", 0.5)]
    notes = vote_notes(votes)
    assert notes == ["1 vote(s) repeat a pair already voted on (in either order); each counts",
                     "1 pair(s) were voted different ways (A, B or tie): the re-fit sees every vote, agreement with "
                     "the votes takes each pair's last",
                     "1 A/B vote(s) are between two identical replies; they teach the judge nothing true"]
    assert vote_notes(votes[3:]) == []


def test_columns_takes_reference_as_the_header_does():
    import argparse

    from core.cli import csv_mapping_from
    args = argparse.Namespace(columns="reference=Reference", score_columns=None, context_sep=None, reference_sep=None)
    assert csv_mapping_from(args).references == "Reference"  # 'reference' is a header name the loader accepts


def test_stdout_in_an_encoding_with_a_byte_order_mark_carries_it_once(repo_root, tmp_path):
    """Blocks are written to stdout one by one (core.cli.write_stdout); with PYTHONIOENCODING=utf-8-sig or utf-16
    each block began with its own byte-order mark, so rows 2 and later started with U+FEFF."""
    import os
    exe = Path(sys.executable).with_name("dialeval")
    for encoding, bom in (("utf-8-sig", b"\xef\xbb\xbf"), ("utf-16", b"\xff\xfe")):
        r = subprocess.run([str(exe), "score", str(repo_root / "demo" / "demo.jsonl"), "--metrics", "bleu",
                            "--block-size", "7", "--quiet"], cwd=tmp_path, capture_output=True, timeout=600,
                           env={**os.environ, "PYTHONIOENCODING": encoding})
        assert r.returncode == 0, r.stderr
        assert r.stdout.startswith(bom) and r.stdout.count(bom) == 1, encoding
        assert len(r.stdout.decode(encoding).splitlines()) == 120


@pytest.mark.slow  # builds and installs a wheel of the package (54 MB of checkpoints)
def test_pip_install_ships_every_module_and_checkpoint_and_runs_outside_the_checkout(repo_root, tmp_path):
    """The tests run the checkout's code (an editable install); this checks what ``pip install .`` installs: a
    wheel built from the checkout holds every module of core/ and dashboard/ and every file of checkpoints/ (package
    data), and installed in a folder of its own and run from a folder that is not the checkout, it reads its
    checkpoints from the package and its trainers, with nowhere to write, say so before they train."""
    import os
    import shutil
    import zipfile
    src, wheels, site, elsewhere = (tmp_path / d for d in ("src", "wheels", "site", "elsewhere"))
    elsewhere.mkdir()
    # built from a copy: a checkout's build/ and *.egg-info/ of an earlier build would add files it lists
    for part in ("core", "dashboard", "checkpoints"):
        shutil.copytree(repo_root / part, src / part, ignore=shutil.ignore_patterns("__pycache__"))
    for part in ("pyproject.toml", "README.md"):
        shutil.copy(repo_root / part, src / part)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    r = subprocess.run([*pip, "wheel", "--quiet", "--no-deps", "--no-build-isolation", "--wheel-dir", str(wheels),
                        str(src)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    (wheel,) = wheels.glob("dialeval-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    modules = {p.relative_to(repo_root).as_posix()
               for d in ("core", "dashboard") for p in (repo_root / d).rglob("*.py")}
    shipped = {p.name for p in (repo_root / "checkpoints").iterdir() if p.is_file()}
    assert modules - names == set(), "modules missing from the wheel ([tool.setuptools] packages)"
    assert {f"core/shipped_checkpoints/{n}" for n in shipped} - names == set(), \
        "checkpoints missing from the wheel ([tool.setuptools.package-data])"
    r = subprocess.run([*pip, "install", "--quiet", "--no-deps", "--no-compile", "--target", str(site), str(wheel)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    env = {k: v for k, v in os.environ.items() if k != "DIALEVAL_CHECKPOINTS"} | {"PYTHONPATH": str(site)}
    r = subprocess.run([sys.executable, "-c", "import core, core.settings as s; print(core.__file__); "
                        "print(*s.checkpoint_dirs(), sep='\\n')"], cwd=elsewhere, env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    where, *dirs = r.stdout.splitlines()
    assert Path(where) == site / "core" / "__init__.py"
    assert [Path(d) for d in dirs] == [site / "core" / "shipped_checkpoints"]
    assert {p.name for p in Path(dirs[0]).iterdir()} >= shipped
    r = subprocess.run([sys.executable, "-m", "core", "train", "rater", "--epochs", "1"], cwd=elsewhere, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "no checkpoint folder to write to" in r.stderr, r.stderr
    assert "epoch" not in r.stderr


def test_a_pool_smaller_than_what_ubleu_retrieves_is_said_before_scoring(tmp_path, capsys):
    """A --pool of one pair was taken in silence: every row got the same reference."""
    import argparse
    from core.cli import options_from
    pool = tmp_path / "pool.jsonl"
    pool.write_text('{"utterance": "hi", "response": "hello there"}\n')
    args = argparse.Namespace(metrics=["bleu", "ubleu"], pool=str(pool), retriever=None, dimension=None, device="cpu")
    options_from(args)
    err = capsys.readouterr().err
    assert f"warning: --pool {pool} holds 1 (utterance, response) pair, fewer than the 50 references" in err
    options_from(argparse.Namespace(**{**vars(args), "metrics": ["bleu"]}))  # no metric takes it: said otherwise
    assert "fewer than the 50" not in capsys.readouterr().err


def test_control_characters_reach_a_terminal_as_escapes_and_a_file_as_they_are(monkeypatch, capsys):
    """A system named "\\x1b[31mbeta\\x1b[0m" coloured the user's terminal (the sentence and the header printed it
    raw); on a terminal every control character but line ends and tabs is shown as its escape."""
    import io
    import core.cli
    from core.formatting import terminal_safe
    named = "\x1b[31mbeta\x1b[0m wins\tby far\n\x9b2J\r\u202e"
    assert terminal_safe(named) == "\\x1b[31mbeta\\x1b[0m wins\tby far\n\\x9b2J\\x0d\\u202e"

    class Terminal(io.StringIO):
        def isatty(self):
            return True

        def fileno(self):
            raise OSError("no descriptor")
    shown = Terminal()
    monkeypatch.setattr(sys, "stdout", shown)
    core.cli.write_stdout(named)
    assert shown.getvalue() == terminal_safe(named)
    piped = io.StringIO()
    monkeypatch.setattr(sys, "stdout", piped)
    core.cli.write_stdout(named)
    assert piped.getvalue() == named
    monkeypatch.setattr(sys, "stderr", Terminal())
    core.cli.note([named])
    core.cli.tell(named)  # what report, leaderboard and meta-eval say on stderr besides warnings
    assert sys.stderr.getvalue() == "warning: " + terminal_safe(named) + "\n" + terminal_safe(named) + "\n"


def test_quiet_and_no_cache_last_one_command(tmp_path, monkeypatch, capsys):
    """A reviewer's find: --quiet and --no-cache set environment variables (the libraries' bars off, the cache off)
    that stayed set for every later command run in the same process (a notebook, a test)."""
    from core.cli import FLAG_ENVIRONMENT, main
    for k in FLAG_ENVIRONMENT:
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("DIALEVAL_CACHE", str(tmp_path / "cache"))
    src = tmp_path / "rows.jsonl"
    src.write_text(json.dumps({"id": "1", "context": ["hi"], "response": "hello there", "references": ["hello"]})
                   + "\n")
    assert main(["score", str(src), "--metrics", "bleu", "--quiet", "--no-cache"]) == 0
    assert not any(k in os.environ for k in FLAG_ENVIRONMENT)
    monkeypatch.setenv("DIALEVAL_NO_CACHE", "1")  # set by the caller: kept
    assert main(["score", str(src), "--metrics", "bleu", "-q"]) == 0 and os.environ["DIALEVAL_NO_CACHE"] == "1"
    capsys.readouterr()
