"""Shared fixtures. Data in ../shared/data is read in place, never copied into the repository.

Outside CI a test that needs ../shared/data skips when it is missing; under CI (CI=true) it fails."""
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SHARED_DATA = Path(os.environ.get("DIALEVAL_SHARED_DATA", ROOT.parent / "shared" / "data"))
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def need_shared(rel: str) -> Path:
    """Path of a file under ../shared/data; skip (outside CI) or fail (under CI) when it is missing."""
    p = SHARED_DATA / rel
    if not p.exists():
        msg = f"{p} is missing (the shared human-rated data sits beside the repository)"
        if IN_CI:
            pytest.fail(msg)
        pytest.skip(msg)
    return p


@pytest.fixture
def shared():
    return need_shared
