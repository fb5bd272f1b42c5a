"""The dashboard's Streamlit glue, in one module: session state, choices that survive a refresh, the engine's
results cached per loaded comparison, the judge's run, the sidebar, and the helpers that keep user text inert.

Pages import this and draw; every number comes from ``core`` (the engine scores, ``core.verdict`` builds the
verdict, the other modules of ``dashboard`` make the tables). Metric instances load once per process (``core.scoring``);
each metric's result over one loaded comparison is kept in a process-wide store keyed by the content, so
switching pages, re-sorting, adding a metric or refreshing the browser never re-scores what was already scored.

**What survives a refresh.** A loaded comparison is kept on disk (``dashboard.loading.keep_upload``: the uploaded
files by SHA-256 and how they were read, under the comparison's content key in the cache folder) and the
page's address carries that key (``?c=KEY``) with the chosen metrics (``m=``) and every choice a page keeps
(:func:`kept`). A refresh, or the same address opened later on this server, reopens the same comparison with the
same choices; the scores come back from the process-wide store.
"""
from __future__ import annotations

import functools
import os
import re
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Container, Iterator, Sequence

import streamlit as st

from core.data import Comparison
from core import time_estimates
from core.engine import (ComparisonScores, cached_judge_comparison, comparison_scores, estimate_comparison,
                         estimate_work, judge_comparison, renamed_metric, score_examples)
from core.models.device import native_bfloat16, offered_devices, use_device
from core.formatting import counted
from core.outputs import OutputError
from core.progress import ProgressBar
from core.scoring import JudgeOutput, Options
from core.settings import SettingError, minilm_precision
from core.verdict import JudgeSummary, Verdict, build_verdict, summarize_judge
from dashboard import judging, loading, tables, vote_store, words
from dashboard.loading import Loaded

JUDGE_NAME = time_estimates.JUDGE_TIMED  # the judge the dashboard runs: the shipped one
APP_DIR = Path(__file__).resolve().parent.parent
DEMO_PATH = APP_DIR / "demo" / "demo.jsonl"
RATED_DEMO_PATH = APP_DIR / "demo" / "rated_sample.jsonl"
PAGES = {"home": "views/home.py", "upload": "views/upload.py", "scores": "views/scores.py",
         "judge": "views/judge.py", "correlation": "views/correlation.py", "leaderboard": "views/leaderboard.py"}


# ------------------------------------------------------------------------------------------------
# what is loaded


def loaded() -> Loaded | None:
    return st.session_state.get("loaded")


def set_loaded(data: Loaded, uploads: Sequence[tuple[str, bytes]] = ()) -> None:
    """Make ``data`` the loaded comparison, keep it on disk so the address reopens it, and put its key in the
    address. Choices tied to the previous comparison (the drill-down pair, filters) are reset."""
    st.session_state["loaded"] = data
    try:
        loading.keep_upload(data, uploads, live_keys())
    except (OSError, OutputError, ValueError) as e:  # a read-only cache folder: all works but a refresh cannot reopen it
        # said on the page shown next (the Upload page moves on to the verdict)
        st.session_state["_keep_failed"] = ("The comparison could not be kept for reopening after a refresh: "
                                            f"{plain(str(e))}")
    for k in ("drill", "flt_text", "flt_winner"):
        st.session_state.get("_kept", {}).pop(k, None)
        url_choices().pop(k, None)
        st.session_state.pop(k, None)
    st.query_params["c"] = data.key


@st.cache_resource(show_spinner=False)
def _live_store() -> dict:
    return {}


def _session_id() -> str | None:
    from streamlit.runtime.scriptrunner import get_script_run_ctx
    ctx = get_script_run_ctx()
    return ctx.session_id if ctx is not None else None


def mark_live(*keys: str | None) -> None:
    """Note that this browser session shows the kept uploads ``keys`` (its comparison, its leaderboard file), so
    :func:`live_keys` spares them while it is open."""
    sid = _session_id()
    if sid is not None:
        _live_store()[sid] = {k for k in keys if k}


def live_keys() -> set[str]:
    """The kept uploads a session still open on this server shows (``loading.prune_uploads`` never removes them).
    A session Streamlit no longer holds (its tab closed) is forgotten here."""
    store = _live_store()
    try:
        from streamlit.runtime import Runtime
        runtime = Runtime.instance()
        for sid in [s for s in store if not runtime.is_active_session(s)]:
            store.pop(sid, None)
    except Exception:  # no runtime (a test's script runner): every session noted counts as live
        pass
    return {k for keys in list(store.values()) for k in keys}


def load_demo() -> None:
    set_loaded(_builtin("demo"))


def load_rated_demo() -> None:
    set_loaded(_builtin("rated-demo"))


@st.cache_resource(show_spinner=False)
def _builtin(kind: str) -> Loaded:
    if kind == "demo":
        return loading.load_demo(DEMO_PATH)
    return loading.load_demo(RATED_DEMO_PATH, loading.RATED_DEMO_NAME, "rated-demo")


