"""``explore``: the dashboard on a table, from a notebook or a script, with no server set-up.

Inline display is an IFrame of the real server rather than Dash's own jupyter mode:
Dash's jupyter mode (``app.run(jupyter_mode=...)``, ``dash.jupyter_dash.run_app``)
serves ``app.server`` with werkzeug's WSGI server, and calibdash's Dash runs on Dash's
FastAPI backend, where ``app.server`` is the ASGI FastAPI application (REST API, job
runner lifespan, security and compute-gate middleware) that a WSGI server cannot call.
Its inline mode shows ``IPython.display.IFrame(url, width, height)`` of that server;
``explore`` shows the same IFrame of the application uvicorn serves on a thread.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import sys
import threading
import warnings
import webbrowser
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pandas as pd
import pyarrow as pa

from app.services.datasets import DatasetService, RoleOverrides
from app.services.tables.limits import refuse_repeated
from calibcore.exceptions import CalibrationInputError
from calibdash.server import BackgroundServer

DisplayMode = Literal["auto", "inline", "tab", "external"]
#: Height in pixels of the inline IFrame (the Overview's header, measures and diagram).
INLINE_HEIGHT = 800
#: Name given to a DataFrame's dataset when none is given.
FRAME_NAME = "DataFrame"


@dataclass(frozen=True)
class Explorer:
    """A dataset shown by :func:`explore` on the background server.

    Attributes
    ----------
    url : str
        The Overview page of the dataset (``<server_url>/overview?dataset=<id>``).
    dataset_id : str
        The dataset's id in the REST API (``/api/v1/datasets/<id>/...``).
    server_url : str
        The server's root (``http://127.0.0.1:<port>``), shared by every explored dataset.
    """

    url: str
    dataset_id: str
    server_url: str
    _server: BackgroundServer = field(repr=False, compare=False)

    def stop(self) -> None:
        """Shut the server down (every explored dataset's page goes with it) and remove
        its temporary data folder; the next :func:`explore` starts a new one."""
        _SHARED.stop(self._server)


def explore(data: pd.DataFrame | str | os.PathLike[str], *, label: str | None = None,
            probabilities: str | Sequence[str] | None = None,
            features: str | Sequence[str] | None = None, split: str | None = None,
            name: str | None = None, mode: DisplayMode = "auto", port: int | None = None,
            data_dir: str | os.PathLike[str] | None = None,
            weight: str | Sequence[float] | None = None,
            negative_rate: float | None = None) -> Explorer:
    """Open the dashboard's Overview page on a prediction table.

    The first call starts the calibdash application (REST API and Dash UI) on a
    loopback port, served by uvicorn on a background thread of this process; later
    calls add their dataset to the same server. The data is stored as an upload's
    would be, its roles inferred unless given.

    Parameters
    ----------
    data : DataFrame, str or path
        The predictions: a DataFrame (its index is not kept) or a CSV/Parquet file.
    label, split : str, optional
        The label and split columns; inferred when not given.
    probabilities, features : str or sequence of str, optional
        The probability (or logit) columns and the feature columns; features default
        to every column without another role.
    name : str, optional
        The dataset's name in the dashboard (default: the file name, or "DataFrame").
    weight : str or sequence of float, optional
        Row weights (survey, importance or downsampling weights; non-negative): a
        column's name, or one weight per row of a DataFrame (kept as the column
        ``sample_weight``). A column named weight, weights, sample_weight or
        sample_weights is taken without asking.
    negative_rate : float, optional
        The fraction of negatives a sampled log kept: its negatives (binary labels)
        weigh 1 / negative_rate.
    mode : {"auto", "inline", "tab", "external"}
        ``"inline"``: an IFrame in the notebook's output cell; ``"tab"``: a browser
        tab; ``"external"``: only return the handle. ``"auto"``: inline in a Jupyter
        kernel, a tab elsewhere.
    port : int, optional
        Serve on this loopback port (default: a free one).
    data_dir : str or path, optional
        Keep the datasets here (default: a temporary folder, removed by ``stop()``).

    Returns
    -------
    Explorer
        ``url`` (the Overview page), ``dataset_id``, ``server_url`` and ``stop()``.

    Raises
    ------
    CalibrationInputError
        The table cannot be used (no label or probability column, probabilities
        outside [0, 1], repeated column names, ...); raised before a server starts.
    FileNotFoundError
        ``data`` names a file that does not exist.
    ValueError
        A server is already running on another port or data folder (stop it first).
    """
    show = _SHOW[_resolve(mode)]
    if not isinstance(data, pd.DataFrame):
        data = _existing_file(data)
    if weight is not None and not isinstance(weight, str):
        data, weight = _with_weights(data, weight)
    overrides = RoleOverrides(label=label, probabilities=_names(probabilities),
                              features=_names(features), split=split, weight=weight,
                              negative_rate=negative_rate)
    with _SHARED.lock:
        server = _SHARED.server_for(port, None if data_dir is None else Path(data_dir))
        try:
            summary = _store(server.services.datasets, data, overrides, name)
            if not server.running:
                server.start()
        except BaseException:
            if not server.running:
                _SHARED.stop(server)
            raise
    dataset_id = str(summary["id"])
    explorer = Explorer(url=f"{server.url}/overview?dataset={dataset_id}",
                        dataset_id=dataset_id, server_url=server.url, _server=server)
    show(explorer)
    return explorer


def _with_weights(data: pd.DataFrame | Path, weights: Sequence[float]
                  ) -> tuple[pd.DataFrame, str]:
    """A DataFrame with ``weights`` as its column ``sample_weight`` (the weight role)."""
    if not isinstance(data, pd.DataFrame):
        raise CalibrationInputError("weight= as numbers goes with a DataFrame; for a file, "
                                    "give the name of its weight column.")
    if "sample_weight" in data.columns:
        raise CalibrationInputError("the DataFrame has a column 'sample_weight' already: "
                                    "give weight='sample_weight' to use it.")
    if len(weights) != len(data):
        raise CalibrationInputError(f"weight= has {len(weights):,} values for "
                                    f"{len(data):,} rows: give one weight per row.")
    return data.assign(sample_weight=list(weights)), "sample_weight"


def _names(value: str | Sequence[str] | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    return (value,) if isinstance(value, str) else tuple(value)


def _existing_file(data: Any) -> Path:
    if not isinstance(data, str | os.PathLike):
        raise TypeError("data must be a pandas DataFrame or the path of a CSV or Parquet "
                        f"file; got {type(data).__name__}.")
    path = Path(data).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"no file at {str(path)!r}.")
    return path


def _store(datasets: DatasetService, data: pd.DataFrame | Path, overrides: RoleOverrides,
           name: str | None) -> dict[str, Any]:
    """Validate and store ``data`` as a dataset through the application's own service."""
    if isinstance(data, Path):
        return datasets.create_from_file(data, data.name, overrides, name=name)
    name = name or FRAME_NAME
    columns = [str(column) for column in data.columns]
    refuse_repeated(columns, name)
    if columns != list(data.columns):  # Parquet (the store) wants text column names
        data = data.set_axis(columns, axis=1)
    try:
        return datasets.create_from_frame(data, overrides, name, name)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
        # columns pandas holds as Python objects of mixed types: a file would have one type
        reasons = "; ".join(str(reason) for reason in exc.args)
        raise CalibrationInputError(
            f"{name!r} has a column of mixed types that cannot be stored ({reasons}); give "
            "it one type, e.g. frame[column].astype(str).", code="unstorable_column") from exc


