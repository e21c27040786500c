"""The HTTP routes of the job API (API Gateway HTTP API, payload format 2.0).

HTTP API rather than REST API: it is about 70 % cheaper per call, has native JWT authorizers and
IAM auth, and the request validation REST API would add is done here by Powertools and pydantic,
which also generate the OpenAPI document (`docs/openapi.json`, checked for drift by a test).
"""

from __future__ import annotations

import functools
import json
import re
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from aws_lambda_powertools.event_handler.exceptions import NotFoundError as RouteNotFoundError
from aws_lambda_powertools.event_handler.middlewares import NextMiddleware
from aws_lambda_powertools.event_handler.openapi.exceptions import (
    RequestUnsupportedContentType,
    RequestValidationError,
)
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEventV2
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel

from takt.api import backfills, calendars, oidc, quarantine, runs, webhook_keys
from takt.api.access import audit, authorize
from takt.api.admission import (
    IDEMPOTENCY_KEY_PATTERN,
    IF_MATCH_PATTERN,
    body_text,
    check_body,
    check_headers,
    if_match_version,
    model_errors,
)
from takt.api.backfills import BackfillIn
from takt.api.dependencies import Api
from takt.api.errors import (
    ApiError,
    RegionUnavailableError,
    TooManyRequestsError,
    UnsupportedMediaTypeError,
)
from takt.api.executions import ExecutionService
from takt.api.identity import identity_of
from takt.api.jobs import JobService
from takt.api.models import (
    TEXT_PATTERN,
    BulkRerunIn,
    BulkRerunOut,
    DeletedJobOut,
    DeletedJobPage,
    ExecutionOut,
    ExecutionPage,
    JobCreate,
    JobOut,
    JobPage,
    JobPatch,
    PreviewOut,
    Problem,
    RerunIn,
    RerunRefused,
    StatsOut,
)
from takt.api.ratelimit import take_request_token
from takt.api.routing import (
    PROBLEM_JSON,
    api_of,
    json_response,
    responses,
    tenant_of,
)
from takt.api.stats import StatsService
from takt.api.webhook_keys import RotateIn
from takt.models.calendars import CalendarBody, CalendarCreate
from takt.observability import logger
from takt.store.jobs import ATTENTION_CURSOR, EXECUTION_CURSOR, JOB_CURSOR

app = APIGatewayHttpResolver(enable_validation=True)
_responses = responses


def _api() -> Api:
    return api_of(app)


def _service() -> JobService:
    return JobService(_api())


def _executions() -> ExecutionService:
    return ExecutionService(_api())


def _check_access(resolver: APIGatewayHttpResolver) -> None:
    """The access check (takt.api.access): who calls, and may its role use this method."""
    identity = identity_of(resolver.current_event, api_of(resolver).identity)
    caller = authorize(
        identity, resolver.current_event.http_method, resolver.current_event.headers or {}
    )
    resolver.context["caller"] = caller


def _access(resolver: APIGatewayHttpResolver, next_middleware: NextMiddleware) -> Response[Any]:
    """The caller, for the route (`admit` has already refused a caller without the right)."""
    _check_access(resolver)
    return next_middleware(resolver)


app.use(middlewares=[_access])


def _tenant() -> str:
    return tenant_of(app)


def _etag(version: int) -> str:
    return f'"{version}"'


def _if_match() -> int | None:
    return if_match_version(app.current_event.headers or {})


def _job_response(job: JobOut, status: int) -> Response[Any]:
    # The body is the model, not its JSON text: Powertools validates a response body against the
    # route's declared return type before serializing it, and JSON text fails that check (every
    # answer became a 400 after the write had been done).
    return Response(
        status_code=status,
        content_type="application/json",
        body=job,
        headers={"ETag": _etag(job.version), "Location": f"/v1/jobs/{job.id}"},
    )


_json = json_response


@app.post(
    "/v1/jobs",
    responses=_responses(
        {201: "Created", 200: "The job created earlier with this idempotency key"},
        409,
        410,
        413,
        415,
        422,
        429,
    ),
)
def create_job(body: Annotated[JobCreate, Body()]) -> Response[JobOut]:
    key = (app.current_event.headers or {}).get("idempotency-key")
    job, created = _service().create(_tenant(), body, key)
    return _job_response(JobOut.of(job), 201 if created else 200)


