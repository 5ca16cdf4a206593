"""A non-editable install finds the bundled ontologies: build the wheel, install it into a fresh
venv, run ``kgctl compile`` outside the checkout. No download: the build uses this environment's
hatchling, and the fresh venv borrows this environment's dependencies through a path file (plain
path lines, so the editable install living there is not activated)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from kgctl.ontology import default_ir

REPO = Path(__file__).resolve().parents[1]
TIMEOUT_S = 240


def sh(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True,
                          timeout=TIMEOUT_S, env=env, check=True)


@pytest.mark.slow
def test_wheel_install_finds_bundled_ontologies(tmp_path):
    pip = (sys.executable, "-m", "pip")
    sh(*pip, "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", tmp_path / "dist", REPO,
       cwd=tmp_path)
    (wheel,) = (tmp_path / "dist").glob("kgctl-*.whl")
    venv = tmp_path / "venv"
    sh(sys.executable, "-m", "venv", "--without-pip", venv, cwd=tmp_path)
    python = venv / "bin" / "python"
    site = Path(sh(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])",
                   cwd=tmp_path).stdout.strip())
    # every site folder of this environment (a venv may itself borrow the system's packages)
    borrowed = [p for p in sys.path if p.endswith("-packages")]
    borrowed = borrowed or [sysconfig.get_paths()["purelib"]]
    (site / "_kgctl_deps.pth").write_text("".join(p + "\n" for p in borrowed))
    sh(*pip, "--python", python, "install", "-q", "--no-deps", wheel, cwd=tmp_path)

    where = sh(python, "-c", "import kgctl.assets as a; print(a.asset_dir('domains'))",
               cwd=tmp_path).stdout.strip()
    assert Path(where).is_relative_to(venv)
    assert (Path(where) / "mop30" / "ontologies" / "om2.profile.yaml").is_file()
    checked = sh(venv / "bin" / "kgctl", "domain", "check", "nerre-doping", cwd=tmp_path).stdout
    assert checked.startswith("domain nerre-doping") and checked.rstrip().endswith("ok")
    out = sh(venv / "bin" / "kgctl", "compile", "--json", cwd=tmp_path).stdout
    assert json.loads(out) == json.loads(default_ir().to_json())
