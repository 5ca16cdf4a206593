"""``kgctl doctor``: is the LLM server fit for extraction? Checked in seconds, before a batch.

Four checks, each a `Check` with its level: the server answers at its URL, it offers the model,
the model calls a tool it is given (servers without tool calling refuse the request or answer
in prose), and the context window is known (else `--context-window` is needed).

>>> Check(name="model", level="error", detail="not offered").line()
'error    model: not offered'
"""

from __future__ import annotations

import json
from typing import Literal

import click
from pydantic import BaseModel, ConfigDict

from kgctl.agent.aio import run_sync
from kgctl.agent.llm import ChatClient, LLMError, LLMSettings
from kgctl.errors import EXIT_USAGE

CHECK_TIMEOUT_S = 60.0  # one short completion on a CPU server
PROBE_TOOL = {"type": "function", "function": {
    "name": "record_answer", "description": "Record the answer.",
    "parameters": {"type": "object", "properties": {"answer": {"type": "string"}},
                   "required": ["answer"]}}}
PROBE_MESSAGES = [{"role": "user", "content": "Call record_answer with the answer 'ok'."}]
PROBE_REPLY_TOKENS = 64


class Check(BaseModel):
    model_config = ConfigDict(frozen=True)
    name: str
    level: Literal["ok", "warning", "error"]
    detail: str

    def line(self) -> str:
        return f"{self.level:<8} {self.name}: {self.detail}"


async def diagnose(settings: LLMSettings) -> list[Check]:
    """The checks, in order; later ones are skipped once the server cannot be reached."""
    chat = ChatClient(settings.model_copy(update={
        "timeout_s": min(settings.timeout_s, CHECK_TIMEOUT_S), "max_retries": 0,
        "max_tokens": PROBE_REPLY_TOKENS}))
    try:
        try:
            await chat.check_reachable()
        except LLMError as exc:
            return [Check(name="server", level="error", detail=str(exc))]
        checks = [Check(name="server", level="ok", detail=f"{settings.base_url} answers")]
        offered = await chat.model_ids()
        if offered is None:
            checks.append(Check(name="model", level="warning", detail="the server does not "
                                f"list its models; {settings.model!r} is assumed"))
        elif settings.model in offered:
            checks.append(Check(name="model", level="ok", detail=f"{settings.model!r} offered"))
        else:
            checks.append(Check(name="model", level="error", detail=f"{settings.model!r} is not "
                                f"offered; the server offers: {', '.join(offered) or 'nothing'}"))
        checks.append(await _tool_calling(chat))
        window = await chat.context_window()
        checks.append(Check(name="context window", level="ok", detail=f"{window} tokens")
                      if window else Check(name="context window", level="warning",
                                           detail="the server does not say it; give "
                                                  "--context-window N to `kgctl extract`"))
        return checks
    finally:
        await chat.close()


async def _tool_calling(chat: ChatClient) -> Check:
    try:
        reply = await chat.complete(PROBE_MESSAGES, tools=[PROBE_TOOL])
    except LLMError as exc:
        return Check(name="tool calling", level="error", detail=str(exc))
    calls = reply.message.get("tool_calls") or []
    if any(c["function"]["name"] == PROBE_TOOL["function"]["name"] for c in calls):
        return Check(name="tool calling", level="ok", detail="the model called the probe tool")
    said = " ".join(str(reply.message.get("content") or "").split())[:80]
    return Check(name="tool calling", level="error", detail="the model answered without calling "
                 f"the tool it was given ({said!r}); extraction needs a model and server with "
                 "tool calling (e.g. vLLM --enable-auto-tool-choice)")


@click.command("doctor")
@click.option("--base-url", help="OpenAI-compatible server URL (env OPENAI_BASE_URL).")
@click.option("--model", help="model name (env KGCTL_MODEL).")
@click.option("--json", "as_json", is_flag=True, help="the checks as JSON.")
def command(base_url: str | None, model: str | None, as_json: bool) -> None:
    """Check the LLM server before a batch: reachable, model offered, tool calling, context
    window. Exit 0 when extraction can run, 2 when a check failed.

    Example: OPENAI_BASE_URL=http://127.0.0.1:8080/v1 KGCTL_MODEL=qwen2.5-7b kgctl doctor
    """
    checks = run_sync(lambda: diagnose(LLMSettings.from_env(base_url=base_url, model=model)))
    if as_json:
        click.echo(json.dumps([c.model_dump() for c in checks], indent=2))
    else:
        for check in checks:
            click.echo(check.line())
    if any(c.level == "error" for c in checks):
        raise click.exceptions.Exit(EXIT_USAGE)
