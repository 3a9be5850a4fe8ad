"""Folders of data files as Spark, Hive and Dask write them, read as one table.

A job that writes "a table" leaves a folder: ``part-00000-….parquet`` files, perhaps in
``key=value`` sub-folders (hive partitioning: ``date=2026-11-24/region=eu/part-0.parquet``),
beside bookkeeping that is not data: ``_SUCCESS``, ``_metadata``/``_common_metadata``,
Hadoop's ``.part-0.parquet.crc`` checksums, a ``_temporary/`` folder of unfinished work.

Every file under the folder is a candidate; those with a component (below the folder) that
starts with ``.`` or ``_`` are skipped, as ``pyarrow.dataset`` skips them, and of the rest
the Parquet (``.parquet``, ``.pq``, ``.parq``) or CSV (``.csv``) files are read. Parquet is
read by ``dask.dataframe.read_parquet`` with pyarrow's hive partitioning rooted at the
folder; CSV by ``dask.dataframe.read_csv``, with the partition values pyarrow parses from
the same folder names. Either way the ``key=value`` folders become ordinary columns, typed
as pyarrow infers them (numbers, else text; a ``date=2026-11-24`` folder gives text that
the time role reads as dates).

The files are listed here rather than by handing the folder to dask or pyarrow: dask also
takes ``key=value`` folders *above* the named one as columns and reads ``_temporary/``,
and pyarrow opens the first file it finds to learn the schema, so one stray ``notes.txt``
would fail the whole read.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, Literal

import pandas as pd

from calibcore.exceptions import CalibrationInputError

if TYPE_CHECKING:
    import dask.dataframe as dd
    from fsspec import AbstractFileSystem

FileKind = Literal["parquet", "csv"]

#: What a data file's name ends with, by kind (as dask's own Parquet reader filters).
SUFFIXES: dict[FileKind, tuple[str, ...]] = {"parquet": (".parquet", ".pq", ".parq"),
                                             "csv": (".csv",)}
#: Name starts of files and folders that are never data (pyarrow.dataset's own rule).
IGNORED_PREFIXES = (".", "_")
#: Checksum files (Hadoop writes them dot-prefixed, some tools without the dot).
IGNORED_SUFFIXES = (".crc",)
#: File names shown at most when a folder holds no data file.
_SHOWN_NAMES = 8
#: The column that says which file a CSV row came from, while partition values are added.
_PATH_COLUMN = "__calibdash_source_file__"


@dataclass(frozen=True)
class LakeFiles:
    """The data files of a folder.

    Attributes
    ----------
    root : str
        The folder, as its file system names it (without a ``scheme://``).
    files : tuple of str
        The data files under it, in natural order (``part-2`` before ``part-10``).
    kind : {"parquet", "csv"}
        What they hold.
    partitioned : bool
        Whether some of them lie in ``key=value`` folders (hive partitioning).
    """

    root: str
    files: tuple[str, ...]
    kind: FileKind
    partitioned: bool


def is_directory(uri: str) -> bool:
    """Whether ``uri`` (a path or fsspec URL; globs are not folders) names a folder.

    >>> import tempfile
    >>> is_directory(tempfile.gettempdir()), is_directory("/no/such/folder/*.parquet")
    (True, False)
    """
    from fsspec.core import url_to_fs

    fs, path = url_to_fs(uri)
    return bool(fs.isdir(path))


def lake_files(uri: str) -> LakeFiles:
    """The Parquet or CSV files under the folder ``uri``, its sub-folders included.

    Raises
    ------
    CalibrationInputError
        When the folder holds no data file (the message names what it does hold), or
        holds both Parquet and CSV files.
    """
    fs, root = _file_system(uri)
    found = sorted(fs.find(root, withdirs=False), key=_natural)
    relative = {path: PurePosixPath(path).relative_to(root) for path in found}
    candidates = [path for path in found if not _bookkeeping(relative[path])]
    by_kind = {kind: tuple(path for path in candidates
                           if path.lower().endswith(suffixes))
               for kind, suffixes in SUFFIXES.items()}
    present = [kind for kind, files in by_kind.items() if files]
    if not present:
        names = [str(relative[path]) for path in found]
        shown = ", ".join(names[:_SHOWN_NAMES]) + (", …" if len(names) > _SHOWN_NAMES else "")
        what = (f"found {shown} ({len(names):,} file{'s' if len(names) != 1 else ''})"
                if names else "it is empty")
        raise CalibrationInputError(
            f"no Parquet or CSV files in {uri}: {what}. Data files end with "
            f"{', '.join(SUFFIXES['parquet'] + SUFFIXES['csv'])}; names starting with "
            "'.' or '_' are skipped.", code="no_files")
    if len(present) > 1:
        raise CalibrationInputError(
            f"{uri} holds both Parquet ({len(by_kind['parquet']):,}) and CSV "
            f"({len(by_kind['csv']):,}) files; name one kind with a glob, e.g. "
            f"{uri.rstrip('/')}/*.parquet.", code="mixed_files")
    (kind,) = present
    files = by_kind[kind]
    partitioned = any("=" in part for path in files for part in relative[path].parts[:-1])
    return LakeFiles(root, files, kind, partitioned)


def read_lake(uri: str) -> dd.DataFrame:
    """The data files under the folder ``uri`` as one Dask frame, with a column for
    each ``key=value`` folder level (categorical from Parquet, as dask reads partition
    values; :func:`app.services.partitioned_files.read_partitioned` makes them plain)."""
    import dask.dataframe as dd

    lake = lake_files(uri)
    fs, _ = _file_system(uri)
    # the listing drops the scheme, which dask needs back to reach a remote file system
    paths = [fs.unstrip_protocol(path) if "://" in uri else path for path in lake.files]
    if lake.kind == "parquet":
        return dd.read_parquet(paths, dataset={"partitioning": "hive",
                                               "partition_base_dir": lake.root})
    if not lake.partitioned:
        return dd.read_csv(paths)
    keys, meta = _csv_partition_keys(fs, lake)
    frame = dd.read_csv(paths, include_path_column=_PATH_COLUMN)
    return frame.map_partitions(_with_partition_keys, keys, meta,
                                meta=_with_partition_keys(frame._meta, {}, meta))


def _file_system(uri: str) -> tuple[AbstractFileSystem, str]:
    from fsspec.core import url_to_fs

    fs, path = url_to_fs(uri)
    return fs, str(path).rstrip("/") or "/"


def _bookkeeping(relative: PurePosixPath) -> bool:
    """A file that is never data: under (or named) ``.x``/``_x``, or a checksum."""
    return (any(part.startswith(IGNORED_PREFIXES) for part in relative.parts)
            or relative.name.lower().endswith(IGNORED_SUFFIXES))


def _natural(path: str) -> Any:
    from dask.utils import natural_sort_key

    return natural_sort_key(path)


def _csv_partition_keys(fs: AbstractFileSystem,
                        lake: LakeFiles) -> tuple[dict[str, dict[str, Any]], pd.DataFrame]:
    """Each CSV file's partition values, and an empty frame of their columns and types,
    both as pyarrow's hive partitioning reads the folder names (it reads the first file's
    header to build the dataset, nothing more)."""
    import pyarrow as pa
    import pyarrow.dataset as pa_ds

    dataset = pa_ds.dataset(list(lake.files), filesystem=fs, format="csv",
                            partitioning="hive", partition_base_dir=lake.root)
    keys = {fragment.path: pa_ds.get_partition_keys(fragment.partition_expression)
            for fragment in dataset.get_fragments()}
    named = {name for values in keys.values() for name in values}
    schema = pa.schema([field for field in dataset.schema if field.name in named])
    return keys, schema.empty_table().to_pandas()


def _with_partition_keys(part: pd.DataFrame, keys: dict[str, dict[str, Any]],
                         meta: pd.DataFrame) -> pd.DataFrame:
    """``part`` with a column per partition key (``meta``'s), from its source file."""
    sources = part[_PATH_COLUMN].astype(object)
    columns = {name: sources.map({path: values.get(name) for path, values in keys.items()})
               .astype(meta[name].dtype) for name in meta.columns}
    return part.drop(columns=_PATH_COLUMN).assign(**columns)


__all__ = ["IGNORED_PREFIXES", "IGNORED_SUFFIXES", "SUFFIXES", "LakeFiles", "is_directory",
           "lake_files", "read_lake"]
