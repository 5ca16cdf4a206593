"""`kgctl store ...` through click's CliRunner: replay, export/import, bad input."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner
from pyoxigraph import Literal, Triple
from store_helpers import OxigraphServer, free_port, record, step_triples

from kgctl.cli import cli
from kgctl.store import EmbeddedStore, canonical_nquads

CALLS = 30


def build(path: Path) -> None:
    store = EmbeddedStore(path)
    for n in range(1, CALLS + 1):
        store.write("p1", insert=step_triples("p1", n), record=record("p1", n, evidence=True))
        if n % 5 == 0:  # some calls also change earlier facts
            old = step_triples("p1", n - 1)[1]
            store.write("p1", delete=[old], insert=[Triple(old.subject, old.predicate,
                                                           Literal(f"fixed {n}"))],
                        record=record("p1", 100 + n))
    store.write("p2", insert=step_triples("p2", 1), record=record("p2", 1))
    store.close()
    del store


def run(*args: str):
    result = CliRunner().invoke(cli, ["store", *args])
    return result


def test_export_trace_then_replay_into_fresh_store_is_identical(tmp_path):
    build(tmp_path / "a")
    trace = tmp_path / "p1.jsonl"
    result = run("export", "p1", "--trace", "--out", str(trace), "--store", str(tmp_path / "a"))
    assert result.exit_code == 0, result.output
    assert len(trace.read_text().splitlines()) == CALLS + CALLS // 5
    result = run("replay", str(trace), "--store", str(tmp_path / "b"), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["calls"] == CALLS + CALLS // 5
    original, rebuilt = EmbeddedStore(tmp_path / "a"), EmbeddedStore(tmp_path / "b")
    assert canonical_nquads(rebuilt, "p1") == canonical_nquads(original, "p1")
    assert canonical_nquads(rebuilt, "p1", provenance=True) == \
        canonical_nquads(original, "p1", provenance=True)
    assert rebuilt.papers() == ["p1"]


def test_replay_replaces_a_damaged_graph_atomically(tmp_path):
    build(tmp_path / "a")
    store = EmbeddedStore(tmp_path / "a")
    trace = tmp_path / "p1.jsonl"
    trace.write_text("".join(r.model_dump_json() + "\n" for r in store.trace("p1")))
    good = canonical_nquads(store, "p1", provenance=True)
    store.write("p1", delete=list(store.triples("p1"))[:7], insert=step_triples("p1", 999))
    assert canonical_nquads(store, "p1", provenance=True) != good
    store.close()
    del store
    assert run("replay", str(trace), "--store", str(tmp_path / "a")).exit_code == 0
    reopened = EmbeddedStore(tmp_path / "a")
    assert canonical_nquads(reopened, "p1", provenance=True) == good
    assert len(list(reopened.triples("p2"))) == 3  # other papers untouched


def test_papers_info_export_import_drop(tmp_path):
    build(tmp_path / "a")
    store_opt = ["--store", str(tmp_path / "a")]
    rows = json.loads(run("papers", "--json", *store_opt).stdout)
    assert [(r["paper"], r["calls"]) for r in rows] == [("p1", CALLS + CALLS // 5), ("p2", 1)]
    info = json.loads(run("info", "--json", *store_opt).stdout)
    assert info["papers"] == 2 and info["calls"] == CALLS + CALLS // 5 + 1
    dump = tmp_path / "all.trig"
    assert run("export", "--out", str(dump), *store_opt).exit_code == 0
    result = run("import", str(dump), "--store", str(tmp_path / "c"), "--json")
    assert json.loads(result.stdout) == {"imported": ["p1", "p2"]}
    assert run("drop", "p2", *store_opt).exit_code == 0
    assert [r["paper"] for r in json.loads(run("papers", "--json", *store_opt).stdout)] == ["p1"]
    turtle = run("export", "p1", "--format", "turtle", *store_opt)
    assert turtle.exit_code == 0 and "hasOrder" in turtle.stdout


def test_remote_endpoint_through_the_cli(tmp_path):
    build(tmp_path / "a")
    dump = tmp_path / "all.trig"
    run("export", "--out", str(dump), "--store", str(tmp_path / "a"))
    server = OxigraphServer(tmp_path / "srv")
    try:
        assert run("import", str(dump), "--endpoint", server.url).exit_code == 0
        rows = json.loads(run("papers", "--json", "--endpoint", server.url).stdout)
        assert [r["triples"] for r in rows] == [CALLS * 3, 3]
    finally:
        server.stop()


HOLDER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from kgctl.store import EmbeddedStore
    store = EmbeddedStore(Path(sys.argv[1]))
    print("ready", flush=True)
    time.sleep(60)
""")


def test_bad_input_gives_one_clear_line_and_keeps_data(tmp_path):
    build(tmp_path / "a")
    store_opt = ["--store", str(tmp_path / "a")]
    before = run("export", "--format", "nquads", *store_opt).stdout
    corrupt = tmp_path / "bad.trig"
    corrupt.write_text("<https://w3id.org/kgctl/paper/p9> { <http://s> <http://p> <http://o> . }"
                       "\n<https://w3id.org/kgctl/paper/p9> { <http://s> <http://p> \"x }\n")
    cases = {
        ("drop", "nope", *store_opt): "unknown paper: 'nope'",
        ("export", "nope", *store_opt): "unknown paper: 'nope'",
        ("import", str(corrupt), *store_opt): "corrupt TriG data, nothing imported",
        ("import", str(tmp_path / "missing.trig"), *store_opt): "no such file",
        ("papers", "--endpoint", f"http://127.0.0.1:{free_port()}/query"):
            "cannot reach SPARQL endpoint",
        ("replay", str(corrupt), *store_opt): "bad.trig:1: not a call record",
    }
    for args, message in cases.items():
        result = run(*args)
        assert result.exit_code == 2, (args, result.output)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], lines
    assert len(cases) == 6
    assert run("export", "--format", "nquads", *store_opt).stdout == before


def test_store_locked_by_another_process(tmp_path):
    build(tmp_path / "a")
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path / "a")],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        result = run("papers", "--store", str(tmp_path / "a"))
        assert result.exit_code == 2
        assert result.stderr.startswith("error: another process holds the store at")
    finally:
        holder.kill()
        holder.wait()
    assert run("papers", "--store", str(tmp_path / "a")).exit_code == 0


@pytest.mark.parametrize("args", [["--help"], ["replay", "--help"], ["export", "--help"]])
def test_help_has_an_example(args):
    result = run(*args)
    assert result.exit_code == 0 and "Example: kgctl store" in result.output
