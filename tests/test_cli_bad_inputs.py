"""Bad inputs to every command: one `error:` line, the documented exit code (1 data rejected,
2 usage or tool error), never a traceback, never exit 0, and the store unchanged.

Files are made in a temporary folder: binary, empty, missing, a folder where a file belongs, a
file where a folder belongs, a trace whose paper id or IRIs are not valid IRIs, an output in a
missing folder. Commands that would start a server run as a subprocess with a time limit.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from pyoxigraph import Literal, NamedNode, Triple

from kgctl.cli import cli
from kgctl.store import open_store

BINARY = b"\x89PNG\r\n\x1a\n\x00\xff\xfe\xfd" * 8
PAPER = "p1"
SERVER_LIMIT_S = 120  # a server command must refuse bad input long before this

_TRACE_LINE = {"paper_id": PAPER, "seq": 1, "tool": "create_x", "arguments": {},
               "iris": ["https://w3id.org/kgctl/paper/p1/X/1"],
               "time": "2026-01-01T00:00:00+00:00", "evidence": None,
               "inserted": "<https://w3id.org/kgctl/paper/p1/X/1> "
                           "<http://www.w3.org/2000/01/rdf-schema#label> \"x\" .\n",
               "deleted": ""}


def _trace(**changes) -> bytes:
    return (json.dumps({**_TRACE_LINE, **changes}) + "\n").encode()


FILES: dict[str, bytes | None] = {  # name -> content (None: a folder)
    "binary.bin": BINARY, "binary.jsonl": BINARY, "binary.yaml": BINARY,
    "binary.json": BINARY, "binary.csv": BINARY, "binary.trig": BINARY, "binary.rq": BINARY,
    "binary.ttl": BINARY, "empty.txt": b"", "empty.jsonl": b"", "empty.rq": b"",
    "empty.yaml": b"", "empty.ttl": b"", "a_folder": None, "a_file": b"not a store\n",
    "not_sparql.rq": b"SELEKT * WHERE { ?s ?p ?o }", "select.rq": b"SELECT * { ?s ?p ?o }",
    "space_paper.jsonl": _trace(paper_id="p 1"),
    "gt_iri.jsonl": _trace(iris=["https://w3id.org/kgctl/paper/p1/X>1"]),
    "nul_paper.jsonl": _trace(paper_id="p\u00001"),
    "newline_iri.jsonl": _trace(iris=["https://w3id.org/kgctl/paper/p1/X\n1"]),
    "blank_node.jsonl": _trace(inserted="_:b0 <http://www.w3.org/2000/01/rdf-schema#label> "
                                        "\"x\" .\n"),
    "yesterday.jsonl": _trace(time="yesterday"),
    "blank_node.trig": b"<https://w3id.org/kgctl/paper/p1> { _:b <urn:p> \"x\" . }",
    "profile_dir": None,
}

# (id, argv; {tmp} is the test folder, {store} a store holding one paper)
CASES: list[tuple[str, list[str]]] = [
    ("compile binary", ["compile", "{tmp}/binary.ttl"]),
    ("compile empty", ["compile", "{tmp}/empty.ttl"]),
    ("compile missing", ["compile", "{tmp}/missing.ttl"]),
    ("compile folder", ["compile", "{tmp}/a_folder"]),
    ("compile profile is a folder", ["compile", "--profile", "{tmp}/profile_dir"]),
    ("compile binary profile", ["compile", "--profile", "{tmp}/binary.yaml"]),
    ("compile binary plan hints", ["compile", "--plan", "--plan-hints", "{tmp}/binary.yaml"]),
    ("store replay binary", ["store", "replay", "{tmp}/binary.jsonl", "--store", "{store}"]),
    ("store replay empty", ["store", "replay", "{tmp}/empty.jsonl", "--store", "{store}"]),
    ("store replay missing", ["store", "replay", "{tmp}/missing.jsonl", "--store", "{store}"]),
    ("store replay paper id with a space",
     ["store", "replay", "{tmp}/space_paper.jsonl", "--store", "{store}"]),
    ("store replay paper id with NUL",
     ["store", "replay", "{tmp}/nul_paper.jsonl", "--store", "{store}"]),
    ("store replay IRI with >", ["store", "replay", "{tmp}/gt_iri.jsonl", "--store", "{store}"]),
    ("store replay IRI with newline",
     ["store", "replay", "{tmp}/newline_iri.jsonl", "--store", "{store}"]),
    ("store replay blank node",
     ["store", "replay", "{tmp}/blank_node.jsonl", "--store", "{store}"]),
    ("store replay time 'yesterday'",
     ["store", "replay", "{tmp}/yesterday.jsonl", "--store", "{store}"]),
    ("store import binary", ["store", "import", "{tmp}/binary.trig", "--store", "{store}"]),
    ("store import blank node", ["store", "import", "{tmp}/blank_node.trig", "--store",
                                 "{store}"]),
    ("store import missing", ["store", "import", "{tmp}/missing.trig", "--store", "{store}"]),
    ("store export into a missing folder",
     ["store", "export", PAPER, "--store", "{store}", "--out", "{tmp}/no/such/dir/out.trig"]),
    ("store papers on a missing store", ["store", "papers", "--store", "{tmp}/typo-papers"]),
    ("store info on a file", ["store", "info", "--store", "{tmp}/a_file"]),
    ("extract no paper", ["extract"]),
    ("extract binary prices", ["extract", "{tmp}/empty.txt", "--prices", "{tmp}/binary.yaml",
                               "--store", "{store}"]),
    ("extract binary plan hints", ["extract", "{tmp}/empty.txt", "--plan-hints",
                                   "{tmp}/binary.yaml", "--store", "{store}"]),
    ("extract binary replay", ["extract", "--replay", "{tmp}/binary.jsonl", "--store",
                               "{store}"]),
    ("extract replay IRI with >", ["extract", "--replay", "{tmp}/gt_iri.jsonl", "--store",
                                   "{store}"]),
    ("demo binary traces", ["demo", "--traces", "{tmp}/binary.jsonl", "--workdir",
                            "{tmp}/demo"]),
    ("demo traces missing", ["demo", "--traces", "{tmp}/missing", "--workdir", "{tmp}/demo"]),
    ("dedup binary review", ["dedup", "--store", "{store}", "--apply-review",
                             "{tmp}/binary.csv"]),
    ("dedup binary spec", ["dedup", "--store", "{store}", "--spec", "{tmp}/binary.yaml"]),
    ("dedup empty spec", ["dedup", "--store", "{store}", "--spec", "{tmp}/empty.yaml"]),
    ("dedup review into a missing folder",
     ["dedup", "--store", "{store}", "--review", "{tmp}/no/dir/r.csv"]),
    ("eval score missing gold", ["eval", "score", "--gold", "{tmp}/missing", "--pred",
                                 "{tmp}/a_folder"]),
    ("eval score empty folders", ["eval", "score", "--gold", "{tmp}/a_folder", "--pred",
                                  "{tmp}/a_folder"]),
    ("eval nerre binary", ["eval", "nerre", "--pred", "{tmp}/binary.json"]),
    ("eval nerre empty", ["eval", "nerre", "--pred", "{tmp}/empty.txt"]),
    ("eval oracle html into a missing folder",
     ["eval", "oracle", "--store", "{tmp}/oracle", "--paper", "10.1021_ic050460z",
      "--html", "{tmp}/no/dir/r.html"]),
    ("eval run on a missing store", ["eval", "run", "--store", "{tmp}/typo-eval"]),
    ("query run binary", ["query", "run", "{tmp}/binary.rq", "--store", "{store}"]),
    ("query run empty", ["query", "run", "{tmp}/empty.rq", "--store", "{store}"]),
    ("query run not SPARQL", ["query", "run", "{tmp}/not_sparql.rq", "--store", "{store}"]),
    ("query run on a missing store", ["query", "run", "{tmp}/select.rq", "--store",
                                      "{tmp}/typo-query"]),
    ("reference build onto a file", ["reference", "build", "--store", "{tmp}/a_file",
                                     "--limit", "5"]),
    ("ground unknown paper", ["ground", "--store", "{store}", "--paper", "nope",
                              "--reference", "{tmp}/a_folder"]),
    ("store papers on a folder of other files", ["store", "papers", "--store", "{tmp}"]),
    # a store named by mistake is not made; a failed command that would make one leaves none
    ("ground --all on a missing store", ["ground", "--store", "{tmp}/typo-ground", "--all",
                                         "--reference", "{tmp}/a_folder"]),
    ("dedup on a missing store", ["dedup", "--store", "{tmp}/typo-dedup", "--dry-run"]),
    ("store import binary into a new store", ["store", "import", "{tmp}/binary.trig",
                                              "--store", "{tmp}/new-import"]),
    ("store replay empty into a new store", ["store", "replay", "{tmp}/empty.jsonl",
                                             "--store", "{tmp}/new-replay"]),
    ("extract replay binary into a new store", ["extract", "--replay", "{tmp}/binary.jsonl",
                                                "--store", "{tmp}/new-extract"]),
]
SERVER_CASES: list[tuple[str, list[str]]] = [
    ("mcp serve on a file store", ["mcp", "serve", "--store", "{tmp}/a_file"]),
    ("mcp serve on a bad endpoint", ["mcp", "serve", "--endpoint", "not a url"]),
    ("serve on a file store", ["serve", "--store", "{tmp}/a_file"]),
    ("serve on a folder of other files", ["serve", "--store", "{tmp}"]),
]


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("bad")
    for name, content in FILES.items():
        if content is None:
            (tmp / name).mkdir()
        else:
            (tmp / name).write_bytes(content)
    store = open_store(path=tmp / "store")
    node = NamedNode("https://w3id.org/kgctl/paper/p1/X/1")
    store.write(PAPER, insert=[Triple(node, NamedNode("http://www.w3.org/2000/01/rdf-schema#label"),
                                      Literal("x"))])
    store.close()
    return tmp


def _snapshot(folder: Path) -> bytes:
    store = open_store(path=folder / "store")
    try:
        return store.export()
    finally:
        store.close()


def _argv(argv: list[str], folder: Path) -> list[str]:
    return [a.format(tmp=folder, store=folder / "store") for a in argv]


def _one_error(text: str) -> bool:
    lines = [line for line in text.splitlines() if line.strip()]
    return bool(lines) and lines[-1].startswith("error: ") and "Traceback" not in text


def _absent(argv: list[str], folder: Path) -> list[Path]:
    """Paths the command names that do not exist: a refused command creates none of them."""
    paths = [Path(a) for a in argv if a.startswith(str(folder))]
    return [p for p in paths if not p.exists()]


@pytest.mark.parametrize(("name", "argv"), CASES, ids=[c[0] for c in CASES])
def test_bad_input(folder, monkeypatch, name, argv):
    monkeypatch.chdir(folder)
    before = _snapshot(folder)
    argv = _argv(argv, folder)
    absent = _absent(argv, folder)
    listing = sorted(p.name for p in folder.iterdir())
    result = CliRunner().invoke(cli, argv)
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        name, result.exception)
    assert result.exit_code in (1, 2), (name, result.exit_code, result.output)
    assert _one_error(result.stderr), (name, result.stderr)
    assert _snapshot(folder) == before, name
    assert not [p for p in absent if p.exists()], f"{name}: a refused command created a path"
    assert sorted(p.name for p in folder.iterdir()) == listing, f"{name}: wrote a file"


@pytest.mark.parametrize(("name", "argv"), SERVER_CASES, ids=[c[0] for c in SERVER_CASES])
def test_bad_input_to_a_server(folder, name, argv):
    done = subprocess.run([sys.executable, "-c", "from kgctl.cli import main; main()",
                           *_argv(argv, folder)], capture_output=True, text=True,
                          timeout=SERVER_LIMIT_S, stdin=subprocess.DEVNULL)
    assert done.returncode in (1, 2), (name, done.returncode, done.stderr)
    assert _one_error(done.stderr), (name, done.stderr)


def test_the_corpus_is_whole():
    """Guards against a filter silently dropping cases: the count is reported in the docs."""
    assert len(CASES) + len(SERVER_CASES) == 55
