"""Subcommands of `sessionspec`, one module each (see `sessionspec.cli`)."""
