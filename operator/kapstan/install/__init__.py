"""Helm-free install manifests, generated from Python data rather than copied YAML.

Today: the CRDs (``crds``), printed by ``kapstan render crds``. RBAC, the Deployment and the
ClusterResourceSet bundles belong here too.
"""