@app.get("/v1/jobs", responses=_responses({200: "A page of jobs, oldest first"}))
def list_jobs(
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    cursor: Annotated[str | None, Query(pattern=JOB_CURSOR)] = None,
    status: Annotated[str | None, Query(pattern="^(active|paused|completed)$")] = None,
    name: Annotated[str | None, Query(description="name prefix")] = None,
) -> Response[JobPage]:
    service, tenant = _service(), _tenant()
    jobs, next_cursor = service.list_jobs(tenant, limit, cursor, status, name)
    items = [JobOut.of(job) for job in service.with_newest_outcomes(tenant, jobs)]
    return _json(JobPage(items=items, next_cursor=next_cursor))


@app.get(
    "/v1/deleted-jobs",
    responses=_responses({200: "The deleted jobs that had the name, newest deletion first"}),
)
def list_deleted_jobs(
    name: Annotated[
        str,
        Query(
            max_length=200,
            pattern=TEXT_PATTERN,
            description="the name the jobs had; each is listed while its history is kept",
        ),
    ],
) -> Response[DeletedJobPage]:
    holders = _service().deleted_holders(_tenant(), name)
    items = [DeletedJobOut.of(h.job_id, h.name, h.deleted_ms, h.until_ms) for h in holders]
    return _json(DeletedJobPage(items=items))


@app.get("/v1/jobs/<job_id>", responses=_responses({200: "The job; its ETag is its version"}, 404))
def get_job(job_id: str) -> Response[JobOut]:
    service, tenant = _service(), _tenant()
    return _job_response(
        JobOut.of(service.with_newest_outcome(tenant, service.get(tenant, job_id))), 200
    )


@app.patch(
    "/v1/jobs/<job_id>",
    responses=_responses({200: "The changed job"}, 404, 409, 412, 413, 415, 503),
)
def update_job(job_id: str, body: Annotated[JobPatch, Body()]) -> Response[JobOut]:
    service, tenant = _service(), _tenant()
    job = service.update(tenant, job_id, body, _if_match())
    return _job_response(JobOut.of(service.with_newest_outcome(tenant, job)), 200)


@app.delete(
    "/v1/jobs/<job_id>",
    responses={**_responses({}, 404, 503), 204: {"description": "Deleted", "content": {}}},
)
def delete_job(job_id: str) -> Response[Any]:
    _service().delete(_tenant(), job_id)
    return Response(status_code=204, body="")


@app.get(
    "/v1/jobs/<job_id>/preview",
    responses=_responses({200: "The job's next runs, and its schedule in plain words"}, 404),
)
def preview_job(
    job_id: str, count: Annotated[int, Query(ge=1, le=100)] = 5
) -> Response[PreviewOut]:
    job, runs = _service().next_runs(_tenant(), job_id, count)
    return _json(PreviewOut.of(job, runs))


@app.post(
    "/v1/jobs/<job_id>/trigger",
    responses=_responses({202: "The execution, pending"}, 404, 409),
)
def trigger_job(job_id: str) -> Response[ExecutionOut]:
    record = _service().trigger(_tenant(), job_id)
    return _json(ExecutionOut.of(record), 202)


@app.get(
    "/v1/jobs/<job_id>/executions",
    responses=_responses({200: "A page of the job's executions, newest first"}, 404),
)
def list_executions(
    job_id: str,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    cursor: Annotated[str | None, Query(pattern=EXECUTION_CURSOR)] = None,
) -> Response[ExecutionPage]:
    records, next_cursor = _executions().of_job(_tenant(), job_id, limit, cursor)
    return _json(
        ExecutionPage(items=[ExecutionOut.of(r) for r in records], next_cursor=next_cursor)
    )


@app.get(
    "/v1/executions/<execution_id>",
    responses=_responses({200: "The execution with its attempts"}, 404),
)
def get_execution(execution_id: str) -> Response[ExecutionOut]:
    return _json(ExecutionOut.of(_executions().get(_tenant(), execution_id)))


@app.get(
    "/v1/executions",
    responses=_responses({200: "A page of the caller's dead or failed executions, newest first"}),
)
def list_executions_by_state(
    state: Annotated[
        str,
        Query(
            pattern="^(dead|failed)$",
            description="dead: every attempt failed; failed: the target ruled out a retry",
        ),
    ],
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    cursor: Annotated[str | None, Query(pattern=ATTENTION_CURSOR)] = None,
) -> Response[ExecutionPage]:
    records, next_cursor = _executions().needing_attention(_tenant(), state, limit, cursor)
    return _json(
        ExecutionPage(items=[ExecutionOut.of(r) for r in records], next_cursor=next_cursor)
    )


