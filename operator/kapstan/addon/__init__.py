"""``kapstan addon``: the management-side controller that turns kapstan on and off per Cluster.

See ``kapstan.addon.controller`` for what one reconcile does, and ``kapstan.install.addon`` for how the
addon itself is installed.
"""

from kapstan.addon.controller import Addon, AddonOptions

__all__ = ["Addon", "AddonOptions"]