def ensure_loaded() -> None:
    """Before any page draws: reopen the comparison the address names (``?c=KEY``), else, under `make run`
    (``DIALEVAL_DEMO=1``), load the demo once per session (so "clear" on the Upload page sticks), unless the
    address named a comparison this server does not hold: then the page says so instead of showing the demo."""
    url_choices()
    if loaded() is not None:
        return
    key = st.query_params.get("c")
    if key and not st.session_state.get("_reopen_failed") == key:
        data = loading.reopen(key, DEMO_PATH.parent)
        if data is not None:
            st.session_state["loaded"] = data
            return
        st.session_state["_reopen_failed"] = key
    if (os.environ.get("DIALEVAL_DEMO") == "1" and not st.session_state.get("_demo_autoloaded")
            and not st.session_state.get("_reopen_failed")):  # a shared link that fails says so, never the demo
        st.session_state["_demo_autoloaded"] = True
        load_demo()


def require_data() -> Loaded | None:
    """The loaded comparison, or a note with a one-click demo button."""
    data = loaded()
    if data is None:
        if st.session_state.get("_reopen_failed"):
            st.warning("The comparison this address names is no longer kept on this server; load it again.")
        st.info("No data loaded yet. Upload two systems' responses on the Upload page, or try the built-in demo.")
        if st.button("Load the built-in demo", key="demo_from_" + st.session_state.get("_page", "page")):
            load_demo()
            st.rerun()
        st.page_link(PAGES["upload"], label="Go to Upload")
    return data


def kept_board() -> str | None:
    """The key of the file the Leaderboard page ranks when it was uploaded there (``lb=`` in the address)."""
    value = st.session_state.get("_kept", {}).get("lb")
    if value is None:
        value = url_choices().get("lb")
    return value or None


def keep_board(name: str, raw: bytes) -> str | None:
    """Keep a file uploaded on the Leaderboard page and put its key in the address (``lb=``), so a refresh
    reopens it; None (with a warning) where it cannot be kept."""
    try:
        key = loading.keep_board(name, raw, live_keys())
    except (OSError, OutputError, ValueError) as e:
        st.warning(f"The file could not be kept for reopening after a refresh: {plain(str(e))}")
        return None
    st.session_state.setdefault("_kept", {})["lb"] = key
    url_choices().pop("lb", None)
    mark_live(loaded().key if loaded() is not None else None, key)
    if st.query_params.get("lb") != key:
        st.query_params["lb"] = key
    return key


def forget_board() -> None:
    st.session_state.setdefault("_kept", {})["lb"] = ""
    url_choices().pop("lb", None)


# ------------------------------------------------------------------------------------------------
# choices that survive page switches and refreshes


def url_choices() -> dict[str, str]:
    """The choices the address held when this session started (not yet taken by a page's widget): they are
    kept, and written back, until the page that owns them is opened."""
    if "_url_choices" not in st.session_state:
        st.session_state["_url_choices"] = {k: v for k, v in st.query_params.items() if k not in ("c", "m")}
    return st.session_state["_url_choices"]


def kept(key: str, default: Any, options: Sequence | None = None) -> Any:
    """Seed the widget ``key`` with its kept value (this session's last choice, else the address's, else
    ``default``; one of ``options`` when given) before it is drawn; the widget passes
    ``on_change=state.keep, args=(key,)`` so a new choice is kept. Streamlit forgets a widget's value when
    its page is left; this copy does not, and :func:`sync_address` writes it into the address."""
    store = st.session_state.setdefault("_kept", {})
    if key not in store:
        raw = url_choices().pop(key, None)
        store[key] = _parse(raw, default) if raw is not None else default
    value = store[key]
    if options is not None and value not in options:
        value = default if default in options else (options[0] if len(options) else None)
        store[key] = value
    if key not in st.session_state or (options is not None and st.session_state[key] not in options):
        st.session_state[key] = value
    return value


def keep(key: str) -> None:
    st.session_state.setdefault("_kept", {})[key] = st.session_state[key]


def forget(key: str, values: Container) -> None:
    """Drop the kept choice of ``key`` (and the widget's value) when it is one of ``values``, so the next
    :func:`kept` gives the default: a choice made on another file that means nothing on this one."""
    store = st.session_state.setdefault("_kept", {})
    if store.get(key, st.session_state.get(key)) in values:
        store.pop(key, None)
        st.session_state.pop(key, None)


def _parse(raw: str, default: Any) -> Any:
    if isinstance(default, bool):
        return raw == "1"
    if isinstance(default, int):
        try:
            return int(raw)
        except ValueError:
            return default
    return raw


