"""The numeric core stays free of the web stack: calibcore imports no web or plotting library."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys

import calibcore

WEB_STACK = ("fastapi", "starlette", "dash", "plotly", "uvicorn", "flask")


def test_calibcore_imports_no_web_or_plotting_library() -> None:
    modules = [m.name for m in pkgutil.walk_packages(calibcore.__path__, "calibcore.")]
    code = (
        "import importlib, json, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    loaded = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True,
                                       text=True, check=True).stdout)
    offending = [m for m in loaded if m.split(".")[0] in WEB_STACK]
    assert offending == []
    assert len(modules) >= 8
