"""Chat completions against any OpenAI-compatible server, with bounded retries and accounting.

The `openai` client's own retries are switched off so that every retry (429, 5xx, timeouts,
dropped connections, a reply without choices) is counted, backed off exponentially (honouring
``Retry-After``) and visible in the trace. A retry after a timeout asks for half the reply length,
so it is not the same request again. Errors that retrying cannot fix (bad key, unknown model, a
server that stays unreachable or failing) end in one `LLMError` message; timeouts and replies
without choices that persist, and a request larger than the server's context window
(`ContextOverflow`), raise a `StepError`, which ends only the plan step (see `kgctl.agent.loop`).

>>> settings = LLMSettings(base_url="http://127.0.0.1:8000/v1", model="m", api_key="k")
>>> [backoff_seconds(settings, attempt) for attempt in range(4)]
[0.5, 1.0, 2.0, 4.0]
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import httpx
from pydantic import BaseModel, ConfigDict, Field

from kgctl.agent.answers import normal_call, window_from
from kgctl.agent.usage import DEFAULT_PRICES, Price, Usage
from kgctl.errors import KgctlError

if TYPE_CHECKING:
    import openai

ENV_BASE_URL = "OPENAI_BASE_URL"
ENV_API_KEY = "OPENAI_API_KEY"
ENV_MODEL = "KGCTL_MODEL"
DEFAULT_TEMPERATURE = 0.0
DEFAULT_TIMEOUT_S = 600.0  # CPU inference of a long prompt takes minutes
DEFAULT_MAX_TOKENS = 1024  # reply budget per model turn
MIN_REPLY_TOKENS = 64  # a retry after a timeout halves the reply budget down to this
DEFAULT_MAX_RETRIES = 4
BACKOFF_BASE_S = 0.5
BACKOFF_CAP_S = 30.0
RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
MAX_SAID_CHARS = 300  # of a server's error message, quoted in ours
DOCTOR_HINT = "`kgctl doctor` checks the server, the model and tool calling"
# Local servers (vLLM, Ollama, llama.cpp) accept any key; the client needs a non-empty one.
PLACEHOLDER_KEY = "none"


# Loggers that report every HTTP request at INFO level (the MCP server sets the root to INFO).
CHATTY_LOGGERS = ("httpx", "httpx2", "httpcore", "openai", "mcp")


class LLMError(KgctlError):
    """The LLM server refused or kept failing a request."""


class StepError(LLMError):
    """A failure that ends the current plan step but not the paper."""


class ContextOverflow(StepError):
    """The server refused the request as larger than its context window."""

    def __init__(self, message: str, *, prompt_tokens: int | None, context: int | None) -> None:
        super().__init__(message)
        self.prompt_tokens, self.context = prompt_tokens, context


class LLMSettings(BaseModel):
    """Where and how to ask; read from options or the environment."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    base_url: str
    model: str
    api_key: str = Field(default=PLACEHOLDER_KEY, repr=False)
    temperature: float = DEFAULT_TEMPERATURE
    timeout_s: float = Field(default=DEFAULT_TIMEOUT_S, gt=0)
    max_tokens: int = Field(default=DEFAULT_MAX_TOKENS, ge=1)
    context_window: int | None = Field(default=None, ge=1)  # None: ask the server
    max_retries: int = Field(default=DEFAULT_MAX_RETRIES, ge=0)
    backoff_base_s: float = Field(default=BACKOFF_BASE_S, ge=0)
    prices: dict[str, Price] = Field(default_factory=lambda: dict(DEFAULT_PRICES))

    @classmethod
    def from_env(
        cls, *, base_url: str | None = None, model: str | None = None, **options: Any
    ) -> LLMSettings:
        """Settings from explicit values, else the environment; a clear error names what to set."""
        base_url = base_url or os.environ.get(ENV_BASE_URL)
        model = model or os.environ.get(ENV_MODEL)
        missing = [
            text for value, text in (
                (base_url, f"--base-url or {ENV_BASE_URL} (e.g. https://api.openai.com/v1 or "
                           "http://127.0.0.1:11434/v1 for Ollama)"),
                (model, f"--model or {ENV_MODEL} (e.g. gpt-4o)"),
            ) if not value
        ]
        if missing:
            raise LLMError(
                "no LLM configured: set " + " and ".join(missing)
                + f", plus {ENV_API_KEY} if the server needs a key; "
                "or run `kgctl demo` to replay the bundled traces without an LLM"
            )
        key = os.environ.get(ENV_API_KEY) or PLACEHOLDER_KEY
        return cls(base_url=base_url, model=model, api_key=key, **options)

    def price(self) -> Price | None:
        return self.prices.get(self.model)


