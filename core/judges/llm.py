"""The ``llm`` judge: any OpenAI-compatible chat-completions endpoint asked which of two replies a person would
rather receive, held to the same evidence as the learned judge (both orders, paired intervals by context,
agreement with people's ratings in the input).

**What is asked.** For each pair (context, A, B) two requests: the conversation with A shown first, then with B
shown first (:func:`judge_messages`: the conversation's turns, "Reply 1" and "Reply 2", the criteria, and "Which
reply is better, Reply 1 or Reply 2?"). The default criteria (:data:`DEFAULT_CRITERIA`) ask which reply a person would
rather receive next: appropriate, on topic, consistent with what was said, fluent. ``criteria`` replaces them;
the prompt's version (:data:`PROMPT_VERSION`), a hash of the criteria and the model's name are in the judge's
signature. Temperature 0 and a fixed seed (``core.settings.SEED``) where the server takes one.

**P(A).** Per order, P(the first-shown reply is better) comes from the answer token's log-probabilities when the
server returns them (``exp(lp("1")) / (exp(lp("1")) + exp(lp("2")))`` over the top alternatives), else from the
answer itself (1 or 0). Then, as for the learned judge (``core.judges.pairwise``),
``p_a = (p(A|B) + 1 - p(B|A)) / 2``: two orders that disagree make 0.5, a tie. An answer that names neither reply
is asked once more ("Answer with Reply 1 or Reply 2 only."); if it still names neither, that order is **unparsed**: it is
listed (``JudgeOutput.notes["unparsed"]``), never guessed and never cached; the pair's P(A) is 0.5 and it decides
nothing, even when its other order parsed (one order alone is the reply's place as much as its merit), and it is
left out of the flip rate and of the agreement with people.

**Diagnostics** (AlpacaEval's and FastChat's): the position-flip rate (``order_disagreement``: the share of pairs
read in both orders whose two orders name different winners) and how often the first-shown reply is preferred (``first_shown``);
requests sent, answers read back from the score cache, tokens used, and the cost when prices are given.

**Requests.** At most ``concurrency`` at once; the ``openai`` client retries 408, 409, 429, 5xx, timeouts and
lost connections ``retries`` times with exponential backoff, honouring ``Retry-After``; each request waits at
most ``timeout`` seconds. The key comes from ``$OPENAI_API_KEY`` only and is never written anywhere: not in the
signature, the cache, an error message or a log line (:func:`scrubbed`).

**Cache.** Every answer that names a reply is kept in the score cache (``core.cache``), namespace = model, prompt
version, answer parser's version, criteria hash, temperature, seed; key = the texts in the order shown. A rerun
sends no request; a run stopped half way keeps the answers it had. The namespaces are read by any code of
dialeval (``core.cache.kept_across_code``): an upgrade does not pay for the same answers again (the prompt's and the
parser's versions say when an answer must be asked again). The endpoint's measured pace is kept there too
(:data:`PACE_NAMESPACE`), for the time estimate said before a run.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import threading
import time
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Sequence
from urllib.parse import urlsplit, urlunsplit

import numpy as np

from core.cache import ScoreCache, kept_across_code
from core.progress import Progress, tick
from core.scoring import Judge, JudgeOutput, order_disagreement, register_judge, same_reply
from core.settings import SEED

PROMPT_VERSION = "1"
PARSER_VERSION = "1"  # how an answer is read (parse_answer, first_probability): a change asks again
LOGPROB_READER = 2  # how log-probabilities are read: an answer kept by an older reader was read at the wrong token
# ('Reply', not its digit), so only those answers are asked again (an answer read from its text stays)
NAMESPACE = "llm-judge|"  # the score cache's namespaces of its answers start so
PACE_NAMESPACE = "llm-judge-pace"  # the score cache's namespace of each endpoint's measured pace
CHECK_SECONDS = 10.0  # the check before a run waits at most this long for the model list
MIN_PACE_REQUESTS = 4  # fewer requests say more about the connection than about the pace
TIE_MARGIN = 0.05
MAX_TEXT_CHARS = 6000  # each turn and reply is cut here (marked "[cut]"), so one huge reply cannot overflow a request
DEFAULT_CONCURRENCY = 4
DEFAULT_TIMEOUT = 60.0
DEFAULT_RETRIES = 4
ANSWER_TOKENS = 4
TOP_LOGPROBS = 5

DEFAULT_CRITERIA = ("Which reply would a person rather receive as the next turn of this conversation? Prefer the "
                    "reply that is appropriate, stays on topic, is consistent with what was said before (and with "
                    "itself), and is fluent. Do not prefer a reply for being longer.")
QUESTION = "Which reply is better, Reply 1 or Reply 2?"
REMINDER = "Answer with Reply 1 or Reply 2 only."
_ANSWER = re.compile(r"^\W*(?:(?:candidate\s+)?reply\s*)?([12])(?!\d)", re.IGNORECASE)
kept_across_code(NAMESPACE)  # a remote model's answers: an upgrade of dialeval does not pay for them again
kept_across_code(PACE_NAMESPACE)


class LLMJudgeError(ValueError):
    """The endpoint could not answer as asked (nothing listening, a refused key, an unknown model, still failing
    after its retries). A ``ValueError``: the CLI prints its one line and exits 2. The message never holds the
    key."""


@dataclass(frozen=True)
class LLMSettings:
    """Where and how the ``llm`` judge asks. ``url``: the endpoint's base URL (…/v1); ``model``: the model's name
    there; ``criteria``: what makes a reply better (``None``: :data:`DEFAULT_CRITERIA`); ``price``: US dollars
    per million (input, output) tokens, for the cost line. The key is not a setting: ``$OPENAI_API_KEY``."""

    url: str
    model: str
    criteria: str | None = None
    concurrency: int = DEFAULT_CONCURRENCY
    timeout: float = DEFAULT_TIMEOUT
    retries: int = DEFAULT_RETRIES
    price: tuple[float, float] | None = None

    @classmethod
    def from_env(cls, **overrides: Any) -> "LLMSettings":
        """Settings from ``$OPENAI_BASE_URL`` and ``$DIALEVAL_LLM_MODEL``, each replaced by an override that is not
        ``None``; a ``ValueError`` naming the flag and the variable when the URL or the model is missing."""
        given = {k: v for k, v in overrides.items() if v is not None}
        url = given.pop("url", None) or os.environ.get("OPENAI_BASE_URL", "").strip()
        model = given.pop("model", None) or os.environ.get("DIALEVAL_LLM_MODEL", "").strip()
        if not url:
            raise ValueError("the llm judge needs an endpoint: give --llm-url (in Python: "
                             "judge=LLMJudge(LLMSettings(url=..., model=...)), from core.judges.llm) or set "
                             "$OPENAI_BASE_URL, e.g. http://127.0.0.1:8000/v1")
        if not model:
            raise ValueError("the llm judge needs a model name: give --llm-model (in Python: "
                             "LLMSettings(model=...), from core.judges.llm) or set $DIALEVAL_LLM_MODEL")
        return cls(url=url, model=model, **given)

    def __post_init__(self) -> None:
        if urlsplit(self.url.strip()).scheme not in ("http", "https"):
            shown = scrubbed(shown_url("http://" + self.url.strip().split("://")[-1]))  # never a user, key or query
            raise ValueError(f"llm judge URL {shown.removeprefix('http://')!r}: it needs http:// or https:// in "
                             f"front, e.g. {shown}")
        if self.concurrency < 1:
            raise ValueError(f"llm judge concurrency must be at least 1, got {self.concurrency}")
        if not (self.timeout > 0 and math.isfinite(self.timeout)):
            raise ValueError(f"llm judge timeout must be a positive number of seconds, got {self.timeout}")
        if self.retries < 0:
            raise ValueError(f"llm judge retries must be 0 or more, got {self.retries}")
        if self.price is not None and (len(self.price) != 2 or any(not (p >= 0 and math.isfinite(p))
                                                                   for p in self.price)):
            raise ValueError("llm judge price: two numbers >= 0, US dollars per million input and output tokens")

    def __repr__(self) -> str:
        """The settings with the URL as :attr:`shown_url` prints it: a key written into the URL (a user, a
        password, ``?api_key=``) never reaches a log or a notebook's output."""
        shown = ", ".join(f"{f.name}={(self.shown_url if f.name == 'url' else getattr(self, f.name))!r}"
                          for f in fields(self))
        return f"LLMSettings({shown})"

    @property
    def criteria_text(self) -> str:
        return (self.criteria or DEFAULT_CRITERIA).strip()

    @property
    def shown_url(self) -> str:
        """The base URL as it may be printed: without user name, password, query or fragment."""
        return shown_url(self.url)


