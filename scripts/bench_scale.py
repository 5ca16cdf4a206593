"""Growth of every batch stage with the corpus: 30 / 300 / 3,000 papers, each stage beside its
anchor in the same run.

The corpus of N papers is N renamed copies of the MOP-30 ground-truth traces (copy 0 keeps the
original paper ids, so N = 30 is MOP-30 itself). Stages and their anchors:

- replay: the traces replayed through the compiled tools into an on-disk store (`replay_traces`,
  as `kgctl demo` does); anchor: `Store.bulk_load` of the same quads into a fresh store;
- read-out: the fixed read-out queries of every paper (`read_out_loaded`, as `kgctl eval`);
  anchor: reading every paper's triples;
- dedup: `kgctl dedup` on the store; anchor: one scan of every quad of the store.

Each stage runs in its own process (time and peak memory are its own). The store's size on disk
per quad is printed after replay, after `kgctl store compact` and for the bulk-loaded store.
On the store of one size (default 300) `kgctl serve` is started after dedup (which writes each
paper's merged graph) and every read-out query sent over the union of all its graphs, in the
endpoint's default (merged) view. The growth exponent of a stage is
log(t2 / t1) / log(N2 / N1) between the two largest sizes.

Usage: python scripts/bench_scale.py [--sizes 30,300,3000] [--serve-size 300] [--work DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STAGES = (("replay", "bulk_load"), ("readout", "triples"), ("dedup", "scan"))
TARGET_EXPONENT = 1.1
TARGET_REPLAY_RATIO = 10.0
TARGET_REPLAY_MB = 1024
TARGET_SERVE_SECONDS = 5.0


# -- the corpus -------------------------------------------------------------------------------

def make_corpus(size: int, folder: Path) -> list[Path]:
    """`size` trace files: copies of the bundled traces, copy k's papers renamed `<id>-c<k>`
    (the paper's IRIs in the calls' arguments with them)."""
    from kgctl.pipeline.demo import bundled_traces
    from kgctl.store.iris import graph_iri

    folder.mkdir(parents=True, exist_ok=True)
    sources = bundled_traces()
    paths = []
    for n in range(size):
        source, copy = sources[n % len(sources)], n // len(sources)
        text = source.read_text(encoding="utf-8")
        old = json.loads(text.splitlines()[0])["paper_id"]
        pid = old + (f"-c{copy}" if copy else "")
        text = text.replace(graph_iri(old).value + "/", graph_iri(pid).value + "/")
        records = [json.loads(line) for line in text.splitlines() if line.strip()]
        path = folder / f"{pid}.jsonl"
        path.write_text("".join(json.dumps({**r, "paper_id": pid}, ensure_ascii=False) + "\n"
                                for r in records), encoding="utf-8")
        paths.append(path)
    return paths


# -- stages (each in its own process) ---------------------------------------------------------

def stage_replay(work: Path) -> dict:
    from kgctl.agent.aio import run_sync
    from kgctl.agent.replay import replay_traces
    from kgctl.pipeline.demo import compile_all
    from kgctl.store import EmbeddedStore

    paths = sorted((work / "traces").glob("*.jsonl"))
    _, (ir, surface), _ = compile_all()
    store = EmbeddedStore(work / "store")
    started = time.perf_counter()
    reports = run_sync(lambda: replay_traces(paths, ir=ir, store=store, surface=surface))
    seconds = time.perf_counter() - started
    store.close()
    return {"seconds": seconds, "refused": sum(len(r.refused) for r in reports)}


def stage_bulk_load(work: Path) -> dict:
    from pyoxigraph import RdfFormat, Store

    target = work / "bulk"
    shutil.rmtree(target, ignore_errors=True)
    store = Store(str(target))
    started = time.perf_counter()
    store.bulk_load(path=str(work / "dump.nq"), format=RdfFormat.N_QUADS)
    store.flush()
    return {"seconds": time.perf_counter() - started}


def stage_readout(work: Path) -> dict:
    from kgctl.evaluation.readout import read_out_loaded
    from kgctl.store import EmbeddedStore

    store = EmbeddedStore(work / "store")
    papers = store.papers()
    started = time.perf_counter()
    loaded = read_out_loaded(store, papers)
    seconds = time.perf_counter() - started
    return {"seconds": seconds, "papers": len(loaded.docs), "problems": len(loaded.problems)}


def stage_triples(work: Path) -> dict:
    from kgctl.store import EmbeddedStore

    store = EmbeddedStore(work / "store")
    papers = store.papers()
    started = time.perf_counter()
    count = sum(1 for p in papers for _ in store.triples(p))
    return {"seconds": time.perf_counter() - started, "triples": count}


def stage_dedup(work: Path) -> dict:
    from kgctl.cli import cli

    started = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()) as out:
        cli(["dedup", "--store", str(work / "store"), "--json", "--review",
              str(work / "dedup-review.csv")], standalone_mode=False)
    seconds = time.perf_counter() - started
    return {"seconds": seconds, "mentions": sum(s["mentions"] for s in json.loads(out.getvalue()))}


def stage_scan(work: Path) -> dict:
    from pyoxigraph import Store

    store = Store(str(work / "store"))
    started = time.perf_counter()
    count = sum(1 for _ in store.quads_for_pattern(None, None, None, None))
    return {"seconds": time.perf_counter() - started, "quads": count}


def stage_dump(work: Path) -> dict:
    """Not timed: the replayed quads as N-Quads for the bulk-load anchor."""
    from pyoxigraph import RdfFormat, Store

    store = Store(str(work / "store"))
    store.dump(output=str(work / "dump.nq"), format=RdfFormat.N_QUADS)
    return {"quads": len(store)}


# -- the driver -------------------------------------------------------------------------------

def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "platform"),
                                                      env.get("PYTHONPATH")]))
    return env


def run_stage(name: str, work: Path) -> dict:
    """Run one stage in a fresh process; its result with the process's peak memory (MB)."""
    proc = subprocess.Popen([sys.executable, __file__, "--stage", name, "--work", str(work)],
                            stdout=subprocess.PIPE, env=_env(), text=True)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"stage {name} failed (exit {proc.returncode})")
    return {**json.loads(out.strip().splitlines()[-1]), "mb": usage.ru_maxrss / 1024}


