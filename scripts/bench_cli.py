"""How fast the CLI answers a person: `kgctl --help`, `kgctl extract` with no arguments, a
usage error and a sub-command's --help, each run as a fresh process (median of N), beside
`python -c pass` in the same run as the interpreter's own start-up baseline.

Usage: python scripts/bench_cli.py [--repeat N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

KGCTL = [sys.executable, "-c", "from kgctl.cli import main; main()"]
CASES = {
    "python -c pass (baseline)": [sys.executable, "-c", "pass"],
    "kgctl --help": [*KGCTL, "--help"],
    "kgctl extract (no arguments)": [*KGCTL, "extract"],
    "kgctl nosuchcommand (usage error)": [*KGCTL, "nosuchcommand"],
    "kgctl query run (missing argument)": [*KGCTL, "query", "run"],
    "kgctl ground --help": [*KGCTL, "ground", "--help"],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    times: dict[str, list[float]] = {name: [] for name in CASES}
    for _ in range(args.repeat):  # interleaved, so load changes hit every case alike
        for name, command in CASES.items():
            started = time.perf_counter()
            subprocess.run(command, capture_output=True, check=False)
            times[name].append(time.perf_counter() - started)
    base = statistics.median(times["python -c pass (baseline)"])
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:38} {median:6.3f} s  ({median / base:4.1f}x the interpreter start)")


if __name__ == "__main__":
    main()
