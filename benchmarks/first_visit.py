"""First visit and re-scoring with the score cache (issue 23, items 1-2). Prints a markdown table.

    .venv/bin/python benchmarks/first_visit.py [--rows 200] [--skip-cold] [--skip-browser]   (--rows 0: no re-scoring)

Every measurement runs in a new Python process (imports included) with a new, empty cache folder
(``DIALEVAL_CACHE``), as on a fresh machine whose models are installed:

- *dashboard, first visit in a browser* (what a user waits for): ``streamlit run app.py`` as ``make run`` starts it
  (the demo loaded on start, default metrics), then Debian's chromium (Playwright, started beforehand) opens the
  page: seconds from the navigation until the verdict is drawn, and until the page is complete (no run in
  progress, the interval chart drawn); the server's own start (until /_stcore/health answers) is listed apart.
  ``tests/test_browser.py --first-visit`` in a child process, with the shipped precomputed scores; skipped with
  ``--skip-browser`` or when chromium or playwright is missing;
- *dashboard, first run in AppTest*: ``streamlit.testing`` AppTest of app.py with the demo loaded on start
  (``DIALEVAL_DEMO=1``, as ``make run``), default metrics; time from process start (Python, Streamlit and the
  app's imports included; in a browser the server has imported Streamlit before the visit) until the home page's
  first run is over (the whole page, not only the verdict); "judge shown" says whether the judge's line is in it
  (read, not run). With the shipped precomputed scores (checkpoints/precomputed-demo.json.gz) and, unless
  ``--skip-cold``, with ``DIALEVAL_NO_CACHE=1`` (everything scored; the judge is not run on the home page then).
- *CLI*: ``dialeval compare demo/demo.jsonl --judge`` in a new process, same two settings.
- *re-scoring*: ``dialeval score`` of ``--rows`` rows (demo rows, repeated with distinct ids and a
  numbered suffix on the response so every row is new) with the default metrics, cold; then the same file
  with 10 % of the rows changed (another suffix), reading the rest from the cache.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import ROOT
DEMO = ROOT / "demo" / "demo.jsonl"

APP_CHILD = r"""
import sys, time
t0 = float(sys.argv[1])
from streamlit.testing.v1 import AppTest
at = AppTest.from_file(sys.argv[2], default_timeout=900)
at.run()
text = " ".join(m.value for m in at.markdown)
ok = (" is better than " in text or "no difference" in text or "cannot tell" in text) and not at.exception
print(f"{time.time() - t0:.2f} {int(ok)} {int('judge prefers' in text or 'the judge' in text)}")
"""


def _env(cache: Path, cold: bool) -> dict:
    env = dict(os.environ, DIALEVAL_CACHE=str(cache), DIALEVAL_DEMO="1", PYTHONUNBUFFERED="1")
    env.pop("DIALEVAL_APP_METRICS", None)
    if cold:
        env["DIALEVAL_NO_CACHE"] = "1"
    else:
        env.pop("DIALEVAL_NO_CACHE", None)
    return env


def dashboard_first_visit(cold: bool) -> tuple[float, bool, bool]:
    with tempfile.TemporaryDirectory() as tmp:
        r = subprocess.run([sys.executable, "-c", APP_CHILD, str(time.time()), str(ROOT / "app.py")],
                           env=_env(Path(tmp), cold), capture_output=True, text=True, cwd=ROOT)
        last = r.stdout.strip().splitlines()[-1].split() if r.stdout.strip() else ["nan", "0", "0"]
        return float(last[0]), last[1] == "1", last[2] == "1"


def browser_first_visit() -> dict | None:
    """``tests/test_browser.py --first-visit`` with a new, empty cache folder: its JSON line, or None when no
    browser could run (chromium or playwright missing: the reason is printed)."""
    with tempfile.TemporaryDirectory() as tmp:
        env = _env(Path(tmp), False)
        r = subprocess.run([sys.executable, str(ROOT / "tests" / "test_browser.py"), "--first-visit"], env=env,
                           capture_output=True, text=True, cwd=ROOT)
    lines = [x for x in r.stdout.splitlines() if x.startswith("{")]
    if r.returncode or not lines:
        print(f"(browser first visit not measured: {(r.stderr.strip().splitlines() or ['no output'])[-1]})")
        return None
    return json.loads(lines[-1])


def cli(args: list[str], env: dict) -> float:
    t0 = time.time()
    r = subprocess.run([sys.executable, "-m", "core", *args, "--quiet"], env=env, capture_output=True, text=True,
                       cwd=ROOT)
    if r.returncode:
        raise SystemExit(f"{' '.join(args)} failed: {r.stderr[-2000:]}")
    return time.time() - t0


def rows_file(path: Path, n: int, changed_share: float = 0.0, salt: str = "") -> None:
    demo = [json.loads(x) for x in DEMO.read_text(encoding="utf-8").splitlines() if x.strip()]
    step = int(round(1 / changed_share)) if changed_share else 0
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            rec = dict(demo[i % len(demo)])
            rec["id"] = f"r{i:06d}"
            rec["response"] = f"{rec['response']} ({i // len(demo)})"
            if step and i % step == 0:
                rec["response"] += f" {salt}"
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=200, help="rows of the re-scoring runs; 0 skips them")
    ap.add_argument("--skip-cold", action="store_true", help="skip the runs that score everything (minutes)")
    ap.add_argument("--skip-browser", action="store_true", help="skip the real-browser first visit")
    a = ap.parse_args()
    load = os.getloadavg()[0]
    out = [f"Load average at start: {load:.2f} (2 cores). Every row: a new process, a new empty cache folder.", "",
           "| measurement | setting | seconds | note |", "|---|---|---|---|"]
    got = None if a.skip_browser else browser_first_visit()
    if got:
        judged = "the judge" in got["verdict_text"] or "judge prefers" in got["verdict_text"]
        out += [f"| dashboard first visit in chromium, until the verdict is drawn | shipped precomputed scores | "
                f"{got['verdict']:.1f} | judge {'in' if judged else 'NOT in'} the verdict; the server had started in "
                f"{got['server_ready']:.1f} s |",
                f"| same visit, until the page is complete | shipped precomputed scores | {got['page_done']:.1f} | "
                "tables and the interval chart drawn |"]
        print("\n".join(out[-2:]), flush=True)
    settings = [("shipped precomputed scores", False)] + ([] if a.skip_cold else [("no cache (scored)", True)])
    for label, cold in settings:
        s, ok, judged = dashboard_first_visit(cold)
        out.append(f"| dashboard first run in AppTest from process start | {label} | {s:.1f} | "
                   f"verdict {'shown' if ok else 'NOT shown'}; judge {'shown' if judged else 'not shown'} |")
        print(out[-1], flush=True)
    for label, cold in settings:
        with tempfile.TemporaryDirectory() as tmp:
            s = cli(["compare", str(DEMO), "--judge"], _env(Path(tmp), cold))
        out.append(f"| `dialeval compare demo/demo.jsonl --judge` | {label} | {s:.1f} | 60 pairs, default metrics |")
        print(out[-1], flush=True)
    if a.rows <= 0:
        print("\n".join(out + ["", "(re-scoring skipped: --rows 0)"]))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        env = _env(tmp / "cache", False)
        rows_file(tmp / "a.jsonl", a.rows)
        rows_file(tmp / "b.jsonl", a.rows, 0.1, "Changed.")
        cold_s = cli(["score", str(tmp / "a.jsonl"), "--out", str(tmp / "a.out")], env)
        warm_s = cli(["score", str(tmp / "b.jsonl"), "--out", str(tmp / "b.out")], env)
        same_s = cli(["score", str(tmp / "a.jsonl"), "--out", str(tmp / "a2.out")], env)
        identical = (tmp / "a.out").read_bytes() == (tmp / "a2.out").read_bytes()
    out.append(f"| `dialeval score` {a.rows} rows, default metrics | cold (empty cache) | {cold_s:.1f} | |")
    out.append(f"| same file with 10 % of rows changed | the rest cached | {warm_s:.1f} | "
               f"{warm_s / cold_s:.0%} of cold |")
    out.append(f"| same file again | all cached | {same_s:.1f} | output byte-identical to cold: {identical} |")
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
