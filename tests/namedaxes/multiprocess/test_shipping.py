"""namedaxes.multiprocess.shipping: how a job travels to the workers (by reference, or as source)."""

import multiprocess_jobs as jobs
import numpy as np
import pytest
from multiprocess_jobs import as_notebook_function, on_devices, process_view, scaled_total, uses_table

from namedaxes import multiprocess as mp


def test_notebook_functions_travel_as_source(cluster):
    job, fn = as_notebook_function(on_devices), as_notebook_function(scaled_total)
    shipped = mp.ship(fn)
    assert shipped.module is None
    assert "def scaled_total(x):" in shipped.source
    assert "SCALE = 3.0" in shipped.source and "DEVICES = 'devices'" in shipped.source
    assert "import jax.lax as lax" in shipped.source
    x = np.arange(8.0, dtype=np.float32)
    np.testing.assert_allclose(np.concatenate(cluster.run(job, fn, x)), np.full(8, 3.0 * 28.0))


def test_notebook_function_brings_the_notebook_functions_it_calls(cluster):
    def outer(x):
        return scaled_total(x) + 1

    # `scaled_total` importable: travels as an import; defined in the notebook: as source
    assert f"from {jobs.__name__} import scaled_total" in mp.ship(as_notebook_function(outer)).source
    notebook_outer = as_notebook_function(outer, scaled_total=as_notebook_function(scaled_total))
    shipped = mp.ship(notebook_outer)
    assert shipped.source.index("def scaled_total(x):") < shipped.source.index("def outer(x):")
    x = np.arange(8.0, dtype=np.float32)
    np.testing.assert_allclose(np.concatenate(cluster.run(on_devices, notebook_outer, x)), np.full(8, 85.0))


def test_importable_functions_travel_by_reference():
    assert mp.ship(process_view) == mp.Shipped(name="process_view", module=jobs.__name__)
    assert mp.ship(np.sum).module == "numpy"


def test_what_cannot_be_shipped_is_refused_with_a_reason():
    with pytest.raises(mp.ShipError, match="lambda"):
        mp.ship(as_notebook_function(lambda x: x))
    with pytest.raises(mp.ShipError, match="`TABLE`.*ndarray.*pass it as an argument"):
        mp.ship(as_notebook_function(uses_table))

    def make():
        y = 2

        def inner(x):
            return x * y

        return inner

    with pytest.raises(mp.ShipError, match="enclosing function"):
        mp.ship(make())