def shown_url(url: str) -> str:
    """``url`` without user name, password, query or fragment (where credentials may hide)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        if parts.port:
            host += f":{parts.port}"
        return urlunsplit((parts.scheme, host, parts.path, "", ""))
    except ValueError:
        return "(an unreadable URL)"


LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1", "0.0.0.0")


def endpoint_key(url: str) -> str:
    """The endpoint as the answers' cache keys it: :func:`shown_url` (no credentials, query or fragment) with the
    scheme and host in lower case, this machine's names as one ('localhost', '127.0.0.1') and no trailing '/', so
    one server spelt two ways keeps one set of answers."""
    try:
        parts = urlsplit(shown_url(url))
    except ValueError:
        return url
    host = (parts.hostname or "").lower()
    host = "loopback" if host in LOOPBACK_HOSTS else host
    port = f":{parts.port}" if parts.port else ""
    return urlunsplit((parts.scheme.lower(), host + port, parts.path.rstrip("/"), "", ""))


def scrubbed(text: str, key: str | None = None) -> str:
    """``text`` with the API key (``key``, and ``$OPENAI_API_KEY``) and anything that looks like a bearer token
    removed."""
    for k in (key, os.environ.get("OPENAI_API_KEY", "")):
        if k:
            text = text.replace(k, "[key]")
    return re.sub(r"(?i)(bearer\s+|sk-)[A-Za-z0-9._\-]{6,}", r"\1[key]", text)


CRITERIA_FILE_ENDINGS = (".txt", ".md", ".markdown", ".text", ".prompt")


def criteria_from(value: str | None) -> str | None:
    """``--llm-criteria TEXT|FILE``: the text of a file when ``value`` names one, else ``value`` itself. A value
    that reads as a file's name (one line of at most three words ending as a text file's name does, or a path
    without spaces) but names no readable file is refused: a misspelled name would otherwise be sent to the model as
    the rubric. A sentence that ends with a file's name ('Follow the style guide in style.md') is text."""
    if value is None:
        return None
    if not value.strip():
        raise ValueError("--llm-criteria is empty: give the criteria's text or a file holding it")
    name = value.strip()
    looks_like_a_file = "\n" not in name and (
        (name.lower().endswith(CRITERIA_FILE_ENDINGS) and len(name.split()) <= 3)
        or (not any(c.isspace() for c in name) and (os.sep in name or "/" in name)))
    try:
        path = Path(value.strip())
        if path.is_file():
            text = path.read_text(encoding="utf-8")
            if not text.strip():
                raise ValueError(f"--llm-criteria: {value} is empty")
            return text
        missing = None
    except (OSError, UnicodeDecodeError) as e:  # a name too long to be a file's, or a file that cannot be read
        missing = e
    if looks_like_a_file:
        why = f"cannot be read ({getattr(missing, 'strerror', None) or missing})" if missing else "no such file"
        raise ValueError(f"--llm-criteria {value!r}: {why}; give a readable file or the criteria's text")
    return value


