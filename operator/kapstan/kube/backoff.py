"""Exponential backoff, shared by the informers' reconnects and the work queue's per-key retries."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Backoff:
    """``initial * factor**failures`` seconds, capped at ``maximum``; client-go's defaults for retries."""

    initial: float = 0.005
    maximum: float = 1000.0
    factor: float = 2.0

    def delay(self, failures: int) -> float:
        """The wait before retry number ``failures + 1`` (``failures`` already happened, 0 for the first)."""
        # Computing factor**failures for a large count would overflow long before it matters.
        if failures > 64:
            return self.maximum
        return float(min(self.maximum, self.initial * self.factor**failures))
