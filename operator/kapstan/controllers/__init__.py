"""The controllers ``kapstan run`` runs (``manager``): provisioning, the NodeClaim lifecycle, disruption,
template taints and status.

A regular package, not a namespace one, so that import-linter sees these modules: its contracts name
``kapstan.controllers``, and a namespace package would leave them out of the graph without a word.
"""
