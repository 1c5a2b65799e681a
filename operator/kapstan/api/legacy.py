"""Karpenter's pre-v1 kinds, which kapstan does not serve, and the one way of saying so.

Karpenter's first API (``karpenter.sh/v1alpha5`` Provisioner and Machine, with provider settings in
``karpenter.k8s.aws/v1alpha1`` AWSNodeTemplate) is what older articles and clusters still hold. kapstan
reads ``karpenter.sh/v1`` only; rather than skip such an object as a kind it has no use for (a
Provisioner would then plan nothing without a word), every reader names it and points to
``kapstan convert``.
"""

from __future__ import annotations

LEGACY_GROUP = "karpenter.sh"
LEGACY_VERSION = "v1alpha5"
LEGACY_API_VERSION = f"{LEGACY_GROUP}/{LEGACY_VERSION}"
PROVIDER_API_VERSION = "karpenter.k8s.aws/v1alpha1"
"""Where the Provisioners' ``providerRef`` pointed: AWSNodeTemplate."""
LEGACY_KINDS = frozenset({(LEGACY_API_VERSION, "Provisioner"), (LEGACY_API_VERSION, "Machine")})


def is_legacy(api_version: str, kind: str) -> bool:
    """A kind of Karpenter's pre-v1 API that ``kapstan convert`` turns into v1 (or explains)."""
    return (api_version, kind) in LEGACY_KINDS or api_version == PROVIDER_API_VERSION


def not_served(kind: str, name: str, api_version: str, where: str = "", file: str = "FILE") -> str:
    """One line: what is not served (``where`` it was found), and the command that converts it."""
    at = f" ({where})" if where else ""
    return (
        f"{kind} {name}{at} is {api_version}, which kapstan does not serve (it reads karpenter.sh/v1 "
        f"NodePools): convert it with `kapstan convert -f {file}`"
    )
