"""The buttons that start a long run (the judge, a re-fit, scoring every system) are disabled while it runs, so a
second click cannot stop the run and start it over, and are enabled again however the run ends (dashboard/state.py:
run_button, running). The judge itself is replaced by a stand-in: these tests take seconds."""
import json
import sys

import pytest

from core.data import Example
from dashboard import judging, loading, words

AppTest = pytest.importorskip("streamlit.testing.v1").AppTest


def _tiny(n: int = 3, rated: bool = False):
    """``n`` pairs no cache holds (the page offers to run the judge on them); ``rated``: people prefer A in the
    even pairs, B in the odd ones (enough votes for a re-fit from 10 pairs)."""
    rows = [Example(id=str(i), system=s, context=[f"run button test {i}"], response=f"{s} says {i}",
                    references=[f"x says {i}"], scores={"Overall": 5.0 if (s == "x") == (i % 2 == 0) else 1.0}
                    if rated else {}) for i in range(n) for s in ("x", "y")]
    return loading.make_loaded("run-button test", rows, None, "x", "y", [f"run-button test {n} {rated}"])


@pytest.fixture
def app(repo_root, monkeypatch):
    """``app(run_judge, **tiny)``: the dashboard with ``_tiny(**tiny)`` loaded and ``run_judge`` standing in for the
    judge's run (``dashboard.state.run_judge``; the judge counts as installed, its time estimate as 1 s)."""
    def make(run_judge, **tiny):
        at = AppTest.from_file(str(repo_root / "app.py"), default_timeout=60)
        at.session_state["metrics"] = ["bleu"]
        at.session_state["judge_auto"] = False  # the sidebar's "Judge every pair" off: the buttons run it
        at.run()  # nothing loaded yet: imports dashboard.state, which the stand-ins replace parts of
        state = sys.modules["dashboard.state"]
        monkeypatch.setattr(state, "run_judge", run_judge)
        monkeypatch.setattr(state, "judge_seconds", lambda n, comparison=None, examples=None: 1.0)
        monkeypatch.setattr(judging, "judge_status", lambda: (True, "ok"))
        at.session_state["loaded"] = _tiny(**tiny)
        return at
    return make


@pytest.mark.parametrize("page, key", [("views/judge.py", "run_judge"), ("views/home.py", "home_run_judge")])
def test_the_judge_button_is_disabled_while_the_judge_runs(app, page, key):
    """The stand-in stops the page where the judge would be computing: the page as it is then is what the
    browser shows during the run. The button was clickable then (a second click started the run over)."""
    import streamlit as st
    calls = []

    def run_judge(data):
        calls.append(data.key)
        st.stop()
    at = app(run_judge)
    at.switch_page(page).run()
    assert not at.button(key=key).disabled
    at.button(key=key).click().run()
    assert not at.exception, at.exception
    assert calls and at.button(key=key).disabled  # drawn disabled during the run
    at.run()  # the run was stopped (as by the app's Stop): the button is enabled again, and nothing runs unasked
    assert len(calls) == 1 and not at.button(key=key).disabled


def test_the_home_page_judges_every_pair_unasked_once_and_not_again_after_a_failure(app):
    """With "Judge every pair" on (the default) the home page runs the judge without a press, so the verdict has
    it; a run that fails is said above the button and not tried again on every redraw."""
    calls = []

    def run_judge(data):
        calls.append(data.key)
        raise RuntimeError("no weights")
    at = app(run_judge)
    at.session_state["judge_auto"] = True
    at.switch_page("views/home.py").run()
    assert not at.exception, at.exception
    assert len(calls) == 1 and [e.value for e in at.error] == ["The judge could not run: RuntimeError: no weights"]
    at.run()
    assert len(calls) == 1 and not at.button(key="home_run_judge").disabled


def test_a_judge_run_that_ends_leaves_the_button_enabled_and_runs_once(app):
    calls = []
    at = app(lambda data: calls.append(data.key))  # a run that leaves no result: the page still offers it
    at.switch_page("views/judge.py").run()
    at.button(key="run_judge").click().run()
    assert not at.exception and not at.error, (at.exception, at.error)
    assert len(calls) == 1 and not at.button(key="run_judge").disabled
    at.run()
    assert len(calls) == 1


def test_a_judge_run_that_raises_says_so_and_enables_the_button_again(app):
    calls = []

    def run_judge(data):
        calls.append(data.key)
        raise RuntimeError("no weights")
    at = app(run_judge)
    at.switch_page("views/judge.py").run()
    at.button(key="run_judge").click().run()
    assert not at.exception, at.exception
    assert [e.value for e in at.error] == ["The judge could not run: RuntimeError: no weights"]
    assert len(calls) == 1 and not at.button(key="run_judge").disabled
    at.button(key="run_judge").click().run()  # and it can be run again
    assert len(calls) == 2 and not at.button(key="run_judge").disabled


