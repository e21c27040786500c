"""The clients `takt.aws.make_clients` builds: what each checks before a request leaves."""

from __future__ import annotations

import pytest
from botocore.exceptions import ParamValidationError
from botocore.stub import Stubber

from takt.aws import make_clients
from takt.config import Settings

# Nothing listens here: a request that gets past botocore's checks is answered by a Stubber.
SETTINGS = Settings(aws_endpoint_url="http://127.0.0.1:9")


def test_the_dynamodb_client_sends_without_botocores_parameter_validation() -> None:
    """The claimer's CPU per item is its calls' CPU, and validation is about a seventh of it
    (docs/CAPACITY.md, "The claimer's CPU per item"): the stores' typed requests skip it."""
    dynamodb = make_clients(SETTINGS).dynamodb

    with Stubber(dynamodb) as stub:
        stub.add_response("query", {})
        try:
            dynamodb.query(TableName="t", Limit="not a number")  # type: ignore[arg-type]
        except ParamValidationError:
            pytest.fail(
                "claimer CPU per item: the DynamoDB client validated a request's parameters "
                "(botocore's parameter validation should be off for it)"
            )


def test_the_other_clients_keep_botocores_parameter_validation() -> None:
    """SQS, SNS and EventBridge carry the targets' requests, built from a job's definition:
    botocore still checks them before they leave."""
    sqs = make_clients(SETTINGS).sqs

    with Stubber(sqs) as stub:
        stub.add_response("send_message", {})
        with pytest.raises(ParamValidationError):
            sqs.send_message(QueueUrl="q", MessageBody=7)  # type: ignore[arg-type]