def _cut(text: str) -> str:
    return text if len(text) <= MAX_TEXT_CHARS else text[:MAX_TEXT_CHARS] + " [cut]"


def judge_messages(context: Sequence[str], first: str, second: str, criteria: str) -> list[dict[str, str]]:
    """The chat messages asking which of ``first`` (shown as Reply 1) and ``second`` (Reply 2) is better after
    ``context``: one user message with the conversation (turns labelled Person 1 / Person 2, alternating back
    from the last turn, Person 1's), the two replies, the criteria and the question last. No system message:
    small instruction-tuned models answered the question less often with one."""
    n = len(context)
    turns = [f"Person {1 if (n - 1 - i) % 2 == 0 else 2}: {_cut(t)}" for i, t in enumerate(context)]
    conversation = "\n".join(turns) if turns else "(no earlier turns)"
    user = (f"Conversation so far:\n{conversation}\n\nReply 1: {_cut(first)}\nReply 2: {_cut(second)}\n\n"
            f"{criteria}\n{QUESTION}")
    return [{"role": "user", "content": user}]


def parse_answer(text: str | None) -> str | None:
    """'1' or '2' when the answer names one candidate reply (e.g. '1', ' 2.', 'Reply 2', 'Candidate reply 1'),
    else ``None``."""
    m = _ANSWER.match(text or "")
    return m.group(1) if m else None


_PREFIX_WORDS = {"candidate", "reply"}  # the words an answer may open with before its digit (``_ANSWER``)


def _digit(token: str) -> str | None:
    """'1' or '2' when a token is that digit, spaces and marks around it aside (' 2', '**1', '2.'), else None."""
    t = token.strip().strip("*.:)(\"'`")
    return t if t in ("1", "2") else None


def first_probability(logprobs: Any) -> float | None:
    """P(the first-shown reply is better) from the top log-probabilities of the token that holds the answer's
    digit: ``exp(lp(1)) / (exp(lp(1)) + exp(lp(2)))``. The tokens before it may only be marks and the words
    'Reply' and 'Candidate' (``parse_answer`` reads 'Candidate reply 2'): an answer 'Reply 2' is read at ' 2', never at
    'Reply', whose alternatives '1' (-5) and '2' (-9) said the opposite of the answer. ``None`` when the server
    gave none, the answer opens otherwise, or neither digit is among the digit token's alternatives (the answer's
    text is then read)."""
    content = getattr(logprobs, "content", None) or []
    for tok in content:
        token = getattr(tok, "token", "") or ""
        if _digit(token) is None:
            if not token.strip() or not re.sub(r"\W+", "", token) or token.strip(" *:").casefold() in _PREFIX_WORDS:
                continue  # a blank, a mark, or 'Reply'/'Candidate' before the digit
            return None
        mass = {"1": 0.0, "2": 0.0}
        alternatives = list(getattr(tok, "top_logprobs", None) or []) or [tok]
        for alt in alternatives:
            t = _digit(getattr(alt, "token", "") or "")
            lp = getattr(alt, "logprob", None)
            if t is not None and lp is not None and math.isfinite(lp):
                mass[t] += math.exp(lp)
        total = mass["1"] + mass["2"]
        return mass["1"] / total if total > 0 else None
    return None


