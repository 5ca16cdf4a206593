"""The Docker image: builds, runs as non-root, becomes healthy and answers SPARQL.

Needs a Docker engine; skips with the reason when none answers (testcontainers)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
HEALTHY_S = 120.0


def docker_engine_problem() -> str | None:
    try:
        import docker

        docker.from_env().ping()
    except Exception as exc:  # any failure means: no usable engine here
        return f"no Docker engine answers ({type(exc).__name__})"
    return None


@pytest.mark.skipif(docker_engine_problem() is not None,
                    reason=docker_engine_problem() or "Docker engine available")
def test_image_serves_seeded_store_as_non_root() -> None:
    import httpx
    from testcontainers.core.container import DockerContainer
    from testcontainers.core.image import DockerImage

    with DockerImage(path=str(REPO), dockerfile_path="docker/Dockerfile", tag="kgctl:test"
                     ) as image:
        container = DockerContainer(str(image)).with_exposed_ports(7878).with_command(
            "serve --store /data --host 0.0.0.0 --port 7878 --seed")
        with container:
            url = f"http://{container.get_container_host_ip()}:" \
                  f"{container.get_exposed_port(7878)}"
            deadline = time.monotonic() + HEALTHY_S
            while container.get_wrapped_container().attrs["State"].get(
                    "Health", {}).get("Status") != "healthy":
                assert time.monotonic() < deadline, "container never became healthy"
                time.sleep(1)
                container.get_wrapped_container().reload()
            assert container.exec("id -u").output.decode().strip() != "0"
            answer = httpx.get(f"{url}/query", params={"query": "ASK { GRAPH ?g { ?s ?p ?o } }"})
            assert answer.json()["boolean"] is True
