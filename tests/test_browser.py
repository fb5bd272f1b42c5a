"""Real-browser end-to-end tests: ``streamlit run app.py`` headless on a free local port (one server for the
module, started as `make run` starts it: ``DIALEVAL_DEMO=1``), driven by Debian's chromium through Playwright
(``executable_path``; never ``playwright install``).

    .venv/bin/pytest tests/test_browser.py -q            # the tests (metrics: bleu, for speed)
    .venv/bin/python tests/test_browser.py --screenshots # also writes docs/screenshots/*.png (the default
                                                         # metrics, and a real upload of ../shared usr-topical
                                                         # if present; long pages whole)
    .venv/bin/python tests/test_browser.py [--metrics M] # one timed run of the demo flow, one JSON line
                                                         # (what benchmarks/app_speed.py runs)
    .venv/bin/python tests/test_browser.py --first-visit # one timed first visit, one JSON line
                                                         # (what benchmarks/first_visit.py runs)

1. the demo flow: home, the Scores page's table and charts, every other page without an exception;
2. the one-line verdict (the same sentence as ``core``), the report download opened offline (verdict, 60 rows,
   no request leaves the file), a click on a row opening that pair, a refresh keeping a loaded comparison
   (not replaced by the demo), and a 600 px wide window where the verdict wraps and is not clipped.

Outside CI the tests skip when chromium or playwright is missing; under CI (CI=true) that is a failure.
"""
from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

pytestmark = pytest.mark.slow  # a streamlit server and chromium: ~30 s and up

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("DIALEVAL_CHROMIUM", "/usr/bin/chromium")
CHROME_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]
SHOTS = ROOT / "docs" / "screenshots"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
TIMEOUT_MS = int(os.environ.get("DIALEVAL_BROWSER_TIMEOUT_MS", 240_000))  # the machine is shared; the first scoring may wait for a model to load


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def streamlit_server(metrics: str = "bleu", **extra_env: str):
    """``streamlit run app.py`` on a free port; yields (url, process, seconds until /_stcore/health is ok).
    ``metrics`` "": the app's default metrics."""
    port = free_port()
    env = dict(os.environ, DIALEVAL_APP_METRICS=metrics, PYTHONUNBUFFERED="1", **extra_env)
    cmd = [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.headless", "true",
           "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
           "--server.fileWatcherType", "none"]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 120
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"streamlit exited with {proc.returncode}:\n{proc.stdout.read()}")
            try:
                with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.time() > deadline:
                raise TimeoutError("streamlit did not become healthy within 120 s")
            time.sleep(0.3)
        yield url, proc, time.perf_counter() - t0
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


@contextmanager
def browser_page(height: int = 1000):
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROME_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": height}, accept_downloads=True)
            page.set_default_timeout(TIMEOUT_MS)
            yield page
        finally:
            browser.close()


def wait_idle(page) -> None:
    """Wait until Streamlit finished the current run (no 'running' status widget) and has drawn every element (no
    placeholder left while an element's code loads)."""
    page.wait_for_timeout(500)
    page.wait_for_function(
        "() => !document.querySelector('[data-testid^=\"stStatusWidgetRunning\"]')"
        " && !document.querySelector('[data-stale=\"true\"]')"
        " && !document.querySelector('[data-testid=\"stMain\"] [data-testid=\"stSkeleton\"]')", timeout=TIMEOUT_MS)
    page.wait_for_timeout(300)


TITLES = {"Home": "which of two dialogue systems", "Upload": "Upload two systems", "Scores": "Per-example scores",
          "A/B judge": "A/B judge", "Correlation": "Correlation with human scores", "Leaderboard": "Leaderboard"}


def open_page(page, label: str) -> None:
    """Switch page through the sidebar navigation (keeps the session, unlike a new URL) and wait until
    the page's title is drawn and the run is over."""
    page.locator('[data-testid="stSidebarNav"] a', has_text=label).first.click()
    page.locator("h1", has_text=TITLES[label]).first.wait_for()
    wait_idle(page)