@dataclass
class Answer:
    """One order's answer: P(first shown is better) (``None``: unparsed), where it came from
    ('logprobs' | 'answer' | 'unparsed' | 'identical replies': not asked), the raw text (cut at 200 characters)
    and the tokens it cost."""

    p_first: float | None
    source: str
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"p_first": self.p_first, "source": self.source, "text": self.text,
                "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                **({"reader": LOGPROB_READER} if self.source == "logprobs" else {})}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Answer":
        return cls(d.get("p_first"), d.get("source", "answer"), d.get("text", ""), int(d.get("prompt_tokens", 0)),
                   int(d.get("completion_tokens", 0)))


@dataclass
class Usage:
    """What one run cost: requests sent, answers read back from the cache, tokens, and (with prices) dollars."""

    requests: int = 0
    cached: int = 0
    retried: int = 0  # requests sent again by the client after a 408, 409, 429, 5xx, timeout or lost connection
    prompt_tokens: int = 0
    completion_tokens: int = 0
    price: tuple[float, float] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, prompt: int, completion: int) -> None:
        with self.lock:
            self.requests += 1
            self.prompt_tokens += prompt
            self.completion_tokens += completion

    @property
    def cost(self) -> float | None:
        if self.price is None:
            return None
        return (self.prompt_tokens * self.price[0] + self.completion_tokens * self.price[1]) / 1e6

    def to_dict(self) -> dict[str, Any]:
        return {"requests": self.requests, "cached_answers": self.cached, "retried": self.retried,
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "cost_usd": self.cost}


def _order_key(context: Sequence[str], first: str, second: str) -> str:
    return hashlib.sha1(repr(("llm-order", list(context), first, second)).encode("utf-8")).hexdigest()


def combine(first_ab: Sequence[float | None], first_ba: Sequence[float | None]) -> tuple[np.ndarray, np.ndarray,
                                                                                          np.ndarray, list[int]]:
    """(p_a, p_ab, p_ba_flipped, unparsed pair indices) from each pair's P(first is better) in order A|B and in
    order B|A: ``p_a`` is the mean of the two orders. A pair whose answer in one order or both named neither reply
    is unparsed: its P(A) and both single-order estimates are 0.5, so it decides nothing (one order alone is the
    reply's place as much as its merit: a model that always answers "Reply 1" would win every such pair for the
    side shown first) and adds no disagreement."""
    p_a, p_ab, p_ba, unparsed = [], [], [], []
    for i, (ab, ba) in enumerate(zip(first_ab, first_ba)):
        if ab is None or ba is None:
            unparsed.append(i)
            ab = ba = 0.5
        p_a.append((ab + 1.0 - ba) / 2)
        p_ab.append(ab)
        p_ba.append(1.0 - ba)
    return np.array(p_a), np.array(p_ab), np.array(p_ba), unparsed


def first_shown_rate(first_ab: Sequence[float | None], first_ba: Sequence[float | None]) -> float:
    """The share of parsed answers (both orders) that prefer the reply shown first (P > 0.5; exactly 0.5 counts
    half): a judge without position bias is near 0.5 on any data. The caller leaves out pairs of identical replies
    (never asked: a tie by construction)."""
    ps = [p for p in list(first_ab) + list(first_ba) if p is not None]
    if not ps:
        return math.nan
    return float(np.mean([1.0 if p > 0.5 else (0.5 if p == 0.5 else 0.0) for p in ps]))


def openai_module():
    """The ``openai`` client library, or a ``ValueError`` saying how to install it (``dialeval[llm]``)."""
    try:
        import openai
    except ImportError:
        raise ValueError("the llm judge needs the openai client library: pip install 'dialeval[llm]' "
                         "(or pip install openai==3.57.0)") from None
    return openai


UNREAD = "unread"  # the verdict of a pair whose answers named neither reply (``JudgeOutput.verdict``)


class NotAChatCompletion(Exception):
    """The endpoint answered a chat request with something else (a web page, plain text)."""


