"""Paper → wiki compilation: the write plan, the offline extractive writer, the Claude writer and
the batch write the Claude Code agent sends."""