def run_flow(page, url: str) -> dict:
    """Load the demo, open the scores page, check table and chart, open every other page; returns timings
    (seconds)."""
    out = {}
    t0 = time.perf_counter()
    page.goto(url)
    page.get_by_text("which of two dialogue systems is better").wait_for()
    out["first_render"] = time.perf_counter() - t0
    wait_idle(page)
    t0 = time.perf_counter()
    if page.get_by_role("button", name="Load the built-in demo").count():  # without DIALEVAL_DEMO=1
        page.get_by_role("button", name="Load the built-in demo").click()
    page.get_by_text("Headline comparison").wait_for()
    page.locator('[data-testid="stDataFrame"]').first.wait_for()
    wait_idle(page)
    out["demo_scored"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    open_page(page, "Scores")
    page.locator('[data-testid="stDataFrame"]').first.wait_for()
    page.locator('[data-testid="stPlotlyChart"] .js-plotly-plot').first.wait_for()
    out["scores_page"] = time.perf_counter() - t0
    assert page.get_by_text("60 of 60 pairs").count() == 1
    assert page.locator('[data-testid="stPlotlyChart"]').count() >= 2
    assert page.locator(".js-plotly-plot .main-svg").count() >= 1, "plotly drew its SVG"
    for label in ("Upload", "A/B judge", "Correlation", "Leaderboard"):
        open_page(page, label)
        assert page.locator('[data-testid="stException"]').count() == 0, f"{label} page raised"
    return out


# Marks, in the page's own clock (ms since the navigation began), the first moment the verdict's sentence is in the
# document and the first moment the page is complete (no run in progress, the interval chart's SVG drawn): a
# MutationObserver sees them as they happen, where polling from Playwright's process lags by 0.2-0.4 s on 2 busy cores.
FIRST_VISIT_MARKS = """
window.__marks = {};
new MutationObserver(() => {
  const m = window.__marks, now = performance.now();
  const v = document.querySelector('.st-key-verdict h4');
  if (!('verdict' in m) && v && v.innerText.trim()) m.verdict = now;
  if ('verdict' in m && !('page_done' in m) && document.querySelector('.js-plotly-plot .main-svg')
      && !document.querySelector('[data-testid^="stStatusWidgetRunning"]')) m.page_done = now;
}).observe(document, {subtree: true, childList: true, characterData: true, attributes: true});
"""


def time_first_visit(page, url: str) -> dict:
    """A visit to a server that has not yet run the app, as ``make run`` starts it (the demo loaded on start):
    seconds from the navigation's start until the verdict's sentence is in the page (``verdict``; the precomputed
    judge's result is part of it) and until the page is complete (``page_done``: no run in progress, the interval
    chart drawn), as the page's own clock saw them (:data:`FIRST_VISIT_MARKS`)."""
    page.add_init_script(FIRST_VISIT_MARKS)
    page.goto(url)
    page.wait_for_function("() => 'page_done' in window.__marks", timeout=TIMEOUT_MS)
    marks = page.evaluate("() => window.__marks")
    return {"verdict": marks["verdict"] / 1000, "page_done": marks["page_done"] / 1000,
            "verdict_text": page.locator(".st-key-verdict").first.inner_text().strip()}


def process_memory_mb(pid: int, field: str = "VmHWM") -> float | None:
    """A process's memory from /proc (MB; Linux only, else None): ``VmHWM`` its peak resident memory, ``VmRSS``
    its resident memory now."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def sidebar_state(page) -> dict:
    """The sidebar as drawn: its width and right edge (px), whether Streamlit has it collapsed, and where the main
    column starts."""
    return page.evaluate("""() => { const s = document.querySelector('[data-testid="stSidebar"]').getBoundingClientRect();
        return {width: Math.round(s.width), right: Math.round(s.right),
                collapsed: document.querySelector('[data-testid="stSidebar"]').dataset.collapsed === 'true',
                main_left: Math.round(document.querySelector('[data-testid="stMain"]').getBoundingClientRect().left)}; }""")


def wait_sidebar(page, collapsed: bool) -> dict:
    """Wait until the sidebar is collapsed (or open) and its 300 ms slide is over; returns :func:`sidebar_state`."""
    page.wait_for_function("""(c) => { const s = document.querySelector('[data-testid="stSidebar"]');
        if (!s || (s.dataset.collapsed === 'true') !== c) return false;
        const r = s.getBoundingClientRect(); return c ? r.right <= 0 : r.left >= 0 && r.width >= 200; }""",
                           arg=collapsed)
    page.wait_for_timeout(400)
    return sidebar_state(page)


NARROW = 800
"""The narrow window of the screenshots (``<name>_800.png``): below app.NARROW_PX, so the sidebar is collapsed."""


def shoot(page, name: str, whole: bool = False, narrow: bool = True) -> None:
    """``<name>.png`` at the window's width (1400 px), then with ``narrow`` ``<name>_800.png`` of the same page in
    an 800 px window (the sidebar folds on the resize, and opens again on the way back). ``whole``: make the window
    as tall as Streamlit's scrolling main column first (Playwright's full_page only sees the window, since Streamlit
    scrolls inside ``stMain``), so the whole page is in the PNG."""
    assert page.locator('[data-testid="stException"]').count() == 0, f"{name}: the page raised"
    size = page.viewport_size
    _shot(page, SHOTS / f"{name}.png", whole)
    if narrow:
        page.set_viewport_size({"width": NARROW, "height": size["height"]})
        wait_sidebar(page, collapsed=True)
        wait_idle(page)
        _shot(page, SHOTS / f"{name}_{NARROW}.png", whole)
        page.set_viewport_size(size)
        wait_sidebar(page, collapsed=False)
        wait_idle(page)


def _shot(page, path: Path, whole: bool) -> None:
    """One PNG of the page at the window's width (``whole``: the whole main column, as :func:`shoot` says), the
    mouse moved off the page first (a table under it shows its tool bar over the line above)."""
    page.mouse.move(0, 0)
    page.wait_for_timeout(400)  # the tool bar fades out
    size = page.viewport_size
    if whole:
        h = page.evaluate("() => { const m = document.querySelector('[data-testid=\"stMain\"]');"
                          " m.scrollTop = 0; return m.scrollHeight; }")
        page.set_viewport_size({"width": size["width"], "height": min(int(h) + 40, 15000)})
        page.wait_for_timeout(1500)
        wait_idle(page)
    page.screenshot(path=str(path), full_page=True)
    if whole:
        page.set_viewport_size(size)
        page.wait_for_timeout(500)


def take_screenshots(page, url: str, upload: Path | None, pick: tuple[str, str]) -> None:
    """docs/screenshots/*.png: the demo's home with the judge run (and at 600 px), a pair opened on the
    Scores page, the report, the Upload and A/B judge pages, correlations on the shipped human-rated sample,
    and with ``upload`` (../shared usr-topical, uploaded through the browser, never copied) correlations,
    the judge re-fitted on votes and the leaderboard of its systems; each page at 1400 px and at 800 px
    (``<name>_800.png``, :func:`shoot`), and the home page at 800 px with the sidebar opened
    (``home_800_sidebar.png``)."""
    page.goto(url)
    page.locator(".st-key-verdict").first.wait_for()
    wait_idle(page)
    run_judge = page.get_by_role("button", name="Run the A/B judge over")  # a substring: the label has the time
    if run_judge.count():
        run_judge.click()
        page.get_by_text("Judge: prefers A").wait_for()
        wait_idle(page)
    shoot(page, "home")
    with page.expect_download() as got:
        page.get_by_role("button", name="Download the report (HTML)").click()
    report = Path(tempfile.mkdtemp()) / "report.html"
    got.value.save_as(report)
    narrow = page.context.browser.new_page(viewport={"width": 600, "height": 1000})
    narrow.set_default_timeout(TIMEOUT_MS)
    narrow.goto(page.url)
    narrow.locator(".st-key-verdict").first.wait_for()
    wait_idle(narrow)
    narrow.screenshot(path=str(SHOTS / "home_600.png"), full_page=False)
    narrow.set_viewport_size({"width": NARROW, "height": 1000})  # the sidebar folded, then opened by its button
    wait_sidebar(narrow, collapsed=True)
    narrow.get_by_test_id("stExpandSidebarButton").click()
    wait_sidebar(narrow, collapsed=False)
    wait_idle(narrow)
    narrow.screenshot(path=str(SHOTS / f"home_{NARROW}_sidebar.png"), full_page=False)
    narrow.goto(report.as_uri())
    narrow.set_viewport_size({"width": 1200, "height": 1400})
    narrow.screenshot(path=str(SHOTS / "report.png"), full_page=False)
    narrow.close()
    open_page(page, "Scores")
    grid = page.locator('[data-testid="stDataFrame"]').first.bounding_box()
    page.mouse.click(grid["x"] + 300, grid["y"] + 35 + 17)  # open the first row
    wait_idle(page)
    shoot(page, "scores", whole=True)
    open_page(page, "Upload")
    shoot(page, "upload")
    open_page(page, "A/B judge")
    shoot(page, "judge")
    open_page(page, "Correlation")
    page.get_by_role("button", name=re.compile("^Load the human-rated sample")).click()
    page.locator('[data-testid="stPlotlyChart"] .js-plotly-plot').first.wait_for()
    wait_idle(page)
    shoot(page, "correlation", whole=True)
    if upload is None:
        return
    open_page(page, "Upload")
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').first.set_input_files(str(upload))
    page.get_by_role("button", name="Compare these two systems").wait_for()
    wait_idle(page)
    for label, name in zip(("System A", "System B"), pick):  # two generated systems, not the gold reply
        page.locator('[data-testid="stSelectbox"]', has_text=label).first.click()
        page.locator('[role="option"]', has_text=name).first.click()
        wait_idle(page)
    page.get_by_role("button", name="Compare these two systems").click()
    page.locator(".st-key-verdict").wait_for(timeout=TIMEOUT_MS)  # "Compare" lands on the verdict
    wait_idle(page)
    open_page(page, "Correlation")
    page.locator('[data-testid="stPlotlyChart"] .js-plotly-plot').first.wait_for()
    wait_idle(page)
    shoot(page, "correlation_human_scores", whole=True)
    open_page(page, "A/B judge")
    run_judge = page.locator(".st-key-run_judge button")  # the shipped judge first: its win rate beside the re-fit's
    if run_judge.count():
        run_judge.click()
        page.get_by_text("Order disagreement").first.wait_for()
        wait_idle(page)
    page.get_by_text("Use this upload's human scores as votes").click()
    wait_idle(page)
    page.get_by_role("button", name=re.compile("^Re-fit the judge on")).click()
    page.get_by_role("button", name="Download these predictions (CSV)").wait_for(timeout=TIMEOUT_MS)
    wait_idle(page)
    shoot(page, "judge_votes", whole=True)
    open_page(page, "Leaderboard")
    page.get_by_text("Every pair", exact=True).wait_for(timeout=TIMEOUT_MS)
    wait_idle(page)
    shoot(page, "leaderboard")


def require_browser():
    missing = None
    if not Path(CHROMIUM).exists() and not shutil.which("chromium"):
        missing = f"chromium not found at {CHROMIUM} (apt-get install -y chromium)"
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            missing = "the playwright package is not installed"
    if missing:
        if IN_CI:
            pytest.fail(missing)
        pytest.skip(missing)


@pytest.fixture(scope="module")
def server_cache(tmp_path_factory) -> Path:
    """The module server's cache folder (uploads, votes given in place: ``<cache>/votes/<key>.jsonl``)."""
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def server(server_cache):
    """One dashboard for the module's tests, as `make run` starts it (the demo loads on a new session), with
    uploads kept under a fresh cache folder (:func:`server_cache`)."""
    require_browser()
    with streamlit_server("bleu", DIALEVAL_DEMO="1", DIALEVAL_CACHE=str(server_cache)) as (url, proc, _):
        yield url


def test_demo_in_real_browser(server):
    with browser_page() as page:
        leaving = []  # the product runs offline: nothing may be asked of another host (the favicon of a
        # material page icon came from fonts.gstatic.com until the app set its own page icon)
        page.on("request", lambda r: leaving.append(r.url) if urlsplit(r.url).hostname not in (
            None, "", "localhost", "127.0.0.1") else None)
        times = run_flow(page, server)
    assert times["first_render"] < 120
    assert leaving == []


def test_first_visit_timing_sees_the_verdict_then_the_whole_page_and_its_page_icon(server):
    """What benchmarks/first_visit.py times (a new session here: the module's server has run the app before), and
    the page icon: ⚖️ in an SVG data: URL (no request for it leaves the page: the test above)."""
    sentence, _ = demo_facts()
    with browser_page() as page:
        got = time_first_visit(page, server)
        icon = page.evaluate("() => document.querySelector(\"link[rel='shortcut icon']\").href")
    assert 0 < got["verdict"] <= got["page_done"] < TIMEOUT_MS / 1000
    assert spaced(got["verdict_text"]) == spaced(in_words(sentence))
    assert icon.startswith("data:image/svg+xml,") and "\u2696" in unquote(icon)


def demo_facts() -> tuple[str, list[tuple[str, ...]]]:
    """The demo's one-line verdict with BLEU (computed by core, as the CLI does) and each pair's context, in
    the Scores page's default order (BLEU's A - B, descending)."""
    from core.engine import score_comparison
    from core.verdict import build_verdict
    from dashboard.loading import load_demo
    from dashboard.tables import per_example_frame
    comp = load_demo(ROOT / "demo" / "demo.jsonl").comparison
    cs = score_comparison(comp, ["bleu"])
    order = per_example_frame(cs).sort_values("bleu A-B", ascending=False, kind="stable")["pair"].tolist()
    return build_verdict(comp, cs).sentence, [tuple(comp.pairs[i][0].context) for i in order]


def in_words(sentence: str) -> str:
    """The home page's reading of the demo's one-line verdict: the same verdict, display names and "between x and
    y" (``core.verdict.verdict_parts`` with ``dashboard.words.name``; the report and the CLI keep ``sentence``):
    its headline, the verdict at a glance (``verdict_glance``: evidence, track record), then the evidence in full."""
    from core.engine import score_comparison
    from core.verdict import build_verdict, verdict_glance, verdict_parts
    from dashboard import words
    from dashboard.loading import load_demo
    comp = load_demo(ROOT / "demo" / "demo.jsonl").comparison
    v = build_verdict(comp, score_comparison(comp, ["bleu"]))
    assert v.sentence == sentence
    head, rest = verdict_parts(v, words.name)
    glance = " ".join(f"{name}: {text}" for name, text in verdict_glance(v, words.name)[1:])
    return f"{head} {glance} In full: {rest[1:]}"


def spaced(text: str) -> str:
    """``text`` with each run of white space one space: the home page shows the verdict's headline, its glance and
    its evidence as blocks, which the browser's text of the box joins with line ends."""
    return " ".join(text.split())


NAV = ["Home", "Upload", "Scores", "A/B judge", "Correlation", "Leaderboard"]


def nav_labels(page) -> list[str]:
    """The sidebar navigation's labels (icons left out)."""
    return [t.strip().splitlines()[-1].strip() for t in
            page.locator('[data-testid="stSidebarNav"] a').all_inner_texts()]


def drill_context(page) -> list[str]:
    """The context turns the Scores page's drill-down shows (lines '[-k] turn')."""
    return [t.split("] ", 1)[1] for t in page.locator('[data-testid="stText"]').all_inner_texts()
            if re.match(r"^\[-?\d+\] ", t)]


def test_verdict_report_row_click_refresh_and_a_narrow_window(server, tmp_path):
    from playwright.sync_api import sync_playwright
    sentence, contexts = demo_facts()
    with browser_page() as page:
        page.goto(server)
        verdict = page.locator(".st-key-verdict").first
        verdict.wait_for()
        wait_idle(page)
        assert nav_labels(page) == NAV
        # 1. the one-line verdict: the same sentence the CLI prints, first under the title
        assert spaced(verdict.inner_text()) == spaced(in_words(sentence))  # its headline, then the evidence
        # 2. the report: downloaded, then opened offline in a fresh browser; nothing leaves the file
        with page.expect_download() as got:
            page.get_by_role("button", name="Download the report (HTML)").click()
        report = tmp_path / "report.html"
        got.value.save_as(report)
        # 3. a click on the fourth row of the Scores table opens that pair
        open_page(page, "Scores")
        grid = page.locator('[data-testid="stDataFrame"]').first.bounding_box()
        page.mouse.click(grid["x"] + 300, grid["y"] + 35 + 35 * 3 + 17)  # header and rows are 35 px high
        wait_idle(page)
        assert drill_context(page) == list(contexts[3])
        # 4. a refresh keeps a loaded comparison (here the human-rated sample, not the demo)
        open_page(page, "Upload")
        page.get_by_role("button", name="Load the human-rated sample").click()
        page.get_by_text("Human-rated sample loaded").wait_for()
        wait_idle(page)
        page.reload()
        page.locator("h1", has_text=TITLES["Upload"]).first.wait_for()
        wait_idle(page)
        side = page.locator('[data-testid="stSidebar"]').inner_text()
        assert "human-rated sample" in side and "C-BM25" not in side
        assert nav_labels(page) == NAV  # one navigation, the router's (no "app", no "state")
        address = page.url
    assert "c=" in address
    home = re.sub(r"/[A-Za-z_]+\?", "/?", address)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROME_ARGS)
        try:
            # the report, offline: every request but the file itself is refused and counted
            ctx = browser.new_context(offline=True)
            sent = []
            ctx.route("**/*", lambda r: (sent.append(r.request.url), r.continue_() if r.request.url.startswith(
                "file:") else r.abort()))
            doc = ctx.new_page()
            doc.goto(report.as_uri())
            assert doc.locator("#verdict").inner_text().strip() == sentence
            assert doc.locator("#examples tbody tr").count() == 60 and doc.locator("#shown").inner_text() == "60"
            assert doc.locator("svg").count() >= 2 and sent == [report.as_uri()]
            # 5. 600 px wide: the verdict wraps inside the window, whole
            narrow = browser.new_page(viewport={"width": 600, "height": 900})
            narrow.set_default_timeout(TIMEOUT_MS)
            narrow.goto(home)
            box = narrow.locator(".st-key-verdict").first
            box.wait_for()
            wait_idle(narrow)
            text = box.inner_text().strip()
            assert text.startswith("human reply is better than generated") and text.endswith(".")
            fit = narrow.evaluate("""() => { const b = document.querySelector('.st-key-verdict');
                const r = b.getBoundingClientRect(); const m = b.querySelector('[data-testid="stMarkdownContainer"]');
                return {right: r.right, width: window.innerWidth, sw: m.scrollWidth, cw: m.clientWidth,
                        page: document.documentElement.scrollWidth, lines: Math.round(m.getBoundingClientRect().height /
                        parseFloat(getComputedStyle(m.querySelector('h4') || m).lineHeight))}; }""")
            assert fit["right"] <= fit["width"] and fit["sw"] <= fit["cw"] and fit["page"] <= 600, fit
            assert fit["lines"] >= 2, fit  # it wrapped instead of running off the edge
        finally:
            browser.close()


