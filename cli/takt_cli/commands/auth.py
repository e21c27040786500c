"""How the CLI proves who it is to a deployed API, the way its CDK app set auth up.

IAM auth: every request is signed with SigV4 (service `execute-api`) with the caller's AWS
profile. JWT auth: a bearer token. `takt local` needs neither; an endpoint on this machine is
taken to be `takt local` unless told otherwise.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Protocol
from urllib.parse import urlsplit

from takt_cli.commands.errors import CliError

if TYPE_CHECKING:
    from botocore.credentials import Credentials

_EXECUTE_API_HOST = re.compile(r"\.execute-api\.(?P<region>[a-z0-9-]+)\.amazonaws\.com$")


class Authenticator(Protocol):
    """Adds whatever the API needs to trust a request to its headers."""

    def apply(
        self, method: str, url: str, body: bytes | None, headers: dict[str, str]
    ) -> dict[str, str]: ...


class NoAuth:
    """For `takt local`, which treats every caller as its one tenant."""

    def apply(
        self, method: str, url: str, body: bytes | None, headers: dict[str, str]
    ) -> dict[str, str]:
        return headers


@dataclass(frozen=True)
class BearerAuth:
    """A JWT for a deployment with a JWT authorizer."""

    token: str

    def apply(
        self, method: str, url: str, body: bytes | None, headers: dict[str, str]
    ) -> dict[str, str]:
        return {**headers, "Authorization": f"Bearer {self.token}"}


class SigV4Signer:
    """Signs every request with the caller's AWS credentials for API Gateway's IAM auth.

    The credentials are looked up on the first request, not when the CLI starts, so offline
    commands (`takt schedule`, `takt local`) never need a profile.
    """

    def __init__(self, endpoint: str, profile: str | None, region: str | None) -> None:
        self._endpoint = endpoint
        self._profile = profile
        self._region = region

    @cached_property
    def _signing(self) -> tuple[Credentials, str]:
        # Imported here: boto3 takes most of a second to import, which every command that does
        # not sign (and `takt --help`) would otherwise pay.
        import boto3  # noqa: PLC0415 - botocore costs most of a second; only signing pays it
        from botocore.exceptions import BotoCoreError  # noqa: PLC0415 - botocore costs most of a second; only signing pays it

        try:
            session = boto3.session.Session(profile_name=self._profile)
            credentials = session.get_credentials()
        except BotoCoreError as exc:
            raise CliError(f"cannot sign for {self._endpoint}: {exc}") from exc
        if credentials is None:
            raise CliError(
                f"no AWS credentials to sign requests to {self._endpoint}: set AWS_PROFILE or "
                "--profile, or pass --no-sigv4"
            )
        region = self._region or region_of(self._endpoint) or session.region_name
        if not region:
            raise CliError(f"cannot tell the region of {self._endpoint}: pass --region")
        return credentials, region

    def apply(
        self, method: str, url: str, body: bytes | None, headers: dict[str, str]
    ) -> dict[str, str]:
        from botocore.auth import SigV4Auth  # noqa: PLC0415 - botocore costs most of a second; only signing pays it
        from botocore.awsrequest import AWSRequest  # noqa: PLC0415 - botocore costs most of a second; only signing pays it

        credentials, region = self._signing
        request = AWSRequest(method=method, url=url, data=body or b"", headers=headers)
        SigV4Auth(credentials, "execute-api", region).add_auth(request)
        return dict(request.headers.items())


def region_of(endpoint: str) -> str | None:
    """The region in an API Gateway default endpoint (`<id>.execute-api.<region>.amazonaws.com`)."""
    match = _EXECUTE_API_HOST.search(urlsplit(endpoint).hostname or "")
    return match["region"] if match else None


def is_loopback(endpoint: str) -> bool:
    """Whether the endpoint is this machine, where `takt local` listens unauthenticated."""
    host = urlsplit(endpoint).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def authenticator(
    endpoint: str, *, sigv4: bool | None, profile: str | None, region: str | None, token: str | None
) -> Authenticator:
    """What `--token` and `--sigv4/--no-sigv4` ask for; without either, SigV4 for any endpoint
    that is not on this machine."""
    if token:
        return BearerAuth(token)
    if sigv4 or (sigv4 is None and not is_loopback(endpoint)):
        return SigV4Signer(endpoint, profile, region)
    return NoAuth()
