"""``python -m rdpcalc``: the command line."""

from .cli import main

raise SystemExit(main())