def sync_address() -> None:
    """Write the loaded comparison's key, the metrics and every kept choice that differs from nothing into the
    page's address, so a refresh or a shared link reopens the same view."""
    want: dict[str, str] = {}
    data = loaded()
    if data is not None:
        want["c"] = data.key
    if "metrics" in st.session_state:
        want["m"] = ",".join(st.session_state["metrics"])
    elif "m" in st.query_params:  # not read yet (the sidebar reads it): kept as the address has it
        want["m"] = st.query_params["m"]
    want.update(url_choices())
    for k, v in st.session_state.get("_kept", {}).items():
        if v is None or v == "" or (isinstance(v, (list, tuple))):
            continue
        want[k] = "1" if v is True else "0" if v is False else str(v)
    for k in set(st.query_params) - set(want):
        del st.query_params[k]
    for k, v in want.items():
        if st.query_params.get(k) != v:
            st.query_params[k] = v


# ------------------------------------------------------------------------------------------------
# metrics and scores


@st.cache_resource(show_spinner=False)
def available_metrics() -> dict[str, str]:
    from core.scoring import available_metrics as avail
    return avail()


@st.cache_resource(show_spinner=False)
def _result_store() -> dict:
    return {}


def selected_metrics() -> list[str]:
    avail = list(available_metrics())
    if "metrics" not in st.session_state:
        url = st.query_params.get("m")
        env = os.environ.get("DIALEVAL_APP_METRICS") or None  # e.g. "bleu" for a fast start (tests, benchmarks)
        chosen = url if url is not None else env
        # an address with an empty m= is a choice of no metric (kept after a refresh), not "the defaults"
        st.session_state["metrics"] = (address_metrics(chosen, avail) if chosen is not None
                                       else loading.default_metrics(avail))
    return [m for m in st.session_state["metrics"] if m in avail]


def address_metrics(chosen: str, avail: Sequence[str]) -> list[str]:
    """The metrics an address's ``m=`` (or DIALEVAL_APP_METRICS) names: a renamed one read as its new name, one
    that is not a metric here left out with a note on the page (a shared link of another version)."""
    names, left_out = [], []
    by_fold = {a.casefold(): a for a in avail}  # case ignored, as on the command line
    for m in (m.strip() for m in chosen.split(",") if m.strip()):
        m = renamed_metric(m) or by_fold.get(m.casefold(), m)
        (names if m in avail else left_out).append(m)
    if left_out:
        st.toast(f"Not a metric here, left out of this address's choice: {', '.join(left_out)}")
    return list(dict.fromkeys(names))


def _sync_metrics() -> None:
    st.session_state["metrics"] = list(st.session_state["metrics_widget"])


def sidebar() -> Any:
    """The metrics to compute (the choice is kept across pages and in the address), below an empty box that
    :func:`show_loaded` fills once the page has run (so it never lags one page behind)."""
    box = st.sidebar.container()
    with st.sidebar:
        avail = available_metrics()
        st.session_state["metrics_widget"] = selected_metrics()
        st.multiselect("Metrics", list(avail), key="metrics_widget", on_change=_sync_metrics, format_func=words.name,
                       help="How each system's replies are scored; each metric is computed once per upload and kept. "
                            "Which to trust: see About the metrics below.")
        with st.expander("About the metrics"):
            st.caption(f"When signals disagree, trust what the verdict trusts ({words.verdict_basis()}); the "
                       "others are shown as diagnostics. The counts come from rated sets with several systems.")
            formulas = st.toggle("Show how each is computed", key="about_formulas")
            for k, v in avail.items():
                st.markdown(f"**{plain(words.name(k))}**")
                st.text(words.help_text(k, v) + (f"\n{k}: {v}" if formulas else ""))
        kept("judge_auto", judge_by_default())  # kept across pages and in the address, as the metrics are
        if st.session_state.pop(_JUDGE_ON, False):  # a judge button was pressed (ask_judge): on from now
            if not st.session_state["judge_auto"]:  # said, not flipped behind the user's back
                st.toast("\"Judge every pair\" is on again (sidebar): the verdict and the report use the judge.")
            st.session_state["judge_auto"] = True
            keep("judge_auto")
        st.toggle("Judge every pair", key="judge_auto", on_change=keep, args=("judge_auto",),
                  help="On: the learned A/B judge reads every pair once the metrics are scored, and the verdict "
                       "and the report use it (as `dialeval compare`). Off: they leave it out (as `dialeval "
                       "compare --no-judge`); a judge button on the Home or A/B judge page turns it on.")
        offered = offered_devices()
        if st.session_state.get("device", "cpu") not in offered:
            st.session_state["device"] = "cpu"
        st.selectbox("Device", offered, key="device",
                     help="Where the models run (as the CLI's --device): auto picks a CUDA GPU, then an Apple "
                          "GPU, then the CPU; a GPU is listed only where this machine has one. Scores are kept "
                          "per device.")
        try:
            precision = minilm_precision()
        except SettingError as e:  # every model pass would raise it: say it once, here, and stop the page
            st.error(str(e))
            st.stop()
        else:
            if precision == "bfloat16" and not native_bfloat16():
                st.warning("DIALEVAL_PRECISION=bfloat16, but this CPU has no bfloat16 kernels: MiniLM runs slower "
                           "than in float32 here (0.3-0.7x measured). Unset it.")
            elif precision == "bfloat16":
                st.caption("MiniLM's encodings run in bfloat16 (DIALEVAL_PRECISION): υBLEU, BERT-RUBER and ADEM "
                           "2 to 3 times as fast on a CPU with bfloat16 kernels; their scores move a little "
                           "(benchmarks/PRECISION.md) and are cached apart from float32's.")
    return box


