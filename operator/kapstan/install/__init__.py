"""Helm-free install manifests, generated from Python: CRDs here; RBAC, the Deployment and CRS bundles next.

``kapstan render ...`` prints them; a check in CI compares the committed copies with what is generated.
"""