class ChatResult(BaseModel):
    """One assistant message with what it cost to get it."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    message: dict[str, Any]  # as sent back in the next request
    finish_reason: str | None
    usage: Usage


class ChatClient:
    """Chat completions with tools; one instance per run (shares the HTTP connection pool)."""

    def __init__(self, settings: LLMSettings) -> None:
        import openai  # loaded when a run starts: `kgctl extract` answers usage errors at once

        self.settings = settings
        self._client = openai.AsyncOpenAI(
            base_url=settings.base_url,
            api_key=settings.api_key,
            timeout=settings.timeout_s,
            max_retries=0,
        )
        # the server's own endpoints beside the OpenAI API (context window, token counts)
        self._http = httpx.AsyncClient(
            timeout=30, headers={"Authorization": f"Bearer {settings.api_key}"})
        self._counts = True

    async def complete(
        self, messages: list[dict[str, Any]], *, tools: list[dict[str, Any]]
    ) -> ChatResult:
        import openai

        retries, max_tokens = 0, self.settings.max_tokens
        while True:
            try:
                response = await self._client.chat.completions.create(
                    model=self.settings.model,
                    messages=messages,  # type: ignore[arg-type]
                    tools=tools or openai.omit,  # type: ignore[arg-type]
                    temperature=self.settings.temperature,
                    max_tokens=max_tokens,
                )
                if response.choices:
                    break
                error: Exception | str = "a reply without choices"
                wait = None
            except openai.APITimeoutError as exc:
                error, wait = exc, None
                max_tokens = max(max_tokens // 2, MIN_REPLY_TOKENS)
            except openai.APIConnectionError as exc:
                error, wait = exc, None
            except openai.APIStatusError as exc:
                overflow = context_overflow(exc.status_code, exc.body, exc.message)
                if overflow is not None:
                    raise overflow from None
                if exc.status_code not in RETRYABLE_STATUS:
                    offered = await self.model_ids() if exc.status_code == 404 else None
                    raise LLMError(_status_message(self.settings, exc, offered)) from None
                error, wait = exc, retry_after_seconds(exc.response.headers)
            if retries >= self.settings.max_retries:
                # a server that answers slowly or emptily may do better on the next step
                slow = isinstance(error, str | openai.APITimeoutError)
                failure = StepError if slow else LLMError
                raise failure(
                    f"LLM server {self.settings.base_url} (model {self.settings.model!r}) still "
                    f"failing after {retries} retries: {describe(error)}; {DOCTOR_HINT}"
                ) from None
            if wait is None:
                wait = backoff_seconds(self.settings, retries)
            await asyncio.sleep(wait)
            retries += 1
        return _to_result(self.settings, response, retries)

    async def count_prompt(self, messages: list[dict[str, Any]], *,
                           tools: list[dict[str, Any]]) -> int | None:
        """Tokens of a request as the served model counts them, where the server can say
        (llama.cpp: ``/apply-template`` renders the chat template with the tools, ``/tokenize``
        counts); None elsewhere (then asked no more)."""
        if not self._counts:
            return None
        root = self.settings.base_url.rstrip("/").removesuffix("/v1")
        body = {"messages": messages} | ({"tools": tools} if tools else {})
        try:
            rendered = await self._http.post(f"{root}/apply-template", json=body)
            rendered.raise_for_status()
            tokens = await self._http.post(f"{root}/tokenize", json={
                "content": rendered.json()["prompt"], "add_special": True})
            tokens.raise_for_status()
            return len(tokens.json()["tokens"])
        except (httpx.HTTPError, ValueError, KeyError, TypeError):
            self._counts = False
            return None

    async def context_window(self) -> int | None:
        """The configured window, else what the server reports (None when it does not say):
        ``/models`` (llama.cpp ``meta.n_ctx``, vLLM ``max_model_len``, others
        ``context_length``), then llama.cpp's ``/props``."""
        if self.settings.context_window:
            return self.settings.context_window
        base = self.settings.base_url.rstrip("/")
        for url in (f"{base}/models", f"{base.removesuffix('/v1')}/props"):
            try:
                response = await self._http.get(url)
                found = window_from(response.json(), self.settings.model)
            except (httpx.HTTPError, ValueError):
                continue
            if found:
                return found
        return None

    async def check_reachable(self) -> None:
        """LLMError unless an HTTP server answers at the base URL (any status will do)."""
        try:
            await self._http.get(f"{self.settings.base_url.rstrip('/')}/models")
        except httpx.TransportError as exc:
            raise LLMError(f"cannot reach the LLM server {self.settings.base_url}: "
                           f"{describe(exc)}; start it or check --base-url/{ENV_BASE_URL}"
                           ) from None

    async def model_ids(self) -> list[str] | None:
        """The models the server lists at ``/models`` (None when it cannot be read)."""
        try:
            response = await self._http.get(f"{self.settings.base_url.rstrip('/')}/models")
            response.raise_for_status()
            return [str(e["id"]) for e in response.json()["data"] if "id" in e]
        except (httpx.HTTPError, ValueError, KeyError, TypeError):
            return None

    async def close(self) -> None:
        await self._client.close()
        await self._http.aclose()


