"""`kgctl query` through the CLI: SPARQL files, the interactive shell, user errors."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from retrieval_helpers import mop30_trig, reference

from kgctl.cli import cli

QUERY = """PREFIX ontomops: <https://www.theworldavatar.com/kg/ontomops/>
SELECT ?ccdc WHERE { ?m ontomops:hasCCDCNumber ?ccdc } ORDER BY ?ccdc
"""


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return mop30_trig(tmp_path_factory.mktemp("mop30"))


def test_run_sparql_file_as_json(tmp_path, data):
    path = tmp_path / "q.rq"
    path.write_text(QUERY)
    result = CliRunner().invoke(cli, ["query", "run", str(path), "--data", str(data), "--json"])
    assert result.exit_code == 0, result.output
    answer = json.loads(result.output)
    assert answer["columns"] == ["ccdc"]
    expected = [r[0] for r in reference(QUERY)]
    assert len(expected) > 50 and sorted({r[0] for r in answer["rows"]}) == sorted(expected)


def test_run_reports_bad_sparql_in_one_line(tmp_path, data):
    path = tmp_path / "bad.rq"
    path.write_text("SELECT ?x WHERE { ?x }")
    result = CliRunner().invoke(cli, ["query", "run", str(path), "--data", str(data)])
    assert result.exit_code == 2
    assert result.output.startswith("error: ") and "Traceback" not in result.output


def test_missing_store_is_a_usage_error(tmp_path):
    path = tmp_path / "q.rq"
    path.write_text(QUERY)
    result = CliRunner().invoke(cli, ["query", "run", str(path)])
    assert result.exit_code == 2 and "--store" in result.output


def test_shell_builds_a_query_and_prints_feedback(data):
    script = "\n".join([
        'filter_by_value {"variable": "formula", "value": "[Cu2]"}',
        'filter_by_value {"variable": "formula", "value": "[Zz9]"}',
        'execute_query {}',
    ])
    result = CliRunner().invoke(cli, ["query", "shell", "--template", "cbu", "--data",
                                      str(data)], input=script)
    assert result.exit_code == 0, result.output
    assert '"code": "empty_result"' in result.output
    units = reference('PREFIX ontomops: <https://www.theworldavatar.com/kg/ontomops/> '
                      'SELECT ?c WHERE { ?c ontomops:hasCBUFormula "[Cu2]" }')
    assert len(units) >= 2  # several papers hold a [Cu2] unit; [Zz9] is rejected
    assert result.output.count('"[Cu2]"') >= len(units)


def test_help_has_an_example():
    result = CliRunner().invoke(cli, ["query", "--help"])
    assert result.exit_code == 0 and "Example: kgctl query run" in result.output


def test_shell_reaches_the_paper_of_an_entity(data):
    script = "\n".join([
        'filter_by_value {"variable": "ccdc", "value": "1434668"}',
        'add_provenance {"variable": "mop", "name": "paper"}',
        'select {"variables": ["paper"]}',
        'execute_query {}',
    ])
    result = CliRunner().invoke(cli, ["query", "shell", "--template", "mop_optional", "--data",
                                      str(data)], input=script)
    assert result.exit_code == 0, result.output
    [(paper,)] = reference('PREFIX ontomops: <https://www.theworldavatar.com/kg/ontomops/> '
                           'SELECT ?g WHERE { GRAPH ?g { ?m ontomops:hasCCDCNumber "1434668" } }')
    assert f'"{paper}"' in result.output and '"code"' not in result.output


def test_run_answers_ask_and_construct(tmp_path, data):
    ask, construct = tmp_path / "ask.rq", tmp_path / "construct.rq"
    ask.write_text("ASK { ?m <https://www.theworldavatar.com/kg/ontomops/hasCCDCNumber> ?c }")
    construct.write_text("CONSTRUCT { ?m <urn:ccdc> ?c } WHERE { "
                         "?m <https://www.theworldavatar.com/kg/ontomops/hasCCDCNumber> ?c }")
    runner = CliRunner()
    yes = runner.invoke(cli, ["query", "run", str(ask), "--data", str(data), "--json"])
    assert yes.exit_code == 0 and json.loads(yes.output) == {"boolean": True}
    triples = runner.invoke(cli, ["query", "run", str(construct), "--data", str(data)])
    lines = triples.output.splitlines()
    assert triples.exit_code == 0 and len(lines) > 50
    assert all(" <urn:ccdc> " in line and line.endswith(" .") for line in lines)
