"""The job API: an HTTP API (API Gateway v2) in front of `functions/api`.

HTTP API rather than REST API: about a third of the price per request, lower latency, and native
IAM (SigV4) and JWT authorizers, which are the two ways takt authenticates. What it lacks (request
validation, WAF, usage plans) we do not rely on: the handler validates every request with pydantic
and answers problem+json, and tenants come from the caller's identity.
"""

from __future__ import annotations

import json

import jsii
from aws_cdk import aws_apigateway as apigateway
from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_apigatewayv2_authorizers as authorizers
from aws_cdk import aws_apigatewayv2_integrations as integrations
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra.context import DeployConfig

# One JSON object per request; the caller fields tell IAM callers (account, ARN) and JWT callers
# (subject) apart, and a field that does not apply is logged as "-".
ACCESS_LOG_FIELDS = {
    "requestId": "$context.requestId",
    "requestTime": "$context.requestTime",
    "ip": "$context.identity.sourceIp",
    "httpMethod": "$context.httpMethod",
    "routeKey": "$context.routeKey",
    "path": "$context.path",
    "status": "$context.status",
    "protocol": "$context.protocol",
    "responseLength": "$context.responseLength",
    "responseLatency": "$context.responseLatency",
    "integrationLatency": "$context.integrationLatency",
    "integrationError": "$context.integrationErrorMessage",
    "authorizerError": "$context.authorizer.error",
    "callerAccount": "$context.identity.accountId",
    "callerArn": "$context.identity.userArn",
    "jwtSubject": "$context.authorizer.claims.sub",
}


@jsii.implements(apigwv2.IAccessLogSettings)
class _AccessLogSettings:
    """The stage's access log settings; jsii needs a class where TypeScript takes an object."""

    def __init__(self, log_group: logs.ILogGroup) -> None:
        self._destination = apigwv2.LogGroupLogDestination(log_group)

    @property
    def destination(self) -> apigwv2.IAccessLogDestination:
        return self._destination

    @property
    def format(self) -> apigateway.AccessLogFormat:
        return apigateway.AccessLogFormat.custom(json.dumps(ACCESS_LOG_FIELDS))


class JobApi(Construct):
    """`ANY /` and `ANY /{proxy+}` to the API function, authorized by IAM or by JWT.

    The handler routes requests itself (Powertools' resolver), so API Gateway only authenticates,
    throttles and logs. The stage is declared explicitly because HttpApi's automatic default stage
    takes neither throttling nor access logs.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        handler: lambda_.IFunction,
        config: DeployConfig,
    ) -> None:
        super().__init__(scope, construct_id)
        authorizer: apigwv2.IHttpRouteAuthorizer
        if config.jwt is not None:
            authorizer = authorizers.HttpJwtAuthorizer(
                "Jwt", config.jwt.issuer, jwt_audience=list(config.jwt.audience)
            )
        else:
            authorizer = authorizers.HttpIamAuthorizer()
        self.http_api = apigwv2.HttpApi(
            self,
            "HttpApi",
            description="takt job API",
            create_default_stage=False,
            default_authorizer=authorizer,
        )
        integration = integrations.HttpLambdaIntegration(
            "Handler", handler, payload_format_version=apigwv2.PayloadFormatVersion.VERSION_2_0
        )
        for path in ("/", "/{proxy+}"):
            self.http_api.add_routes(
                path=path, methods=[apigwv2.HttpMethod.ANY], integration=integration
            )
        access_logs = logs.LogGroup(self, "AccessLogs", retention=logs.RetentionDays.ONE_MONTH)
        self.stage = apigwv2.HttpStage(
            self,
            "DefaultStage",
            http_api=self.http_api,
            stage_name="$default",
            auto_deploy=True,
            throttle=apigwv2.ThrottleSettings(
                rate_limit=config.api_rate_limit, burst_limit=config.api_burst_limit
            ),
            access_log_settings=_AccessLogSettings(access_logs),
        )
