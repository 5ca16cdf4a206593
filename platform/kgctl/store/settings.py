"""Connection settings of a remote store: credentials and request limits, read from the
environment or a config file, never only from the command line (where other users see them).

Environment (wins over the file): ``KGCTL_ENDPOINT_TOKEN`` (bearer), ``KGCTL_ENDPOINT_USER`` +
``KGCTL_ENDPOINT_PASSWORD`` with ``KGCTL_ENDPOINT_AUTH`` = ``basic`` (default) or ``digest``,
``KGCTL_ENDPOINT_MAX_QUADS`` / ``KGCTL_ENDPOINT_MAX_BYTES`` (request size),
``KGCTL_ENDPOINT_TIMEOUT`` (seconds to wait for an answer). The file is
``$KGCTL_ENDPOINT_CONFIG`` or ``~/.config/kgctl/endpoints.toml``: one table per endpoint URL
(the longest matching URL prefix applies) with the same keys in lower case, without the prefix.

>>> settings_for("http://h/sparql", env={"KGCTL_ENDPOINT_TOKEN": "t"}).token
't'
>>> s = settings_for("http://h/sparql", env={"KGCTL_ENDPOINT_USER": "u",
...     "KGCTL_ENDPOINT_PASSWORD": "p", "KGCTL_ENDPOINT_AUTH": "digest"})
>>> type(s.httpx_auth()).__name__, s.max_quads
('DigestAuth', 1000)
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kgctl.errors import InputError

ENV_PREFIX = "KGCTL_ENDPOINT_"
CONFIG_ENV = "KGCTL_ENDPOINT_CONFIG"
DEFAULT_CONFIG = Path("~/.config/kgctl/endpoints.toml")
KEYS = ("token", "user", "password", "auth", "max_quads", "max_bytes", "timeout")


class EndpointSettings(BaseModel):
    """Credentials and limits for one endpoint."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    token: str | None = None
    user: str | None = None
    password: str | None = None
    auth: Literal["basic", "digest"] = "basic"
    max_quads: int = 1000  # Virtuoso 7 compiles updates of a few thousand quads at most
    max_bytes: int = 1_000_000
    timeout: float = Field(default=30.0, gt=0)  # seconds for an answer (connecting: 5 s)

    def httpx_auth(self) -> httpx.Auth | None:
        if self.token is not None:
            return None  # sent as a header, see headers()
        if self.user is None:
            return None
        password = self.password or ""
        if self.auth == "digest":
            return httpx.DigestAuth(self.user, password)
        return httpx.BasicAuth(self.user, password)

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}


def _from_file(url: str, env: Mapping[str, str]) -> dict[str, object]:
    path = Path(env.get(CONFIG_ENV) or DEFAULT_CONFIG).expanduser()
    if not path.is_file():
        if CONFIG_ENV in env:
            raise InputError(f"endpoint config {path} does not exist")
        return {}
    try:
        tables = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise InputError(f"cannot read endpoint config {path}: {exc}") from None
    matches = [prefix for prefix in tables if url.startswith(prefix)]
    if not matches:
        return {}
    table = tables[max(matches, key=len)]
    return dict(table) if isinstance(table, dict) else {}


def settings_for(url: str, *, env: Mapping[str, str] | None = None) -> EndpointSettings:
    """The settings that apply to `url`: environment over config file over defaults."""
    env = os.environ if env is None else env
    values = _from_file(url, env)
    for key in KEYS:
        if ENV_PREFIX + key.upper() in env:
            values[key] = env[ENV_PREFIX + key.upper()]
    try:
        return EndpointSettings.model_validate(values)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InputError(f"endpoint settings: {where}: {first['msg']}") from None