@app.post(
    "/v1/executions/<execution_id>/retry",
    responses=_responses(
        {202: "The execution, pending again with a fresh budget"}, 404, 409, 413, 415
    ),
)
def retry_execution(
    execution_id: str, body: Annotated[RerunIn | None, Body()] = None
) -> Response[ExecutionOut]:
    """Re-run a dead, failed or cancelled execution: with the job as it is now, or with
    `{"as_was": true}` as it ran (its snapshot). The body is optional."""
    as_was = body.as_was if body is not None else False
    record = _executions().retry_execution(_tenant(), execution_id, as_was=as_was)
    return _json(ExecutionOut.of(record), 202)


@app.post(
    "/v1/jobs/<job_id>/executions/retry",
    responses=_responses(
        {200: "The executions re-run, those refused, and whether more remain"}, 404, 413, 415
    ),
)
def retry_job_executions(
    job_id: str, body: Annotated[BulkRerunIn | None, Body()] = None
) -> Response[BulkRerunOut]:
    """Re-run a job's dead (or failed) executions at once, at most `limit` per call. The body
    is optional."""
    ask = body if body is not None else BulkRerunIn()
    done, refused, more = _executions().retry_dead_of_job(
        _tenant(), job_id, state=ask.state, as_was=ask.as_was, limit=ask.limit
    )
    return _json(
        BulkRerunOut(
            items=[ExecutionOut.of(r) for r in done],
            refused=[RerunRefused(id=i, detail=d) for i, d in refused],
            more=more,
        )
    )


@app.get(
    "/v1/stats",
    responses=_responses(
        {200: "The caller's job counts and failing jobs; the deployment's last hour and lanes"}
    ),
)
def stats() -> Response[StatsOut]:
    return _json(StatsService(_api()).overview(_tenant()))


@app.post(
    "/v1/executions/<execution_id>/cancel",
    responses=_responses(
        {
            202: "The execution: cancelled if it was waiting, or still running with "
            "`cancel_requested` until its worker stops it (at its next heartbeat)"
        },
        404,
        409,
    ),
)
def cancel_execution(execution_id: str) -> Response[ExecutionOut]:
    return _json(ExecutionOut.of(_executions().cancel_execution(_tenant(), execution_id)), 202)


for _router in (
    runs.router,
    webhook_keys.router,
    oidc.router,
    calendars.router,
    backfills.router,
    quarantine.router,
):
    app.include_router(_router)


@app.get("/v1/openapi.json", include_in_schema=False)
def openapi_document() -> Response[Any]:
    return Response(status_code=200, content_type="application/json", body=openapi_json())


def openapi_json() -> str:
    """The OpenAPI document as committed in docs/openapi.json."""
    schema = app.get_openapi_schema(
        title="takt",
        version="1.0.0",
        summary="A distributed job scheduler that runs serverless on AWS",
    )
    document = json.loads(schema.model_dump_json(by_alias=True, exclude_none=True))
    # Powertools documents a 422 validation answer on every route; takt answers invalid input
    # with a 400 problem instead, and 422 only for a reused idempotency key.
    for operations in document.get("paths", {}).values():
        for operation in operations.values():
            answer = operation.get("responses", {}).get("422", {})
            if "HTTPValidationError" in json.dumps(answer):
                del operation["responses"]["422"]
    _document_request_rules(document.get("paths", {}))
    _document_text(document)
    schemas = document.get("components", {}).get("schemas", {})
    for name in ("HTTPValidationError", "ResponseValidationError", "ValidationError"):
        rest = {k: v for k, v in schemas.items() if k != name}
        if f"#/components/schemas/{name}" not in json.dumps([document.get("paths"), rest]):
            schemas.pop(name, None)
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