def test_a_link_to_a_page_opened_first_after_a_start_gets_the_router(tmp_path):
    """Until the router (app.py) has called ``st.navigation`` once in the server's process, Streamlit runs a
    ``pages/`` folder beside the entry file as a multipage app of its own: with the pages in ``pages/``, a link to
    /scores opened first after a start showed a navigation of file names ("app", "correlation", ...), no sidebar
    and nothing loaded, until someone opened the home page. The pages live in views/ (app.py)."""
    require_browser()
    with streamlit_server("bleu", DIALEVAL_DEMO="1", DIALEVAL_APP_JUDGE="0", DIALEVAL_CACHE=str(tmp_path)) as (
            url, _, _), browser_page() as page:
        page.goto(url + "/scores")
        page.locator('[data-testid="stSidebar"]').get_by_text("Loaded", exact=True).first.wait_for(timeout=60_000)
        assert nav_labels(page) == NAV
        assert page.locator("h1").first.inner_text() == "Per-example scores"


def test_a_table_s_tool_bar_leaves_the_line_above_it_readable_on_a_phone(server):
    """On a phone (390 px, touch) a tap on a table leaves its tool bar shown, drawn above the table's top right
    corner: it covered the end of the heading above the Home page's headline table."""
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROME_ARGS)
        try:
            phone = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
            page = phone.new_page()
            page.set_default_timeout(TIMEOUT_MS)
            page.goto(server)
            table = page.locator('[data-testid="stDataFrame"]').first
            table.wait_for()
            wait_idle(page)
            table.scroll_into_view_if_needed()
            table.tap()
            page.wait_for_timeout(600)  # the tool bar fades in
            got = page.evaluate("""() => { const t = document.querySelector('[data-testid="stDataFrame"]');
                const el = t.closest('.stElementContainer'), bar = el.querySelector('[data-testid="stElementToolbar"]');
                return {bar: bar.getBoundingClientRect().top, shown: getComputedStyle(bar).opacity,
                        above: el.previousElementSibling.getBoundingClientRect().bottom,
                        text: el.previousElementSibling.innerText}; }""")
            assert got["text"] == "Headline comparison" and got["shown"] == "1", got
            assert got["bar"] >= got["above"] - 0.5, got
            # and the element after each table starts below its last row and scroll bar (the room above the table,
            # once a margin inside an element of fixed height, pushed the last row under the next caption)
            under = page.evaluate("""() => Array.from(document.querySelectorAll('[data-testid="stDataFrame"]')).map(t => {
                const next = t.closest('.stElementContainer').nextElementSibling;
                let bottom = 0; t.querySelectorAll('*').forEach(c => { const r = c.getBoundingClientRect();
                    if (r.height > 0) bottom = Math.max(bottom, r.bottom); });
                return next ? next.getBoundingClientRect().top - bottom : 0; })""")
            assert under and min(under) >= 0, under
        finally:
            browser.close()


