"""`kgctl serve` through its public doors: CliRunner for errors, a real process for binding."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from pyoxigraph import Store
from service_helpers import free_port

from kgctl.agent.replay import load_calls
from kgctl.cli import cli
from kgctl.errors import InputError
from kgctl.packs import load_pack
from kgctl.pipeline.demo import bundled_traces

STARTUP_S = 60.0


def test_help_shows_example_and_loopback_default() -> None:
    result = CliRunner().invoke(cli, ["serve", "--help"])
    assert result.exit_code == 0
    assert "Example: kgctl serve --store" in result.output
    assert "[default: 127.0.0.1]" in result.output
    assert "default graph is the store's own (empty" in " ".join(result.output.split())


def test_missing_store_directory_is_one_error_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["serve", "--store", str(tmp_path / "nope")])
    assert result.exit_code == 2
    assert result.output.strip() == f"error: no store directory at {tmp_path / 'nope'}"


def test_store_held_by_another_owner_is_refused(tmp_path: Path) -> None:
    owner = Store(str(tmp_path))
    result = CliRunner().invoke(cli, ["serve", "--store", str(tmp_path)])
    assert result.exit_code == 2
    assert result.output.startswith("error: another process holds the store")
    assert "Traceback" not in result.output
    del owner


def test_port_in_use_is_one_error_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = CliRunner().invoke(cli, ["serve", "--store", str(tmp_path), "--port", str(port)])
    assert result.exit_code == 2
    assert result.output.startswith(f"error: cannot listen on 127.0.0.1:{port}")


def non_loopback_address() -> str | None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("10.255.255.255", 1))  # no packet is sent for UDP connect
            address = probe.getsockname()[0]
        except OSError:
            return None
    return None if address.startswith("127.") else address


def test_serve_process_binds_loopback_by_default_and_serves_seed(tmp_path: Path) -> None:
    port = free_port()
    env = {**os.environ, "KGCTL_UPDATE_TOKEN": "from-env"}
    process = subprocess.Popen(
        [sys.executable, "-c", "from kgctl.cli import main; main()", "serve",
         "--store", str(tmp_path / "kg"),
         "--seed", "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        deadline = time.monotonic() + STARTUP_S
        while True:
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/healthz")
                break
            except httpx.TransportError:
                assert process.poll() is None and time.monotonic() < deadline, \
                    process.stderr.read().decode() if process.poll() is not None else "timeout"
                time.sleep(0.1)
        assert health.json() == {"status": "ok"}
        papers = {p["paper"] for p in httpx.get(f"http://127.0.0.1:{port}/papers").json()}
        assert papers == {load_calls(t)[0] for t in bundled_traces()}
        wrong = httpx.post(f"http://127.0.0.1:{port}/update", data={"update": "CLEAR ALL"},
                           headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 403  # the token came from the environment
        other = non_loopback_address()
        if other is not None:
            with socket.socket() as probe:
                probe.settimeout(1)
                assert probe.connect_ex((other, port)) != 0
    finally:
        process.terminate()
        process.wait(STARTUP_S)
    assert b"http://127.0.0.1:" in process.stderr.read()


def test_the_page_examples_are_the_packs_and_generic_without_one(tmp_path: Path) -> None:
    from kgctl.service.config import ServiceConfig
    from kgctl.service.static_examples import GENERIC, load_examples

    assert ServiceConfig().examples == tuple(load_examples()) and load_examples()[0]["query"]
    assert load_examples("nerre-doping") == json.loads(GENERIC.read_text(encoding="utf-8"))
    bad = tmp_path / "pack"
    shutil.copytree(load_pack("nerre-doping").root, bad)
    manifest = bad / "domain.yaml"
    manifest.write_text(manifest.read_text(encoding="utf-8") + "examples: missing.json\n",
                        encoding="utf-8")
    with pytest.raises(InputError):
        load_examples(bad)