_JUDGE_ON = "_judge_on"  # set by ask_judge: the sidebar turns "Judge every pair" on when it is next drawn


def judge_by_default() -> bool:
    """Whether pages that give a verdict run the judge without being asked (the sidebar's toggle; on unless
    ``DIALEVAL_APP_JUDGE=0``, as tests and benchmarks that time other things set it)."""
    if "judge_auto" not in st.session_state:
        return os.environ.get("DIALEVAL_APP_JUDGE", "1").strip() not in ("0", "false", "no")
    return bool(st.session_state["judge_auto"])


def options() -> Options:
    """The run options the dashboard scores with (the device chosen in the sidebar; CPU by default)."""
    return Options(device=st.session_state.get("device", "cpu"))


def route(navigation) -> None:
    """Run the page ``navigation`` chose between the chrome every page shares: reopen what the address names,
    the sidebar (metrics; the "Loaded" box filled after the page ran, so it never lags one page behind), and
    the address written from the final state."""
    ensure_loaded()
    data = loaded()
    mark_live(data.key if data is not None else None, kept_board())
    sync_address()  # before the page runs: a refresh while it scores reopens the comparison
    if st.session_state.get("_keep_failed"):
        st.warning(st.session_state.pop("_keep_failed"))
    st.html(TABLE_CSS)
    box = sidebar()
    navigation.run()
    show_loaded(box)
    sync_address()


def show_loaded(box: Any) -> None:
    """The sidebar's "Loaded" box: what is loaded, its unmatched rows, and a damaged score cache this server found
    (``core.cache.damage_notes``: scoring goes on without it, so the page's numbers stand, but nothing is kept)."""
    from core.cache import damage_notes
    data = loaded()
    with box:
        for damaged in damage_notes():
            st.warning(plain(damaged.removeprefix("note: ")))
        if data is None:
            st.caption("Nothing loaded yet.")
        else:
            st.caption("Loaded")
            st.text(f"{data.name}\nA: {data.comparison.system_a}\nB: {data.comparison.system_b}\n"
                    f"{counted(data.n, 'pair')}")
            unmatched = data.comparison.describe_unmatched()
            if unmatched:  # on every page: rows without a partner are never dropped silently
                with st.expander(f"{counted(len(unmatched), 'unmatched row')}, not compared"):
                    st.text(words.pasted_in_words("\n".join(unmatched)))


class StepClock:
    """The time left of the current step of a long run, from that step's own rate so far: a new description or
    total, or a count that goes back, starts a new step (the judge's MiniLM encoding and SmolLM2 reading share
    one count but not one rate; MME runs one step per sub-metric group)."""

    def __init__(self):
        self.key: tuple | None = None
        self.t0, self.start, self.done = time.monotonic(), 0, 0

    def left(self, done: int, total: int, desc: str) -> str:
        """``", about N s left in this step"``, or "" while there is no rate yet."""
        now = time.monotonic()
        if self.key != (desc, total) or done < self.done:
            self.key, self.t0, self.start = (desc, total), now, done
        self.done = done
        elapsed, moved = now - self.t0, done - self.start
        return f", about {elapsed * (total - done) / moved:.0f} s left in this step" if (
            moved > 0 and done < total and elapsed >= ProgressBar.SURE_AFTER) else ""


def progress_bar(first: str = "starting", estimate: float = 0.0):
    """A Streamlit progress bar and its ``progress(done, total, desc)`` callback, which shows the counts, the time
    left of the current step (:class:`StepClock`) and, given the run's ``estimate`` in seconds, the time so far
    against it (``time_estimates.time_so_far``). Call ``.empty()`` on the bar when done."""
    bar = st.progress(0.0, text=first)
    clock, started = StepClock(), time.monotonic()

    def progress(done: int, total: int, desc: str) -> None:
        frac = min(1.0, done / total) if total else 1.0
        bar.progress(frac, text=f"{words.progress_words(desc)} {done}/{total}{clock.left(done, total, desc)}"
                                f"{time_estimates.time_so_far(time.monotonic() - started, estimate)}")
    return bar, progress


_FAILED = "_run_failed_"  # + a run button's key: why its last run failed, shown above it once


def clicked(key: str) -> bool:
    """Whether this page run was started by a click on the button ``key``. Read it before any run button of the
    page is drawn: drawing a button disabled (:func:`run_button`) clears its click."""
    return bool(st.session_state.get(key))


