"""What kapstan tells the people running it: Prometheus metrics (``metrics``), the HTTP endpoint that
serves them with the health and readiness probes (``server``), and structured log lines (``logging``).

Events on Kubernetes objects are written through the API and so live in ``kapstan.kube.events``.
"""