def test_a_re_fit_that_raises_keeps_its_error_on_the_page_drawn_again(app, monkeypatch):
    """The re-fit's error was shown and at once wiped: the page was drawn again after the re-fit however it
    ended. Now the page drawn again shows it, above the button, enabled."""
    from core.judges import pairwise

    def load_judge(*args, **kwargs):
        raise RuntimeError("no weights")
    monkeypatch.setattr(pairwise, "load_judge", load_judge)
    at = app(lambda data: None, n=12, rated=True)
    at.switch_page("views/judge.py").run()
    at.radio(key="votes_source").set_value("Use this upload's human scores as votes").run()
    at.button(key="tune_votes").click().run()
    assert not at.exception, at.exception
    assert [e.value for e in at.error] == ["Re-fitting on the votes failed: RuntimeError: no weights"]
    assert not at.button(key="tune_votes").disabled


def test_while_the_judge_or_the_re_fit_runs_the_other_ones_button_is_disabled(app, monkeypatch):
    """During the judge's run the re-fit's button below it was left over from the page before, clickable, and a
    click stopped the judge's run to start the re-fit. The judge's run now starts once the page is drawn, with the
    re-fit's button disabled; during a re-fit the judge's button is disabled too. Both are enabled afterwards."""
    import streamlit as st

    from core.judges import pairwise
    calls = []

    def stop_here(*args, **kwargs):  # where the judge or the re-fit would be computing
        calls.append(args)
        st.stop()
    at = app(stop_here, n=12, rated=True)
    at.switch_page("views/judge.py").run()
    at.radio(key="votes_source").set_value("Use this upload's human scores as votes").run()
    assert not at.button(key="run_judge").disabled and not at.button(key="tune_votes").disabled
    at.button(key="run_judge").click().run()
    assert not at.exception, at.exception
    assert len(calls) == 1 and at.button(key="run_judge").disabled and at.button(key="tune_votes").disabled
    at.run()
    assert not at.button(key="run_judge").disabled and not at.button(key="tune_votes").disabled
    monkeypatch.setattr(pairwise, "load_judge", stop_here)
    at.button(key="tune_votes").click().run()
    assert not at.exception, at.exception
    assert len(calls) == 2 and at.button(key="run_judge").disabled and at.button(key="tune_votes").disabled
    at.run()
    assert len(calls) == 2 and not at.button(key="run_judge").disabled and not at.button(key="tune_votes").disabled


def test_judge_every_pair_off_leaves_a_cached_judge_out_until_its_button_is_pressed(repo_root, monkeypatch, tmp_path):
    """The demo's judge is precomputed, so with "Judge every pair" off the verdict still read it: the toggle did
    nothing a user could see. Off gives the verdict without the judge (as ``dialeval compare --no-judge``); the
    home page's button adds the judge's reading, running nothing, by turning the toggle on, which the address
    keeps (a refresh gives the same verdict)."""
    import streamlit as st
    import core.engine
    from core.cache import read_precomputed
    from core.settings import checkpoint_dir
    monkeypatch.setenv("DIALEVAL_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("DIALEVAL_NO_CACHE", raising=False)
    kinds = read_precomputed(checkpoint_dir() / "precomputed-demo.json.gz")["about"]["computed_on"]
    monkeypatch.setattr(core.engine, "device_key", lambda device: kinds[0])
    st.cache_resource.clear()
    at = AppTest.from_file(str(repo_root / "app.py"), default_timeout=120)
    at.session_state["metrics"] = ["bleu"]
    at.session_state["judge_auto"] = False
    at.run()
    state = sys.modules["dashboard.state"]
    monkeypatch.setattr(state, "run_judge", lambda data: pytest.fail("the judge ran though its output was at hand"))
    at.button(key="demo_from_home").click().run()
    assert not at.exception, at.exception
    assert at.session_state["verdict"].judge is None
    assert at.query_params.get("judge_auto") in (["0"], "0")
    button = at.button(key="home_run_judge")
    assert "already computed" in button.proto.label
    button.click().run()
    assert not at.exception, at.exception
    verdict = at.session_state["verdict"]
    assert verdict.judge is not None and verdict.combined is not None
    assert at.session_state["judge_auto"] is True and at.query_params.get("judge_auto") in (["1"], "1")
    # the chart's first row is the combined test the verdict reads, by its signals' display names
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert spec["data"][0]["y"] == ["combined: " + "+".join(words.name(s) for s in verdict.combined_signals)]
