"""Shared fixtures. Data in ../shared/data is read in place, never copied into the repository.

Tests import the checkout's ``core`` (pyproject.toml: ``pythonpath = ["."]``; ``make setup`` installs the package
editable, so the ``dialeval`` command the CLI tests run is the checkout's too): an edit is tested at once.
tests/test_cli.py checks what ``pip install .`` installs on a wheel built from the checkout. Outside CI a test that
needs ../shared/data skips when it is missing; under CI (CI=true) it fails.

Two tiers: ``make check`` runs the tests not marked ``slow``, ``make test`` all of them. A test is slow when it
loads a model over real data, holds a quality floor or golden numbers, drives the browser or Ray, or runs the
models in child processes: marked ``@pytest.mark.slow`` (or ``pytestmark``) in its file, or in SLOW below."""
import os
import sys
from pathlib import Path

import pytest

from core.settings import shared_data_dir

# Every test computes its numbers afresh: the score cache (core.cache) is off unless a test turns it on with a
# folder of its own, so a cached row can never stand in for a regression (the golden test included).
os.environ["DIALEVAL_NO_CACHE"] = "1"
# ... and on the default path: MiniLM in float32, whatever the caller's environment says (tests/test_precision.py
# sets DIALEVAL_PRECISION=bfloat16 where it tests it)
os.environ.pop("DIALEVAL_PRECISION", None)
# The dashboard judges every pair unasked (its "Judge every pair" toggle, on by default): pages under test that are
# not about the judge do not wait for the real one. tests/test_run_button.py checks the default with the toggle on.
os.environ.setdefault("DIALEVAL_APP_JUDGE", "0")


def _session_cache_folder() -> None:
    """Everything dialeval keeps in its cache folder while the tests run (the dashboard's kept uploads and votes
    among it) goes to a folder of this session's own, removed at its end: never the user's ``$DIALEVAL_CACHE`` or
    ``~/.cache/dialeval``. SmolLM2's dequantized copy, slow to make, is linked from the user's folder when
    one is there (a test that clears the cache folder clears one of its own)."""
    import atexit
    import shutil
    import tempfile

    from core.settings import cache_location
    user = cache_location()[0].expanduser().resolve()  # never created here; a relative setting made absolute
    session = Path(tempfile.mkdtemp(prefix="dialeval-tests-"))
    for made in user.glob("smollm2-135m-f32-*") if user.is_dir() else []:
        if (made / "complete").exists():
            (session / made.name).symlink_to(made, target_is_directory=True)
    os.environ["DIALEVAL_CACHE"] = str(session)
    owner = os.getpid()  # a forked child that exits leaves the folder to the session that made it
    atexit.register(lambda: os.getpid() == owner and shutil.rmtree(session, ignore_errors=True))


_session_cache_folder()

REPO_ROOT = Path(__file__).resolve().parent.parent
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")

# Slow tests of files that were being edited when the tiers were drawn (file::test: why); a mark in the file
# itself is the usual place.
SLOW = {
    "test_engine.py::test_a_score_does_not_depend_on_the_company_it_keeps":
        "every metric and the judge, three times over: ~235 s on 2 AVX2 cores",
}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        if f"{item.path.name}::{getattr(item, 'originalname', item.name)}" in SLOW:
            item.add_marker(pytest.mark.slow)


def _need_shared(rel: str) -> Path:
    p = shared_data_dir() / rel
    if not p.exists():
        msg = f"{p} is missing (the shared human-rated data sits beside the repository)"
        if IN_CI:
            pytest.fail(msg)
        pytest.skip(msg)
    return p


@pytest.fixture(scope="session")
def shared():
    """``shared("eval/usr-topical.jsonl")``: the path of a file under ../shared/data; skips (outside CI) or
    fails (under CI) when it is missing."""
    return _need_shared


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The checkout's root (the dashboard's app.py, views/ and demo/ live there, not in the installed package)."""
    return REPO_ROOT


@pytest.fixture(autouse=True)
def torch_threads_restored():
    """A test that runs a trainer (which sets torch's thread count) leaves the count as it found it, so the
    tests after it run as they would alone (scores do not depend on it since 0.6.1, ``core.models.blas``, but
    speed and a trainer's own numbers do)."""
    torch = sys.modules.get("torch")
    before = torch.get_num_threads() if torch is not None else None
    yield
    torch = sys.modules.get("torch")
    if torch is not None and before is not None and torch.get_num_threads() != before:
        torch.set_num_threads(before)