def run_button(label: str, key: str, where: Any = st, busy: bool = False, **kwargs) -> bool:
    """A button that starts a long run (the judge, a re-fit, scoring every system): True in the page run its
    click started, where it is drawn disabled, so that a second click cannot stop the run and start it over
    (Streamlit reruns the page on a click). Do the work inside :func:`running` (same ``key``), which draws the
    page again when it ends: the button is enabled again however the run ends, since only the run of the click
    draws it disabled. A failure :func:`running` kept is shown above the button. ``busy``: another run of the page
    goes on in this page run (:func:`clicked`, read before the page's first run button is drawn), so this button
    is drawn disabled too: a click on it would stop that run. ``kwargs`` go to ``st.button``.

    The click is read from the session state before the button is drawn: Streamlit discards what a disabled
    widget sends, so the button itself returns False in that run."""
    failed = st.session_state.pop(_FAILED + key, None)
    if failed:
        where.error(failed)
    started = clicked(key)
    where.button(label, key=key, disabled=started or busy, **kwargs)
    return started


@contextmanager
def running(key: str, failed: str) -> Iterator[None]:
    """Around the work :func:`run_button` ``key`` started: the page is drawn again when it ends (with the result,
    or with the button enabled). An exception is not raised: the page drawn again says ``failed: Type: message``
    above the button."""
    try:
        yield
    except Exception as e:  # a missing checkpoint, a model that will not load: shown, not fatal
        st.session_state[_FAILED + key] = f"{failed}: {type(e).__name__}: {plain(str(e))}"
    st.rerun()


def scoring_estimate(metrics: Sequence[str], opts: Options, examples, demo: bool = False) -> tuple[float, Any]:
    """Before ``metrics`` score ``examples``: the seconds it should take (``core.engine.estimate_work``: the rows
    the score cache lacks, at the pace this process has measured) and a caption saying so (``.empty()`` it when
    done; none under 3 s). ``demo``: the built-in demo, whose scores ship precomputed for some kinds of CPU: the
    caption says why they are computed here."""
    est = estimate_work(examples, metrics, opts)
    total = est.scoring_seconds + est.first_read_seconds
    if total < 3:
        return total, st.empty()
    why = ""
    if demo:
        from core.cache import shipped_precomputed
        from core.models.device import active_device, device_key
        layer = shipped_precomputed()
        kinds = sorted({k for p in (layer.paths if layer else []) for k in precomputed_kinds(p)})
        why = (f" The demo's scores ship precomputed for {', '.join(kinds) or 'no kind of CPU'}; this machine is "
               f"{device_key(active_device())}, so they are computed once here and kept.")
    first = "; SmolLM2 is read once for this cache folder" if est.first_read_seconds else ""
    caption = st.caption(f"Scoring {counted(len(examples), 'row')} with {plain(words.names(metrics))}: about {total:.0f} s "
                         f"on this machine (models load once per session; rows scored before are read back{first})."
                         f"{why}")
    return total, caption


@functools.lru_cache(maxsize=4)
def precomputed_kinds(path) -> tuple[str, ...]:
    """The kinds of CPU (``core.models.device.device_key``) a shipped precomputed layer was computed on (the file
    read once per process)."""
    from core.cache import read_precomputed
    return tuple(read_precomputed(path).get("about", {}).get("computed_on", []))


def get_scores(data: Loaded, metrics: Sequence[str]) -> ComparisonScores:
    """``ComparisonScores`` for the chosen metrics, scoring the missing ones through the engine with a
    progress bar. A metric that fails (e.g. its checkpoint is missing) is reported and left out."""
    store = _result_store()
    comp = data.comparison
    key = per_device(data.key)  # scores are kept per device
    examples = comp.examples()
    errors = st.session_state.setdefault("metric_errors", {})
    opts = options()
    todo = [m for m in metrics if (key, m) not in store and (key, m) not in errors]
    if todo:
        estimate, about = scoring_estimate(todo, opts, examples, demo=data.name == loading.DEMO_NAME)
        started = time.monotonic()
        bar, _ = progress_bar("scoring ...")
        for j, m in enumerate(todo):
            bar.progress(j / len(todo), text=f"{words.name(m)} ({j + 1}/{len(todo)}): loading"
                                             f"{time_estimates.time_so_far(time.monotonic() - started, estimate)}")
            clock = StepClock()

            def progress(done: int, total: int, desc: str, m=m, j=j, clock=clock) -> None:
                frac = (j + (done / total if total else 1.0)) / len(todo)
                said = words.progress_words(desc)
                bar.progress(min(1.0, frac), text=f"{words.name(m)} ({j + 1}/{len(todo)}): {said} {done}/{total}"
                                                  f"{clock.left(done, total, desc)}"
                                                  f"{time_estimates.time_so_far(time.monotonic() - started, estimate)}")
            try:
                with first_run(m):
                    store[(key, m)] = score_examples(examples, [m], opts, progress=progress).results[m]
            except Exception as e:  # a broken or untrained metric must not take the dashboard down
                errors[(key, m)] = f"{type(e).__name__}: {e}"
        bar.empty()
        about.empty()
    for m in metrics:
        if (key, m) in errors:
            st.warning(f"{words.name(m)} could not be computed: {plain(errors[(key, m)])}")
    results = {m: store[(key, m)] for m in metrics if (key, m) in store}
    return comparison_scores(comp, results)


