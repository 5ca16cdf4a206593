"""Helpers for the agent box's tests: hand-written PDFs and a scripted OpenAI-compatible server."""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from kgctl.agent.aio import run_sync
from kgctl.agent.budget import estimate
from kgctl.agent.llm import ChatClient, LLMSettings
from kgctl.agent.loop import run_paper
from kgctl.agent.session import paper_tools
from kgctl.agent.trace import AgentTrace
from kgctl.agent.usage import Price
from kgctl.compiler import ToolSurface, compile_tools
from kgctl.compiler.plan import Plan, compile_plan
from kgctl.ontology import default_ir
from kgctl.papers.ingest import load_document

DATA = Path(__file__).parent / "data" / "agent"
PAPER = "paper"
PAGE_HEIGHT = 792
LINE_STEP = 14
TOP_MARGIN = 750
# every extract run of the bundled pack starts its chemistry server (a Python and a Java
# start); the runs of tests not about that server go without it
NO_CHEMISTRY = ("--tool-server", "chemistry=off")


def write_pdf(path: Path, pages: list[list[str]]) -> Path:
    """A minimal PDF 1.4 with one Helvetica text line per entry (empty pages allowed)."""
    objects: list[bytes] = []
    n_pages = len(pages)
    font_id = 3 + 2 * n_pages
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(n_pages))
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {n_pages} >>".encode())
    for i, lines in enumerate(pages):
        ops = ["BT", "/F1 11 Tf"]
        for j, line in enumerate(lines):
            escaped = line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
            ops.append(f"1 0 0 1 72 {TOP_MARGIN - j * LINE_STEP} Tm ({escaped}) Tj")
        ops.append("ET")
        stream = "\n".join(ops).encode("latin-1")
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 {PAGE_HEIGHT}] "
            f"/Resources << /Font << /F1 {font_id} 0 R >> >> /Contents {4 + 2 * i} 0 R >>".encode()
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{o:010d} 00000 n \n".encode() for o in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\n".encode()
    out += f"startxref\n{xref}\n%%EOF\n".encode()
    path.write_bytes(bytes(out))
    return path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Reply:
    """One scripted answer of the fake LLM server.

    ``tool_calls`` are (name, raw argument string) pairs, ``raw_calls`` entries sent as they are
    (e.g. arguments as an object, no id); ``status`` other than 200 answers with that HTTP error
    and ``error`` as its error object; ``delay`` sleeps first (to provoke client timeouts);
    ``no_choices`` answers with an empty ``choices`` list; ``finish_reason`` overrides the usual
    one ("tool_calls" or "stop")."""

    tool_calls: list[tuple[str, str]] = field(default_factory=list)
    content: str | None = None
    status: int = 200
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    prompt_tokens: int = 100
    completion_tokens: int = 20
    raw_calls: list[dict[str, Any]] = field(default_factory=list)
    error: dict[str, Any] | None = None
    no_choices: bool = False
    finish_reason: str | None = None


Script = list[Reply | Callable[[dict[str, Any]], Reply]]


