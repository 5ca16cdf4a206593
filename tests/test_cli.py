"""The CLI front door: help, version and the error contract."""

from __future__ import annotations

import errno
import json
import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

from kgctl import __version__
from kgctl.cli import SUBCOMMANDS, LazyGroup, cli, load_command
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

    monkeypatch.setitem(SUBCOMMANDS, "boom", ("x", "A command that fails."))
    monkeypatch.setattr(LazyGroup, "get_command", lambda self, ctx, name: boom)
    runner = CliRunner()
    usage = runner.invoke(cli, ["boom"])
    assert usage.exit_code == 2
    assert usage.output.strip() == "error: no such file: x.ttl"
    assert usage.exception is None or isinstance(usage.exception, SystemExit)
    assert runner.invoke(cli, ["boom", "--reject"]).exit_code == 1


@pytest.mark.parametrize(("raised", "line"), [
    (OSError(errno.ENOSPC, "No space left on device", "/full/out.trig"),
     "error: No space left on device: /full/out.trig"),
    (FileNotFoundError(errno.ENOENT, "No such file or directory", "no/dir/x.csv"),
     "error: No such file or directory: no/dir/x.csv"),
    (UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"),
     "error: an input file is not UTF-8 text"),
])
def test_file_system_and_decoding_errors_are_one_line(monkeypatch, raised, line):
    @click.command()
    def boom() -> None:
        raise raised

    monkeypatch.setitem(SUBCOMMANDS, "boom", ("x", "A command that fails."))
    monkeypatch.setattr(LazyGroup, "get_command", lambda self, ctx, name: boom)
    result = CliRunner().invoke(cli, ["boom"])
    assert (result.exit_code, result.output.strip()) == (2, line)


def test_listed_help_lines_are_the_commands_own():
    for name, (_, text) in SUBCOMMANDS.items():
        assert text == load_command(name).get_short_help_str(limit=10**6), name


def test_help_and_usage_errors_import_no_box():
    """`kgctl --help` and a usage error answer without importing any box (nor openai, mcp,
    pyoxigraph): what makes them slow is imports, so this is checked, not timed."""
    probe = ("import json, sys\nfrom kgctl.cli import cli\n"
             "for argv in (['--help'], ['no-such-command']):\n"
             "    try:\n        cli.main(argv, prog_name='kgctl')\n"
             "    except SystemExit:\n        pass\n"
             "print(json.dumps(sorted(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True).stdout
    loaded = set(json.loads(out.strip().splitlines()[-1]))
    heavy = {"openai", "mcp", "pyoxigraph", "numpy", *(m for _, (m, _) in SUBCOMMANDS.items())}
    assert not {m.partition(":")[0] for m in heavy} & loaded
