"""Reading a paper's PDF: text with layout, headings, sections, tables/figures/footnotes as
objects, metadata, sentence passages, and page rendering with quote highlights.

Depends on pypdf (and pypdfium2 for rendering); nothing here knows about the wiki or the stores."""
