"""Fuzzy blocks and part replays on the worker processes of a Dask cluster give exactly the
clusters, merges, review pairs and refusals of the in-memory engine and of the out-of-core engine
alone; `kgctl dedup --scheduler/--workers` through the CLI, and its bad input."""

from __future__ import annotations

import random
import subprocess
import sys

import dask
import pytest
from click.testing import CliRunner
from distributed import get_task_stream
from test_dedup_engines import dedup_by_cli, dedup_quads, generated

from kgctl.cli import cli
from kgctl.dedup import groups
from kgctl.dedup.cluster import Thresholds, cluster
from kgctl.dedup.groups import dask_client
from kgctl.dedup.outofcore import OutOfCore
from kgctl.store.embedded import EmbeddedStore


@pytest.fixture(scope="module")
def client():
    with dask_client(workers=2) as client:
        yield client


def out_of_core(mentions, thresholds, client=None, **reviews):
    with OutOfCore(memory_limit="200MB", threads=1, client=client) as engine:
        engine.add(mentions)
        engine.run(thresholds, **reviews)
        largest = engine.con.execute("SELECT max(n) FROM (SELECT count(*) AS n FROM comp "
                                     "GROUP BY c)").fetchall()[0][0]
        across = engine.con.execute("SELECT count(*) FROM probe").fetchall()[0][0]
        return engine.result(), largest, across


def test_dask_workers_give_the_results_of_both_engines(client, monkeypatch):
    monkeypatch.setattr(groups, "TASK_ROWS", 40)  # many small tasks; larger parts stay here
    mentions = generated(1)
    rng = random.Random(1)
    pairs = [(rng.choice(mentions).iri, rng.choice(mentions).iri) for _ in range(40)]
    reviews = {"accept": pairs[:20], "reject": pairs[20:]}
    t = Thresholds(merge_keys=("ref",), conflict_keys=("formula", "ref"))
    memory = cluster(mentions, t, **reviews)
    local, _, _ = out_of_core(mentions, t, **reviews)
    with get_task_stream(client) as tasks:
        dask, largest, across = out_of_core(mentions, t, client, **reviews)
    assert memory.refused and memory.decisions and memory.grey and across
    assert largest > groups.TASK_ROWS  # a part of more steps than a task: replayed here
    ran = " ".join(task["key"] for task in tasks.data)  # keys: function name-uuid
    assert "score_blocks-" in ran and "replay_files-" in ran
    assert dask == local == memory


def test_cli_on_a_scheduler_writes_the_graphs_of_the_memory_engine(client, tmp_path):
    _, memory = dedup_by_cli(tmp_path, "memory", ["--engine", "memory"])
    _, on_dask = dedup_by_cli(tmp_path, "dask", ["--scheduler", client.scheduler.address])
    assert on_dask == memory
    with dask.config.set({"distributed.comm.timeouts.connect": "0.5s"}):
        out = CliRunner().invoke(cli, ["dedup", "--store", str(tmp_path / "dask"),
                                       "--scheduler", "tcp://127.0.0.1:9", "--review",
                                       str(tmp_path / "again.csv")])
    assert out.exit_code == 2, out.output
    assert out.output.startswith("error: cannot reach the Dask scheduler tcp://127.0.0.1:9")
    assert out.output.count("\n") == 1 and not (tmp_path / "again.csv").exists()
    out = CliRunner().invoke(cli, ["dedup", "--store", str(tmp_path / "dask"), "--dry-run",
                                   "--scheduler", "tcp://[::1"])
    assert out.exit_code == 2 and out.output.count("\n") == 1, out.output
    assert out.output.startswith("error: cannot reach the Dask scheduler tcp://[::1: ")
    store = EmbeddedStore(tmp_path / "dask")
    assert dedup_quads(store) == on_dask[1]  # nothing stored is lost
    store.close()


@pytest.mark.parametrize("options,message", [
    (["--scheduler", "tcp://127.0.0.1:9", "--workers", "2"], "exclude each other"),
    (["--workers", "2", "--engine", "memory"], "not with --engine memory or --state"),
    (["--workers", "0"], "'--workers': 0 is not in the range x>=1"),
])
def test_cli_rejects_options_that_cannot_run(tmp_path, options, message):
    out = CliRunner().invoke(cli, ["dedup", "--store", str(tmp_path / "s"), *options])
    assert out.exit_code == 2 and message in out.output and out.output.count("\n") == 1
    assert not (tmp_path / "s").exists()


def test_dask_is_imported_only_when_asked_for():
    code = ("import sys; import kgctl.dedup.commands, kgctl.dedup.outofcore; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
