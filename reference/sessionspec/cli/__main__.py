"""`python -m sessionspec.cli ...`: the same as the `sessionspec` command."""

from sessionspec.cli import main

raise SystemExit(main())
