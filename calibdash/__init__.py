"""calibdash from Python: :func:`explore` opens the dashboard on a table, inline in
Jupyter or in a browser tab, with no server set-up."""

from calibdash.explorer import Explorer, explore

__all__ = ["Explorer", "explore"]
