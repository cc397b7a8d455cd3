"""IPython start-up file of the notebooks' kernels in `make test-newest` (its IPYTHONDIR): a deprecation that a
notebook's own code, or the course's package, sets off is an error there, so a notebook that uses an API the
newest JAX line deprecates fails its run (docs/maintainers.md). Run after IPython's own warning filters, so it
takes precedence over the kernel's "show deprecations of __main__" filter."""

import warnings

for _module in ("__main__", "namedaxes"):
    warnings.filterwarnings("error", category=DeprecationWarning, module=_module)