if __name__ == "__main__":
    import argparse
    import json
    ap = argparse.ArgumentParser(description="--screenshots: write docs/screenshots/*.png. Without it: one timed run "
                                 "of the demo flow in chromium, printed as one JSON line (benchmarks/app_speed.py "
                                 "runs this).")
    ap.add_argument("--screenshots", action="store_true", help="write docs/screenshots/*.png")
    ap.add_argument("--metrics", default="bleu,ubleu,bert_ruber,mme")
    ap.add_argument("--to", default=str(SHOTS), help="where the screenshots go (default docs/screenshots)")
    ap.add_argument("--first-visit", action="store_true",
                    help="time one first visit (the default metrics, the demo loaded on start, the environment's "
                         "cache folder) and print it as one JSON line (benchmarks/first_visit.py runs this)")
    args = ap.parse_args()
    if args.first_visit:
        with streamlit_server("", DIALEVAL_DEMO="1") as (url, proc, ready), browser_page() as page:
            print(json.dumps({"server_ready": ready, **time_first_visit(page, url)}))
    elif args.screenshots:
        SHOTS = Path(args.to)
        SHOTS.mkdir(parents=True, exist_ok=True)
        from core.settings import shared_eval_file
        shared = shared_eval_file("usr-topical")
        with tempfile.TemporaryDirectory() as cache, \
                streamlit_server(args.metrics, DIALEVAL_DEMO="1", DIALEVAL_CACHE=cache) as (url, proc, ready), \
                browser_page(1400) as page:
            take_screenshots(page, url, shared if shared.exists() else None,
                             ("Argmax Decoding", "Nucleus Decoding (p = 0.5)"))
    else:
        # timed: a server without the automatic demo, so "demo_scored" runs from the click on "Load the built-in
        # demo" to the headline with every metric scored; the server keeps the environment's cache folder (model
        # conversions such as SmolLM2's float32 copy live there), so scores are cold only under DIALEVAL_NO_CACHE=1
        with streamlit_server(args.metrics, DIALEVAL_DEMO="0") as (url, proc, ready), browser_page() as page:
            times = run_flow(page, url)
            peak = process_memory_mb(proc.pid)
        print(json.dumps({"server_ready": ready, **times, "server_peak_mb": peak}))


