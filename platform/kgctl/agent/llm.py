"""Chat completions against any OpenAI-compatible server, with bounded retries and accounting.

The `openai` client's own retries are switched off so that every retry (429, 5xx, timeouts,
dropped connections) is counted, backed off exponentially (honouring ``Retry-After``) and
visible in the trace. Errors that retrying cannot fix (bad key, unknown model) end in one
`LLMError` message.

>>> settings = LLMSettings(base_url="http://127.0.0.1:8000/v1", model="m", api_key="k")
>>> [backoff_seconds(settings, attempt) for attempt in range(4)]
[0.5, 1.0, 2.0, 4.0]
>>> Usage(prompt_tokens=1000, completion_tokens=500).cost(Price(input=2.5, output=10.0))
0.0075
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from typing import Any

import openai
from pydantic import BaseModel, ConfigDict, Field

from kgctl.errors import KgctlError

ENV_BASE_URL = "OPENAI_BASE_URL"
ENV_API_KEY = "OPENAI_API_KEY"
ENV_MODEL = "KGCTL_MODEL"
DEFAULT_TEMPERATURE = 0.0
DEFAULT_TIMEOUT_S = 120.0
DEFAULT_MAX_RETRIES = 4
BACKOFF_BASE_S = 0.5
BACKOFF_CAP_S = 30.0
TOKENS_PER_PRICE_UNIT = 1_000_000
RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
# Local servers (vLLM, Ollama, llama.cpp) accept any key; the client needs a non-empty one.
PLACEHOLDER_KEY = "none"


class LLMError(KgctlError):
    """The LLM server refused or kept failing a request."""


class Price(BaseModel):
    """USD per million tokens."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    input: float = Field(ge=0)
    output: float = Field(ge=0)


# Published list prices (USD per 1M tokens); override or extend with a price file.
DEFAULT_PRICES: dict[str, Price] = {
    "gpt-4o": Price(input=2.5, output=10.0),
    "gpt-4o-mini": Price(input=0.15, output=0.6),
    "gpt-4.1": Price(input=2.0, output=8.0),
    "gpt-4.1-mini": Price(input=0.4, output=1.6),
}


class Usage(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    requests: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = 0.0  # None when the model has no price

    def __add__(self, other: Usage) -> Usage:
        cost = None if None in (self.cost_usd, other.cost_usd) else self.cost_usd + other.cost_usd
        return Usage(
            requests=self.requests + other.requests,
            retries=self.retries + other.retries,
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cost_usd=None if cost is None else round(cost, 8),
        )

    def cost(self, price: Price | None) -> float | None:
        if price is None:
            return None
        return round(
            (self.prompt_tokens * price.input + self.completion_tokens * price.output)
            / TOKENS_PER_PRICE_UNIT,
            8,
        )


class LLMSettings(BaseModel):
    """Where and how to ask; read from options or the environment."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    base_url: str
    model: str
    api_key: str = Field(default=PLACEHOLDER_KEY, repr=False)
    temperature: float = DEFAULT_TEMPERATURE
    timeout_s: float = Field(default=DEFAULT_TIMEOUT_S, gt=0)
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
        self.settings = settings
        self._client = openai.AsyncOpenAI(
            base_url=settings.base_url,
            api_key=settings.api_key,
            timeout=settings.timeout_s,
            max_retries=0,
        )

    async def complete(
        self, messages: list[dict[str, Any]], *, tools: list[dict[str, Any]]
    ) -> ChatResult:
        retries = 0
        while True:
            try:
                response = await self._client.chat.completions.create(
                    model=self.settings.model,
                    messages=messages,  # type: ignore[arg-type]
                    tools=tools or openai.omit,  # type: ignore[arg-type]
                    temperature=self.settings.temperature,
                )
                break
            except (openai.APITimeoutError, openai.APIConnectionError) as exc:
                error: Exception = exc
                wait = None
            except openai.APIStatusError as exc:
                if exc.status_code not in RETRYABLE_STATUS:
                    raise LLMError(_status_message(self.settings, exc)) from None
                error, wait = exc, retry_after_seconds(exc.response.headers)
            if retries >= self.settings.max_retries:
                raise LLMError(
                    f"LLM server {self.settings.base_url} still failing after {retries} retries: "
                    f"{_describe(error)}"
                ) from None
            if wait is None:
                wait = backoff_seconds(self.settings, retries)
            await asyncio.sleep(wait)
            retries += 1
        return _to_result(self.settings, response, retries)

    async def close(self) -> None:
        await self._client.close()


def _to_result(settings: LLMSettings, response: Any, retries: int) -> ChatResult:
    if not response.choices:
        raise LLMError(f"LLM server {settings.base_url} returned no choices")
    choice = response.choices[0]
    message = choice.message.model_dump(exclude_none=True, exclude_unset=True)
    message = {k: v for k, v in message.items() if k in ("role", "content", "tool_calls")}
    message.setdefault("role", "assistant")
    message.setdefault("content", None)
    tokens = response.usage
    usage = Usage(
        requests=1,
        retries=retries,
        prompt_tokens=tokens.prompt_tokens if tokens else 0,
        completion_tokens=tokens.completion_tokens if tokens else 0,
    )
    usage = usage.model_copy(update={"cost_usd": usage.cost(settings.price())})
    return ChatResult(message=message, finish_reason=choice.finish_reason, usage=usage)


def _status_message(settings: LLMSettings, exc: openai.APIStatusError) -> str:
    if exc.status_code == 401:
        return f"the LLM server {settings.base_url} refused the API key; set {ENV_API_KEY}"
    if exc.status_code == 404:
        return (f"the LLM server {settings.base_url} does not know model {settings.model!r} "
                f"(or the URL is wrong); check --model/{ENV_MODEL} and --base-url/{ENV_BASE_URL}")
    return f"the LLM server {settings.base_url} rejected the request: {_describe(exc)}"


def _describe(exc: Exception) -> str:
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code}"
    if isinstance(exc, openai.APITimeoutError):
        return "timed out"
    return type(exc).__name__


# Pure functions


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