def _document_request_rules(paths: dict[str, dict[str, Any]]) -> None:
    """What `admit` checks that Powertools does not document: a body is required where a route
    takes one, and the headers the routes read, with their patterns."""
    for path, operations in paths.items():
        for method, operation in operations.items():
            if "requestBody" in operation:
                operation["requestBody"]["required"] = (method, path, True) in {
                    (m, p, required) for m, p, _, required in BODY_ROUTES
                }
            headers = []
            if (method, path) == ("post", "/v1/jobs"):
                headers.append(
                    {
                        "name": "Idempotency-Key",
                        "in": "header",
                        "required": False,
                        "description": "a retry with the same key and body answers the first "
                        "try's job (docs/API.md)",
                        "schema": {"type": "string", "pattern": IDEMPOTENCY_KEY_PATTERN},
                    }
                )
            if method == "patch":
                headers.append(
                    {
                        "name": "If-Match",
                        "in": "header",
                        "required": False,
                        "description": "the ETag read; 412 when the job changed since",
                        "schema": {"type": "string", "pattern": IF_MATCH_PATTERN},
                    }
                )
            if headers:
                operation["parameters"] = [*operation.get("parameters", []), *headers]


def _document_text(document: dict[str, Any]) -> None:
    """Every string of a request body that no pattern, format or enum constrains yet gets the
    text pattern: `admit` refuses control and bidi characters in every string outside payloads
    (a payload's schema states no type, so nothing in it is touched)."""
    schemas: dict[str, Any] = document.get("components", {}).get("schemas", {})
    seen: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item)
            return
        if not isinstance(node, dict):
            return
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
            name = ref.rsplit("/", 1)[-1]
            if name not in seen and name in schemas:
                seen.add(name)
                walk(schemas[name])
        if node.get("type") == "string" and not node.keys() & {
            "pattern",
            "format",
            "enum",
            "const",
        }:
            node["pattern"] = TEXT_PATTERN
        for key, value in node.items():
            if key != "$ref":
                walk(value)

    for operations in document.get("paths", {}).values():
        for operation in operations.values():
            walk(operation.get("requestBody", {}))


def problem(
    status: int, title: str, detail: str | None, errors: list[dict[str, Any]] | None = None
) -> Response[Any]:
    body = Problem(title=title, status=status, detail=detail, errors=errors)
    return Response(
        status_code=status,
        content_type=PROBLEM_JSON,
        body=body.model_dump_json(exclude_none=True),
    )


@app.exception_handler(ApiError)  # type: ignore[untyped-decorator]
def _api_error(exc: ApiError) -> Response[Any]:
    return _problem_of(exc)


def _problem_of(exc: ApiError) -> Response[Any]:
    answer = problem(exc.status, exc.title, exc.detail, exc.errors)
    if isinstance(exc, TooManyRequestsError | RegionUnavailableError) and (
        exc.retry_after_sec is not None
    ):
        answer.headers["Retry-After"] = str(exc.retry_after_sec)
    return answer


@app.exception_handler(RequestUnsupportedContentType)  # type: ignore[untyped-decorator]
def _unsupported_content_type(exc: RequestUnsupportedContentType) -> Response[Any]:
    return problem(415, UnsupportedMediaTypeError.title, "send the body as application/json")


@app.exception_handler(RequestValidationError)  # type: ignore[untyped-decorator]
def _validation_error(exc: RequestValidationError) -> Response[Any]:
    """A query or path parameter Powertools refused (bodies were checked by `admit`)."""
    errors = model_errors(exc.errors())
    detail = "; ".join(f"{e['field']}: {e['message']}" for e in errors)
    return problem(400, "Invalid request", detail, errors)


@app.not_found
def _not_found(exc: RouteNotFoundError) -> Response[Any]:
    """No route for this method and path: 405 with `Allow` when the path has routes for other
    methods (OPTIONS: 204 with `Allow`), else 404."""
    path = app.current_event.path
    allowed = methods_of(path)
    if not allowed:
        return problem(404, "Not Found", f"no route for {path}")
    allow = ", ".join(allowed)
    if app.current_event.http_method.upper() == "OPTIONS":
        return Response(status_code=204, body="", headers={"Allow": allow})
    answer = problem(405, "Method Not Allowed", f"{path} takes {allow}")
    answer.headers["Allow"] = allow
    return answer


@functools.cache
def _route_patterns() -> tuple[tuple[re.Pattern[str], tuple[str, ...]], ...]:
    """Each documented path as a pattern, with the methods it takes (from the OpenAPI
    document, so the answer follows the routes)."""
    paths: dict[str, dict[str, Any]] = json.loads(openapi_json())["paths"]
    found = [
        (path_pattern(path), tuple(sorted(method.upper() for method in operations)))
        for path, operations in paths.items()
    ]
    found.append((re.compile("^/v1/openapi\\.json$"), ("GET",)))
    return tuple(found)


