"""Many users at once: one dashboard server, ``--sessions`` browser sessions (default 8) that each upload their own
file, score it (BLEU), get the verdict with the judge's result, download the report and vote, all at the same time.
Prints a markdown table (per session: seconds from "Compare" to the verdict, votes saved, report bytes) and the
server's memory.

    .venv/bin/python benchmarks/dashboard_load.py [--sessions 8]

The run itself is ``tests/test_dashboard_load.py --sessions N`` in a child process (the server, Debian's chromium
through Playwright, the checks: no error, no session sees another's data, every vote kept once; one JSON line), as
benchmarks/app_speed.py runs tests/test_browser.py: nothing is imported from the tests folder. Every session scores
and judges afresh (``DIALEVAL_NO_CACHE=1``, a fresh cache folder); the first judge run in the server loads the
models, and the sessions that asked meanwhile wait for it (``dashboard.state.first_run``). The machine is shared, so
timings are indicative (the load average at the start and at the end are printed).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(sessions: int) -> dict:
    r = subprocess.run([sys.executable, str(ROOT / "tests" / "test_dashboard_load.py"), "--sessions", str(sessions)],
                       cwd=ROOT, capture_output=True, text=True)
    lines = r.stdout.strip().splitlines()
    if not lines:
        raise RuntimeError(f"tests/test_dashboard_load.py exited with {r.returncode}:\n{r.stderr[-4000:]}")
    return json.loads(lines[-1])


def mb(v) -> str:
    return "-" if v is None else f"{v:,.0f} MB"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sessions", type=int, default=8)
    args = ap.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; {args.sessions} sessions at "
          "once, 8 pairs each, BLEU and the judge\n")
    res = run(args.sessions)
    print("| session | seconds to verdict | votes cast | votes saved | report bytes | problems |\n|---|---|---|---|---|---|")
    for s in res["sessions"]:
        secs = s.get("seconds_to_verdict")
        saved = f"{s.get('votes_saved', 0)}{'' if s.get('votes_ok') else ' (wrong)'}"
        size = f"{s['report_bytes']:,}" if "report_bytes" in s else "-"
        print(f"| {s['session'] + 1} ({s['marker']}) | {'-' if secs is None else f'{secs:.1f}'} | "
              f"{len(s.get('votes_cast') or [])} | {saved} | {size} | {len(s['problems']) + len(s['leaks']) or 'none'} |")
    times = sorted(s["seconds_to_verdict"] for s in res["sessions"] if s.get("seconds_to_verdict") is not None)
    if times:
        print(f"\nseconds to verdict: first {times[0]:.1f}, median {times[len(times) // 2]:.1f}, last {times[-1]:.1f}; "
              f"the whole run {res['seconds']:.1f} s")
    print(f"server memory (RSS): {mb(res['rss_before_mb'])} before the sessions, {mb(res['rss_after_mb'])} after; "
          f"peak {mb(res['peak_mb'])}")
    print(f"checks: {'all passed' if res['ok'] else 'FAILED: ' + str(res['failed'])}")
    print(f"\nload average at the end: {os.getloadavg()[0]:.2f}")
    return 0 if res["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
