"""namedaxes.multiprocess.processes: free ports."""

import socket

from namedaxes import multiprocess as mp


def test_free_port_is_bindable_and_not_in_use():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = mp.free_port()
        assert port != busy.getsockname()[1]
    assert 1024 <= port <= 65535
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))  # raises if something holds it
