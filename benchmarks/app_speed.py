"""Dashboard speed: cold start to first render, time to score the demo with every available metric,
re-render from cache, peak memory. Prints a markdown table.

    DIALEVAL_NO_CACHE=1 .venv/bin/python benchmarks/app_speed.py [--skip-browser] [--metrics all]

``DIALEVAL_NO_CACHE=1`` for cold numbers: with the score cache on, the default metrics' demo scores come from the
shipped ``precomputed-demo.json.gz`` (and anything scored before from the cache folder), not from the models.

- *cold start*: ``streamlit run app.py`` (headless, free port) until /_stcore/health answers, and until
  Debian chromium (Playwright) shows the home page's title: ``tests/test_browser.py`` run as a script (its timed
  mode, one JSON line; a child process, so nothing is imported from the tests folder);
- *score the demo*: in this process, each available metric over the demo's 120 rows, timed from a cold
  metric (model loading included); a metric that cannot run (missing checkpoint) is listed as such;
- *re-render from cache*: ``streamlit.testing`` AppTest of the home and scores pages with the demo loaded:
  the first run scores (cold), the next runs read the cached scores (the number that should be < 1 s);
- *peak memory*: this process's max RSS after scoring everything, and the streamlit server's VmHWM after
  the browser flow.
Threads: torch uses ``DIALEVAL_THREADS`` (default: all cores); the machine is shared, so timings are
indicative (the output records the load average at the start and at the end).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def score_all(metrics: list[str]) -> list[dict]:
    import numpy as np

    from core.engine import score_examples
    from dashboard import loading
    data = loading.load_demo(ROOT / "demo" / "demo.jsonl")
    exs = data.comparison.examples()
    rows = []
    for m in metrics:
        t0 = time.perf_counter()
        try:
            r = score_examples(exs, [m]).results[m]
            dt = time.perf_counter() - t0
            rows.append({"metric": m, "seconds": dt, "mean A": float(np.nanmean(r.scores[:data.n])),
                         "mean B": float(np.nanmean(r.scores[data.n:])), "status": "ok"})
        except Exception as e:
            rows.append({"metric": m, "seconds": time.perf_counter() - t0, "mean A": None, "mean B": None,
                         "status": f"not available: {type(e).__name__}: {str(e)[:80]}"})
    return rows


def _best_rerun(at, repeats: int) -> float:
    """Fastest of ``repeats`` re-runs of an AppTest page (everything already cached)."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        at.run()
        times.append(time.perf_counter() - t0)
    return min(times)


def rerender(metrics: list[str], repeats: int = 3) -> dict:
    from streamlit.testing.v1 import AppTest
    out = {}
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=1800)
    at.session_state["metrics"] = metrics
    at.run()
    t0 = time.perf_counter()
    at.button(key="demo_from_home").click().run()
    out["home, first run (scores the demo)"] = time.perf_counter() - t0
    assert not at.exception, at.exception
    out["home, re-render from cache"] = _best_rerun(at, repeats)
    at.switch_page(str(ROOT / "views/scores.py"))
    t0 = time.perf_counter()
    at.run()
    out["scores page, first open"] = time.perf_counter() - t0
    out["scores page, re-render from cache"] = _best_rerun(at, repeats)
    t0 = time.perf_counter()
    at.selectbox(key="sort_by").set_value("id").run()
    out["scores page, re-sort"] = time.perf_counter() - t0
    assert not at.exception, at.exception
    return out


def browser(metrics: str) -> dict:
    """The real-browser flow, timed by ``tests/test_browser.py`` in its own process (it starts the server and
    chromium, and prints one JSON line last)."""
    r = subprocess.run([sys.executable, str(ROOT / "tests" / "test_browser.py"), "--metrics", metrics], cwd=ROOT,
                       capture_output=True, text=True)
    lines = r.stdout.strip().splitlines()
    if r.returncode != 0 or not lines:
        raise RuntimeError(f"tests/test_browser.py exited with {r.returncode}:\n{r.stdout[-2000:]}{r.stderr[-4000:]}")
    t = json.loads(lines[-1])
    return {"server ready (health ok)": t["server_ready"], "first render in chromium": t["first_render"],
            "load demo + score + headline (browser)": t["demo_scored"],
            "open scores page (browser)": t["scores_page"], "server peak RSS MB": t["server_peak_mb"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--metrics", default="all", help="'all' (every registered metric) or a comma list")
    ap.add_argument("--skip-browser", action="store_true")
    args = ap.parse_args()
    from core.scoring import available_metrics
    metrics = list(available_metrics()) if args.metrics == "all" else args.metrics.split(",")
    from core.cache import disabled_by_env
    load = os.getloadavg()[0]
    print(f"load average at start: {load:.2f} on {os.cpu_count()} cores; {len(metrics)} metrics; score cache "
          + ("off (cold)" if disabled_by_env() else "ON: cached and precomputed scores are read, not computed "
             "(DIALEVAL_NO_CACHE=1 for cold numbers)") + "\n")

    res = {}
    if not args.skip_browser:
        res.update(browser(",".join(metrics)))
    rows = score_all(metrics)
    ok = [r["metric"] for r in rows if r["status"] == "ok"]
    res["score demo (120 rows), every working metric, cold"] = sum(r["seconds"] for r in rows if r["status"] == "ok")
    res.update(rerender(ok))
    res["benchmark process peak RSS MB"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    print("| measurement | value |\n|---|---|")
    for k, v in res.items():
        unit = "" if "MB" in k else " s"
        print(f"| {k} | {'-' if v is None else f'{v:.2f}{unit}'} |")
    print("\n| metric | seconds (cold) | mean A (C-BM25) | mean B (SmolLM2) | status |\n|---|---|---|---|---|")
    for r in rows:
        fa = "-" if r["mean A"] is None else f"{r['mean A']:.3f}"
        fb = "-" if r["mean B"] is None else f"{r['mean B']:.3f}"
        print(f"| {r['metric']} | {r['seconds']:.2f} | {fa} | {fb} | {r['status']} |")
    print(f"\nload average at the end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
