"""``kgctl extract`` on a one-paragraph paper against the real llama.cpp server (SmolLM2-135M,
8k context): wall time, exit code, outcome, and per plan step the status, model turns, tokens
in/out, the fixed cost per turn (the server's count) and the seconds, read from the run trace.

    python scripts/llama_server.py build        # once
    python scripts/bench_llamacpp.py [--paper PATH] [--max-tokens N]

The server is started on a free loopback port and stopped at the end; its log is
``server.log`` in the cache folder, where the script also counts context overflow answers.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAPER = ROOT / "tests" / "data" / "agent" / "paragraph.md"
MODEL = "SmolLM2-135M-Instruct"


def _server_module():
    spec = importlib.util.spec_from_file_location("llama_server", Path(__file__).parent /
                                                  "llama_server.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--paper", type=Path, default=PAPER)
    parser.add_argument("--max-tokens", type=int, default=None)
    args = parser.parse_args()
    server = _server_module()
    if not (server.binary_path().exists() and server.model_path().exists()):
        raise SystemExit("error: llama-server is not built; run: python scripts/llama_server.py "
                         "build")
    port = free_port()
    started = time.monotonic()
    proc = server.start(port)
    print(f"llama-server ready on port {port} in {time.monotonic() - started:.1f} s "
          f"(context {server.CONTEXT})")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            runs = Path(tmp) / "runs"
            cmd = [sys.executable, "-c", "from kgctl.cli import main; main()", "extract",
                   str(args.paper), "--store", str(Path(tmp) / "store"), "--runs", str(runs),
                   "--base-url", f"http://127.0.0.1:{port}/v1", "--model", MODEL, "--json"]
            if args.max_tokens:
                cmd += ["--max-tokens", str(args.max_tokens)]
            t0 = time.monotonic()
            done = subprocess.run(cmd, capture_output=True, text=True)
            seconds = time.monotonic() - t0
            trace = json.loads(next(runs.glob("*.trace.json")).read_text(encoding="utf-8"))
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    log = (server.cache_dir() / "server.log").read_text(errors="replace")
    overflows = log.count("exceeds the available context size")
    summary = json.loads(done.stdout) if done.stdout.strip() else []
    outcome = summary[0]["outcome"] if summary else "?"
    print(f"kgctl extract {args.paper.name}: exit {done.returncode}, outcome {outcome}, "
          f"{seconds:.1f} s wall, trace status {trace['status']}, "
          f"context overflow answers {overflows}")
    print(f"{'step':<22}{'status':<11}{'turns':>6}{'tokens in':>11}{'tokens out':>11}"
          f"{'fixed':>11}{'s':>8}  finish reasons")
    for step in trace["steps"]:
        usage = step["usage"]
        print(f"{step['step']:<22}{step['status']:<11}{usage['requests']:>6}"
              f"{usage['prompt_tokens']:>11}{usage['completion_tokens']:>11}"
              f"{step.get('fixed_tokens') or 0:>11}{step.get('seconds', 0):>8.1f}  "
              f"{','.join(str(r) for r in step.get('finish_reasons', []))}")
    total = trace["usage"]
    print(f"{'total':<33}{total['requests']:>6}{total['prompt_tokens']:>11}"
          f"{total['completion_tokens']:>11}")
    for line in done.stderr.splitlines():
        if line.startswith(("warning", "error")) or ": warning:" in line:
            print(f"  {line}")


if __name__ == "__main__":
    main()
