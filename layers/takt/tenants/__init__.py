"""Per-tenant limits on the job API: jobs stored, creation rate, payload size (docs/SECURITY.md)."""

from takt.tenants.limits import (
    JobLimitError,
    RateLimitedError,
    Recount,
    RecountError,
    TenantLimiter,
)

__all__ = ["JobLimitError", "RateLimitedError", "Recount", "RecountError", "TenantLimiter"]
