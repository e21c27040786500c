"""Priorities and fairness: dispatch shares between tenants, a cap on each tenant's running
executions, and per-host rate limits, all kept in the tenants table (docs/FAIRNESS.md)."""
