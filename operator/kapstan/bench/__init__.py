"""The scheduling benchmark's workloads and measurement, shipped with the package for `kapstan bench`.

``workloads`` and ``catalogs`` make seeded snapshots (Karpenter's benchmark mix, generic pods, preferences,
an OVH-like CAPI catalog, the article's experiments), ``measure`` times an engine on one and checks its
plan, ``bounds`` (with ``options``) proves a lower bound on any plan's cost with HiGHS (scipy: the
``kapstan[bench]`` extra). The repo's ``bench/`` builds the committed report, plots and peers on these.
"""
