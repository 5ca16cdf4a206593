"""Writes under the time limit: the writer process (kgctl.service.store_writer) is killed at
the deadline, nothing of the write is stored, the next write succeeds and readers see it."""

from __future__ import annotations

import asyncio
import threading
import time

import httpx
import pytest
import uvloop
from service_helpers import live_server, sample_store

from kgctl.errors import StoreError
from kgctl.service.config import ServiceConfig
from kgctl.service.views import Checkpoints

TIMEOUT_S = 1.0
READ_S = 30.0
HEADERS = {"Content-Type": "application/sparql-update", "Authorization": "Bearer t"}
# a cross product of every stored triple with every other, each inserted: only the deadline
# ends it, mid-way through its one transaction
CROSS = ("INSERT { GRAPH <urn:kgctl:test:cross> { ?a <urn:kgctl:test:p> ?d } } "
         "WHERE { GRAPH ?g { ?a ?b ?c } GRAPH ?h { ?d ?e ?f } }")
COUNT = "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }"
# names LOAD (in its literals): rdflib reads it to see which endpoints it would contact, for
# seconds (0.7 MB)
LONG_READ = "INSERT DATA { " + " ".join(f'<urn:s{i}> <urn:p> "load {i}" .'
                                        for i in range(20_000)) + " }"
RESPONSIVE_S = 3.0
# RDF/XML whose entities nest: under a kilobyte that the parser expands into gigabytes
ENTITIES = '<!ENTITY e0 "xxxxxxxxxx">' + "".join(
    f'<!ENTITY e{i} "{f"&e{i - 1};" * 10}">' for i in range(1, 9))
EXPANDING = (f'<?xml version="1.0"?><!DOCTYPE r [{ENTITIES}]><rdf:RDF xmlns:rdf='
             '"http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description rdf:about="urn:a">'
             '<rdf:value>&e8;</rdf:value></rdf:Description></rdf:RDF>')


def test_a_long_update_is_stopped_at_the_deadline_and_writes_nothing() -> None:
    store = sample_store()
    before = len(store)
    config = ServiceConfig(update_token="t", timeout_s=TIMEOUT_S)
    with live_server(store, config) as base, httpx.Client(timeout=READ_S) as client:
        started = time.monotonic()
        answer = client.post(f"{base}/update", content=CROSS, headers=HEADERS)
        assert answer.status_code == 503 and "timed out" in answer.text
        assert time.monotonic() - started < TIMEOUT_S + 1
        assert len(store) == before
        # the same for a Graph Store write waiting behind nothing, and reads go on
        write = client.post(f"{base}/update", headers=HEADERS, content="INSERT DATA { GRAPH "
                            "<urn:kgctl:test:g> { <urn:a> <urn:b> <urn:c> } }")
        assert write.status_code == 204, write.text
        rows = client.get(f"{base}/query", params={"query": COUNT},
                          headers={"Accept": "text/csv"})
        assert rows.status_code == 200 and int(rows.text.split()[1]) == before + 1
        graph = client.get(f"{base}/store", params={"graph": "urn:kgctl:test:g"},
                           headers={"Accept": "application/n-triples"})
        assert graph.text == "<urn:a> <urn:b> <urn:c> .\n"
    assert len(store) == before + 1


def test_reading_a_long_update_is_the_writers_work_within_its_time_limit() -> None:
    """Not the serving process's: it answers meanwhile (/healthz, its own answer: a query
    could wait for the view of the write), and the update ends at its deadline with nothing
    written."""
    store = sample_store()
    before = len(store)
    config = ServiceConfig(update_token="t", timeout_s=TIMEOUT_S)
    with live_server(store, config) as base, httpx.Client(timeout=READ_S) as client:
        answers: list[httpx.Response] = []
        started = time.monotonic()
        update = threading.Thread(target=lambda: answers.append(
            httpx.post(f"{base}/update", content=LONG_READ, headers=HEADERS, timeout=READ_S)))
        update.start()
        waits = []
        while update.is_alive():
            asked = time.monotonic()
            assert client.get(f"{base}/healthz").status_code == 200
            waits.append(time.monotonic() - asked)
        assert answers[0].status_code == 503 and "timed out" in answers[0].text
        assert time.monotonic() - started < TIMEOUT_S + RESPONSIVE_S
        assert waits and max(waits) < RESPONSIVE_S
    assert len(store) == before


def test_an_upload_past_the_memory_limit_ends_the_writer_and_writes_nothing() -> None:
    """The writer process runs under --worker-memory too: past it the write's process ends
    (the machine's memory is not spent), the write is answered 500 and the next one made."""
    store = sample_store()
    before = len(store)
    config = ServiceConfig(update_token="t", worker_memory_mb=512)
    with live_server(store, config) as base, httpx.Client(timeout=READ_S) as client:
        answer = client.put(f"{base}/store", params={"graph": "urn:kgctl:test:x"},
                            content=EXPANDING, headers={"Content-Type": "application/rdf+xml",
                                                        "Authorization": "Bearer t"})
        assert answer.status_code == 500 and "nothing" in answer.text, answer.text
        write = client.post(f"{base}/update", headers=HEADERS, content="INSERT DATA { GRAPH "
                            "<urn:kgctl:test:g> { <urn:a> <urn:b> <urn:c> } }")
        assert write.status_code == 204, write.text
    assert len(store) == before + 1


def test_a_checkpoint_that_failed_is_taken_again_without_another_write(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The writer process ending just after a write (killed, out of memory) fails the
    checkpoint that the write's readers wait for: it is taken again, else every read waited
    for a next write that may never come (each answered 503 at its deadline)."""
    taken: list[int] = []

    class Views:  # the writer process is gone at the first checkpoint, back at the second
        def take(self, generation: int) -> None:
            taken.append(generation)
            if len(taken) == 1:
                raise StoreError("the store writer stopped")

    monkeypatch.setattr(Checkpoints, "RETRY_S", 0.05)

    async def scenario() -> int:
        checkpoints = Checkpoints(Views(), asyncio.get_running_loop())
        try:
            checkpoints.changed()
            async with asyncio.timeout(READ_S):
                return await checkpoints.fresh()
        finally:
            checkpoints.close()
    assert uvloop.run(scenario()) == 1 and taken == [1, 1]
