"""The DynamoDB data-access layer: every table read and write goes through this package.

Every write that decides something (claim, create, lease, heartbeat, completion) is a single-item
conditional write, so DynamoDB, not the functions' beliefs, enforces the invariants.
"""
