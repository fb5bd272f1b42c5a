"""The command line on real files: one output line per input row, in order; bad input exits 2 with a message."""
import json
import subprocess
import sys

from conftest import ROOT


def run(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "core", *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def test_score_real_file_bleu(shared, tmp_path):
    src = shared("eval/usr-persona.jsonl")
    out = tmp_path / "out.jsonl"
    r = run("score", str(src), "--metrics", "bleu", "--out", str(out), "--quiet")
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    ids = [json.loads(line)["id"] for line in src.read_text().splitlines() if line.strip()]
    assert [row["id"] for row in rows] == ids
    assert all(0 <= row["metrics"]["bleu"] <= 100 + 1e-9 for row in rows)
    assert "metric:bleu|variant:n:2,smooth:exp,tok:13a,lc:0" in r.stderr
    # the gold reply scored against itself is 100
    gold = [row for row in rows if row["system"] == "Original Ground Truth"]
    assert gold and all(abs(row["metrics"]["bleu"] - 100) < 1e-9 for row in gold)


def test_score_ubleu_on_a_real_slice(shared, tmp_path):
    lines = shared("eval/usr-topical.jsonl").read_text().splitlines()[:6]
    src = tmp_path / "slice.jsonl"  # a temporary slice, never stored in the repository
    src.write_text("\n".join(lines) + "\n")
    r = run("score", str(src), "--metrics", "bleu,ubleu", "--quiet")
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert len(rows) == 6
    refs = rows[0]["details"]["ubleu"]["references"]
    assert [x["kind"] for x in refs].count("retrieved") == 15 and refs[0]["kind"] == "original"
    assert all(-1 <= x["weight"] <= 1 for x in refs)


def test_bad_input_exit_code(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"context": ["hi"], "response": "yo"}\n{"context": ["hi"], "response": null}\n')
    r = run("score", str(bad), "--metrics", "bleu")
    assert r.returncode == 2
    assert "bad.jsonl, row 2, field 'response': is missing" in r.stderr and "Traceback" not in r.stderr
    r = run("score", str(tmp_path / "missing.jsonl"))
    assert r.returncode == 2 and "file not found" in r.stderr
    r = run("score", str(bad), "--metrics", "nosuchmetric")
    assert r.returncode == 2 and "unknown metric" in r.stderr
    assert run("frobnicate").returncode == 2


def test_metrics_list():
    r = run("metrics")
    assert r.returncode == 0 and "bleu" in r.stdout and "ubleu" in r.stdout