def _to_result(settings: LLMSettings, response: Any, retries: int) -> ChatResult:
    choice = response.choices[0]
    message = choice.message.model_dump(exclude_none=True, exclude_unset=True)
    message = {k: v for k, v in message.items() if k in ("role", "content", "tool_calls")}
    message.setdefault("role", "assistant")
    message.setdefault("content", None)
    if message.get("tool_calls"):
        message["tool_calls"] = [normal_call(c, i) for i, c in enumerate(message["tool_calls"])]
    else:
        message.pop("tool_calls", None)
    tokens = response.usage
    usage = Usage(
        requests=1,
        retries=retries,
        prompt_tokens=tokens.prompt_tokens if tokens else 0,
        completion_tokens=tokens.completion_tokens if tokens else 0,
    )
    usage = usage.model_copy(update={"cost_usd": usage.cost(settings.price())})
    return ChatResult(message=message, finish_reason=choice.finish_reason, usage=usage)


def _status_message(settings: LLMSettings, exc: openai.APIStatusError,
                    offered: list[str] | None) -> str:
    where = f"the LLM server {settings.base_url}"
    if exc.status_code == 401:
        return f"{where} refused the API key ({describe(exc)}); set {ENV_API_KEY}"
    if exc.status_code == 404:
        models = f"; it offers: {', '.join(offered)}" if offered else ""
        return (f"{where} does not know model {settings.model!r} (or the URL is wrong: "
                f"{describe(exc)}){models}; check --model/{ENV_MODEL} and "
                f"--base-url/{ENV_BASE_URL}")
    return (f"{where} rejected the request for model {settings.model!r}: {describe(exc)}; "
            f"{DOCTOR_HINT}")


