"""Helpers shared by the integration and end-to-end tests: a loopback HTTP receiver, fault
injection for the dispatch path, job builders, and the history checker that judges a run."""
