"""The calibdash application served by uvicorn on a thread of the calling process."""

from __future__ import annotations

import shutil
import socket
import tempfile
import threading
import time
from pathlib import Path

import uvicorn

from app.config import Settings
from app.main import create_app
from app.services.context import Services

#: Loopback only: a notebook's dashboard is for the person running the notebook.
HOST = "127.0.0.1"
#: Seconds to wait for the server to answer, and for it to finish after a stop request.
START_TIMEOUT = 60.0
STOP_TIMEOUT = 15.0


class BackgroundServer:
    """One calibdash application (REST API and Dash UI), served on a background thread.

    Building it builds the application and opens its store, but binds no port and
    starts no thread, so data can be stored (and refused) before anything runs;
    :meth:`start` then serves it, :meth:`stop` ends it.

    Parameters
    ----------
    data_dir : Path or None
        The store; None: a new temporary folder, removed by :meth:`stop`.
    port : int or None
        The loopback port; None: a free one chosen by the system.
    """

    def __init__(self, data_dir: Path | None = None, port: int | None = None) -> None:
        self.temporary = data_dir is None
        self.data_dir = (Path(tempfile.mkdtemp(prefix="calibdash-")) if data_dir is None
                         else Path(data_dir))
        self.requested_port = port
        # no example, no UMAP warm-up (a minute of numba compilation): the notebook's
        # own data is the point, and the kernel's CPUs are the user's
        settings = Settings(data_dir=self.data_dir, host=HOST, load_example=False,
                            warm_up=False)
        self.application = create_app(settings)
        self.services: Services = self.application.state.services
        self.port: int | None = None
        self._listener: socket.socket | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>`` once started."""
        if self.port is None:
            raise RuntimeError("the server has not been started.")
        return f"http://{HOST}:{self.port}"

    def start(self) -> None:
        """Bind the port and serve until :meth:`stop`; returns once the server answers.

        Raises
        ------
        OSError
            The requested port is taken.
        RuntimeError
            The server did not start (its lifespan failed) within ``START_TIMEOUT``.
        """
        listener = _listen(self.requested_port or 0)
        self.port = int(listener.getsockname()[1])
        # log_config=None leaves the notebook's logging alone; no access log in the cell
        config = uvicorn.Config(self.application, log_config=None, log_level="warning",
                                access_log=False, lifespan="on",
                                timeout_graceful_shutdown=5)
        server = uvicorn.Server(config)
        # the listener is bound here, not by uvicorn, so no other process can take the
        # free port between choosing it and serving on it
        thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]},
                                  name=f"calibdash-server-{self.port}", daemon=True)
        self._listener, self._server, self._thread = listener, server, thread
        thread.start()
        deadline = time.monotonic() + START_TIMEOUT
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("the calibdash server did not start (see the log above).")
            time.sleep(0.02)

    def stop(self) -> None:
        """Shut the server down (requests in flight get 5 s) and remove a temporary store.

        Safe to call more than once, and on a server that was never started.
        """
        server, thread = self._server, self._thread
        if server is not None and thread is not None:
            server.should_exit = True
            thread.join(STOP_TIMEOUT)
            if thread.is_alive():
                server.force_exit = True
                thread.join(STOP_TIMEOUT)
        if self._listener is not None:
            self._listener.close()  # uvicorn closes it too; not when startup failed
        self._server = self._thread = self._listener = None
        if self.temporary:
            shutil.rmtree(self.data_dir, ignore_errors=True)


def _listen(port: int) -> socket.socket:
    """A listening loopback socket on ``port`` (0: a free one)."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        # as uvicorn itself binds: a port left in TIME_WAIT by a stopped server is reusable
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((HOST, port))
        listener.listen(2048)
    except OSError:
        listener.close()
        raise
    listener.setblocking(False)
    return listener
