"""Many users at once (issue 52): one dashboard server, several browser sessions driving it at the same time.

``streamlit run app.py`` headless on a free port (``test_browser.streamlit_server``: BLEU as the metric, the judge
run unasked on the verdict's page as under `make run`, no demo, a fresh cache folder) and Debian's chromium through
Playwright (one browser, one context per session, driven concurrently with asyncio; never ``playwright install``).
Each session uploads its own two-system JSON Lines file (its texts and system names carry a word no other session
uses), clicks "Compare" and waits for the verdict with the judge's result in it (the time to the verdict), downloads
the HTML report, opens the A/B judge page and votes on a few pairs (a different number and mix per session). Then:

- no session shows an exception or an error box;
- each session sees its own texts (verdict, sidebar, vote panel, report) and never another's, and its own vote
  counts;
- no vote is lost: ``<cache>/votes/<its comparison key>.jsonl`` holds each of its votes once, on its own pairs;
- the server's memory stays bounded (its RSS before and after, its peak).

It found sessions that ran the judge for the first time together failing ("Cannot copy out of meta tensor",
"cannot import name 'AutoModel' from 'transformers'": loading models is not thread-safe); ``dashboard.state.first_run``
now runs a first run of each kind alone.

    .venv/bin/pytest tests/test_dashboard_load.py -q      # 3 sessions (make test)
    .venv/bin/python tests/test_dashboard_load.py --sessions 8   # one run, one JSON line (benchmarks/dashboard_load.py)

Outside CI the test skips when chromium or playwright is missing (as tests/test_browser.py); under CI it fails.
"""
from __future__ import annotations

import asyncio
import json
import os
import re
import tempfile
import time
from pathlib import Path

import pytest

from dashboard.vote_store import as_kept, shown_swapped
from test_browser import (CHROME_ARGS, CHROMIUM, TIMEOUT_MS, TITLES, process_memory_mb, require_browser,
                          streamlit_server)

pytestmark = pytest.mark.slow  # a streamlit server, chromium and the judge: about a minute for 3 sessions

WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima",
         "mike", "november", "oscar", "papa"]
N_PAIRS = 8
VOTE_CYCLE = ["A", "B", "tie"]
# the server's resident memory after the run may not exceed this (MB): the models are loaded once per process,
# not once per session (one session's run peaks near 1.5 GB on a CPU)
MAX_RSS_MB = float(os.environ.get("DIALEVAL_LOAD_MAX_RSS_MB", 4096))
IDLE = ("() => !document.querySelector('[data-testid^=\"stStatusWidgetRunning\"]')"
        " && !document.querySelector('[data-stale=\"true\"]')")


def marker(k: int) -> str:
    """The word only session ``k``'s texts and system names carry ('zq' + a spelling-alphabet word: no page text
    has it, none is part of another)."""
    return "zq" + WORDS[k % len(WORDS)] + ("" if k < len(WORDS) else str(k))


def session_file(folder: Path, k: int) -> Path:
    """Session ``k``'s upload: two systems' replies to :data:`N_PAIRS` contexts, one JSON object a line."""
    m = marker(k)
    rows = []
    for i in range(N_PAIRS):
        ctx = [f"hello {m} , shall we talk about thing {i} ?"]
        ref = [f"yes {m} , thing {i} is a fine thing to talk about"]
        rows.append({"id": f"{m}-{i}", "system": f"{m}-long", "context": ctx, "references": ref,
                     "response": f"yes {m} , thing {i} is a fine thing to talk about today"})
        rows.append({"id": f"{m}-{i}", "system": f"{m}-short", "context": ctx, "references": ref,
                     "response": f"no {m} {i}"})
    path = folder / f"users-{m}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def session_votes(k: int) -> list[str]:
    """The votes session ``k`` gives, in order (on the first pairs: the panel moves to the next unvoted one):
    3, 4 or 5 of them, the mix rotated, so no two neighbouring sessions show the same counts."""
    return [VOTE_CYCLE[(k + j) % 3] for j in range(3 + k % 3)]


