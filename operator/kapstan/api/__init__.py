"""Typed views of the Kubernetes, Karpenter and Cluster API objects kapstan reads from manifests."""

from kapstan.api.errors import ManifestError
from kapstan.api.manifests import Manifests, load_manifests, load_text
from kapstan.api.quantity import QuantityError, format_quantity, parse_quantity, to_milli

__all__ = [
    "ManifestError",
    "Manifests",
    "QuantityError",
    "format_quantity",
    "load_manifests",
    "load_text",
    "parse_quantity",
    "to_milli",
]
