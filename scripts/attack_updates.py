"""Updates under the time limit: a long update against a `kgctl serve` on loopback, answered
503 at `--timeout` with nothing of it stored, the next write and read answered; then SIGTERM
while a long update runs. Prints one JSON object of figures.

The long update inserts the cross product of every stored triple with every other (about
0.8 billion triples on the MOP-30 graphs), in one transaction.

Run: python scripts/attack_updates.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
from attack_service import TOKEN, serve
from pyoxigraph import Store

TIMEOUT_S = 2.0
CROSS = ("INSERT { GRAPH <urn:attack:cross> { ?a <urn:attack:p> ?d } } "
         "WHERE { GRAPH ?g { ?a ?b ?c } GRAPH ?h { ?d ?e ?f } }")
HEADERS = {"Content-Type": "application/sparql-update", "Authorization": f"Bearer {TOKEN}"}
COUNT = "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }"


def count(client: httpx.Client, port: int) -> int:
    answer = client.get(f"http://127.0.0.1:{port}/query", params={"query": COUNT},
                        headers={"Accept": "text/csv"})
    return int(answer.text.split()[1])


def timeout(tmp: Path) -> dict:
    tmp.mkdir(parents=True)
    process, port = serve(tmp / "store", "--timeout", str(TIMEOUT_S))
    url = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(timeout=60) as client:
            before = count(client, port)
            started = time.monotonic()
            long = client.post(f"{url}/update", content=CROSS, headers=HEADERS)
            answered_s = time.monotonic() - started
            after = count(client, port)
            started = time.monotonic()
            write = client.post(f"{url}/update", headers=HEADERS,
                                content="INSERT DATA { <urn:attack:a> <urn:attack:b> 1 }")
            write_s = time.monotonic() - started
            seen = client.get(f"{url}/query", params={"query": "ASK { <urn:attack:a> ?p ?o }"},
                              headers={"Accept": "application/sparql-results+json"})
        return {"timeout_s": TIMEOUT_S, "long_update": long.status_code,
                "answered_after_s": round(answered_s, 2), "triples_before": before,
                "triples_after": after, "next_write": write.status_code,
                "next_write_s": round(write_s, 2), "next_read_sees_it": seen.json()["boolean"]}
    finally:
        process.terminate()
        process.wait(60)


def sigterm(tmp: Path) -> dict:
    tmp.mkdir(parents=True)
    process, port = serve(tmp / "store", "--timeout", "300")
    sender = threading.Thread(target=lambda: _post_ignoring_errors(port), daemon=True)
    sender.start()
    time.sleep(1.0)  # the update is running (it runs for minutes)
    stopping = time.monotonic()
    process.terminate()
    process.wait(60)
    stopped_s = time.monotonic() - stopping
    leftover = Store.read_only(str(tmp / "store")).query("ASK { ?s <urn:attack:p> ?o }")
    return {"stopped_after_s": round(stopped_s, 2), "exit_code": process.returncode,
            "anything_of_it_stored": bool(leftover),
            "store_free_afterwards": _opens(tmp / "store")}


def _post_ignoring_errors(port: int) -> None:
    try:
        httpx.post(f"http://127.0.0.1:{port}/update", content=CROSS, headers=HEADERS,
                   timeout=600)
    except httpx.TransportError:
        pass


def _opens(path: Path) -> bool:
    result = subprocess.run([sys.executable, "-c", f"from pyoxigraph import Store; "
                             f"Store({str(path)!r})"], capture_output=True)
    return result.returncode == 0


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        figures = {"load_average_before": os.getloadavg(),
                   "timeout": timeout(Path(tmp) / "a"), "sigterm": sigterm(Path(tmp) / "b"),
                   "load_average_after": os.getloadavg()}
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
