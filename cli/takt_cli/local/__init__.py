"""The local runtime: takt's real handlers on moto's server, driven like AWS would drive them."""