def test_compare_lands_on_the_verdict_and_a_refresh_while_it_scores_keeps_the_upload(server, tmp_path):
    """Issue 52: after "Compare" the address had no ``c=`` while the verdict's page scored, so a refresh then showed
    the demo. Now "Compare" opens the verdict with the address naming the upload before scoring, and a refresh
    reopens the upload, never the demo."""
    from core.data import Example
    rows = []
    for i in range(400):  # enough rows that the refresh comes while BLEU scores on a busy machine
        ctx = [f"how was your day number {i} ?"]
        rows += [Example(f"r{i}", "alpha", ctx, f"it was fine , day {i} was long", [f"day {i} was good"], {}),
                 Example(f"r{i}", "beta", ctx, "no idea", [f"day {i} was good"], {})]
    upload = tmp_path / "refresh-me.jsonl"
    upload.write_text("\n".join(__import__("json").dumps(e.to_dict()) for e in rows) + "\n")
    with browser_page() as page:
        page.goto(server)
        page.locator(".st-key-verdict").first.wait_for()  # the demo, as under `make run`
        wait_idle(page)
        open_page(page, "Upload")
        page.locator('[data-testid="stFileUploaderDropzoneInput"]').first.set_input_files(str(upload))
        page.get_by_role("button", name="Compare these two systems").click()
        page.locator("h1", has_text=TITLES["Home"]).first.wait_for()  # on to the verdict
        page.wait_for_url(re.compile(r"[?&]c=[0-9a-f]{16}"))  # named while it scores, not only once it is done
        page.reload()
        page.locator(".st-key-verdict").first.wait_for()
        wait_idle(page)
        side = page.locator('[data-testid="stSidebar"]').inner_text()
        assert "refresh-me.jsonl" in side and "C-BM25" not in side, side
        assert "alpha" in page.locator(".st-key-verdict").first.inner_text()


