"""One error type for everything that can go wrong talking to an API server
(docs/architecture.md#typed-failures).

kr8s raises its own ``ServerError``, ``APITimeoutError`` and ``NotFoundError`` and lets httpx's transport
errors through; callers should not need to know which. ``ApiError`` carries the HTTP status and the
server's reason (``NotFound``, ``Conflict``, ``Expired``/``Gone``...) with the original error chained as
``__cause__``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import httpx
import kr8s


class ApiError(Exception):
    """A request to the API server failed; ``status`` is 0 when no HTTP answer arrived."""

    def __init__(
        self, message: str, *, status: int = 0, reason: str = "", invalid_object: bool = False
    ) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason
        # The API server answers 422 both when a JSON patch does not apply and when the patched object
        # fails validation; only the latter names the object (``details.kind``) and its fields.
        self.invalid_object = invalid_object

    @property
    def not_found(self) -> bool:
        return self.status == 404

    @property
    def conflict(self) -> bool:
        """Optimistic-lock failure or name taken: re-read and try again."""
        return self.status == 409

    @property
    def test_failed(self) -> bool:
        """A JSON patch's ``test`` did not hold (or it added under a missing member): the object changed
        in what the write depends on; read it again. Not an object the write made invalid: reading again
        would only repeat it."""
        return self.status == 422 and not self.invalid_object

    @property
    def transient(self) -> bool:
        """No answer at all (a server restarting or unreachable), load shed (429) or a server error: the
        same request may well work in a moment, whatever the object."""
        return self.status in (0, 429) or self.status >= 500

    @property
    def gone(self) -> bool:
        """The resourceVersion asked for is older than the server keeps: list again."""
        return self.status == 410


def from_status(what: str, status: dict[str, Any]) -> ApiError:
    """An ``ApiError`` from a ``Status`` object, as a watch stream sends in an ERROR event."""
    code = int(status.get("code") or 0)
    return ApiError(
        f"{what}: {status.get('message', 'unknown error')}",
        status=code,
        reason=status.get("reason", ""),
        invalid_object=_names_an_object(status),
    )


def _names_an_object(status: dict[str, Any]) -> bool:
    details = status.get("details")
    return isinstance(details, dict) and bool(details.get("kind") or details.get("causes"))


@contextlib.contextmanager
def translate(what: str) -> Iterator[None]:
    """Re-raise kr8s and httpx errors raised inside the block as ``ApiError("<what>: ...")``."""
    try:
        yield
    except kr8s.ServerError as error:
        status: dict[str, Any] = error.status if isinstance(error.status, dict) else {}
        code = error.response.status_code if error.response is not None else int(status.get("code") or 0)
        raise ApiError(
            f"{what}: {error}",
            status=code,
            reason=status.get("reason", ""),
            invalid_object=_names_an_object(status),
        ) from error
    except kr8s.NotFoundError as error:
        raise ApiError(f"{what}: {error}", status=404, reason="NotFound") from error
    except httpx.HTTPStatusError as error:
        raise ApiError(f"{what}: {error}", status=error.response.status_code) from error
    except (kr8s.APITimeoutError, httpx.HTTPError) as error:
        raise ApiError(f"{what}: {type(error).__name__}: {error}") from error
