"""Running notebooks: the worker pool, the workers, one kernel cell by cell, and the reference runs' cache."""
