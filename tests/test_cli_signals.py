"""Exit codes a user meets at the edges: Ctrl-C is "interrupted" with 130 (128 + SIGINT), a
server on a busy port says so in one error line before it announces any endpoint."""

from __future__ import annotations

import signal
import socket
import subprocess
import time

from mcp_helpers import KGCTL, READY_WITHIN_S, free_port

PROBE_S = 0.05
# Ctrl-C reaches a foreground command with SIGINT's default action, whatever the disposition
# this test run inherited (a run started as a background job has SIGINT ignored, and so would
# every process it starts)
INTERACTIVE = [KGCTL[0], "-c", "import signal; signal.signal(signal.SIGINT, "
               "signal.default_int_handler); from kgctl.cli import main; main()"]


def _wait_listening(port: int, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + READY_WITHIN_S
    while process.poll() is None and time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(PROBE_S)
    raise AssertionError("the server did not start")


def test_ctrl_c_on_a_server_is_interrupted_with_130(tmp_path) -> None:
    port = free_port()
    process = subprocess.Popen([*INTERACTIVE, "mcp", "serve", "--store", str(tmp_path / "s"),
                                "--transport", "http", "--port", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        _wait_listening(port, process)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 130, err
    assert "Traceback" not in err and "error:" not in err
    assert err.strip().splitlines()[-1] == "interrupted"


def test_a_busy_port_is_one_error_line_before_any_endpoint(tmp_path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        done = subprocess.run([*KGCTL, "mcp", "serve", "--store", str(tmp_path / "s"),
                               "--transport", "http", "--port", str(port)],
                              capture_output=True, text=True, timeout=120,
                              stdin=subprocess.DEVNULL)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: cannot listen on 127.0.0.1:{port}")