def _describe_error(e: Exception, settings: LLMSettings, key: str | None = None, retried: bool = True,
                    waited: float | None = None) -> str:
    """One line saying what went wrong and what to fix; never the key, never the server's own words on an
    authentication failure (some servers echo part of the key). ``retried``: the request was retried as the
    settings say; ``waited``: the seconds it was given, when not the settings' timeout (the check before a run
    asks once, briefly)."""
    openai = openai_module()
    where = f"the LLM endpoint at {settings.shown_url}"
    tries = f"{settings.retries} retries included" if retried else "asked once"
    if isinstance(e, openai.AuthenticationError) or getattr(e, "status_code", None) in (401, 403):
        return (f"{where} refused the API key (HTTP {getattr(e, 'status_code', 401)}): set OPENAI_API_KEY to a key "
                "it accepts")
    known = [  # the first class that matches says it (a timeout is also a connection error)
        (openai.APITimeoutError, f"{where} did not answer within {settings.timeout:g} s, {tries}: raise "
                                 "--llm-timeout, or check the server" if waited is None else
         f"{where} did not answer its model list within {waited:g} s, {tries}: is the server running and ready?"),
        (openai.APIConnectionError, f"cannot reach {where} (nothing answered, {tries}): is the server running, and "
                                    "is --llm-url right?"),
        (openai.NotFoundError, f"{where} has no model {settings.model!r} (HTTP 404): check --llm-model"
         if settings.shown_url.rstrip("/").endswith("/v1") else  # a path that is not the API's answers 404 too
         f"{where} answered HTTP 404 for model {settings.model!r}: is --llm-url the API's base URL (an "
         "OpenAI-compatible API usually ends in /v1)? If it is, check --llm-model"),
        (openai.RateLimitError, f"{where} still refused with HTTP 429 (rate limit), {tries}: lower "
                                "--llm-concurrency or try later; answers already received are kept"),
    ]
    for cls, line in known:
        if isinstance(e, cls):
            return line
    if isinstance(e, openai.APIStatusError):
        said = str(e.message or e)
        body = getattr(e, "body", None)
        if said.strip() == f"Error code: {e.status_code}" and body:  # the server's words sit in the body
            said = body.get("detail", body) if isinstance(body, dict) else body
            said = said if isinstance(said, str) else json.dumps(said)
        again = f" ({tries})" if retried and (e.status_code >= 500 or e.status_code in (408, 409)) else ""
        return (f"{where} answered HTTP {e.status_code}{again}: "
                f"{(scrubbed(said, key).splitlines() or [''])[0][:300]}")
    if isinstance(e, (json.JSONDecodeError, openai.APIResponseValidationError, NotAChatCompletion)):
        return (f"{where} answered, but not with an OpenAI chat completion (its body is not the JSON the API "
                "returns): is --llm-url the API's base URL (it usually ends in /v1)?")
    return f"{where} failed: {scrubbed(type(e).__name__ + ': ' + str(e), key).splitlines()[0][:300]}"


