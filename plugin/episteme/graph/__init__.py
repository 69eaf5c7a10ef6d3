"""The wiki's link graph: link resolution (:mod:`.core`), the algorithms of ``episteme graph``
(:mod:`.algorithms`), the query language (:mod:`.querylang`) and the text/Mermaid renderings
(:mod:`.format`).  Standard library plus PyYAML; imports only :mod:`episteme.wiki` and
:mod:`episteme.errors` of episteme."""

from .algorithms import (
    cluster,
    degrees,
    hubs,
    neighbors,
    orphans,
    query,
    shortest_paths,
    stats,
    tag_matches,
)
from .core import STEPS, Ambiguity, Dangling, Resolution, WikiGraph

__all__ = [
    "STEPS", "Ambiguity", "Dangling", "Resolution", "WikiGraph", "cluster", "degrees", "hubs",
    "neighbors", "orphans", "query", "shortest_paths", "stats", "tag_matches",
]