def metric_results(key, metrics: Sequence[str], examples, progress=None) -> dict:
    """Each metric's result over ``examples`` (e.g. every system of a multi-system file), scored once through
    the engine and kept under ``key``."""
    store = _result_store()
    opts = options()
    key = per_device(key)
    todo = [m for m in metrics if (key, m) not in store]
    _, about = scoring_estimate(todo, opts, examples) if todo else (0.0, st.empty())
    for m in todo:
        with first_run(m):
            store[(key, m)] = score_examples(examples, [m], opts, progress=progress).results[m]
    about.empty()
    return {m: store[(key, m)] for m in metrics}


@st.cache_data(show_spinner=False)
def cached_verdict(key: str, metrics: tuple[str, ...], judged: bool, _comp: Comparison,
                   _cs: ComparisonScores | None, _judge: JudgeSummary | None) -> Verdict:
    """The verdict (``core.verdict``, the same defaults as ``dialeval compare``) for one loaded comparison;
    ``_cs`` None: no metric chosen (or none could score), the judge's verdict alone."""
    return build_verdict(_comp, _cs, _judge)


@st.cache_data(show_spinner=False)
def cached_frame(key: str, metrics: tuple[str, ...], _cs: ComparisonScores):
    return tables.per_example_frame(_cs)


def report_maker(data: Loaded, verdict: Verdict, cs: ComparisonScores) -> Callable[[], bytes]:
    """The shareable HTML report (``core.html_report``) of one verdict, as a callable for ``st.download_button``:
    Streamlit runs it when the button is pressed, so a page view no longer renders a report nobody asked for
    (0.3-0.4 s of the demo's first visit, seconds on a large upload). A failure gives a page that says why."""
    def make() -> bytes:
        from core.html_report import render_html
        try:
            return render_html(verdict, data.comparison, cs, data.inputs).encode("utf-8")
        except Exception as e:  # it runs outside the page: a failure would otherwise be a download that never ends
            import html
            return (f"<!doctype html><meta charset='utf-8'><title>dialeval: no report</title><p>The report could "
                    f"not be made: {html.escape(f'{type(e).__name__}: {e}')}</p><p>`dialeval report` on the "
                    "command line makes the same file.</p>").encode("utf-8")
    return make


# ------------------------------------------------------------------------------------------------
# the judge


@st.cache_resource(show_spinner=False)
def _judge_store() -> dict:
    return {}


@st.cache_resource(show_spinner=False)
def _first_runs() -> tuple[threading.RLock, set]:
    return threading.RLock(), set()  # re-entrant: a first run inside another (in one session) does not wait on itself


@contextmanager
def first_run(kind: str) -> Iterator[None]:
    """Run the enclosed engine call alone in this process until a run of ``kind`` (a metric id, "judge", "refit")
    has finished once on the chosen device. A first run loads its models, and loading them is not thread-safe: two
    sessions that ran the judge for the first time at once failed with "Cannot copy out of meta tensor" or "cannot
    import name 'AutoModel' from 'transformers'" (tests/test_dashboard_load.py). Later runs only use the loaded
    models and go side by side."""
    lock, done = _first_runs()
    key = per_device(kind)
    if key in done:
        yield
        return
    with lock:
        yield
        done.add(key)


def use_chosen_device() -> str:
    """Make the sidebar's device the one the judge's passes run on (scoring does so through its options);
    returns it. An unavailable device raises ``DeviceError`` with its one line."""
    return use_device(options().device)


def per_device(key: Any) -> Any:
    """``key`` for results computed on the sidebar's device (scores, the judge's and the re-fit's outputs are kept
    per device): ``key`` itself on the CPU, ``(key, device)`` elsewhere."""
    device = options().device
    return (key, device) if device != "cpu" else key


def judge_output(data: Loaded) -> JudgeOutput | None:
    """The judge's output over the loaded pairs on the chosen device, if it has been run in this process, or if
    the score cache (or the demo's precomputed scores) holds every pair: then it is read, never run."""
    store, key = _judge_store(), per_device(data.key)
    if key not in store and key not in _judge_looked_up():
        _judge_looked_up().add(key)  # looked up once per comparison and device, not on every rerun of a page
        try:
            use_chosen_device()
            found = cached_judge_comparison(data.comparison)
        except Exception:  # an unreadable cache must not take the page down; the judge can still be run
            found = None
        if found is not None:
            store[key] = found
    return store.get(key)


@st.cache_resource(show_spinner=False)
def _judge_looked_up() -> set:
    return set()


def judge_seconds(n_pairs: int, comparison: Any = None, examples: Sequence[Any] | None = None) -> float:
    """About how long the shipped judge takes (``core.engine.estimate_work``): over the pairs of ``comparison``
    the score cache lacks, or over ``n_pairs`` new pairs whose replies are the rows ``examples`` (a leaderboard's)
    or unread; SmolLM2's first read in this cache folder included."""
    est = (estimate_comparison(comparison, judge=JUDGE_NAME) if comparison is not None else
           estimate_work(judge=JUDGE_NAME, n_pairs=n_pairs, rows_read=examples))
    return (est.judge_seconds or 0.0) + est.first_read_seconds


