"""Notifications when a job's runs go wrong: incidents opened once, closed by a success."""
