"""The flavor catalog: instance types read from managed MachineDeployments and ClusterClass worker classes."""

from kapstan.catalog.catalog import Catalog, Flavor, FlavorOffer, build_catalog, relative_price
from kapstan.catalog.nodeclass import NodeClassSettings, node_class_settings
from kapstan.catalog.sources import FlavorSource

__all__ = [
    "Catalog",
    "Flavor",
    "FlavorOffer",
    "FlavorSource",
    "NodeClassSettings",
    "build_catalog",
    "node_class_settings",
    "relative_price",
]