def test_the_sidebar_folds_below_1000_px_opens_on_demand_and_stays_open_at_1400(server):
    """Issue 52: at 800 px the sidebar kept 300 px of the window (Streamlit's "auto" collapses it only at 768 px and
    below). Below app.NARROW_PX it starts collapsed, the main column gets the whole width, and the "»" button opens
    it with everything it holds (the navigation, the loaded comparison, the metrics); a resize past the width opens
    it again, and at 1400 px it is open from the start."""
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROME_ARGS)
        try:
            got = {}
            for width in (800, 1400):
                page = browser.new_context(viewport={"width": width, "height": 900}).new_page()
                page.set_default_timeout(TIMEOUT_MS)
                page.goto(server)
                page.locator(".st-key-verdict").first.wait_for()
                wait_idle(page)
                got[width] = wait_sidebar(page, collapsed=width < 1000)
                # the script's element takes no room and shows nothing: the page opens on its title
                assert page.locator('[data-testid="stLayoutWrapper"]:has(> .st-key-fold_sidebar)').is_hidden()
                assert page.locator('[data-testid="stMain"]').inner_text().lstrip().startswith("dialeval: which")
                if width == 800:
                    assert got[800]["width"] == 0 and got[800]["main_left"] == 0, got
                    page.get_by_test_id("stExpandSidebarButton").click()  # the "»" at the top left
                    opened = wait_sidebar(page, collapsed=False)
                    assert opened["width"] == 300, opened
                    side = page.locator('[data-testid="stSidebar"]')
                    assert nav_labels(page) == NAV and "Loaded" in side.inner_text() and side.get_by_text(
                        "Metrics").first.is_visible()
                    open_page(page, "Scores")  # the user opened it: it stays open from page to page
                    assert wait_sidebar(page, collapsed=False)["width"] == 300
                    page.get_by_test_id("stSidebarCollapseButton").locator("button").click()
                    wait_sidebar(page, collapsed=True)
                    page.set_viewport_size({"width": 1400, "height": 900})  # the user's choice is kept when wider
                    page.wait_for_timeout(800)
                    assert sidebar_state(page)["collapsed"], "a sidebar the user closed was opened by a resize"
                else:
                    assert got[1400]["width"] == 300 and got[1400]["main_left"] == 300, got
                    page.set_viewport_size({"width": 800, "height": 900})  # narrower: it folds, wider: it opens
                    assert wait_sidebar(page, collapsed=True)["main_left"] == 0
                    page.set_viewport_size({"width": 1400, "height": 900})
                    assert wait_sidebar(page, collapsed=False)["width"] == 300
                page.context.close()
        finally:
            browser.close()


