"""Shared pytest set-up: 8 simulated devices before anything imports JAX's backend."""

from namedaxes import setup_devices

setup_devices(quiet=True)
