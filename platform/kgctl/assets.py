"""Find the bundled asset folders (the domain packs, the benchmarks of no pack) both in a
checkout and in an installed wheel.

In a wheel the folders live in ``kgctl/assets/<name>``; in a checkout they sit at the
repository top level, two levels above this package.

>>> asset_dir("domains").joinpath("mop30", "domain.yaml").is_file()
True
"""

from __future__ import annotations

from pathlib import Path

from kgctl.errors import InputError

ASSET_FOLDERS = ("domains", "benchmarks")
_PACKAGE = Path(__file__).resolve().parent


def asset_dir(name: str) -> Path:
    """Path of a bundled asset folder (one of ``ASSET_FOLDERS``)."""
    if name not in ASSET_FOLDERS:
        raise ValueError(f"unknown asset folder {name!r}")
    for candidate in (_PACKAGE / "assets" / name, _PACKAGE.parents[1] / name):
        if candidate.is_dir():
            return candidate
    raise InputError(f"bundled folder {name!r} not found; reinstall kgctl")
