"""kapstan: a node autoscaler for Cluster API that speaks Karpenter's API."""

__version__ = "0.1.0"
