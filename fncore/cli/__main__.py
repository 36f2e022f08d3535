"""``python -m fncore.cli``."""

from fncore.cli import main

raise SystemExit(main())