def kgctl(*args: str) -> None:
    subprocess.run([str(Path(sys.executable).with_name("kgctl")), *args], check=True,
                   env=_env(), stdout=subprocess.DEVNULL)


def disk_bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


def exponent(results: dict[int, dict], stage: str) -> str:
    sizes = sorted(results)
    if len(sizes) < 2:
        return "-"
    a, b = sizes[-2], sizes[-1]
    growth = results[b][stage]["seconds"] / results[a][stage]["seconds"]
    return f"{math.log(growth) / math.log(b / a):.2f}"


def measure(size: int, work: Path, *, serve: bool) -> dict:
    shutil.rmtree(work, ignore_errors=True)
    make_corpus(size, work / "traces")
    out = {"replay": run_stage("replay", work)}
    out["dump"] = run_stage("dump", work)
    quads = out["dump"]["quads"]
    out["size_replay"] = disk_bytes(work / "store") / quads
    kgctl("store", "compact", "--store", str(work / "store"))
    out["size_compact"] = disk_bytes(work / "store") / quads
    out["bulk_load"] = run_stage("bulk_load", work)
    out["size_bulk"] = disk_bytes(work / "bulk") / quads
    for stage in ("readout", "triples", "dedup", "scan"):
        out[stage] = run_stage(stage, work)
    if serve:
        out["serve"] = serve_union(work, size)
    shutil.rmtree(work / "bulk")
    (work / "dump.nq").unlink()
    return out


def report_size(size: int, r: dict) -> None:
    print(f"{size} papers: {r['dump']['quads']:,} quads; {r['replay']['refused']} calls refused; "
          f"read-out {r['readout']['papers']} papers, {r['readout']['problems']} problems; "
          f"dedup {r['dedup']['mentions']:,} mentions")
    for stage, anchor in STAGES:
        s, a = r[stage], r[anchor]
        ratio = s["seconds"] / a["seconds"]
        print(f"  {stage:8} {s['seconds']:8.2f} s {s['mb']:7.0f} MB   |  {anchor:9} "
              f"{a['seconds']:8.2f} s {a['mb']:7.0f} MB   ratio {ratio:6.1f}x")
    print(f"  store bytes per quad: after replay {r['size_replay']:.0f}, after compact "
          f"{r['size_compact']:.0f}, bulk-loaded {r['size_bulk']:.0f}")
    print("\n".join(r.get("serve", ())), flush=True)


