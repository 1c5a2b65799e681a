"""Disruption: removing the nodes kapstan no longer needs (docs/architecture.md#data-flow, step 7).

``controller`` runs the loop along its seams: ``observe`` (what the cluster shows, per claim), ``expire``
(forceful and apart) and ``orchestrate`` (act on a decision, move recorded commands on), with ``writes``
the claim and Node writes they share. The decisions are pure and tested apart: ``candidates`` (which
nodes may go), ``budgets`` (how many, and when), ``consolidation`` (delete or replace, M → N, through
the solver), ``drift`` (drift and expiration) and ``command`` (what is recorded so a restart can finish).
"""

from kapstan.controllers.disruption.consolidation import MinSaving
from kapstan.controllers.disruption.controller import Disruption, DisruptionOptions

__all__ = ["Disruption", "DisruptionOptions", "MinSaving"]
