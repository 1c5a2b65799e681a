"""``python -m kapstan``: the same command line as the ``kapstan`` script.

``python -m`` puts the current directory first on ``sys.path``. kapstan never imports from it, and a stray
module there named like one kapstan imports (a ``click.py``, a ``yaml.py``) would shadow the real one, so
that entry goes before anything else is imported (``python -P`` leaves it out in the first place). A stray
``kapstan/`` there is beyond this: it is what ``-m`` runs; the demo starts its operator with ``-P``.
"""

import os
import sys


def _run() -> None:
    if not sys.flags.safe_path and sys.path and sys.path[0] in ("", os.getcwd()):
        del sys.path[0]
    from kapstan.cli import main

    main()


_run()
