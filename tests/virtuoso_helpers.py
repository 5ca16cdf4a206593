"""A real Virtuoso 7 server (Debian `virtuoso-opensource`) for the remote-store tests: its own
ini and database in a folder, loopback ports, a SPARQL user with update rights (Digest auth)."""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from pathlib import Path

import httpx
from store_helpers import free_port

VIRTUOSO = shutil.which("virtuoso-t")
ISQL = shutil.which("isql-vt")
STARTUP_S = 60.0
POLL_S = 0.1
USER, PASSWORD = "kgctl", "kgctl-test-secret"
VSP_ROOT = Path("/var/lib/virtuoso-opensource-7/vsp")
INI = """\
[Database]
DatabaseFile = {dir}/virtuoso.db
ErrorLogFile = {dir}/virtuoso.log
LockFile = {dir}/virtuoso.lck
TransactionFile = {dir}/virtuoso.trx
xa_persistent_file = {dir}/virtuoso.pxa
[TempDatabase]
DatabaseFile = {dir}/virtuoso-temp.db
TransactionFile = {dir}/virtuoso-temp.trx
[Parameters]
ServerPort = 127.0.0.1:{sql_port}
DisableUnixSocket = 1
NumberOfBuffers = 10000
MaxDirtyBuffers = 6000
ThreadsPerQuery = 2
DirsAllowed = .
[HTTPServer]
ServerPort = 127.0.0.1:{http_port}
ServerRoot = {vsp}
ServerThreads = 8
MaxClientConnections = 8
[SPARQL]
ResultSetMaxRows = {max_rows}
MaxQueryExecutionTime = 120
"""
SETUP_SQL = (f"DB.DBA.USER_CREATE('{USER}', '{PASSWORD}'); "
             f'GRANT SPARQL_UPDATE TO "{USER}"; '
             f"DB.DBA.RDF_DEFAULT_USER_PERMS_SET('{USER}', 15);")


def missing_reason() -> str | None:
    """Why Virtuoso cannot run here, or None."""
    if VIRTUOSO is None or ISQL is None:
        return "Virtuoso is not installed (Debian package virtuoso-opensource)"
    return None


class VirtuosoServer:
    """`virtuoso-t +foreground` on free loopback ports; `url` is the Digest-guarded endpoint."""

    def __init__(self, location: Path, *, max_rows: int = 10000) -> None:
        location.mkdir(parents=True, exist_ok=True)
        self.location = location
        self.max_rows = max_rows
        self._start(first=not (location / "virtuoso.db").exists())

    def _start(self, *, first: bool) -> None:
        self.sql_port, self.http_port = free_port(), free_port()
        self.url = f"http://127.0.0.1:{self.http_port}/sparql-auth"
        self.public_url = f"http://127.0.0.1:{self.http_port}/sparql"
        (self.location / "virtuoso.ini").write_text(INI.format(
            dir=self.location, sql_port=self.sql_port, http_port=self.http_port,
            vsp=VSP_ROOT, max_rows=self.max_rows))
        self.process = subprocess.Popen(
            [str(VIRTUOSO), "+configfile", "virtuoso.ini", "+foreground"], cwd=self.location,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self._wait()
        if first:
            subprocess.run([str(ISQL), f"127.0.0.1:{self.sql_port}", "dba", "dba",
                            f"exec={SETUP_SQL}"], check=True, capture_output=True, timeout=60)

    def _wait(self) -> None:
        deadline = time.monotonic() + STARTUP_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                break
            try:
                if httpx.get(self.public_url, params={"query": "ASK {}"}).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(POLL_S)
        self.stop()
        raise RuntimeError(f"virtuoso did not start (see {self.location}/virtuoso.log)")

    def env(self) -> dict[str, str]:
        """Environment that lets kgctl write here."""
        return {"KGCTL_ENDPOINT_USER": USER, "KGCTL_ENDPOINT_PASSWORD": PASSWORD,
                "KGCTL_ENDPOINT_AUTH": "digest"}

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def restart(self) -> None:
        """Start again on the same database (after kill or stop), on new ports."""
        self._start(first=False)

    def stop(self) -> None:
        """Kill: the database is thrown away, a clean shutdown's checkpoint would only cost."""
        if self.process.poll() is None:
            self.kill()
