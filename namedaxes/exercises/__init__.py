"""One module per notebook, or a package per notebook whose checks outgrow one file (its sentences in
`text.py`, how its answers run in `running.py`, one module per exercise): its exercises' checks, hints and
observations."""
