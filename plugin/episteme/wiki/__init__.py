"""The wiki as files: which files are pages, their frontmatter, links and sections, the
schema, and the indexes.  Standard library plus PyYAML only; imports nothing else of episteme
except :mod:`episteme.errors` and :mod:`episteme.fsutil`."""
