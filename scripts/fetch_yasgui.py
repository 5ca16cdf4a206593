"""Fetch YASGUI (npm ``@zazuko/yasgui``, MIT) into the package's static folder, unmodified.

The query page uses it when present (it is served from this server: no CDN at run time) and
falls back to a plain editor when not. Run this before building or installing the wheel;
``.ci/run`` does. npm checks the tarball against the registry's integrity hash.

Run: python scripts/fetch_yasgui.py
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

PACKAGE = "@zazuko/yasgui"
VERSION = "4.6.2"
TARGET = Path(__file__).resolve().parents[1] / "platform/kgctl/service/static/yasgui"
FILES = ("package/build/yasgui.min.js", "package/build/yasgui.min.css", "package/package.json")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        try:
            packed = subprocess.run(["npm", "pack", f"{PACKAGE}@{VERSION}", "--silent"],
                                    cwd=tmp, check=True, capture_output=True, text=True)
        except (OSError, subprocess.CalledProcessError) as exc:
            sys.exit(f"error: cannot fetch {PACKAGE}@{VERSION} with npm: {exc}")
        tarball = Path(tmp) / packed.stdout.strip().splitlines()[-1]
        with tarfile.open(tarball) as archive:
            for name in FILES:
                member = archive.extractfile(name)
                if member is None:
                    sys.exit(f"error: {name} missing from {tarball.name}")
                (TARGET / Path(name).name).write_bytes(member.read())
    print(f"{PACKAGE}@{VERSION} -> {TARGET}")


if __name__ == "__main__":
    main()
