"""`kgctl doctor` and the LLM-server failures of `kgctl extract`: the server's own words, the
URL and the model, and what to try; nothing listening is "connection refused"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agent_helpers import NO_CHEMISTRY, FakeLLM, Reply, free_port
from click.testing import CliRunner

from kgctl.cli import cli

DATA = Path(__file__).parent / "data" / "agent"
NO_TOOLS = "\"auto\" tool choice requires --enable-auto-tool-choice to be set"


@pytest.fixture(autouse=True)
def no_llm_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "KGCTL_MODEL"):
        monkeypatch.delenv(name, raising=False)


def doctor(base_url: str, model: str = "fake") -> tuple[int, list[dict]]:
    result = CliRunner().invoke(cli, ["doctor", "--base-url", base_url, "--model", model,
                                      "--json"])
    assert "Traceback" not in result.output
    return result.exit_code, json.loads(result.stdout)


def test_doctor_passes_a_server_that_calls_tools() -> None:
    call = Reply(tool_calls=[("record_answer", '{"answer": "ok"}')])
    with FakeLLM([call], context_window=8192) as fake:
        code, checks = doctor(fake.base_url)
    assert code == 0
    assert [(c["name"], c["level"]) for c in checks] == [
        ("server", "ok"), ("model", "ok"), ("tool calling", "ok"), ("context window", "ok")]
    assert "8192" in checks[-1]["detail"]


@pytest.mark.parametrize("reply, model, failing, words", [
    (Reply(status=400, error={"message": NO_TOOLS}), "fake", "tool calling", NO_TOOLS),
    (Reply(content="ok"), "fake", "tool calling", "without calling the tool"),
    (Reply(content="ok"), "gpt-x", "model", "the server offers: fake"),
], ids=["tools-refused", "prose-only", "unknown-model"])
def test_doctor_names_what_fails_in_the_servers_words(reply: Reply, model: str, failing: str,
                                                       words: str) -> None:
    with FakeLLM([reply]) as fake:
        code, checks = doctor(fake.base_url, model)
    assert code == 2
    failed = {c["name"]: c["detail"] for c in checks if c["level"] == "error"}
    assert words in failed[failing]
    assert {"context window": "warning"}.items() <= {c["name"]: c["level"] for c in checks}.items()


def test_doctor_and_extract_say_connection_refused_when_nothing_listens(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    code, checks = doctor(url)
    assert code == 2 and len(checks) == 1 and "connection refused" in checks[0]["detail"]
    result = CliRunner().invoke(cli, ["extract", str(DATA / "paragraph.md"), "--store",
                                      str(tmp_path / "s"), "--runs", str(tmp_path / "runs"),
                                      "--base-url", url, "--model", "m"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert f"cannot reach the LLM server {url}: connection refused" in result.output
    assert "context window" not in result.output


@pytest.mark.parametrize("reply, words", [
    (Reply(status=400, error={"message": NO_TOOLS}), f"HTTP 400: {NO_TOOLS}"),
    (Reply(status=404, error={"message": "model 'm' not found"}), "it offers: fake"),
], ids=["400", "404"])
def test_extract_shows_the_servers_reason(tmp_path: Path, reply: Reply, words: str) -> None:
    with FakeLLM([], default=reply, context_window=100_000) as fake:
        result = CliRunner().invoke(cli, ["extract", str(DATA / "paragraph.md"), "--store",
                                          str(tmp_path / "s"), "--runs", str(tmp_path / "runs"),
                                          "--base-url", fake.base_url, "--model", "m",
                                          *NO_CHEMISTRY])
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert words in result.output and fake.base_url in result.output and "'m'" in result.output