class _SharedServer:
    """The process's one background server, started by the first :func:`explore`."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self._server: BackgroundServer | None = None

    def server_for(self, port: int | None, data_dir: Path | None) -> BackgroundServer:
        """The running server when it matches ``port`` and ``data_dir``, else a new one
        (built, not started)."""
        server = self._server
        if server is not None and not server.running:  # its thread ended on its own
            self.stop(server)
        elif server is not None:
            if (port is not None and port != server.port) or (
                    data_dir is not None and data_dir.resolve() != server.data_dir.resolve()):
                raise ValueError(
                    f"a calibdash server is already running at {server.url} with its data in "
                    f"{server.data_dir}; call stop() on an explore() result first to serve "
                    "on another port or data folder.")
            return server
        self._server = BackgroundServer(data_dir, port)
        return self._server

    def stop(self, server: BackgroundServer) -> None:
        """Stop ``server`` (started or not), remove its temporary store and forget it."""
        with self.lock:
            server.stop()
            if self._server is server:
                self._server = None

    def stop_all(self) -> None:
        with self.lock:
            if self._server is not None:
                self.stop(self._server)


_SHARED = _SharedServer()
# the server thread is a daemon: stop it, and remove its temporary store, at exit
atexit.register(_SHARED.stop_all)


def _in_notebook_kernel() -> bool:
    """Whether this code runs in a Jupyter kernel (IPython with a kernel attached)."""
    ipython = sys.modules.get("IPython")  # not imported: not a kernel
    if ipython is None:
        return False
    shell = ipython.get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def _resolve(mode: DisplayMode) -> str:
    """The mode "auto" stands for here; refuses what cannot be shown before anything runs."""
    if mode != "auto" and mode not in _SHOW:
        raise ValueError(f"mode must be 'auto', {', '.join(map(repr, _SHOW))}; got {mode!r}.")
    shown = mode if mode != "auto" else "inline" if _in_notebook_kernel() else "tab"
    if shown == "inline" and importlib.util.find_spec("IPython") is None:
        raise ModuleNotFoundError("mode='inline' shows the dashboard in a Jupyter output "
                                  "cell, which needs IPython (pip install ipykernel).")
    return shown


def _show_inline(explorer: Explorer) -> None:
    from IPython.display import IFrame, display  # imported here: the core install has no IPython

    display(IFrame(explorer.url, width="100%", height=INLINE_HEIGHT))


def _show_tab(explorer: Explorer) -> None:
    if not webbrowser.open(explorer.url, new=2):
        warnings.warn(f"no web browser could be opened; open {explorer.url}", UserWarning,
                      stacklevel=3)


def _show_nothing(explorer: Explorer) -> None:
    """``"external"``: the caller opens ``explorer.url`` where it likes."""


#: How each mode shows an explored dataset ("auto" resolves to inline or tab).
_SHOW: dict[str, Callable[[Explorer], None]] = {
    "inline": _show_inline,
    "tab": _show_tab,
    "external": _show_nothing,
}
