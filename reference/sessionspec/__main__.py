"""`python -m sessionspec ...`: the same as the `sessionspec` command."""

from sessionspec.cli import main

raise SystemExit(main())
