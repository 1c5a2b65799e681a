"""``python -m bench.live``: kapstan's live loop on the sandbox at fleet scale (issue 14).

The solver's own speed is measured by ``bench.run``; this measures everything around it on a real API
server, Cluster API and our test provider: how long N pods take from apply to Running, how many nodes and
at what price against ``kapstan simulate`` of the same manifests, how kapstan talks to the API server (an
audit log limited to its identity), what the operator costs, and whether consolidation after a scale-down
converges. Results accumulate in ``bench/live_results.json`` (one entry per ``--label``) and are rendered
into ``bench/LIVE.md``.
"""
