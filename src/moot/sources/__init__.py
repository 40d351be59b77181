"""Sources: the files a deliberation is grounded in (``--source``), their full-text index, and citation checks.

Reading files lives here, outside ``moot.protocols``; the protocols get the results as data
(:class:`moot.core.grounding.CitationCheck`).
"""

from moot.sources.collect import MAX_FILE_BYTES, MAX_FILES, MAX_TOTAL_BYTES, SourceFile, SourceSet, collect_sources
from moot.sources.index import Passage, SourceIndex
from moot.sources.verify import check_citation, find_excerpt, parse_locator

__all__ = [
    "MAX_FILES",
    "MAX_FILE_BYTES",
    "MAX_TOTAL_BYTES",
    "Passage",
    "SourceFile",
    "SourceIndex",
    "SourceSet",
    "check_citation",
    "collect_sources",
    "find_excerpt",
    "parse_locator",
]