def counted(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def rss_mb(pid: int) -> float | None:
    """A process's resident memory now (MB): psutil if installed, else /proc (Linux); None when neither answers."""
    try:
        import psutil
        return psutil.Process(pid).memory_info().rss / 2**20
    except ImportError:
        pass
    except Exception:
        return None
    return process_memory_mb(pid, "VmRSS")


async def wait_idle(page) -> None:
    """test_browser.wait_idle, awaited: until Streamlit finished the current run."""
    await page.wait_for_timeout(500)
    await page.wait_for_function(IDLE, timeout=TIMEOUT_MS)
    await page.wait_for_timeout(300)


async def open_page(page, label: str) -> None:
    """test_browser.open_page, awaited: through the sidebar navigation (the session is kept)."""
    await page.locator('[data-testid="stSidebarNav"] a', has_text=label).first.click()
    await page.locator("h1", has_text=TITLES[label]).first.wait_for()
    await wait_idle(page)


async def shown_problems(page, where: str) -> list[str]:
    """Exceptions and error boxes on the page, each as 'where: text'."""
    boxes = page.locator('[data-testid="stException"], [data-testid="stAlertContentError"]')
    return [f"{where}: {t.strip()[:300]}" for t in await boxes.all_inner_texts()]


async def one_session(browser, url: str, k: int, n: int, upload: Path, out: Path) -> dict:
    """Session ``k`` of ``n``: upload, compare (timed to the verdict with the judge's result), report, votes.
    Returns what it saw; asserts nothing (the caller checks every session)."""
    mine, others = marker(k), [marker(j) for j in range(n) if j != k]
    res = {"session": k, "marker": mine, "problems": [], "leaks": [], "seen_own": {}}
    ctx = await browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    try:
        page = await ctx.new_page()
        page.set_default_timeout(TIMEOUT_MS)

        async def look(where: str) -> None:
            text = await page.locator("body").inner_text()
            res["seen_own"][where] = mine in text
            res["leaks"] += [f"{where}: {o}" for o in others if o in text]
            res["problems"] += await shown_problems(page, where)

        await page.goto(url)
        await page.locator("h1", has_text=TITLES["Home"]).first.wait_for()
        await wait_idle(page)
        await open_page(page, "Upload")
        await page.locator('[data-testid="stFileUploaderDropzoneInput"]').first.set_input_files(str(upload))
        compare = page.get_by_role("button", name="Compare these two systems")
        await compare.wait_for()
        await wait_idle(page)
        t0 = time.perf_counter()
        await compare.click()
        await page.locator(".st-key-verdict").first.wait_for()
        await page.get_by_text("Judge: prefers A in").first.wait_for()  # the verdict with the judge's result
        res["seconds_to_verdict"] = time.perf_counter() - t0
        await wait_idle(page)
        res["verdict"] = (await page.locator(".st-key-verdict").first.inner_text()).strip()
        res["key"] = (re.search(r"[?&]c=([0-9a-f]+)", page.url) or [None, None])[1]
        await look("home")

        async with page.expect_download() as got:
            await page.get_by_role("button", name="Download the report (HTML)").click()
        report = out / f"report-{k}.html"
        await (await got.value).save_as(report)
        html = report.read_text(encoding="utf-8", errors="replace")
        res["report_bytes"] = report.stat().st_size
        res["seen_own"]["report"] = mine in html
        res["leaks"] += [f"report: {o}" for o in others if o in html]

        await open_page(page, "A/B judge")
        await page.get_by_text("Order disagreement").first.wait_for()  # the judge's run, kept for this comparison
        votes = session_votes(k)
        for j, v in enumerate(votes):  # "A is better (A)", "Tie (T)", "B is better (B)" (each with its key drawn)
            await page.locator(f".st-key-vote_{v} button").click()
            await page.get_by_text(f"{counted(j + 1, 'pair')} voted").first.wait_for()
            await wait_idle(page)
        want = (f"{counted(len(votes), 'vote')} (A {votes.count('A')}, tie {votes.count('tie')}, "
                f"B {votes.count('B')})")
        res["vote_count_shown"] = await page.get_by_text(want).count() > 0
        res["votes_cast"] = votes
        await look("judge")
        side = await page.locator('[data-testid="stSidebar"]').inner_text()
        res["seen_own"]["sidebar"] = upload.name in side
    except Exception as e:  # one session's failure is reported with the others', not instead of them
        res["problems"].append(f"driver: {type(e).__name__}: {str(e)[:500]}")
        try:  # what the page showed then
            res["problems"] += await shown_problems(page, "at the failure")
            res["last_text"] = (await page.locator("body").inner_text())[-3000:]
        except Exception:
            pass
    finally:
        await ctx.close()
    return res


async def drive(url: str, n: int, files: list[Path], out: Path) -> list[dict]:
    from playwright.async_api import async_playwright
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROME_ARGS)
        try:
            return list(await asyncio.gather(*(one_session(browser, url, k, n, files[k], out) for k in range(n))))
        finally:
            await browser.close()


