"""Metering: what a run's AWS calls would be billed, counted from the real boto3 calls.

`Meter` hooks botocore's events on the clients (`takt.aws.make_clients(..., meter=...)`), and the
local runtime times each handler invocation with it; `units` holds AWS's billing rules as pure
functions; `images` is where a write's before and after images come from.
"""

from takt_cli.metering.images import ItemImages, MotoImages
from takt_cli.metering.meter import EMPTY_RECEIVE, OUTSIDE, Invocations, Meter, Usage

__all__ = ["EMPTY_RECEIVE", "OUTSIDE", "Invocations", "ItemImages", "Meter", "MotoImages", "Usage"]
