"""Mutation testing as evidence (issue 14): `make mutants` breaks each rule on purpose and shows
which test notices. The list is `mutations.py`, the runner `__main__.py`."""
