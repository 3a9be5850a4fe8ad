"""Reading uploaded tables (CSV, gzip CSV, Parquet) and writing exports safely.

Uploads are hostile until read: the header is checked by hand before pandas sees the
file (pandas renames repeated names in quadratic time), decompressed bytes, rows and
columns are counted while the file streams (a 300 KiB gzip can hold 3 GB), parsing
stops when the server does, and every decoding failure becomes a
:class:`~calibcore.exceptions.CalibrationInputError` that names the uploaded file, never
the server's temporary path.
"""

from app.services.tables.export import (
    ExportFormat,
    escape_formulas,
    export_bytes,
    export_chunks,
    ordinary_pages_for_arrays,
    release_memory,
    share_one_heap,
)
from app.services.tables.file_names import file_stem
from app.services.tables.limits import DEFAULT_LIMITS, TableLimits
from app.services.tables.reading import LoadedTable, load_table, read_table

__all__ = ["DEFAULT_LIMITS", "ExportFormat", "LoadedTable", "TableLimits", "escape_formulas",
           "export_bytes", "export_chunks", "file_stem", "load_table",
           "ordinary_pages_for_arrays", "read_table", "release_memory", "share_one_heap"]
