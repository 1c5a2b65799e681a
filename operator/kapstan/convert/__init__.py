"""Karpenter v1alpha5 to v1: ``provisioner`` converts manifests, ``unserved`` finds what a live cluster holds."""
