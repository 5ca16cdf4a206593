"""The W3C SPARQL 1.1 Protocol and Graph Store Protocol manifests (tests/w3c), run against
`kgctl serve` and `oxigraph serve`: kgctl passes every case oxigraph passes."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from service_helpers import STARTUP_S, free_port, live_server
from store_helpers import OXIGRAPH
from w3c_protocol import HOST, Request, Target, is_update, load_cases, run_case

from kgctl.service.config import ServiceConfig

TOKEN = "w3c-token"
EXPECTED_CASES = {"protocol": 34, "gsp": 13}


@pytest.fixture(scope="module")
def kgctl(tmp_path_factory) -> Iterator[Target]:
    directory: Path = tmp_path_factory.mktemp("w3c-kgctl")
    config = ServiceConfig(update_token=TOKEN, allowed_hosts=(HOST, "127.0.0.1"))
    with live_server(directory, config) as url:
        yield Target(url, lambda request: "/sparql", {"Authorization": f"Bearer {TOKEN}"})


@pytest.fixture(scope="module")
def oxigraph() -> Iterator[Target]:
    port = free_port()  # the server is a dependency, installed beside this Python
    process = subprocess.Popen([str(OXIGRAPH), "serve", "--bind", f"127.0.0.1:{port}"],
                               stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + STARTUP_S
    while True:
        try:
            httpx.get(url + "/")
            break
        except httpx.TransportError:
            assert process.poll() is None and time.monotonic() < deadline, "oxigraph serve"
            time.sleep(0.1)

    def endpoint(request: Request) -> str:
        return "/update" if is_update(request) else "/query"

    try:
        yield Target(url, endpoint, {})
    finally:
        process.terminate()
        process.wait(STARTUP_S)


@pytest.mark.parametrize("suite", ["protocol", "gsp"])
def test_kgctl_passes_every_case_oxigraph_passes(suite: str, kgctl: Target,
                                                 oxigraph: Target) -> None:
    cases = load_cases(suite)
    assert len(cases) == EXPECTED_CASES[suite]
    failures = {server: {c.iri.rsplit("#", 1)[-1]: run_case(c, target) for c in cases}
                for server, target in (("kgctl", kgctl), ("oxigraph", oxigraph))}
    passed = {server: {name for name, problem in results.items() if problem is None}
              for server, results in failures.items()}
    print(f"\n{suite}: kgctl {len(passed['kgctl'])}/{len(cases)}, "
          f"oxigraph {len(passed['oxigraph'])}/{len(cases)}")
    for server, results in failures.items():
        for name, problem in results.items():
            if problem is not None:
                print(f"  {server} fails {name!r}: {problem}")
    missing = {name: failures["kgctl"][name] for name in passed["oxigraph"] - passed["kgctl"]}
    assert not missing, missing
