"""The pieces of the cluster-autoscaler peer, one module a part of CA's scale-up: node groups, the simulated
cluster, the predicates, the estimator. `bench/peers/autoscaler.py` runs CA's loop over them and says which
upstream files each follows."""
