"""The job API function: API Gateway HTTP API events to the takt API routes.

Every log line of a request that names a job or an execution in its path carries `job_id` and
`execution_id`, and each change (any method but GET) is logged once with its answer's status.
"""

from __future__ import annotations

import re
from typing import Any

from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from takt.api.app import handle
from takt.observability import log_keys, logger, tracer
from takt.wiring import services

_JOB = re.compile(r"^/v1/jobs/(?P<job>job_[^/]+)")
_EXECUTION = re.compile(r"^/v1/executions/(?P<execution>(?P<job>job_[^/.]+)\.[^/]+)")


def ids_in(path: str) -> dict[str, str | None]:
    """The job and execution ids a request path names (an execution id names its job)."""
    execution = _EXECUTION.match(path)
    if execution:
        return {"job_id": execution["job"], "execution_id": execution["execution"]}
    job = _JOB.match(path)
    return {"job_id": job["job"] if job else None, "execution_id": None}


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    method = event.get("requestContext", {}).get("http", {}).get("method", "")
    path = event.get("rawPath", "")
    with log_keys(**ids_in(path)):
        answer = handle(event, context, services().api)
        if method != "GET":
            logger.info("api change", method=method, path=path, status=answer.get("statusCode"))
        return answer