def run_judge(data: Loaded) -> JudgeOutput | None:
    """Run the shipped judge over every loaded pair (through the engine) with a progress bar, which says that
    leaving the page stops the run (Streamlit ends a page's script when another page opens). A missing or
    incompatible checkpoint raises: run it inside :func:`running`, which shows the error."""
    use_chosen_device()  # first: what MME and the reading hold is kept per device
    bar, progress = progress_bar("loading the judge (stay on this page while it runs: leaving it stops the run)",
                                 estimate=judge_seconds(data.n, data.comparison))  # as the button said
    try:
        with first_run("judge"):
            _judge_store()[per_device(data.key)] = judge_comparison(data.comparison, progress=progress)
    finally:
        bar.empty()
    return judge_output(data)


def ask_judge(data: Loaded) -> None:
    """A judge button was pressed for ``data``: run the judge unless its output is at hand, then turn "Judge every
    pair" on (at the next drawing of the sidebar: a widget's value cannot change once it is drawn), so the verdict
    reads it, the address keeps that, and a refresh or a shared link gives the same verdict. A run that fails or
    is stopped leaves the toggle as it was."""
    if judge_output(data) is None:
        run_judge(data)
    if judge_output(data) is not None:
        turn_judge_on()


def turn_judge_on() -> None:
    """Turn "Judge every pair" on at the next drawing of the sidebar (a widget's value cannot change once drawn)."""
    st.session_state[_JUDGE_ON] = True


def verdict_judge(data: Loaded, button_key: str) -> JudgeSummary | None:
    """The judge's summary the verdict reads: with "Judge every pair" on, the judge's output, run without a press
    where there is none (:func:`judge_unasked`, its error shown above the button ``button_key``); off, none, even
    where the score cache holds its output, so "off" gives the verdict of ``dialeval compare --no-judge``."""
    if not judge_by_default():
        return None
    found = judge_summary(data)
    if found is None and judging.judge_status()[0]:
        found = judge_unasked(data, button_key)
    return found


def judge_unasked(data: Loaded, key: str) -> JudgeSummary | None:
    """Run the judge over ``data`` without a button press (:func:`judge_by_default`), once: a run that failed is
    not tried again on this comparison (its error is shown above the button ``key``, which runs it by hand)."""
    tried = st.session_state.setdefault("judge_unasked_failed", set())
    if per_device(data.key) in tried:
        return None
    try:
        run_judge(data)
    except Exception as e:  # a missing checkpoint, a model that will not load: shown, not fatal
        tried.add(per_device(data.key))
        st.session_state[_FAILED + key] = f"The judge could not run: {type(e).__name__}: {plain(str(e))}"
        return None
    return judge_summary(data)


def judge_summary(data: Loaded, dimension: str | None = None) -> JudgeSummary | None:
    out = judge_output(data)
    return None if out is None else summarize_judge(data.comparison, out, dimension)


@st.cache_resource(show_spinner=False)
def _refit_store() -> dict:
    return {}


def refit(data: Loaded) -> dict | None:
    """The judge re-fitted on votes for this comparison, if any: {"votes_key", "n_votes", "output" (over
    every loaded pair), "shipped", "curve", "rest", "folds"} (kept for the process, so a refresh keeps it)."""
    return _refit_store().get(per_device(data.key))


def set_refit(data: Loaded, result: dict) -> None:
    _refit_store()[per_device(data.key)] = result


# ------------------------------------------------------------------------------------------------
# votes given in place (A/B page)


def votes(data: Loaded) -> dict[int, str]:
    """Pair index -> 'A' / 'tie' / 'B' for the votes given on this comparison (kept on disk)."""
    store = st.session_state.setdefault("_votes", {})
    if data.key not in store:
        try:
            store[data.key] = vote_store.load_pair_votes(data.key, data.comparison)
        except Exception as e:  # noqa: BLE001 (never lost in silence: the file is set aside, and said)
            try:
                where = f"the file is set aside as {plain(str(vote_store.set_aside(data.key)))}"
            except OSError as moved:  # it stays where it is, and is not written over in this session
                st.session_state.setdefault("_votes_not_saved", set()).add(data.key)
                where = (f"it could not be set aside ({plain(str(moved))}), so the votes you give now are kept for "
                         "this session only (and in the download)")
            st.warning(f"Your votes kept for this comparison could not be read ({plain(str(e)[:300])}); {where}; "
                       "voting starts again from none.")
            store[data.key] = {}
    return store[data.key]


def set_votes(data: Loaded, new: dict[int, str]) -> None:
    st.session_state.setdefault("_votes", {})[data.key] = dict(new)
    if data.key in st.session_state.get("_votes_not_saved", ()):  # an unreadable file is never written over
        return
    try:
        vote_store.save_pair_votes(data.key, data.comparison, new)
    except (OSError, OutputError) as e:  # kept for this session only; the download still has them
        st.warning(f"Your votes could not be saved for a later session: {plain(str(e))}")


