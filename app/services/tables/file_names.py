"""Names of downloaded files, built from names users chose (dataset names, uploaded files).

A dataset can be called anything (``"Q3 \\"final\\"/v2\\r\\n.csv"``); the file it is
downloaded as keeps its letters and digits (in any script), ``-``, ``_`` and ``.``, with
every other run of characters made one ``_``, known table extensions dropped, and a
length cap, so the name is safe on every file system and in a header.
"""

from __future__ import annotations

import re
import unicodedata

#: Longest stem kept from a user's name (characters), before any suffix.
MAX_STEM_LENGTH = 60
_TABLE_EXTENSIONS = (".csv", ".tsv", ".txt", ".gz", ".parquet", ".pq")
_UNSAFE_RUN = re.compile(r"[^\w.-]+")
_UNDERSCORES = re.compile(r"_{2,}")


def file_stem(name: str, *, fallback: str, max_length: int = MAX_STEM_LENGTH) -> str:
    """``name`` reduced to a file-name stem, or ``fallback`` when nothing usable is left.

    Examples
    --------
    >>> file_stem("digits_svm.csv", fallback="dataset")
    'digits_svm'
    >>> file_stem('a "b"/c\\r\\n.csv.gz', fallback="dataset")
    'a_b_c'
    >>> file_stem("données 2024", fallback="dataset")
    'données_2024'
    """
    stem = unicodedata.normalize("NFC", name).strip()
    while stem.lower().endswith(_TABLE_EXTENSIONS):
        stem = stem[:stem.rfind(".")]
    # \w is Unicode-aware: letters and digits of any script stay; controls, quotes,
    # slashes, spaces and bidirectional marks do not.
    stem = _UNDERSCORES.sub("_", _UNSAFE_RUN.sub("_", stem)).strip("._-")
    stem = stem[:max_length].rstrip("._-")
    return stem or fallback