def methods_of(path: str) -> tuple[str, ...]:
    """The methods the API takes on `path` (none: no such path)."""
    for pattern, methods in _route_patterns():
        if pattern.match(path):
            return methods
    return ()


@app.exception_handler(Exception)  # type: ignore[untyped-decorator]
def _unexpected(exc: Exception) -> Response[Any]:
    logger.exception("unhandled error")
    return problem(500, "Internal Server Error", "an unexpected error occurred")


# The routes that take a body: (method, path as documented, model, whether a body is required).
# `admit` validates the body before Powertools does; a test checks that every documented body
# is here.
BODY_ROUTES: tuple[tuple[str, str, type[BaseModel], bool], ...] = (
    ("post", "/v1/jobs", JobCreate, True),
    ("patch", "/v1/jobs/{job_id}", JobPatch, True),
    ("post", "/v1/executions/{execution_id}/retry", RerunIn, False),
    ("post", "/v1/jobs/{job_id}/executions/retry", BulkRerunIn, False),
    ("post", "/v1/webhook-keys/rotate", RotateIn, False),
    ("post", "/v1/jobs/{job_id}/backfill", BackfillIn, True),
    ("post", "/v1/calendars", CalendarCreate, True),
    ("put", "/v1/calendars/{name}", CalendarBody, True),
)


def path_pattern(documented: str) -> re.Pattern[str]:
    """A documented path (`/v1/jobs/{job_id}`) as a pattern of request paths."""
    return re.compile("^" + re.sub(r"\\{[^/]+?\\}", "[^/]+", re.escape(documented)) + "/?$")


_BODY_PATTERNS = tuple(
    (method.upper(), path_pattern(path), model, required)
    for method, path, model, required in BODY_ROUTES
)


def body_model(method: str, path: str) -> tuple[type[BaseModel], bool] | None:
    """The body model of a request's route, and whether the body is required."""
    for route_method, pattern, model, required in _BODY_PATTERNS:
        if method.upper() == route_method and pattern.match(path):
            return model, required
    return None


def admit(event: dict[str, Any], api: Api) -> dict[str, Any] | None:
    """The refusal of a request that must not reach its route, as the answer API Gateway
    sends, or None to let it through (`takt.api.admission` says in which order it checks)."""
    request = APIGatewayProxyEventV2(event)
    headers = request.headers or {}
    try:
        identity = identity_of(request, api.identity)
        caller = authorize(identity, request.http_method, headers)
        audit(caller, request.http_method)
        take_request_token(api, caller)
        check_headers(headers)
        route = body_model(request.http_method, request.path)
        body = body_text(request.body, bool(request.is_base64_encoded))
        if route is not None and (body or route[1]):
            check_body(headers, body, route[0], optional=not route[1])
        else:
            check_body(headers, body, None)
    except ApiError as refused:
        answer = _problem_of(refused)
        return {
            "statusCode": answer.status_code,
            "headers": {"Content-Type": PROBLEM_JSON, **answer.headers},
            "body": answer.body,
            "isBase64Encoded": False,
        }
    return None


def handle(event: dict[str, Any], context: LambdaContext, api: Api) -> dict[str, Any]:
    """Answer one API Gateway event with `api`: `admit`, then the route (which finds `api` in
    the resolver's context, cleared when the request is answered)."""
    refused = admit(event, api)
    if refused is not None:
        return refused
    app.append_context(api=api)  # type: ignore[no-untyped-call]
    return app.resolve(_media_type_lowered(event), context)


def _media_type_lowered(event: dict[str, Any]) -> dict[str, Any]:
    """`event` with its Content-Type's media type in lower case. A media type is
    case-insensitive (RFC 9110 8.3.1), and `admit` admitted `APPLICATION/JSON` as JSON; the
    resolver compares it with `application/json` as written and would answer 415."""
    headers = event.get("headers") or {}
    content_type = headers.get("content-type")
    if content_type is None:
        return event
    media_type, sep, parameters = content_type.partition(";")
    lowered = media_type.strip().lower() + sep + parameters
    return {**event, "headers": {**headers, "content-type": lowered}}
