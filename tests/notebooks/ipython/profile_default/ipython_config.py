# The test kernels' IPython profile (tests/notebooks/ipython: make test-newest's IPYTHONDIR): history in
# memory, so that concurrent kernels write no database into the checkout.
c = get_config()  # noqa: F821
c.HistoryManager.hist_file = ":memory:"
