"""Helm-free install manifests, generated from Python data rather than copied YAML.

``crds`` (the CRDs), ``rbac`` (both sides' permissions and the addon's), ``deployment`` (``kapstan run``),
``clusterclass`` and ``examples`` (the ClusterClass variable and patches), ``bundle`` (the workload-side
install and its ClusterResourceSet bundle) and ``addon`` (``kapstan addon``'s own install); all printed
by ``kapstan render``. ``docs/install.md`` tells the whole story.
"""
