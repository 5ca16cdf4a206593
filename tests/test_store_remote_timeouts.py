"""A remote store that accepts connections and never answers: the user is told at each retry
and gets one error line within twice the answer timeout, not minutes later."""

from __future__ import annotations

import socket
import time

from click.testing import CliRunner

from kgctl.cli import cli

TIMEOUT_S = 0.5


def test_a_server_that_never_answers_is_given_up_with_a_word(monkeypatch):
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)  # the kernel completes the handshakes; nothing ever reads or answers
    port = silent.getsockname()[1]
    monkeypatch.setenv("KGCTL_ENDPOINT_TIMEOUT", str(TIMEOUT_S))
    try:
        started = time.monotonic()
        result = CliRunner().invoke(cli, ["store", "info", "--endpoint",
                                          f"http://127.0.0.1:{port}/query"])
        took = time.monotonic() - started
    finally:
        silent.close()
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert lines[-1].startswith("error: cannot reach SPARQL endpoint") and \
        f"no answer within {TIMEOUT_S:g} s" in lines[-1]
    assert [line for line in lines[:-1] if "retrying (1 of 3)" in line] == lines[:-1] != []
    assert took < 2 * TIMEOUT_S + 5  # two waits for an answer, then the error