def kept_votes(cache: Path, key: str | None) -> list[dict]:
    path = cache / "votes" / f"{key}.jsonl"
    if not key or not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def run_sessions(n: int) -> dict:
    """Start a server, drive ``n`` sessions at once, and return what each saw with the server's memory:
    {"sessions": [...], "rss_before_mb", "rss_after_mb", "peak_mb", "vote_files", "seconds"}. Each session gets
    "votes_saved" (its votes file's lines) and "votes_ok" (every vote cast there once, on its own pairs)."""
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        cache, data, out = tmp / "cache", tmp / "data", tmp / "out"
        for d in (cache, data, out):
            d.mkdir()
        files = [session_file(data, k) for k in range(n)]
        env = {"DIALEVAL_DEMO": "0", "DIALEVAL_APP_JUDGE": "1", "DIALEVAL_CACHE": str(cache),
               "DIALEVAL_NO_CACHE": "1"}  # every session scores and judges afresh: no score cache to share
        with streamlit_server("bleu", **env) as (url, proc, ready):
            before = rss_mb(proc.pid)
            t0 = time.perf_counter()
            sessions = asyncio.run(drive(url, n, files, out))
            took = time.perf_counter() - t0
            after, peak = rss_mb(proc.pid), process_memory_mb(proc.pid)
        for s in sessions:
            got = kept_votes(cache, s.get("key"))
            cast = s.get("votes_cast") or []
            s["votes_saved"] = len(got)
            s["votes_kept"] = [(v["id"], v["vote"]) for v in got]
            # cast as pressed on the sides the panel showed; kept as the systems' (the sides shuffled per pair)
            s["votes_ok"] = (bool(cast) and [(v["id"], v["vote"]) for v in got]
                             == [(f"{s['marker']}-{i}", as_kept(v, shown_swapped(s.get("key"), i)))
                                 for i, v in enumerate(cast)]
                             and all(s["marker"] in " ".join(v["context"]) for v in got))
        vote_files = sorted(p.stem for p in (cache / "votes").glob("*.jsonl")) if (cache / "votes").exists() else []
    return {"sessions": sessions, "server_ready": ready, "rss_before_mb": before, "rss_after_mb": after,
            "peak_mb": peak, "vote_files": vote_files, "seconds": took, "cores": os.cpu_count()}


def check(run: dict, n: int) -> None:
    """Every session saw only its own data, raised nothing, reached the verdict, and kept every vote once."""
    sessions = run["sessions"]
    assert len(sessions) == n
    for s in sessions:
        assert s["problems"] == [], s
        assert s["leaks"] == [], s
        assert all(s["seen_own"].values()) and set(s["seen_own"]) == {"home", "report", "judge", "sidebar"}, s
        assert s["marker"] + "-long" in s["verdict"] or s["marker"] + "-short" in s["verdict"], s["verdict"]
        assert s["vote_count_shown"], s
        assert s["votes_ok"] and s["votes_saved"] == len(s["votes_cast"]), s
        assert s["report_bytes"] > 10_000, s
    assert sorted(s["key"] for s in sessions) == run["vote_files"]  # one votes file per session, no other
    assert len(set(run["vote_files"])) == n
    assert run["rss_after_mb"] is None or run["rss_after_mb"] < MAX_RSS_MB, run["rss_after_mb"]


def test_three_sessions_at_once_keep_to_their_own_data_and_votes():
    require_browser()
    run = run_sessions(3)
    print(f"seconds to verdict: {[round(s.get('seconds_to_verdict') or -1, 1) for s in run['sessions']]}; server RSS "
          f"{run['rss_before_mb']} MB before, {run['rss_after_mb']} MB after, peak {run['peak_mb']} MB")
    check(run, 3)
    for s in run["sessions"]:
        assert 0 < s["seconds_to_verdict"] < TIMEOUT_MS / 1000


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description="One load run: N sessions at once against one server; prints one JSON "
                                 "line (benchmarks/dashboard_load.py runs this). Exits 1 when a check fails.")
    ap.add_argument("--sessions", type=int, default=8)
    args = ap.parse_args()
    result = run_sessions(args.sessions)
    try:
        check(result, args.sessions)
        result["ok"], result["failed"] = True, None
    except AssertionError as e:
        result["ok"], result["failed"] = False, str(e)[:2000]
    print(json.dumps(result))
    raise SystemExit(0 if result["ok"] else 1)