def vote_panel_line(page, pattern: str = r"Pair \d+ of \d+"):
    """The voting panel's first line ("Pair 4 of 60 · 3 pairs voted ..."), once it reads ``pattern``."""
    return page.locator('[data-testid="stMarkdownContainer"] p', has_text=re.compile("^" + pattern)).first


def test_five_pairs_voted_by_keyboard_land_in_the_votes_file(server, server_cache):
    """Issue 52: the judge page's one-pair voting, driven by its keyboard shortcuts alone (A, T, B for the vote, N
    and P to move): five pairs voted, one skipped and voted on the way back; then one vote by a click, after which
    Space and Enter vote nothing more; one by its key right after "Vote blind" is turned on; the votes file
    (``<cache>/votes/``) holds exactly those seven votes, each on its pair's context and replies."""
    from core.judges.pairs import load_votes
    from dashboard.loading import load_demo
    comp = load_demo(ROOT / "demo" / "demo.jsonl").comparison
    votes_dir = server_cache / "votes"
    before = {f: f.read_bytes() for f in votes_dir.glob("*.jsonl")} if votes_dir.exists() else {}
    # key, then the panel's pair (1-based) and count of voted pairs once the key has been handled
    keys = [("a", 2, 1), ("t", 3, 2), ("b", 4, 3), ("n", 5, 3), ("a", 6, 4), ("p", 5, 4), ("p", 4, 4), ("b", 6, 5)]
    with browser_page() as page:
        page.goto(server)
        page.locator(".st-key-verdict").first.wait_for()
        wait_idle(page)
        open_page(page, "A/B judge")
        n = len(comp.pairs)
        assert vote_panel_line(page).inner_text().startswith(f"Pair 1 of {n} · 0 pairs voted")
        for key, at, n_voted in keys:
            page.locator("body").press(key)  # focus on the page, not in a field
            vote_panel_line(page, rf"Pair {at} of {n} · {n_voted} pairs? voted").wait_for(timeout=60_000)
            wait_idle(page)
        assert page.locator('[data-testid="stException"]').count() == 0
        assert page.get_by_text("5 votes (A 2, tie 1, B 2)").count() == 1
        # a click on a vote keeps the button focused: Space (to scroll) voted again on the next pair
        page.locator(".st-key-vote_A button").click()
        vote_panel_line(page, rf"Pair 7 of {n} · 6 pairs voted").wait_for(timeout=60_000)
        wait_idle(page)
        page.keyboard.press(" ")
        page.keyboard.press("Enter")
        page.wait_for_timeout(1500)
        wait_idle(page)
        assert vote_panel_line(page).inner_text().startswith(f"Pair 7 of {n} · 6 pairs voted")
        # the keys work at once after "Vote blind" is turned on (its toggle kept the focus: B did nothing)
        toggle = page.locator(".st-key-vote_blind input")
        page.locator(".st-key-vote_blind label").first.click()
        page.wait_for_function("() => document.querySelector('.st-key-vote_blind input').checked", timeout=60_000)
        page.wait_for_timeout(500)
        wait_idle(page)
        assert toggle.is_checked()
        page.keyboard.press("b")
        vote_panel_line(page, rf"Pair 8 of {n} · 7 pairs voted").wait_for(timeout=60_000)
    changed = [f for f in votes_dir.glob("*.jsonl") if before.get(f) != f.read_bytes()]
    assert len(changed) == 1, changed
    got = load_votes(changed[0])
    want = {0: "A", 1: "tie", 2: "B", 3: "B", 4: "A", 5: "A", 6: "B"}  # pair 4 skipped by N, voted B after P, P
    assert len(got) == 7
    from dashboard.vote_store import as_kept, shown_swapped
    key = changed[0].stem  # the comparison's key names its votes file
    for v, (i, vote) in zip(got, sorted(want.items())):  # as pressed on the sides shown; kept as the systems'
        a, b = comp.pairs[i]
        assert (v.context, v.response_a, v.response_b, v.vote) == (list(a.context), a.response, b.response,
                                                                   as_kept(vote, shown_swapped(key, i)))