# ------------------------------------------------------------------------------------------------
# user text stays inert


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:])")


def plain(text: str) -> str:
    """User text made inert for Streamlit's markdown (labels, captions, alerts): every markdown
    character is backslash-escaped, so a system called ``[x](http://...)`` stays that text."""
    return _MD_SPECIAL.sub(r"\\\1", str(text))


def plotly_plain(text) -> str:
    """User text made inert for plotly, which renders a subset of HTML (<a>, <b>, <br>) in labels."""
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


CHART_CONFIG = {"displaylogo": False, "modeBarButtonsToRemove": [
    "zoom2d", "pan2d", "select2d", "lasso2d", "zoomIn2d", "zoomOut2d", "autoScale2d", "resetScale2d"]}
"""Plotly's tool bar cut to its download button: on a phone the full bar is always shown and covered the
charts' titles (a bug hunt at 390 px); zooming stays on drag and double-click."""


TABLE_CSS = """<style>@media (max-width: 640px), (hover: none) {
.stElementContainer:has(> [data-testid="stDataFrame"]), .stElementContainer:has(> * > [data-testid="stDataFrame"])
{ margin-top: 1.75rem; }
}</style>"""
"""A table's tool bar (show columns, download, search, full screen) is drawn above its top right corner and
reaches 1.75rem past the gap between elements; on a phone it stays shown after a tap and covered the end of the
line above the table (a heading, a caption: measured at 390 px). On narrow or touch screens the tables keep that
room free, above the element that holds the table: a margin on the table itself, inside an element whose height
Streamlit sets, pushed its last row under the next element. Only style: ``st.html`` adds it to the page without an
element (desktop layout unchanged)."""


def chart(fig, key: str, where: Any = st) -> None:
    """A plotly figure across the width of ``where`` (the page, or a column) with :data:`CHART_CONFIG`'s tool bar."""
    where.plotly_chart(fig, width="stretch", key=key, config=CHART_CONFIG)


FOLD_CHARS = 1200
"""A text longer than this is shown folded (its first characters, then "Show all" on demand): a 500,000-character
reply printed whole made the page grow past 12,000 px."""


def show_text(label: str, text: str, key: str | None = None, where: Any = None) -> None:
    """``text`` under the caption ``label``, folded past :data:`FOLD_CHARS` (:func:`folded_text`)."""
    where = st if where is None else where
    where.caption(plain(label))
    folded_text(text, key or f"fold_{label}", where)


def folded_text(text: str, key: str, where: Any = None) -> None:
    """``text`` as text, wrapped; past :data:`FOLD_CHARS` its start and a "Show all" toggle (``key``) that draws
    the whole text in a box of fixed height that scrolls, so the page never grows with it."""
    where = st if where is None else where
    text = text if text else "(empty)"
    if len(text) <= FOLD_CHARS:
        where.text(text)
        return
    whole = where.toggle(f"Show all {len(text):,} characters", key=key)
    if whole:
        where.container(height=320).text(text)
    else:
        where.text(text[:FOLD_CHARS].rstrip() + " …")


def interval_figure(rows, title: str, shared_axis: bool):
    """A - B with its 95 % interval per row (``core.verdict.MetricComparison``: metrics, or slices of one
    metric), coloured by the winner. ``shared_axis`` False gives every row its own x axis (metrics differ in
    scale); labels sit on the y axis, so nothing overlaps the axes' numbers."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots
    colour = {"A": "#1f77b4", "B": "#d95f02", None: "#7f7f7f"}
    n = max(len(rows), 1)
    # rows apart by more than their axis's numbers, so a row's dashed zero never reaches the numbers above it
    fig = make_subplots(rows=1 if shared_axis else n, cols=1, vertical_spacing=0.5 / n if n > 1 else 0.1)
    for k, r in enumerate(rows, start=1):
        where = dict(row=1 if shared_axis else k, col=1)
        shown = plotly_plain(words.name(r.metric))
        fig.add_trace(go.Scatter(x=[r.diff], y=[shown], mode="markers", showlegend=False,
                                 marker=dict(size=10, color=colour[r.winner]), name=shown,
                                 error_x=dict(type="data", symmetric=False, array=[r.high - r.diff],
                                              arrayminus=[r.diff - r.low], color=colour[r.winner])), **where)
        if not shared_axis:
            lo, hi = min(r.low, 0.0), max(r.high, 0.0)
            if lo == lo and hi == hi and hi > lo:  # finite interval: keep 0 visible with a margin
                pad = 0.08 * (hi - lo)
                fig.update_xaxes(range=[lo - pad, hi + pad], **where)
            fig.add_vline(x=0, line_dash="dash", line_color="grey", **where)
    if shared_axis:
        fig.add_vline(x=0, line_dash="dash", line_color="grey")
    fig.update_layout(title=title, height=90 + (45 if shared_axis else 85) * n, margin=dict(l=10, r=10, t=60, b=10))
    return fig
