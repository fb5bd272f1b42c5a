"""The same input gives the same bytes with any torch thread count (``core.models.blas``: MKL's strict CNR mode
for float32 products; SmolLM2's bfloat16 passes are pinned to ``SMOLLM_THREADS``). Before 0.6.1, 1 thread
against 2 moved bert_ruber by up to 3e-7 and υBLEU by up to 8e-5 on the demo."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

METRICS = "bert_ruber,ubleu,adem"


def score_with_threads(rows: Path, threads: str, out: Path, cwd: Path, **env: str) -> None:
    exe = Path(sys.executable).with_name("dialeval")
    r = subprocess.run([str(exe), "score", str(rows), "--metrics", METRICS, "--no-cache", "--quiet", "--out", str(out)],
                       cwd=cwd, env={**os.environ, "DIALEVAL_THREADS": threads, **env}, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr


@pytest.fixture(scope="module")
def rows_file(tmp_path_factory, repo_root) -> Path:
    lines = (repo_root / "demo" / "demo.jsonl").read_text(encoding="utf-8").splitlines()
    path = tmp_path_factory.mktemp("threads") / "rows.jsonl"
    path.write_text("\n".join(lines[:24] + lines[60:84]) + "\n", encoding="utf-8")
    return path


@pytest.mark.slow  # bert_ruber, ubleu and adem in two child processes
def test_one_thread_and_two_threads_write_the_same_bytes(rows_file, tmp_path):
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    score_with_threads(rows_file, "1", one, tmp_path)
    score_with_threads(rows_file, "2", two, tmp_path)
    assert one.read_bytes() == two.read_bytes()
    rows = [json.loads(line) for line in one.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 48 and all(set(r["metrics"]) == set(METRICS.split(",")) for r in rows)


def test_the_mode_is_on_in_a_process_that_imports_core_first():
    code = ("import core, torch; from core.models.blas import reproducible_products; "
            "x = torch.ones(64, 64); x @ x; print(reproducible_products())")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env={k: v for k, v in os.environ.items() if k != "MKL_CBWR"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() in {"True", "None"}  # None: torch's products do not run on MKL on this platform


def test_a_product_before_core_is_imported_leaves_the_mode_off_and_says_so():
    code = ("import torch; x = torch.ones(64, 64); x @ x\n"
            "import warnings, core\n"
            "from core.models.blas import reproducible_products, warning\n"
            "print(reproducible_products(), bool(warning()))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env={k: v for k, v in os.environ.items() if k != "MKL_CBWR"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() in {"False True", "None False"}


@pytest.mark.parametrize("given, expected", [({}, "3000 -"), ({"GOMP_SPINCOUNT": "50"}, "50 -"),
                                             ({"OMP_WAIT_POLICY": "ACTIVE"}, "- ACTIVE")])
def test_import_core_shortens_openmp_spinning_unless_the_user_chose(given, expected):
    """core.models.openmp: short spins kept SmolLM2 10x faster beside a busy process (same bytes)."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    env.update(given)
    code = "import os, core; print(os.environ.get('GOMP_SPINCOUNT', '-'), os.environ.get('OMP_WAIT_POLICY', '-'))"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == expected
