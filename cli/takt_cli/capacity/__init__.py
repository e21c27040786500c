"""Capacity planning: list prices, the cost per million executions, and a discrete-event
simulator of the deployed design at the seed's scale."""
