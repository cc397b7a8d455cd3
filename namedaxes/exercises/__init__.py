"""One module per notebook: its exercises' checks, hints and observations."""
