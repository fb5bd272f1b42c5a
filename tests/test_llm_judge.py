"""The ``llm`` judge (core.judges.llm) over real HTTP: a real ``transformers serve`` with the shipped SmolLM2
weights (slow tier), and, for the faults a real server cannot be made to show on demand, a tiny HTTP server of the
tests' own (429 then success, a hang past the timeout, malformed answers, a refused key, nothing listening). Every
fault ends in the result or one clean line with exit 2, never a traceback or a partial output file; the API key
(a canary) appears nowhere in what the judge writes or prints."""
from __future__ import annotations

import json
import math
import os
import re
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from core.cli import main
from core.judges.llm import (LLMJudge, LLMSettings, combine, first_probability, first_shown_rate, judge_messages,
                             parse_answer, scrubbed, shown_url)

CANARY = "sk-canary-7c1f9e2d4b6a8f0e1d3c5b7a"
CONTEXTS = [["do you like cats?"], ["where do you live?", "in a small town near the sea."], ["any plans tonight?"]]
GOOD = ["yes, i have two of them and they sleep on my bed.", "that sounds lovely, do you swim a lot?",
        "i'm going to a concert with friends."]
BAD = ["the train is blue.", "ok.", "i don't know."]


def write_pair_files(folder: Path) -> tuple[Path, Path]:
    a, b = folder / "a.jsonl", folder / "b.jsonl"
    a.write_text("".join(json.dumps({"id": f"p{i}", "context": c, "response": r}) + "\n"
                         for i, (c, r) in enumerate(zip(CONTEXTS, GOOD))))
    b.write_text("".join(json.dumps({"id": f"p{i}", "context": c, "response": r}) + "\n"
                         for i, (c, r) in enumerate(zip(CONTEXTS, BAD))))
    return a, b


# ------------------------------------------------------------------------------------------------
# what is asked and how answers are read


def test_messages_show_the_conversation_both_replies_and_the_criteria():
    msgs = judge_messages(["hi", "how are you?"], "fine, you?", "no.", "Be kind.")
    text = msgs[-1]["content"]
    assert "Person 2: hi\nPerson 1: how are you?" in text
    assert text.index("Reply 1: fine, you?") < text.index("Reply 2: no.") < text.index("Be kind.")
    assert text.rstrip().endswith("Reply 1 or Reply 2?")
    long = judge_messages(["x"], "a" * 10_000, "b", "c")[-1]["content"]
    assert "[cut]" in long and len(long) < 7_000


@pytest.mark.parametrize("text, expected", [("1", "1"), (" 2.", "2"), ("Reply 1", "1"), ("reply 2: it is", "2"),
                                            ("Candidate reply 2", "2"), ("**1**", "1"), ("12", None),
                                            ("Which reply is better", None), ("", None), (None, None)])
def test_answers_are_read_only_when_they_name_one_reply(text, expected):
    assert parse_answer(text) == expected


def test_log_probabilities_give_a_graded_p():
    tok = lambda t, lp: SimpleNamespace(token=t, logprob=lp)  # noqa: E731
    lp = SimpleNamespace(content=[SimpleNamespace(token="1", logprob=np.log(0.7),
                                                  top_logprobs=[tok("1", np.log(0.7)), tok("2", np.log(0.2)),
                                                                tok("The", np.log(0.1))])])
    assert first_probability(lp) == pytest.approx(0.7 / 0.9)
    assert first_probability(None) is None
    assert first_probability(SimpleNamespace(content=[SimpleNamespace(token="Hi", logprob=-0.1, top_logprobs=[])])) \
        is None


def test_an_answer_that_opens_with_reply_is_read_at_its_digit():
    """From an LLM-judge user's audit: an answer "Reply 2" whose first token 'Reply' had the alternatives '1' (-5)
    and '2' (-9), as OpenAI's API gives them, was read as preferring reply 1 (0.98); every pair of a judge that
    preferred B came out a tie. The digit's own token decides; an answer that opens otherwise is read as text."""
    tok = lambda t, lp: SimpleNamespace(token=t, logprob=lp)  # noqa: E731
    step = lambda t, lp, alts: SimpleNamespace(token=t, logprob=lp, top_logprobs=alts)  # noqa: E731
    reply_two = SimpleNamespace(content=[step("Reply", -0.01, [tok("Reply", -0.01), tok("1", -5.0), tok("2", -9.0)]),
                                         step(" 2", -0.05, [tok(" 2", -0.05), tok(" 1", -3.0)])])
    assert first_probability(reply_two) == pytest.approx(math.exp(-3.0) / (math.exp(-3.0) + math.exp(-0.05)))
    bold = SimpleNamespace(content=[step("**", -0.1, []), step("1", -0.1, [tok("1", -0.1), tok("2", -2.4)])])
    assert first_probability(bold) == pytest.approx(math.exp(-0.1) / (math.exp(-0.1) + math.exp(-2.4)))
    prose = SimpleNamespace(content=[step("The", -0.1, [tok("1", -1.0)]), step(" first", -0.1, [])])
    assert first_probability(prose) is None