class FakeLLM:
    """An OpenAI-compatible chat-completions server on 127.0.0.1 that answers from a script.

    A script entry may be a function of the request body, so a reply can depend on what the
    client sent (e.g. the feedback of the previous tool call). Every request body is kept.
    ``models`` are the ids it lists. With ``context_window`` the server reports it as llama.cpp
    does (``/v1/models`` meta.n_ctx and ``/props``); ``window_at`` chooses which of the two says
    it. With ``enforce_window`` it refuses, as llama.cpp does, every request whose prompt exceeds
    that many tokens;
    ``overflows`` counts those answers. Prompts are counted with the agent's own estimate, or,
    with ``chars_per_token``, as characters of the rendered request divided by it; the server
    then also offers llama.cpp's ``/apply-template`` and ``/tokenize`` with that count."""

    def __init__(self, script: Script, *,
                 default: Reply | Callable[[dict[str, Any]], Reply] | None = None,
                 context_window: int | None = None, window_at: str = "models",
                 enforce_window: int | None = None, chars_per_token: int | None = None,
                 models: Sequence[str] = ("fake",)) -> None:
        self.script = list(script)
        self.default = default  # answer once the script is used up (else HTTP 500)
        self.requests: list[dict[str, Any]] = []
        self.context_window, self.window_at = context_window, window_at
        self.enforce_window, self.overflows = enforce_window, 0
        self.chars_per_token = chars_per_token
        self.models = list(models)  # the ids /v1/models lists
        self.port = free_port()
        routes = [Route("/v1/chat/completions", self._chat, methods=["POST"]),
                  Route("/v1/models", self._models), Route("/props", self._props)]
        if chars_per_token:
            routes += [Route("/apply-template", self._template, methods=["POST"]),
                       Route("/tokenize", self._tokenize, methods=["POST"])]
        app = Starlette(routes=routes)
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> FakeLLM:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("fake LLM server did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)

    async def _models(self, request: Request) -> JSONResponse:
        meta = {"n_ctx_train": 131072}
        if self.context_window and self.window_at == "models":
            meta["n_ctx"] = self.context_window
        return JSONResponse({"object": "list",
                             "data": [{"id": model, "meta": meta} for model in self.models]})

    async def _props(self, request: Request) -> JSONResponse:
        if not self.context_window or self.window_at != "props":
            return JSONResponse({"error": {"message": "not found"}}, status_code=404)
        return JSONResponse({"default_generation_settings": {"n_ctx": self.context_window}})

    def _render(self, body: dict[str, Any]) -> str:
        return json.dumps(body["messages"]) + json.dumps(body.get("tools") or [])

    def count(self, body: dict[str, Any]) -> int:
        """The prompt tokens of a request, as this server counts them."""
        if self.chars_per_token:
            return len(self._render(body)) // self.chars_per_token
        return estimate(body["messages"], body.get("tools") or [])

    async def _template(self, request: Request) -> JSONResponse:
        return JSONResponse({"prompt": self._render(await request.json())})

    async def _tokenize(self, request: Request) -> JSONResponse:
        content = (await request.json())["content"]
        return JSONResponse({"tokens": [0] * (len(content) // (self.chars_per_token or 1))})

    async def _chat(self, request: Request) -> JSONResponse:
        import asyncio

        body = await request.json()
        self.requests.append(body)
        if self.enforce_window:
            size = self.count(body)
            if size > self.enforce_window:
                self.overflows += 1
                return JSONResponse({"error": overflow_error(size, self.enforce_window)},
                                    status_code=400)
        if not self.script and self.default is None:
            return JSONResponse({"error": {"message": "script exhausted"}}, status_code=500)
        entry = self.script.pop(0) if self.script else self.default
        reply = entry(body) if callable(entry) else entry
        if reply.delay:
            await asyncio.sleep(reply.delay)
        if reply.status != 200:
            error = reply.error or {"message": f"scripted {reply.status}"}
            return JSONResponse({"error": error}, status_code=reply.status, headers=reply.headers)
        n = len(self.requests)
        calls = [
            {"id": f"call_{n}_{i}", "type": "function",
             "function": {"name": name, "arguments": arguments}}
            for i, (name, arguments) in enumerate(reply.tool_calls)
        ] + reply.raw_calls
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if calls:
            message["tool_calls"] = calls
        finish = reply.finish_reason or ("tool_calls" if calls else "stop")
        return JSONResponse({
            "id": f"chatcmpl-{n}", "object": "chat.completion", "created": 0,
            "model": body.get("model", "fake"),
            "choices": [] if reply.no_choices else [
                {"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": reply.prompt_tokens,
                      "completion_tokens": reply.completion_tokens,
                      "total_tokens": reply.prompt_tokens + reply.completion_tokens},
        })


def overflow_error(prompt_tokens: int, context: int) -> dict[str, Any]:
    """llama.cpp's answer to a request larger than its context window."""
    return {"code": 400, "type": "exceed_context_size_error", "n_prompt_tokens": prompt_tokens,
            "n_ctx": context, "message": f"request ({prompt_tokens} tokens) exceeds the "
            f"available context size ({context} tokens), try increasing it"}


def tool_messages(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool results a request carries back to the model."""
    return [m for m in request["messages"] if m.get("role") == "tool"]


def last_tool_result(request: dict[str, Any]) -> dict[str, Any]:
    return json.loads(tool_messages(request)[-1]["content"])


def build_original(store: Any, paper: str, *, labels: Sequence[str] = ("MOP-1",)) -> None:
    """Issue the calls of tests/data/agent/calls_mop1.json (once per synthesis label) through
    the compiled tools (a real MCP session) for one paper; every call must be accepted."""
    from mcp import Client

    from kgctl.agent.aio import run_sync
    from kgctl.instantiation.server import build_server
    from kgctl.ontology import default_ir

    text = (DATA / "calls_mop1.json").read_text(encoding="utf-8")
    calls = [c for label in labels for c in json.loads(text.replace('"MOP-1"', json.dumps(label)))]

    async def go() -> None:
        async with Client(build_server(default_ir(), store, paper_id=paper)) as client:
            for tool, arguments in calls:
                result = await client.call_tool(tool, arguments)
                assert not result.is_error, result.content[0].text

    run_sync(go)


@cache
def surface() -> ToolSurface:
    return compile_tools(default_ir())


@cache
def full_plan() -> Plan:
    return compile_plan(default_ir(), surface=surface())


def core_only_plan() -> Plan:
    return full_plan().model_copy(update={"steps": (full_plan().step("core"),)})


def run(fake: FakeLLM, store: Any, tmp_path: Path, *, plan: Plan | None = None,
        feedback: bool = True, window: int | None = None, paper: Path = DATA / "paper.md",
        **settings: Any) -> AgentTrace:
    """The agent on one paper against the fake server (a real MCP session on the compiled
    tools); ``window`` is the context window the agent is told."""
    ir = default_ir()
    document = load_document(paper)
    options = {"backoff_base_s": 0.01, "prices": {"fake-model": Price(input=1.0, output=2.0)}}
    llm = LLMSettings(base_url=fake.base_url, model="fake-model", api_key="k",
                      **(options | settings))

    async def go() -> AgentTrace:
        chat = ChatClient(llm)
        try:
            async with paper_tools(ir, store, PAPER, document=document, feedback=feedback,
                                   surface=surface()) as client:
                return await run_paper(document, plan or core_only_plan(), tools=client,
                                       chat=chat, trace_path=tmp_path / "trace.json",
                                       max_iterations=6, feedback=feedback,
                                       context_window=window)
        finally:
            await chat.close()

    return run_sync(go)


def any_tbox_model(request: dict[str, Any]) -> Reply:
    """A model that, once per conversation, calls the first offered create tool that needs
    at most a label (whatever the ontology), or `create_entity` with the first class the step
    prompt names, then says it is done."""
    if any(m.get("role") == "tool" for m in request["messages"]):
        return Reply(content="done")
    if [t["function"]["name"] for t in request.get("tools") or ()] == ["record_answer"]:
        return Reply(tool_calls=[("record_answer", '{"answer": "ok"}')])  # kgctl doctor
    prompt = " ".join(str(m.get("content") or "") for m in request["messages"])
    named = re.search(r"\(type (\S+)\)", prompt)
    for tool in request.get("tools") or ():
        function = tool["function"]
        required = set(function.get("parameters", {}).get("required") or ())
        if function["name"].startswith("create_") and required <= {"label"}:
            return Reply(tool_calls=[(function["name"], '{"label": "entity 1"}')])
        if function["name"] == "create_entity" and required <= {"type"} and named:
            return Reply(tool_calls=[(function["name"], json.dumps(
                {"type": named[1], "label": "entity 1"}))])
    return Reply(content="done")
