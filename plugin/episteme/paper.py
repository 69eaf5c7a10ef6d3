"""One section of a paper: the one type the splitter makes, the store writes and reads back, and
the wiki writer compiles from.

Why here, at the top level: ``pdf`` (which cuts sections out of a PDF) and ``stores`` (which
keeps them in SQLite) are independent layers, and ``compile`` sits above both; a type all three
share has to live below them.  Standard library only.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any


@dataclass
class PaperSection:
    """A logical section of a paper.

    The splitter fills the text fields (``number`` is ``""`` when unnumbered) and
    ``page_breaks``; ingest gives the section its store ``id`` (``paper.pdf#3.2``), its ``ord``
    in the paper, ``number`` ``None`` when unnumbered, and its ``passages`` (the store's
    ``PassageRow`` windows); a section read back from the store has no ``page_breaks``."""

    number: str | None
    title: str
    level: int
    kind: str  # front | abstract | body | references | appendix | table | figure | ...
    page_start: int
    page_end: int
    text: str
    page_breaks: list[tuple[int, int]] = field(default_factory=list)  # (char offset, page)
    id: str = ""
    ord: int = 0
    passages: list[Any] = field(default_factory=list)

    def page_at(self, offset: int) -> int:
        """The 1-based page on which character ``offset`` of :attr:`text` is printed."""
        if not self.page_breaks:
            return self.page_start
        starts = [o for o, _ in self.page_breaks]
        i = bisect.bisect_right(starts, max(offset, 0)) - 1
        return self.page_breaks[max(i, 0)][1]

    @property
    def section_title(self) -> str:
        """``3.2 Packing Windows`` (the store's ``section_title`` column; what sources show)."""
        return f"{self.number} {self.title}".strip() if self.number else self.title

    @property
    def label(self) -> str:
        """``§3.2.2 Multi-Head Attention`` (or just the title when unnumbered)."""
        return f"§{self.number} {self.title}" if self.number else self.title

    @property
    def pages_label(self) -> str:
        """``p. 4`` or ``pp. 4–5``."""
        if self.page_start == self.page_end:
            return f"p. {self.page_start}"
        return f"pp. {self.page_start}–{self.page_end}"