def describe(exc: Exception | str) -> str:
    """What went wrong, in the server's own words where it gave some.

    >>> describe(ConnectionRefusedError(111, "Connection refused"))
    'connection refused'
    """
    import openai

    if isinstance(exc, str):
        return exc
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code}: {_server_words(exc.body) or exc.message}"
    if isinstance(exc, openai.APITimeoutError):
        return "timed out"
    root = exc
    while root.__cause__ is not None or root.__context__ is not None:
        root = root.__cause__ or root.__context__
    if isinstance(root, ConnectionRefusedError) or "refused" in str(root).lower():
        return "connection refused"
    return " ".join(str(root).split()) or type(root).__name__


def _server_words(body: object) -> str:
    """The message of an error body as servers shape it (``{"error": {"message"}}``,
    ``{"message"}``, ``{"error": "..."}``, plain text), on one line.

    >>> _server_words({"object": "error", "message": "tools are not supported"})
    'tools are not supported'
    """
    if isinstance(body, dict):
        inner = body.get("error")
        body = inner.get("message") if isinstance(inner, dict) else (inner or body.get("message"))
    return " ".join(str(body or "").split())[:MAX_SAID_CHARS]


def quiet_http_logs(*, verbose: bool) -> None:
    """Per-request INFO logs of the HTTP and MCP libraries only with ``verbose``."""
    for name in CHATTY_LOGGERS:
        logging.getLogger(name).setLevel(logging.INFO if verbose else logging.WARNING)


# Pure functions


_OVERFLOW = re.compile(
    r"context (size|length|window)|exceed_context_size|context_length_exceeded|too many tokens",
    re.IGNORECASE)
_NUMBERS = (  # (prompt tokens, context) as servers word them
    re.compile(r"request \((?P<prompt>\d+) tokens\) exceeds the available context size "
               r"\((?P<context>\d+) tokens\)"),
    re.compile(r"maximum context length is (?P<context>\d+) tokens.*?(?:resulted in|requested) "
               r"(?P<prompt>\d+) tokens", re.DOTALL),
)


def context_overflow(status: int, body: object, message: str) -> ContextOverflow | None:
    """The server's "request larger than the context window" answer, with its numbers.

    >>> err = context_overflow(400, {"message": "request (46707 tokens) exceeds the available "
    ...                        "context size (32768 tokens), try increasing it"}, "")
    >>> err.prompt_tokens, err.context
    (46707, 32768)
    >>> context_overflow(400, {"message": "unknown field"}, "bad request") is None
    True
    """
    text = json.dumps(body) if isinstance(body, dict) else str(body or "")
    text = f"{message} {text}"
    if status not in (400, 413) or not _OVERFLOW.search(text):
        return None
    fields = body if isinstance(body, dict) else {}
    prompt, context = fields.get("n_prompt_tokens"), fields.get("n_ctx")
    for pattern in _NUMBERS:
        if (match := pattern.search(text)) and not (prompt and context):
            prompt, context = int(match["prompt"]), int(match["context"])
    said = fields.get("message") if isinstance(fields.get("message"), str) else message
    return ContextOverflow(f"the request exceeds the model's context window: {said}",
                           prompt_tokens=prompt, context=context)


def backoff_seconds(settings: LLMSettings, attempt: int) -> float:
    """Exponential backoff before retry number ``attempt`` (0-based), capped."""
    return min(settings.backoff_base_s * 2**attempt, BACKOFF_CAP_S)


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """Seconds asked for by ``retry-after-ms`` or ``retry-after`` (numbers only), capped.

    >>> retry_after_seconds({"retry-after-ms": "20"}), retry_after_seconds({"retry-after": "2"})
    (0.02, 2.0)
    >>> retry_after_seconds({}) is None
    True
    """
    for header, divisor in (("retry-after-ms", 1000), ("retry-after", 1)):
        try:
            return min(float(headers[header]) / divisor, BACKOFF_CAP_S)
        except (KeyError, ValueError):
            continue
    return None
