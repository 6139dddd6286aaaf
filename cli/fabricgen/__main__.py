"""``python -m fabricgen``."""

from fabricgen.cli import main

main()