# Text Streamlit cut with an ellipsis (a button's, a metric's, a select's label: each is drawn with
# ``text-overflow: ellipsis``), in the page and the sidebar; a table's cells are drawn on a canvas and scroll instead.
CUT_LABELS = """() => [...document.querySelectorAll('[data-testid="stMain"] *, [data-testid="stSidebar"] *')].filter(e =>
    getComputedStyle(e).textOverflow === 'ellipsis' && e.scrollWidth > e.clientWidth + 1 && e.innerText.trim()
    && e.getBoundingClientRect().width > 0).map(e => e.innerText.trim())"""


PAGE_PATHS = {"Upload": "upload", "Scores": "scores", "A/B judge": "judge", "Correlation": "correlation",
              "Leaderboard": "leaderboard"}  # each page's address (the router's url paths)


@pytest.mark.parametrize("width", [800, 1000])
def test_no_label_is_cut_on_any_page_at_800_or_1000_px(server, width):
    """Issue 52: at 800 px labels were cut ("Download the rep…", "Judge win rate of …"); the voting panel's six
    buttons on one row cut "Previous (P)" even at 1400 px. Every page of the demo at 800 px (the sidebar folded) and
    at 1000 px (the sidebar open: the narrowest page beside it) has no label cut with an ellipsis."""
    with browser_page() as page:
        page.set_viewport_size({"width": width, "height": 1000})
        page.goto(server)
        page.locator(".st-key-verdict").first.wait_for()
        wait_idle(page)
        wait_sidebar(page, collapsed=width < 1000)
        query = urlsplit(page.url).query
        cut = {}
        for label in NAV:
            if label != "Home":
                page.goto(f"{server}/{PAGE_PATHS[label]}?{query}")
            page.locator("h1", has_text=TITLES[label]).first.wait_for()
            wait_idle(page)
            got = page.evaluate(CUT_LABELS)
            if got:
                cut[label] = got
        assert cut == {}, cut



def test_a_report_with_long_system_names_fits_a_phone(tmp_path):
    """Systems named by 160-character checkpoint paths widened the report's page to about 1800 px at any window:
    tables and paragraphs kept each name on one line. Every element but the scrolling chart boxes fits 390 px."""
    import json
    from core.cli import main
    words = "the a cat dog sat ran on mat big small red blue".split()
    a_name, b_name = "model-checkpoint-" + "x" * 150 + "-v1", "model_checkpoint_" + "y" * 150 + "_v2"
    rows = []
    for i in range(12):
        ref = [words[(i + k) % len(words)] for k in range(8)]
        rows += [{"id": f"c{i}", "context": [f"what about topic {i}?"], "response": " ".join(ref[:keep] + ["ok"]),
                  "references": [" ".join(ref)], "system": name} for name, keep in ((a_name, 6), (b_name, 3))]
    data = tmp_path / "in.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = tmp_path / "report.html"
    assert main(["report", str(data), "--metrics", "bleu", "--no-judge", "--n-boot", "200", "--n-perm", "200",
                 "--quiet", "-o", str(report)]) == 0
    with browser_page() as page:
        page.set_viewport_size({"width": 390, "height": 800})
        page.goto(report.as_uri())
        assert a_name in page.content()
        over = page.evaluate("""() => Array.from(document.querySelectorAll('body *')).filter(e =>
            !e.closest('.wide') && e.getBoundingClientRect().right > window.innerWidth + 1).map(e => e.tagName)""")
        assert page.evaluate("document.documentElement.scrollWidth") <= 390 and over == [], over
