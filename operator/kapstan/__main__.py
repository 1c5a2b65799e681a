"""``python -m kapstan``: the same command line as the ``kapstan`` script."""

from kapstan.cli import main

main()
