"""The CLI front door: help, version and the error contract."""

from __future__ import annotations

import click
from click.testing import CliRunner

from kgctl import __version__
from kgctl.cli import SUBCOMMANDS, LazyGroup, cli
from kgctl.errors import DataRejected, InputError


def test_version_and_help():
    runner = CliRunner()
    assert __version__ in runner.invoke(cli, ["--version"]).output
    result = runner.invoke(cli, ["--help"])
    assert result.exit_code == 0
    assert "Example: kgctl demo" in result.output


def test_user_errors_become_one_message_and_exit_code(monkeypatch):
    @click.command()
    @click.option("--reject", is_flag=True)
    def boom(reject: bool) -> None:
        raise DataRejected("2 records rejected") if reject else InputError("no such file: x.ttl")

    monkeypatch.setitem(SUBCOMMANDS, "boom", "x")
    monkeypatch.setattr(LazyGroup, "get_command", lambda self, ctx, name: boom)
    runner = CliRunner()
    usage = runner.invoke(cli, ["boom"])
    assert usage.exit_code == 2
    assert usage.output.strip() == "error: no such file: x.ttl"
    assert usage.exception is None or isinstance(usage.exception, SystemExit)
    assert runner.invoke(cli, ["boom", "--reject"]).exit_code == 1
