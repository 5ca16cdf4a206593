"""Graph Store Protocol routes: read any graph, write (PUT/POST/DELETE) with the update token.

A graph is named indirectly (``/store?graph=IRI``, ``/store?default``) or directly: the URL of
a request under ``/store/`` is itself the graph IRI. A POST may carry several documents as
``multipart/form-data``. A POST to ``/store`` alone creates a new
graph under ``/store/`` and answers its IRI in ``Location``. Reads run in the query workers
under the row and byte limits; writes parse the whole body first, so bad data writes nothing.
"""

from __future__ import annotations

import uuid
from email.parser import BytesParser
from email.policy import HTTP
from functools import partial
from typing import TYPE_CHECKING

from pyoxigraph import DefaultGraph, RdfFormat
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from kgctl.service.execution import HTTP_BAD_REQUEST, HTTP_NOT_FOUND, GraphRequest, HttpProblem, iri
from kgctl.service.hosts import request_url
from kgctl.service.protocol import HTTP_UNSUPPORTED_MEDIA

if TYPE_CHECKING:
    from kgctl.service.app import Service

HTTP_CREATED = 201
HTTP_NO_CONTENT = 204
METHODS = ["GET", "HEAD", "PUT", "POST", "DELETE"]
FORM_DATA = "multipart/form-data"
GRAPH_FORMATS = (RdfFormat.TURTLE, RdfFormat.N_TRIPLES, RdfFormat.RDF_XML, RdfFormat.JSON_LD)


def graph_store_routes(service: Service) -> list[Route]:
    async def indirect(request: Request) -> Response:
        params = request.query_params
        name = params.get("graph")
        if request.method == "POST" and not params:
            name = f"{request_url(request.scope)}/{uuid.uuid4().hex}"
            await write(request, name)
            return Response(status_code=HTTP_CREATED, headers={"Location": name})
        if ("default" in params) == (name is not None):
            raise HttpProblem(HTTP_BAD_REQUEST, "give exactly one of ?graph=<IRI> or ?default")
        return await handle(request, name)

    async def direct(request: Request) -> Response:
        return await handle(request, request_url(request.scope))

    async def handle(request: Request, name: str | None) -> Response:
        graph = DefaultGraph() if name is None else iri(name)
        if request.method in ("GET", "HEAD"):
            params = request.query_params
            return service.read(GraphRequest(graph=name, accept=request.headers.get("accept"),
                                             format=params.get("format")))
        dataset = service.dataset
        if request.method == "DELETE":
            if not await service.write(request.scope, partial(dataset.delete_graph, graph)):
                raise HttpProblem(HTTP_NOT_FOUND, f"no graph {name} in this store")
            return Response(status_code=HTTP_NO_CONTENT)
        created = await write(request, name)
        return Response(status_code=HTTP_CREATED if created else HTTP_NO_CONTENT)

    async def write(request: Request, name: str | None) -> bool:
        """PUT or POST the request's body into the graph `name`; True when it is new."""
        service.authorise(request.scope)  # before reading a body that may be large
        content_type = request.headers.get("content-type") or ""
        body = await service.body(request.scope, request.receive, service.config.max_bytes)
        form = request.method == "POST" and content_type.lower().startswith(FORM_DATA)
        graph = DefaultGraph() if name is None else iri(name)
        return await service.write(request.scope, partial(
            service.dataset.put_graph, graph, (content_type, body, form),
            base_iri=name or service.base_iri(request.scope), replace=request.method == "PUT"))

    return [Route("/store", indirect, methods=METHODS),
            Route("/store/{path:path}", direct, methods=METHODS)]


def documents(content_type: str, body: bytes, form: bool) -> list[tuple[RdfFormat, bytes]]:
    """The RDF documents of a write, one per part of a ``multipart/form-data`` POST (`form`): in
    the writer process, within the write's time limit (the email parser took 1.7 s for 20 MB)."""
    if not form:
        return [(_format_of(content_type), body)]
    message = BytesParser(policy=HTTP).parsebytes(
        f"Content-Type: {content_type}\r\n\r\n".encode("latin-1") + body)
    if not message.is_multipart():
        raise HttpProblem(HTTP_BAD_REQUEST, "malformed multipart/form-data body")
    return [(_format_of(part.get("content-type")), part.get_payload(decode=True) or b"")
            for part in message.iter_parts()]


def _format_of(content_type: str | None) -> RdfFormat:
    media = (content_type or "").split(";")[0].strip().lower()
    fmt = RdfFormat.from_media_type(media) if media else None
    if fmt not in GRAPH_FORMATS:
        raise HttpProblem(HTTP_UNSUPPORTED_MEDIA, f"unsupported Content-Type {content_type!r} "
                          "for a graph; send Turtle, N-Triples, RDF/XML or JSON-LD")
    return fmt