def test_orders_combine_as_the_learned_judge_does_and_unparsed_orders_are_not_guessed():
    p_a, p_ab, p_ba, unparsed = combine([1.0, 1.0, None, None, 0.8], [0.0, 1.0, 0.0, None, 0.4])
    # a pair read in one order only decides nothing (that order alone is the reply's place as much as its merit)
    assert list(p_a) == pytest.approx([1.0, 0.5, 0.5, 0.5, 0.7])
    assert unparsed == [2, 3]
    assert list(p_ab) == pytest.approx([1.0, 1.0, 0.5, 0.5, 0.8]) and list(p_ba) == pytest.approx([1.0, 0.0, 0.5, 0.5, 0.6])
    assert first_shown_rate([1.0, 1.0, None], [0.0, 1.0, 0.0]) == pytest.approx(3 / 5)


def test_settings_come_from_flags_or_the_environment_and_say_what_is_missing(monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("DIALEVAL_LLM_MODEL", raising=False)
    with pytest.raises(ValueError, match="--llm-url"):
        LLMSettings.from_env(model="m")
    with pytest.raises(ValueError, match=r"LLMSettings\(url=\.\.\., model=\.\.\.\)"):  # the API's way (was 'url=')
        LLMSettings.from_env(model="m")
    with pytest.raises(ValueError, match="--llm-model"):
        LLMSettings.from_env(url="http://x/v1")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://env:1/v1")
    monkeypatch.setenv("DIALEVAL_LLM_MODEL", "env-model")
    s = LLMSettings.from_env(model="flag-model")
    assert (s.url, s.model) == ("http://env:1/v1", "flag-model")
    with pytest.raises(ValueError, match="concurrency"):
        LLMSettings(url="http://u/v1", model="m", concurrency=0)
    with pytest.raises(ValueError, match=r"needs http:// or https:// in front, e.g. http://127.0.0.1:8000/v1"):
        LLMSettings(url="127.0.0.1:8000/v1", model="m")


def test_a_criteria_file_name_that_does_not_exist_is_refused_not_sent_as_the_rubric(tmp_path):
    """A misspelled --llm-criteria file was sent to the model as the rubric ('crit2.txt')."""
    from core.judges.llm import criteria_from
    with pytest.raises(ValueError, match="no such file"):
        criteria_from(str(tmp_path / "crit2.txt"))
    (tmp_path / "crit.txt").write_text("Prefer the kinder reply.\n")
    assert criteria_from(str(tmp_path / "crit.txt")) == "Prefer the kinder reply.\n"
    assert criteria_from("Prefer the kinder reply.") == "Prefer the kinder reply."
    assert criteria_from("Helpfulness") == "Helpfulness"  # one word is a rubric, not a file's name
    assert criteria_from("Prefer on-topic/relevant replies.") == "Prefer on-topic/relevant replies."
    assert criteria_from("x" * 300) == "x" * 300  # too long for a file's name: text (was an OSError's traceback)
    # a sentence that ends with a file's name is text (it was refused: "no such file"); a short name is a file's
    said = "Follow the house style guide in style.md"
    assert criteria_from(said) == said
    with pytest.raises(ValueError, match="no such file"):
        criteria_from("my criteria.md")
    (tmp_path / "unreadable.txt").write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(ValueError, match="cannot be read"):
        criteria_from(str(tmp_path / "unreadable.txt"))


def test_a_judge_answering_reply_n_with_log_probabilities_is_read_at_the_digit(llm_env, endpoint, capsys):
    """The audit's server, end to end: answers 'Reply 1'/'Reply 2' with OpenAI-style log-probabilities, preferring
    the better reply in both orders; every pair read as a tie (order disagreement 1.0) while the same answers
    without log-probabilities were read right."""
    server = endpoint("logprobs-reply")
    out_rows = llm_env / "rows.jsonl"
    code, out, err = run_judge(capsys, llm_env, server.url, "--out", str(out_rows))
    assert code == 0, err
    rows = [json.loads(line) for line in out_rows.read_text().splitlines()]
    assert [r["verdict"] for r in rows] == ["A"] * len(rows) and all(r["p_a"] > 0.9 for r in rows)


def test_a_404_on_a_url_that_is_not_the_api_names_the_url_first(llm_env, endpoint, capsys):
    """From an LLM-judge user's audit: `--llm-url http://host:8765` (no /v1) said 'has no model ...: check
    --llm-model' first, where the model was right and the path wrong."""
    server = endpoint("not-found")
    code, _, err = run_judge(capsys, llm_env, server.url.removesuffix("/v1"))
    assert code == 2 and "answered HTTP 404 for model 'fake': is --llm-url the API's base URL" in err, err
    code, _, err = run_judge(capsys, llm_env, server.url)
    assert code == 2 and "has no model 'fake' (HTTP 404): check --llm-model" in err, err


def test_a_key_given_to_a_flag_that_does_not_exist_is_not_printed(capsys, repo_root):
    """From an LLM-judge user's audit: `--api-key sk-proj-...` (promptfoo's and the OpenAI CLI's habit) was refused
    with the key itself in the error, which a CI log keeps."""
    from core.cli import main
    demo = str(repo_root / "demo" / "demo.jsonl")
    for args in (["--api-key", "sk-proj-REALSECRET123456"], ["--llm-key=REALSECRETnoprefix"],
                 ["--token", "REALSECRET-plain"], ["--api-key", "REALSECRET", "--also", "sk-live-REALSECRET9999"],
                 ["--openai=sk-REALSECRET1234"], ["--device", "sk-REALSECRET1234"]):
        assert main(["judge", demo, *args]) == 2
        err = capsys.readouterr().err
        assert "REALSECRET" not in err and "[hidden]" in err, err
    assert main(["judge", demo, "--api-key", "x"]) == 2
    assert "an API key is read from $OPENAI_API_KEY, never from a flag" in capsys.readouterr().err


def test_the_key_never_reaches_the_signature_or_a_printed_url(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    judge = LLMJudge(LLMSettings(url="http://user:pw@host:9/v1?token=abc", model="m"))
    for text in (judge.signature(), judge.namespace(), judge.settings.shown_url, judge.usage_line(),
                 repr(judge.settings), repr(judge), str([judge.settings])):  # a notebook shows reprs
        assert CANARY not in text and "pw" not in text and "abc" not in text
    assert shown_url("http://user:pw@host:9/v1?token=abc") == "http://host:9/v1"
    assert CANARY not in scrubbed(f"Incorrect API key provided: {CANARY}")
    custom = LLMJudge(LLMSettings(url="http://u/v1", model="m", criteria="Prefer the funnier reply."))
    assert custom.signature() != judge.signature() and "custom" in custom.signature()


# ------------------------------------------------------------------------------------------------
# a small server of the tests' own, for the faults


class FakeEndpoint:
    """An OpenAI-compatible chat-completions endpoint on 127.0.0.1 whose behaviour a test sets: ``mode`` one of
    'ok' (prefers the reply holding a word of GOOD's), 'logprobs', 'rate-limit-once', 'hang', 'malformed',
    'refuse-key', 'require-key' (answers only the key 'typed-key'), 'detail-400', 'position-bias', 'echo'. Counts
    the completion requests it answered and keeps the prompts it was sent."""

    def __init__(self, mode: str = "ok"):
        self.mode = mode
        self.requests = 0
        self.prompts: list[str] = []
        self.seen_429 = False
        self.lock = threading.Lock()
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def _send(self, code: int, body: dict, headers: dict | None = None):
                data = json.dumps(body).encode()
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client stopped waiting ('hang' outlasts its timeout): nothing to answer

            def do_GET(self):
                self._send(200, {"object": "list", "data": [{"id": "fake", "object": "model"}]})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                if endpoint.mode == "refuse-key" or (endpoint.mode == "require-key" and
                                                     self.headers.get("Authorization") != "Bearer typed-key"):
                    return self._send(401, {"error": {"message": f"Incorrect API key provided: "
                                                                 f"{self.headers.get('Authorization', '')}",
                                                      "type": "invalid_request_error"}})
                if endpoint.mode == "html":  # a URL that is not the API (a web page answers)
                    data = b"<html><body>Welcome</body></html>"
                    self.send_response(200)
                    self.send_header("Content-Type", "text/html")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                if endpoint.mode == "not-found":  # a path that is not the API's (or a model it does not know)
                    return self._send(404, {"detail": "Not Found"})
                if endpoint.mode == "detail-400":  # transformers serve's way of refusing a model it does not serve
                    return self._send(400, {"detail": "Server is pinned to '/models/x'; requested 'fake'."})
                if endpoint.mode == "rate-limit-once":
                    with endpoint.lock:
                        first = not endpoint.seen_429
                        endpoint.seen_429 = True
                    if first:
                        return self._send(429, {"error": {"message": "slow down"}}, {"Retry-After": "0"})
                if endpoint.mode == "hang":
                    time.sleep(3)
                prompt = body["messages"][0]["content"]
                with endpoint.lock:
                    endpoint.requests += 1
                    endpoint.prompts.append(prompt)
                first = prompt.split("Reply 1: ", 1)[1].split("\n", 1)[0]
                better_first = any(first == g for g in GOOD)
                content = ("banana" if endpoint.mode == "malformed" else ("Reply 1" if better_first else "Reply 2"))
                if endpoint.mode == "position-bias":  # always the first shown, and never an answer on one context
                    content = "banana" if "any plans tonight?" in prompt else "Reply 1"
                if endpoint.mode == "echo":  # a server that echoes the request's key into its answer
                    content = f"Reply 1 {self.headers.get('Authorization', '')}"
                choice = {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}
                if endpoint.mode == "logprobs-reply":  # 'Reply N', as OpenAI's models answer, with the API's
                    # alternatives at each token: at 'Reply' the digits are unlikely and read the other way
                    digit = "1" if better_first else "2"
                    choice["message"]["content"] = f"Reply {digit}"
                    choice["logprobs"] = {"content": [
                        {"token": "Reply", "logprob": -0.01, "bytes": None, "top_logprobs": [
                            {"token": "Reply", "logprob": -0.01, "bytes": None},
                            {"token": "2" if digit == "1" else "1", "logprob": -5.0, "bytes": None},
                            {"token": digit, "logprob": -9.0, "bytes": None}]},
                        {"token": f" {digit}", "logprob": -0.05, "bytes": None, "top_logprobs": [
                            {"token": f" {digit}", "logprob": -0.05, "bytes": None},
                            {"token": " 2" if digit == "1" else " 1", "logprob": -3.0, "bytes": None}]}]}
                if endpoint.mode == "logprobs":
                    p1 = 0.9 if better_first else 0.2
                    choice["message"]["content"] = "1" if better_first else "2"
                    choice["logprobs"] = {"content": [{"token": choice["message"]["content"], "logprob": -0.1,
                                                       "bytes": None, "top_logprobs": [
                                                           {"token": "1", "logprob": float(np.log(p1)), "bytes": None},
                                                           {"token": "2", "logprob": float(np.log(1 - p1)),
                                                            "bytes": None}]}]}
                self._send(200, {"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                                 "choices": [choice],
                                 "usage": {"prompt_tokens": 50, "completion_tokens": 2, "total_tokens": 52}})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def endpoint():
    servers = []

    def start(mode="ok"):
        servers.append(FakeEndpoint(mode))
        return servers[-1]
    yield start
    for s in servers:
        s.close()


@pytest.fixture
def llm_env(tmp_path, monkeypatch):
    """The canary key set, a score cache of this test's own (on), no endpoint in the environment."""
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("DIALEVAL_LLM_MODEL", raising=False)
    monkeypatch.delenv("DIALEVAL_NO_CACHE", raising=False)
    monkeypatch.setenv("DIALEVAL_CACHE", str(tmp_path / "cache"))
    return tmp_path


def run_judge(capsys, folder: Path, url: str, *extra: str) -> tuple[int, str, str]:
    a, b = write_pair_files(folder)
    code = main(["judge", str(a), str(b), "--judge", "llm", "--llm-url", url, "--llm-model", "fake", "--quiet",
                 *extra])
    out, err = capsys.readouterr()
    return code, out, err


def assert_no_canary(folder: Path, *texts: str) -> None:
    for text in texts:
        assert CANARY not in text
    for path in folder.rglob("*"):
        if path.is_file():
            assert CANARY.encode() not in path.read_bytes(), path


def test_both_orders_are_asked_and_a_rerun_sends_no_request(llm_env, endpoint, capsys):
    server = endpoint("ok")
    out_file = llm_env / "pairs.jsonl"
    code, out, err = run_judge(capsys, llm_env, server.url, "--out", str(out_file))
    assert code == 0, err
    assert server.requests == 2 * len(CONTEXTS)  # two requests a pair
    rows = [json.loads(line) for line in out_file.read_text().splitlines()]
    assert [r["verdict"] for r in rows] == ["A"] * 3 and all(r["p_a"] == 1.0 for r in rows)
    assert "6 requests (0 answers from the cache)" in err
    code, out2, err2 = run_judge(capsys, llm_env, server.url, "--out", str(out_file))
    assert code == 0 and server.requests == 6  # nothing sent again
    assert "0 requests (6 answers from the cache)" in err2
    assert_no_canary(llm_env, out, err, out2, err2)
    # another server answering to the same model name is another model: asked, not answered with the first's
    other = endpoint("ok")
    code, out3, err3 = run_judge(capsys, llm_env, other.url)
    assert code == 0 and other.requests == 6 and "6 requests (0 answers from the cache)" in err3


def test_the_first_run_says_its_pace_is_unknown_and_later_estimates_use_the_measured_one(llm_env, endpoint,
                                                                                          capsys):
    """Before its first run the llm judge's pairs were 'not counted' in the estimate, and a run whose metrics were
    quick said nothing at all before it started; each run of four or more requests now keeps the endpoint's pace
    in the score cache (keyed by a hash of the shown URL, the model and the concurrency: never the key)."""
    from core.cache import ScoreCache
    from core.engine import estimate_work
    from core.judges.llm import PACE_NAMESPACE
    server = endpoint("ok")
    a, b = write_pair_files(llm_env)
    code = main(["judge", str(a), str(b), "--judge", "llm", "--llm-url", server.url, "--llm-model", "fake"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "this run: 3 pairs to judge with llm (its pace is not known until it has run once here" in err
    judge = LLMJudge(LLMSettings(url=server.url, model="fake"))
    cache = ScoreCache(llm_env / "cache" / "scores.sqlite3")
    pace = cache.get_many(PACE_NAMESPACE, [judge.pace_key()])[judge.pace_key()]
    assert 0 < pace < 60
    new_pairs = [(["what did you eat?"], "pasta with friends.", "ok."), (["hi"], "hello there!", "no.")]
    estimate = estimate_work(pairs=new_pairs, judge=judge, cache=cache)
    assert estimate.judge_pairs == 2 and estimate.judge_seconds == pytest.approx(4 * pace)
    assert "2 pairs to judge with llm (at its last run's pace)" in estimate.sentence()
    other = LLMJudge(LLMSettings(url=server.url, model="another"))  # another model there: its pace is its own
    assert estimate_work(pairs=new_pairs, judge=other, cache=cache).judge_seconds is None
    unkept = estimate_work(pairs=new_pairs, judge=judge, cache=False)  # the cache off: no pace is kept, and said
    assert unkept.judge_seconds is None and "its pace is not kept while the score cache is off" in unkept.sentence()
    assert_no_canary(llm_env, err)


def test_log_probabilities_are_used_where_the_server_gives_them(llm_env, endpoint, capsys):
    server = endpoint("logprobs")
    code, out, err = run_judge(capsys, llm_env, server.url, "--format", "json")
    assert code == 0, err
    j = json.loads(out)["judge"]
    assert j["p_a"] == pytest.approx([(0.9 + 0.8) / 2] * 3)
    assert j["notes"]["p_from"] == ["logprobs"] and j["first_shown"] == pytest.approx(0.5)


def test_a_429_is_retried_after_its_retry_after(llm_env, endpoint, capsys):
    server = endpoint("rate-limit-once")
    code, out, err = run_judge(capsys, llm_env, server.url, "--llm-concurrency", "1")
    assert code == 0, err
    assert server.seen_429 and server.requests == 6
    # the client's retry is said (7 requests reached the server, the line said 6 and nothing of the retry)
    assert "6 requests (0 answers from the cache; 1 sent again after a 408/409/429/5xx answer" in err, err


def test_a_hang_past_the_timeout_is_one_clean_line_and_no_partial_output(llm_env, endpoint, capsys):
    server = endpoint("hang")
    out_file = llm_env / "pairs.jsonl"
    code, out, err = run_judge(capsys, llm_env, server.url, "--llm-timeout", "0.5", "--llm-retries", "0",
                               "--out", str(out_file))
    assert code == 2
    assert "did not answer within 0.5 s" in err and "Traceback" not in err
    assert not out_file.exists()


def test_unparsable_answers_are_asked_once_more_then_listed_never_guessed(llm_env, endpoint, capsys):
    server = endpoint("malformed")
    code, out, err = run_judge(capsys, llm_env, server.url, "--format", "json")
    assert code == 0, err
    assert server.requests == 12  # each of the 6 orders asked twice
    j = json.loads(out)["judge"]
    assert j["notes"]["unparsed"] == [0, 1, 2] and j["verdicts"] == ["unread"] * 3  # no call: not a tie
    assert j["notes"]["p_from"] == ["unparsed"]
    code, out, err = run_judge(capsys, llm_env, server.url)
    assert code == 0 and "could not read an answer naming either reply in both orders for any of the 3 pairs" in out
    assert "calls all" not in out and server.requests == 24  # nothing of the first run was kept: asked again
    fixed = endpoint("ok")  # the same model name behind a server that answers: every order asked, none from the cache
    code, out, err = run_judge(capsys, llm_env, fixed.url, "--format", "json")
    assert code == 0 and fixed.requests == 6 and json.loads(out)["judge"]["verdicts"] == ["A"] * 3


def test_pairs_the_judge_could_not_read_are_no_ties_and_a_gate_on_them_fails(llm_env, endpoint, capsys):
    """Every answer naming neither reply: 'tie in 3 of 3 pairs' (unread pairs counted as ties), and `gate --by
    judge` passed ('no significant difference ... it decided none of the pairs (each a tie)'), JUnit green."""
    server = endpoint("malformed")
    code, out, err = run_judge(capsys, llm_env, server.url, "--format", "json")
    win = json.loads(out)["judge"]["win"]
    assert code == 0 and (win["wins"], win["ties"], win["losses"]) == (0, 0, 0)
    code, out, err = run_judge(capsys, llm_env, server.url)
    assert "prefers A in 0, B in 0, tie in 0 of 0 pairs it read (3 of the 3 unparsed)" in out, out
    a, b = write_pair_files(llm_env)
    code = main(["gate", str(a), str(b), "--by", "judge", "--judge", "llm", "--llm-url", server.url, "--llm-model",
                 "fake", "--quiet", "--junit", str(llm_env / "g.xml")])
    out = capsys.readouterr().out
    assert code == 1 and out.startswith("FAIL: nothing to gate on on the judge: it could read none of the 3 pairs")
    assert "the llm judge has no measured record: a diagnostic" in out.splitlines()[0]
    assert 'failures="1"' in (llm_env / "g.xml").read_text()
    # the leaderboard counts them as the judge's summary does (it called them ties)
    assert main(["leaderboard", str(a), str(b), "--metrics", "none", "--judge", "llm", "--llm-url", server.url,
                 "--llm-model", "fake", "--quiet", "--format", "json"]) == 0
    (pair,) = [p for p in json.loads(capsys.readouterr().out)["pairwise"] if p["metric"] == "judge"]
    assert (pair["wins"], pair["ties"], pair["losses"]) == (0, 0, 0)


def test_a_pair_read_in_one_order_decides_nothing_and_flips_count_only_pairs_read_twice(llm_env, endpoint, capsys):
    """A model that always answers "Reply 1" won the pairs whose other order it could not read (the one order
    left is the first-shown reply), and the flip rate counted unread pairs as not flipped (0.667 where both pairs
    read twice flipped)."""
    server = endpoint("position-bias")
    code, out, err = run_judge(capsys, llm_env, server.url, "--format", "json")
    assert code == 0, err
    j = json.loads(out)["judge"]
    assert j["notes"]["unparsed"] == [2] and j["verdicts"] == ["tie", "tie", "unread"]
    assert j["order_disagreement"] == pytest.approx(1.0)
    import core  # the API's judge output says the same (it counted the unread pair as not flipped: 0.667)
    assert core.judge(CONTEXTS, GOOD, BAD, judge=LLMJudge(LLMSettings(url=server.url, model="fake")),
                      cache=False).order_disagreement == pytest.approx(1.0)
    rows = llm_env / "rows.jsonl"
    code, out, err = run_judge(capsys, llm_env, server.url, "--out", str(rows))
    assert code == 0 and [json.loads(x)["unparsed"] for x in rows.read_text().splitlines()] == [False, False, True]


def test_the_leaderboard_does_not_rank_by_a_judge_without_a_record(llm_env, endpoint, capsys):
    """`leaderboard --judge llm` ranked by the llm judge's Bradley-Terry rating, which the verdict treats as a
    diagnostic: it ranks by the first metric and says why; --rank-by judge still orders by it."""
    server = endpoint("ok")
    rows = [{"id": f"p{i}", "system": s, "context": c, "response": r, "references": [g]}
            for i, (c, g, b) in enumerate(zip(CONTEXTS, GOOD, BAD)) for s, r in (("good", g), ("bad", b), ("mid", b))]
    path = llm_env / "three.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    flags = ["--judge", "llm", "--llm-url", server.url, "--llm-model", "fake", "--metrics", "bleu", "--quiet",
             "--format", "json"]
    assert main(["leaderboard", str(path), *flags]) == 0
    board = json.loads(capsys.readouterr().out)
    assert board["ranked_by"] == "bleu" and "llm judge has no measured record" in board["rank_note"]
    assert main(["leaderboard", str(path), *flags, "--rank-by", "judge"]) == 0
    assert json.loads(capsys.readouterr().out)["ranked_by"] == "judge"


def test_a_server_that_echoes_the_key_into_its_answer_never_puts_it_in_the_cache(llm_env, endpoint, capsys):
    server = endpoint("echo")
    code, out, err = run_judge(capsys, llm_env, server.url)
    assert code == 0, err
    assert_no_canary(llm_env, out, err)


def test_a_refusal_whose_words_are_in_the_body_s_detail_is_said_with_them(llm_env, endpoint, capsys):
    """A wrong model name at `transformers serve` read "answered HTTP 400: Error code: 400": its words were dropped."""
    server = endpoint("detail-400")
    code, out, err = run_judge(capsys, llm_env, server.url, "--llm-retries", "0")
    assert code == 2 and "answered HTTP 400: Server is pinned to '/models/x'; requested 'fake'." in err


def test_no_human_leaves_people_s_ratings_out_of_the_judge_s_summary_too(llm_env, endpoint, capsys):
    """`compare --no-human` still printed 'judge: agreement with human Overall ...': the judge's summary read the
    ratings the flag leaves out."""
    import core
    server = endpoint("ok")
    a, b = llm_env / "ra.jsonl", llm_env / "rb.jsonl"
    for path, replies, rating in ((a, GOOD, 4.0), (b, BAD, 2.0)):
        path.write_text("".join(json.dumps({"id": f"p{i}", "context": c, "response": r, "scores": {"Overall": rating}})
                                + "\n" for i, (c, r) in enumerate(zip(CONTEXTS, replies))))
    flags = ["--metrics", "none", "--judge", "llm", "--llm-url", server.url, "--llm-model", "fake", "--quiet",
             "--format", "json", "--n-boot", "200", "--n-perm", "200"]
    assert main(["compare", str(a), str(b), *flags]) == 0
    assert json.loads(capsys.readouterr().out)["judge"]["human"] is not None
    assert main(["compare", str(a), str(b), *flags, "--no-human"]) == 0
    assert json.loads(capsys.readouterr().out)["judge"]["human"] is None
    judge = LLMJudge(LLMSettings(url=server.url, model="fake"))
    assert core.compare(str(a), str(b), metrics=[], judge=judge, human=False, n_boot=200, n_perm=200).judge.human is None


def test_a_page_that_is_not_the_api_is_said_so(llm_env, endpoint, capsys):
    """A server answering with something other than JSON read 'failed: JSONDecodeError: Expecting value: line 1
    column 1 (char 0)'."""
    server = endpoint("html")
    code, out, err = run_judge(capsys, llm_env, server.url, "--llm-retries", "0")
    assert code == 2 and "answered, but not with an OpenAI chat completion" in err and "JSONDecodeError" not in err


def test_a_refused_key_is_exit_2_without_the_key(llm_env, endpoint, capsys):
    server = endpoint("refuse-key")
    code, out, err = run_judge(capsys, llm_env, server.url)
    assert code == 2
    assert "refused the API key" in err and "OPENAI_API_KEY" in err and "Traceback" not in err
    assert_no_canary(llm_env, out, err)


def test_the_api_s_error_holds_no_link_to_the_client_s_exception_and_its_key(llm_env, endpoint):
    """`core.compare_replies(..., judge=...)` against a server refusing the key raised a clean LLMJudgeError, but its
    ``__context__`` was the openai exception, whose request's headers hold 'Authorization: Bearer <key>'."""
    import core
    from core.judges.llm import LLMJudgeError
    server = endpoint("refuse-key")
    judge = LLMJudge(LLMSettings(url=server.url, model="fake", concurrency=1, retries=0))
    with pytest.raises(LLMJudgeError, match="refused the API key") as e:
        core.compare_replies(CONTEXTS, GOOD, BAD, metrics=[], judge=judge, n_boot=200, n_perm=200)
    chain, err = [], e.value
    while err is not None:
        chain.append(err)
        err = err.__cause__ or err.__context__
    assert [type(x).__name__ for x in chain] == ["LLMJudgeError"] and CANARY not in str(e.value)


def test_nothing_listening_is_exit_2_before_anything_is_scored(llm_env, capsys):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code, out, err = run_judge(capsys, llm_env, f"http://127.0.0.1:{port}/v1", "--llm-retries", "0")
    assert code == 2
    assert "cannot reach the LLM endpoint" in err and "Traceback" not in err
    assert "(nothing answered, asked once)" in err  # the check before a run makes no retries: it said '0 retries'


def test_no_endpoint_named_is_a_clear_error(llm_env, capsys):
    a, b = write_pair_files(llm_env)
    code = main(["compare", str(a), str(b), "--metrics", "none", "--judge", "llm"])
    err = capsys.readouterr().err
    assert code == 2 and "--llm-url" in err and "OPENAI_BASE_URL" in err


def test_an_unknown_judge_name_is_a_usage_error(llm_env, capsys):
    a, b = write_pair_files(llm_env)
    assert main(["compare", str(a), str(b), "--judge", "oracle"]) == 2
    assert "unknown judge 'oracle'" in capsys.readouterr().err


def test_the_api_takes_the_judge_by_name_or_as_an_object(llm_env, endpoint, monkeypatch):
    import core
    server = endpoint("ok")
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("DIALEVAL_LLM_MODEL", "fake")
    by_name = core.compare_replies(CONTEXTS, GOOD, BAD, metrics=[], judge="llm", n_boot=200, n_perm=200)
    judge = LLMJudge(LLMSettings(url=server.url, model="fake", concurrency=2))
    by_object = core.compare_replies(CONTEXTS, GOOD, BAD, metrics=[], judge=judge, n_boot=200, n_perm=200)
    assert by_name.to_dict() == by_object.to_dict()
    assert by_name.judge.verdicts == ["A", "A", "A"] and by_name.judge.order_disagreement == 0.0
    assert judge.last_usage.cached == 6 and judge.last_usage.requests == 0  # the first call's answers, read back


# ------------------------------------------------------------------------------------------------
# a real server: transformers serve with the shipped SmolLM2 weights


def test_the_local_server_refuses_a_port_in_use_before_starting(capsys):
    """A second `python -m core.judges.local_server` printed 'serving ...' and waited for ever: its server could
    not bind port 8000, and the first server's /health answered for it."""
    from core.judges.local_server import main as serve_main
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        assert serve_main(["--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert f"port {port} on 127.0.0.1 is in use already" in err and "--port" in err


@pytest.fixture(scope="module")
def smollm_server(tmp_path_factory):
    """``transformers serve`` on 127.0.0.1 (a free port) with the shipped SmolLM2-135M-Instruct from a local folder
    (``core.judges.local_server``), offline; started once for the module."""
    from core.judges.local_server import smollm_model_folder, transformers_serve
    folder = smollm_model_folder()
    with transformers_serve(folder, log=tmp_path_factory.mktemp("serve") / "serve.log") as url:
        yield SimpleNamespace(url=url, model=str(folder))


@pytest.mark.slow
def test_a_real_server_judges_both_orders_and_a_rerun_sends_nothing(llm_env, smollm_server):
    a, b = write_pair_files(llm_env)
    out_file = llm_env / "pairs.jsonl"
    cmd = [str(Path(sys.executable).with_name("dialeval")), "judge", str(a), str(b), "--judge", "llm",
           "--llm-url", smollm_server.url, "--llm-model", smollm_server.model, "--out", str(out_file),
           "--format", "json"]
    env = {k: v for k, v in os.environ.items() if k != "DIALEVAL_NO_CACHE"}
    first = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert first.returncode == 0, first.stderr
    assert "this run: 3 pairs to judge with llm (its pace is not known until it has run once here" in first.stderr
    rows = [json.loads(line) for line in out_file.read_text().splitlines()]
    assert len(rows) == 3 and all(0.0 <= r["p_a"] <= 1.0 and r["verdict"] in ("A", "B", "tie", "unread") for r in rows)
    assert all((r["verdict"] == "unread") == r["unparsed"] for r in rows)  # a pair without a call is no tie
    usage = [line for line in first.stderr.splitlines() if line.startswith("llm judge (")][-1]
    sent = int(usage.split("): ")[1].split(" requests")[0])
    assert 6 <= sent <= 12  # two orders a pair, each asked at most twice
    unparsed = json.loads(first.stdout)["judge"]["notes"]["unparsed_orders"]  # orders that named neither reply
    again = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    sent_again, cached = map(int, re.search(r"\): (\d+) requests \((\d+) answers from the cache[;)]",
                                            again.stderr).groups())
    assert again.returncode == 0 and cached == 6 - unparsed  # every answer that named a reply is read back
    assert unparsed <= sent_again <= 2 * unparsed  # only those that did not are asked again (each at most twice)
    assert out_file.read_text() == "".join(json.dumps(r) + "\n" for r in rows) or \
        [json.loads(x) for x in out_file.read_text().splitlines()] == rows
    assert_no_canary(llm_env, first.stdout, first.stderr, again.stdout, again.stderr)


@pytest.mark.slow
def test_compare_with_the_llm_judge_gives_the_same_verdict_object(llm_env, smollm_server, capsys):
    a, b = write_pair_files(llm_env)
    code = main(["compare", str(a), str(b), "--metrics", "none", "--judge", "llm", "--llm-url", smollm_server.url,
                 "--llm-model", smollm_server.model, "--format", "json", "--quiet"])
    out, err = capsys.readouterr()
    assert code == 0, err
    llm = json.loads(out)
    code = main(["compare", str(a), str(b), "--metrics", "none", "--format", "json", "--quiet"])
    learned = json.loads(capsys.readouterr().out)
    assert code == 0
    assert set(llm) == set(learned) and set(llm["judge"]) == set(learned["judge"])
    assert 0.0 <= llm["judge"]["order_disagreement"] <= 1.0 and "llm" in llm["judge"]["signature"]
    assert_no_canary(llm_env, out, err)


def test_llm_flags_without_the_llm_judge_are_refused(llm_env, capsys):
    a, b = write_pair_files(llm_env)
    assert main(["compare", str(a), str(b), "--metrics", "none", "--llm-url", "http://127.0.0.1:9/v1"]) == 2
    err = capsys.readouterr().err
    assert "--llm-url" in err and "--judge" in err


def test_a_key_held_by_the_judge_object_is_used_and_never_shown(llm_env, endpoint):
    import core
    server = endpoint("require-key")
    judge = LLMJudge(LLMSettings(url=server.url, model="fake"), api_key="typed-key")  # as the dashboard does
    verdict = core.compare_replies(CONTEXTS, GOOD, BAD, metrics=[], judge=judge, n_boot=200, n_perm=200)
    assert verdict.judge.verdicts == ["A", "A", "A"]
    assert "typed-key" not in repr(judge) and "typed-key" not in json.dumps(verdict.to_dict())
    assert_no_canary(llm_env)
    for path in llm_env.rglob("*"):
        if path.is_file():
            assert b"typed-key" not in path.read_bytes()


def test_the_dashboard_s_judge_page_asks_an_llm_with_a_key_held_in_memory(llm_env, endpoint, repo_root, monkeypatch,
                                                                          request):
    """The A/B judge page picks the LLM judge: endpoint, model and a typed key (the server answers only that key);
    the summary shows the position flips; the key is in no element of the page and in no file."""
    import streamlit as st
    from streamlit.testing.v1 import AppTest
    # the dashboard keeps what it found per process (the demo's judge output, read from the score cache this test
    # turns on): later AppTests in this process run with the cache the session set, so they start without it
    request.addfinalizer(st.cache_resource.clear)
    monkeypatch.delenv("OPENAI_API_KEY")  # the key is the one typed on the page
    server = endpoint("require-key")
    at = AppTest.from_file(str(repo_root / "app.py"), default_timeout=120)
    at.session_state["metrics"] = ["bleu"]
    at.run()
    at.button(key="demo_from_home").click().run()
    at.switch_page("views/judge.py").run()
    assert not at.exception, at.exception
    at.text_input[0].set_value(server.url)
    at.text_input[1].set_value("fake")
    at.text_input(key="llm_api_key").set_value("typed-key")
    secret = llm_env / "server-secret.txt"  # a file on the server: a typed criteria text is never read as a path
    secret.write_text("SERVER-SIDE SECRET 4c1e")
    at.text_area[0].set_value(str(secret))
    submit = [b for b in at.button if "Ask the LLM judge" in str(b.label)]
    submit[0].click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    assert server.requests == 2 * 60  # both orders of the demo's 60 pairs
    assert all(str(secret) in p and "SERVER-SIDE SECRET" not in p for p in server.prompts)
    flips = [m for m in at.metric if m.label == "Position flips"]
    assert flips and flips[0].value == "100.0%"  # this endpoint always names the second reply
    shown = " ".join(str(getattr(e, "value", "")) for kind in ("text", "caption", "metric", "markdown")
                     for e in at.get(kind))
    assert "typed-key" not in shown and "fake" in shown
    for path in llm_env.rglob("*"):
        if path.is_file():
            assert b"typed-key" not in path.read_bytes()


def test_the_api_judge_says_what_the_command_says_of_blank_replies(llm_env, endpoint):
    """core.judge took a blank reply without the warning `dialeval judge` gives."""
    import core
    server = endpoint("ok")
    with pytest.warns(UserWarning, match=r"replies_b: 1 of \d+ rows have a blank response \(item 1\)"):
        core.judge(CONTEXTS, GOOD, [BAD[0], " ", *BAD[2:]], judge=LLMJudge(LLMSettings(url=server.url, model="fake")),
                   cache=False)


def test_identical_replies_are_a_tie_without_asking_and_leave_the_position_rate_alone(llm_env, endpoint):
    """From an LLM-judge user's audit: two of five pairs had identical replies; they were sent (8 requests for 5
    pairs, paid for, a tie whatever the answer) and counted in 'the reply shown first was preferred in 0.700'."""
    server = endpoint("position-bias")  # always 'Reply 1' (never an answer on 'any plans tonight?')
    judge = LLMJudge(LLMSettings(url=server.url, model="fake"))
    ctx = [["what did you eat?"], ["where do you live?"], ["do you like tea?"]]
    a, b = ["pasta, you?", "in a flat.", "yes, green tea."], ["pasta, you?", "by the sea.", "yes,  green tea. "]
    assert judge.pairs_to_ask(ctx, a, b, None) == 1  # the estimate counts what is sent (white space aside)
    out = judge.predict(ctx, a, b)
    assert server.requests == 2  # only the pair whose replies differ, in its two orders
    assert list(out.verdict) == ["tie", "tie", "tie"] and out.notes["first_shown"] == 1.0
    assert out.notes["p_from"] == ["answer"]


def test_answers_read_from_log_probabilities_by_the_old_reader_are_asked_again_and_no_others(tmp_path):
    """The old reader read 'Reply' instead of its digit, so the answers it kept from log-probabilities are wrong;
    those (and only those: an answer read from its text was right) are asked again."""
    from core.cache import ScoreCache
    from core.judges.llm import LOGPROB_READER, Answer
    store = ScoreCache(tmp_path / "s.sqlite3", max_bytes=1 << 30)
    judge = LLMJudge(LLMSettings(url="http://127.0.0.1:9/v1", model="m"))
    old_logprobs = {"p_first": 0.98, "source": "logprobs", "text": "Reply 2"}
    store.put_many(judge.namespace(), {"old-lp": old_logprobs, "old-text": {"p_first": 0.0, "source": "answer",
                                                                            "text": "Reply 2"},
                                       "new-lp": Answer(0.05, "logprobs", "Reply 2").to_dict()})
    kept = judge._cached_answers(store, ["old-lp", "old-text", "new-lp"])
    assert sorted(kept) == ["new-lp", "old-text"] and Answer(0.05, "logprobs", "").to_dict()["reader"] == LOGPROB_READER