def serve_union(work: Path, size: int) -> list[str]:
    """Every read-out query over the union of the store's graphs, through `kgctl serve`: the
    lines to print."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    kgctl_bin = str(Path(sys.executable).with_name("kgctl"))
    server = subprocess.Popen([kgctl_bin, "serve", "--store", str(work / "store"), "--port",
                               str(port), "--union-default-graph"], env=_env(),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/query"
    lines = [f"kgctl serve, union of {size} papers (target < {TARGET_SERVE_SECONDS} s each):"]
    try:
        _wait_ready(url, server)
        for rq in sorted((ROOT / "domains" / "mop30" / "readout").glob("*.rq")):
            body = urllib.parse.urlencode({"query": rq.read_text(encoding="utf-8")}).encode()
            request = urllib.request.Request(url, data=body, headers={
                "Accept": "application/sparql-results+json"})
            started = time.perf_counter()
            try:
                with urllib.request.urlopen(request, timeout=120) as response:
                    body, status = response.read(), response.status
            except urllib.error.HTTPError as exc:
                body, status = b"", exc.code
            seconds = time.perf_counter() - started
            rows = len(json.loads(body)["results"]["bindings"]) if status == 200 else 0
            verdict = "ok" if status == 200 and seconds < TARGET_SERVE_SECONDS else "MISSED"
            lines.append(f"  {rq.name:22} HTTP {status} {rows:7} rows {seconds:6.2f} s  "
                         f"{verdict}")
    finally:
        server.terminate()
        server.wait()
    return lines


def _wait_ready(url: str, server: subprocess.Popen) -> None:
    probe = url + "?" + urllib.parse.urlencode({"query": "ASK {}"})
    while True:
        if server.poll() is not None:
            raise SystemExit("kgctl serve exited before it was ready")
        try:
            with urllib.request.urlopen(probe, timeout=5):
                return
        except OSError:
            time.sleep(0.2)  # polling for readiness, not a fixed wait


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="30,300,3000", help="comma-separated paper counts")
    parser.add_argument("--serve-size", type=int, default=300,
                        help="the size whose store `kgctl serve` answers (0: none)")
    parser.add_argument("--work", type=Path, help="working folder (default: a temporary one)")
    parser.add_argument("--stage", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.stage:
        print(json.dumps(globals()[f"stage_{args.stage}"](args.work)))
        return
    sizes = sorted({int(s) for s in args.sizes.split(",")})
    base = args.work or Path(tempfile.mkdtemp(prefix="bench-scale-"))
    results = {}
    try:
        for size in sizes:
            results[size] = measure(size, base / str(size), serve=size == args.serve_size)
            report_size(size, results[size])
            if size != max(sizes):
                shutil.rmtree(base / str(size))
        summarise(results)
    finally:
        if args.work is None:
            shutil.rmtree(base, ignore_errors=True)


def summarise(results: dict[int, dict]) -> None:
    sizes = sorted(results)
    if len(sizes) < 2:
        return
    print(f"growth exponent {sizes[-2]} -> {sizes[-1]} papers (target <= {TARGET_EXPONENT}):")
    for stage, anchor in STAGES:
        print(f"  {stage:8} {exponent(results, stage):>5}   |  {anchor:9} "
              f"{exponent(results, anchor):>5}")
    last = results[sizes[-1]]
    ratio = last["replay"]["seconds"] / last["bulk_load"]["seconds"]
    print(f"replay / bulk_load at {sizes[-1]} papers: {ratio:.1f}x (target <= "
          f"{TARGET_REPLAY_RATIO:.0f}x); replay peak memory {last['replay']['mb']:.0f} MB "
          f"(target < {TARGET_REPLAY_MB} MB)")


if __name__ == "__main__":
    main()
