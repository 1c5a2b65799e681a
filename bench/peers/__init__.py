"""Peers: the schedulers kapstan is measured against, run on the same workloads in the same process tree.

- `karpenter`: Karpenter's own provisioning scheduler (sigs.k8s.io/karpenter), driven by the Go program in
  `bench/peers/karpenter/` on a JSON export of the snapshot (`export.py`).
- `upstream-capi`: the upstream Karpenter CAPI provider's choice: the same Karpenter scheduler fed the
  price of 0 that provider reports, then the name-first flavor among each claim's options.
- `cluster-autoscaler`: cluster-autoscaler's scale-up on Cluster API (one node group per flavor and zone,
  binpacking estimator, least-waste expander), reimplemented in `autoscaler.py`.

`python -m bench.peers` runs them beside kapstan and writes `bench/PEERS.md`.
"""
