"""Shared fixtures of the retrieval tests: the MOP-30 graph, rebuilt by replaying the bundled
traces through the extraction tools (as `kgctl demo` does), in a real store."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from evaluation_helpers import replayed_store

from kgctl.ontology.loader import default_ir
from kgctl.packs import load_pack
from kgctl.retrieval.engine import QueryEngine
from kgctl.store.base import GraphStore

QUESTIONS = Path(__file__).parents[1] / "domains" / "mop30" / "questions" / "questions.yaml"


@cache
def mop30_store() -> GraphStore:
    """The 30 replayed paper graphs (built once per test process; tests only read it)."""
    return replayed_store()


def mop30_engine() -> QueryEngine:
    return QueryEngine(mop30_store(), default_ir(), templates=load_pack().part("templates"))


def mop30_trig(folder: Path) -> Path:
    """The replayed graphs exported as a TriG file in `folder` (for `--data`)."""
    path = folder / "mop30.trig"
    path.write_bytes(mop30_store().export())
    return path


def reference(sparql: str) -> list[tuple[str | None, ...]]:
    """Sorted distinct rows of a hand-written reference query on the same graph."""
    solutions = mop30_store().query(sparql, union=True)
    names = [v.value for v in solutions.variables]
    return sorted({tuple(None if s[n] is None else s[n].value for n in names) for s in solutions},
                  key=str)


class ScriptedChatServer:
    """An OpenAI-compatible chat endpoint on 127.0.0.1 that replays scripted turns.

    Each turn is a function of the request's messages returning either a list of
    ``(tool_name, arguments)`` calls or a final text; requests are recorded."""

    def __init__(self, turns):
        import json
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.turns = list(turns)
        self.requests: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(body)
                reply = outer.turns.pop(0)(body["messages"])
                data = json.dumps(_completion(reply, len(outer.requests))).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def _completion(reply, n: int) -> dict:
    import json

    message: dict = {"role": "assistant", "content": None}
    if isinstance(reply, str):
        message["content"] = reply
        finish = "stop"
    else:
        message["tool_calls"] = [
            {"id": f"call_{n}_{i}", "type": "function",
             "function": {"name": name, "arguments": json.dumps(args)}}
            for i, (name, args) in enumerate(reply)]
        finish = "tool_calls"
    return {"id": f"chatcmpl-{n}", "object": "chat.completion", "created": 0, "model": "scripted",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


SOSA = Path(__file__).parents[1] / "benchmarks" / "sosa-questions"
SOSA_TBOX = [Path(__file__).parent / "ontologies" / name / f"{name}.ttl"
             for name in ("sosa", "time")]


def sosa_engine(*extra: Path, templates: Path | None = None) -> QueryEngine:
    """The W3C SOSA example graph (plus `extra` data files) with the SOSA and OWL-Time T-Boxes
    and no template files (unless `templates`): a graph the engine was not written for."""
    from kgctl.ontology.loader import load_ir
    from kgctl.retrieval.loading import open_graph

    graph = open_graph(None, (*sorted((SOSA / "data").glob("*.ttl")), *extra))
    return QueryEngine(graph, load_ir(SOSA_TBOX, profile_paths=[]), templates=templates)
