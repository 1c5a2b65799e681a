"""The only code in kapstan that talks to a Kubernetes API server (docs/architecture.md#layers).

kr8s gives us authentication and an HTTP session; what a controller needs on top of it is here: one client
per cluster (``client``), caches kept current by list-then-watch (``informer``, ``store``), a work queue
with per-key retries (``workqueue``), the worker loop that drains it into a reconcile (``controller``),
leader election on a Lease (``leader``), and one error type (``errors``). Time is injected (``clock``) so that backoffs and lease expiry are tested without sleeping.
"""