@register_judge("llm")
class LLMJudge(Judge):
    """An OpenAI-compatible chat model asked in both orders (module docstring)."""

    description = ("any OpenAI-compatible LLM (--llm-url, --llm-model, key in $OPENAI_API_KEY), both orders asked, "
                   "answers cached")
    caches_own_answers = True
    load_once = False  # its endpoint comes from the environment at each call

    def __init__(self, settings: LLMSettings, api_key: str | None = None):
        """``api_key``: a key held in this object's memory only (the dashboard's, typed by its user); ``None``:
        ``$OPENAI_API_KEY``. It is in no setting, signature, cache key or message."""
        self.settings = settings
        self._api_key = api_key
        self.tie_margin = TIE_MARGIN
        self._client = None
        self._logprobs = True  # turned off for the run when the server refuses the parameter
        self.last_usage = Usage(price=settings.price)
        self._attempts = 0  # chat requests sent over HTTP, retries included (:meth:`_sent`)
        self._attempts_lock = threading.Lock()

    def _sent(self, request) -> None:
        """An HTTP request leaving the client (an ``httpx`` event hook): chat requests are counted, so that the
        client's own retries (429, 5xx, timeouts) can be said."""
        if request.url.path.endswith("/chat/completions"):
            with self._attempts_lock:
                self._attempts += 1

    @classmethod
    def load(cls, checkpoint: str | None = None) -> "LLMJudge":
        """The judge the environment names (``$OPENAI_BASE_URL``, ``$DIALEVAL_LLM_MODEL``); no checkpoint."""
        if checkpoint is not None:
            raise ValueError("the llm judge has no checkpoint: name the model with --llm-model")
        return cls(LLMSettings.from_env())

    @classmethod
    def add_arguments(cls, p: argparse._ActionsContainer) -> None:
        p.add_argument("--llm-url", default=None, help="with --judge llm: the OpenAI-compatible endpoint's base URL "
                                                       "(default $OPENAI_BASE_URL; the key: $OPENAI_API_KEY only)")
        p.add_argument("--llm-model", default=None, help="with --judge llm: the model's name at the endpoint "
                                                         "(default $DIALEVAL_LLM_MODEL)")
        p.add_argument("--llm-criteria", default=None, metavar="TEXT|FILE",
                       help="with --judge llm: what makes a reply better, replacing the default rubric")
        p.add_argument("--llm-concurrency", type=int, default=DEFAULT_CONCURRENCY,
                       help=f"with --judge llm: requests at once (default {DEFAULT_CONCURRENCY})")
        p.add_argument("--llm-timeout", type=float, default=DEFAULT_TIMEOUT,
                       help=f"with --judge llm: seconds one request may take (default {DEFAULT_TIMEOUT:g})")
        p.add_argument("--llm-retries", type=int, default=DEFAULT_RETRIES,
                       help=f"with --judge llm: retries on 429, 5xx, timeouts (default {DEFAULT_RETRIES})")
        p.add_argument("--llm-price", default=None, metavar="IN,OUT",
                       help="with --judge llm: US dollars per million input and output tokens, for the cost line")

    FLAGS = {"llm_url": None, "llm_model": None, "llm_criteria": None, "llm_concurrency": DEFAULT_CONCURRENCY,
             "llm_timeout": DEFAULT_TIMEOUT, "llm_retries": DEFAULT_RETRIES, "llm_price": None}

    @classmethod
    def flags_given(cls, a: argparse.Namespace) -> list[str]:
        return ["--" + dest.replace("_", "-") for dest, default in cls.FLAGS.items()
                if getattr(a, dest, default) != default]

    @classmethod
    def from_arguments(cls, a: argparse.Namespace) -> "LLMJudge":
        price = None
        if a.llm_price:
            try:
                price = tuple(float(x) for x in a.llm_price.split(","))
            except ValueError:
                raise ValueError(f"--llm-price: two numbers, IN,OUT dollars per million tokens; got "
                                 f"{a.llm_price!r}") from None
        return cls(LLMSettings.from_env(url=a.llm_url, model=a.llm_model, criteria=criteria_from(a.llm_criteria),
                                        concurrency=a.llm_concurrency, timeout=a.llm_timeout, retries=a.llm_retries,
                                        price=price))

    def with_settings(self, **changes: Any) -> "LLMJudge":
        return LLMJudge(replace(self.settings, **changes), self._api_key)

    def __repr__(self) -> str:  # never the key
        return f"LLMJudge(model={self.settings.model!r}, url={self.settings.shown_url!r})"

    # -- identity ---------------------------------------------------------------------------------------------

    def criteria_hash(self) -> str:
        return hashlib.sha1(self.settings.criteria_text.encode("utf-8")).hexdigest()[:10]

    def namespace(self) -> str:
        """The score cache's namespace of this judge's answers: the endpoint (a hash of :func:`endpoint_key`:
        its URL without credentials or query), model, prompt and parser versions, criteria,
        temperature, seed (not the key, not dialeval's code: ``core.cache.kept_across_code``). The endpoint is in
        it because a local server answers to any model name it is given: two servers' models may share one."""
        endpoint = hashlib.sha1(endpoint_key(self.settings.url).encode("utf-8")).hexdigest()[:10]
        return (f"{NAMESPACE}endpoint:{endpoint}|model:{self.settings.model}|prompt:{PROMPT_VERSION}"
                f"|parser:{PARSER_VERSION}|criteria:{self.criteria_hash()}|temperature:0|seed:{SEED}"
                f"|answer-tokens:{ANSWER_TOKENS}")

    def signature(self) -> str:
        rubric = "default" if self.settings.criteria is None else "custom"
        return (f"judge:llm|model:{self.settings.model}|prompt:v{PROMPT_VERSION}|criteria:{rubric}-"
                f"{self.criteria_hash()}|temperature:0|seed:{SEED}|tie:{self.tie_margin:g}")

    # -- asking -----------------------------------------------------------------------------------------------

    def client(self):
        if self._client is None:
            openai = openai_module()
            self._client = openai.OpenAI(base_url=self.settings.url,
                                         api_key=self._api_key or os.environ.get("OPENAI_API_KEY") or "no-key-set",
                                         timeout=self.settings.timeout, max_retries=self.settings.retries,
                                         http_client=openai.DefaultHttpxClient(event_hooks={"request": [self._sent]}))
        return self._client

    def _request(self, messages: list[dict[str, str]]):
        openai = openai_module()
        kwargs: dict[str, Any] = {"model": self.settings.model, "messages": messages, "temperature": 0.0,
                                  "seed": SEED, "max_tokens": ANSWER_TOKENS}
        if self._logprobs:
            kwargs.update(logprobs=True, top_logprobs=TOP_LOGPROBS)
        try:
            return self.client().chat.completions.create(**kwargs)
        except openai.BadRequestError as e:
            if "logprobs" in kwargs and "logprob" in str(e).lower():  # this request asked for them (another
                # thread may have turned them off while it was on its way)
                with self._attempts_lock:  # asked again without them: no retry of the client's to count
                    self._attempts -= 1
                self._logprobs = False
                kwargs.pop("logprobs"), kwargs.pop("top_logprobs")
                return self.client().chat.completions.create(**kwargs)
            raise

    def ask(self, context: Sequence[str], first: str, second: str, usage: Usage) -> Answer:
        """One order asked (and asked once more if its answer names neither reply)."""
        messages = judge_messages(context, first, second, self.settings.criteria_text)
        text = ""
        for attempt in range(2):
            response = self._request(messages)
            if not hasattr(response, "choices"):  # the client hands back the body as text when it is not JSON
                raise NotAChatCompletion()
            u = getattr(response, "usage", None)
            prompt_t, completion_t = int(getattr(u, "prompt_tokens", 0) or 0), int(getattr(u, "completion_tokens", 0) or 0)
            usage.add(prompt_t, completion_t)
            choice = response.choices[0] if response.choices else None
            text = scrubbed((getattr(getattr(choice, "message", None), "content", None) or "") if choice else "",
                            self._api_key)  # a server that echoes the request's headers: never kept
            answer = parse_answer(text)
            p = first_probability(getattr(choice, "logprobs", None)) if choice is not None else None
            if p is not None:
                return Answer(p, "logprobs", text[:200], prompt_t, completion_t)
            if answer is not None:
                return Answer(1.0 if answer == "1" else 0.0, "answer", text[:200], prompt_t, completion_t)
            messages = messages + [{"role": "assistant", "content": text}, {"role": "user", "content": REMINDER}]
        return Answer(None, "unparsed", text[:200])

    def predict(self, contexts: Sequence[Sequence[str]], replies_a: Sequence[str], replies_b: Sequence[str],
                progress: Progress | None = None, cache: ScoreCache | None = None) -> JudgeOutput:
        if not (len(contexts) == len(replies_a) == len(replies_b)):
            raise ValueError("contexts, replies_a and replies_b must have the same length")
        ctxs = [[c] if isinstance(c, str) else list(c) for c in contexts]
        orders = [(c, a, b) for c, a, b in zip(ctxs, replies_a, replies_b)] + \
                 [(c, b, a) for c, a, b in zip(ctxs, replies_a, replies_b)]
        keys = [_order_key(*o) for o in orders]
        usage = Usage(price=self.settings.price)
        attempts_before = self._attempts
        answers: dict[str, Answer] = {}
        ns = self.namespace()
        if cache is not None:
            answers = self._cached_answers(cache, keys)
        usage.cached = sum(1 for k in keys if k in answers)
        same = [same_reply(a, b) for _, a, b in orders]  # a tie by construction: never asked (paid for)
        for k, is_same in zip(keys, same):
            if is_same:
                answers[k] = Answer(0.5, "identical replies", "")
        todo = list(dict.fromkeys(k for k in keys if k not in answers))
        by_key = {k: o for k, o in zip(keys, orders)}
        total = len(todo)
        if todo:
            tick(progress, 0, total, "llm judge: asking")
            started = time.perf_counter()
            self._ask_all(todo, by_key, answers, usage, cache, ns, progress, total)
            usage.retried = max(0, self._attempts - attempts_before - usage.requests)
            if cache is not None and total >= MIN_PACE_REQUESTS:
                cache.put_many(PACE_NAMESPACE, {self.pace_key(): (time.perf_counter() - started) / total})
        first_ab = [answers[k].p_first for k in keys[:len(ctxs)]]
        first_ba = [answers[k].p_first for k in keys[len(ctxs):]]
        p_a, p_ab, p_ba, unparsed = combine(first_ab, first_ba)
        out = JudgeOutput.from_probabilities(p_a, p_ab, p_ba, self.tie_margin, self.signature())
        for i in unparsed:  # no call: not a tie (its P(A) 0.5 decides nothing)
            out.verdict[i] = UNREAD
        unread = set(unparsed)
        out.order_disagreement = order_disagreement(p_ab, p_ba, [i not in unread for i in range(len(p_a))])
        sources = sorted({answers[k].source for k, is_same in zip(keys, same) if not is_same})
        # only what the answers fix (a rerun from the cache gives the same); what the run cost: ``last_usage``
        differ = [not x for x in same[:len(ctxs)]]
        out.notes = {"judge": "llm", "model": self.settings.model,
                     "first_shown": first_shown_rate([p for p, d in zip(first_ab, differ) if d],
                                                     [p for p, d in zip(first_ba, differ) if d]),
                     "unparsed": unparsed, "unparsed_orders": sum(p is None for p in first_ab + first_ba),
                     "p_from": sources}
        self.last_usage = usage
        return out

    def _ask_all(self, todo: list[str], by_key: dict[str, tuple], answers: dict[str, Answer], usage: Usage,
                 cache: ScoreCache | None, ns: str, progress: Progress | None, total: int) -> None:
        """Ask every order in ``todo`` with at most ``concurrency`` requests at once; each answer is written to
        the cache as it arrives, so a run stopped by an error keeps what it had."""
        done, finished_well = 0, False
        pool = ThreadPoolExecutor(max_workers=self.settings.concurrency, thread_name_prefix="llm-judge")
        futures: dict[Future, str] = {}
        try:
            pending = iter(todo)
            for key in pending:  # fill the pool, then one new request per finished one
                futures[pool.submit(self.ask, *by_key[key], usage)] = key
                if len(futures) >= self.settings.concurrency * 2:
                    break
            while futures:
                finished, _ = wait(list(futures), return_when=FIRST_EXCEPTION)
                for f in finished:
                    key = futures.pop(f)
                    failure = None
                    try:
                        answer = f.result()
                    except Exception as e:  # noqa: BLE001 (every failure becomes one clean line)
                        failure = _describe_error(e, self.settings, self._api_key)
                    if failure is not None:  # raised outside the handler: the error keeps no link to the
                        raise LLMJudgeError(failure)  # client's exception, whose request holds the key
                    answers[key] = answer
                    if cache is not None and answer.p_first is not None:  # one that named neither: asked again
                        cache.put_many(ns, {key: answer.to_dict()})
                    done += 1
                    tick(progress, done, total, "llm judge: asking")
                    nxt = next(pending, None)
                    if nxt is not None:
                        futures[pool.submit(self.ask, *by_key[nxt], usage)] = nxt
            finished_well = True
        finally:
            for f in futures:
                f.cancel()
            # after a failure or Ctrl-C, return at once: requests still in flight end within their timeout
            pool.shutdown(wait=finished_well, cancel_futures=True)

    def pairs_to_ask(self, contexts: Sequence[Sequence[str]], replies_a: Sequence[str], replies_b: Sequence[str],
                     cache: ScoreCache | None) -> int:
        """How many distinct pairs :meth:`predict` would send a request for (an order not in the cache; two
        identical replies are never asked)."""
        ctxs = [[c] if isinstance(c, str) else list(c) for c in contexts]
        pairs = list(dict.fromkeys((_order_key(c, a, b), _order_key(c, b, a))
                                   for c, a, b in zip(ctxs, replies_a, replies_b) if not same_reply(a, b)))
        found = self._cached_answers(cache, [k for p in pairs for k in p]) if cache is not None else {}
        return sum(1 for ab, ba in pairs if ab not in found or ba not in found)

    def _cached_answers(self, cache: ScoreCache, keys: Sequence[str]) -> dict[str, Answer]:
        """The answers ``cache`` holds for ``keys`` that name a reply (one that named neither is asked again, and so
        is one read from log-probabilities by a reader older than :data:`LOGPROB_READER`)."""
        return {k: a for k, v in cache.get_many(self.namespace(), keys).items() for a in [Answer.from_dict(v)]
                if a.p_first is not None and not (a.source == "logprobs" and v.get("reader", 1) < LOGPROB_READER)}

    def pace_key(self) -> str:
        """The score cache's key of this endpoint's pace: a hash of the URL as it may be shown, the model and the
        concurrency (the pace depends on all three; never the key)."""
        return hashlib.sha1(f"{self.settings.shown_url}|{self.settings.model}|{self.settings.concurrency}"
                            .encode("utf-8")).hexdigest()[:16]

    def estimated_seconds(self, n_pairs: int, cache: ScoreCache | None) -> float | None:
        """About how long ``n_pairs`` new pairs take (two requests each) at the pace the last run of
        :data:`MIN_PACE_REQUESTS` or more requests to this endpoint, model and concurrency measured (kept in the
        score cache); ``None`` before one."""
        if cache is None:
            return None
        pace = cache.get_many(PACE_NAMESPACE, [self.pace_key()]).get(self.pace_key())
        return 2 * n_pairs * float(pace) if isinstance(pace, (int, float)) and math.isfinite(pace) else None

    def check_ready(self) -> None:
        """Before anything is scored: the endpoint answers a model listing (a missing server or a refused key is
        said at once, not after the metrics ran). A server without ``/models`` is not an error."""
        openai = openai_module()
        waited = min(self.settings.timeout, CHECK_SECONDS)
        failure = None
        try:
            self.client().with_options(max_retries=0, timeout=waited).models.list()
        except (openai.NotFoundError, openai.BadRequestError, openai.UnprocessableEntityError):
            return
        except openai.APIStatusError as e:
            if e.status_code in (401, 403):
                failure = _describe_error(e, self.settings, self._api_key, False, waited)
        except openai.APIConnectionError as e:
            failure = _describe_error(e, self.settings, self._api_key, False, waited)
        if failure is not None:  # outside the handler: no link to the client's exception and its request's key
            raise LLMJudgeError(failure)

    def usage_line(self) -> str:
        """'llm judge: 120 requests (40 answers from the cache), 31,200 input + 480 output tokens, $0.0123'."""
        u = self.last_usage
        cost = f", ${u.cost:.4f}" if u.cost is not None else ""
        retried = (f"; {u.retried} sent again after a 408/409/429/5xx answer, a timeout or a lost connection"
                   if u.retried else "")
        return (f"llm judge ({self.settings.model} at {self.settings.shown_url}): {u.requests} requests "
                f"({u.cached} answers from the cache{retried}), {u.prompt_tokens:,} input + "
                f"{u.completion_tokens:,} output tokens{cost}")


__all__ = ["LLMJudge", "LLMSettings", "LLMJudgeError", "judge_messages", "parse_answer", "first_probability",
           "combine", "DEFAULT_CRITERIA", "PROMPT_VERSION"]
