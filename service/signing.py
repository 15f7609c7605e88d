"""Tamper protection for states handed to callers (stateless API).

With a secret configured, every returned state carries ``state_signature``: an
itsdangerous HMAC-SHA256 signature over the state's canonical JSON encoding (the
engine's own encoding of the decoded state, so key order on the wire does not
matter). A state sent back without it, or with a wrong one, is refused.
"""

from __future__ import annotations

import hashlib
import hmac
import logging

from itsdangerous import Signer

from engine import GameState, dumps_state

from .errors import ServiceError

log = logging.getLogger("ono99.signing")


def warn_unsigned_states() -> None:
    """Say once, at start, that states are not signed (ONO99_STATE_SECRET unset)."""
    log.warning("ONO99_STATE_SECRET is not set: stateless endpoints accept any consistent state, "
                "so callers can hand in states they made up (see docs/API.md, state signing)")


class StateSigner:
    """Signs and checks states; a no-op when ``secret`` is None (unsigned mode)."""

    def __init__(self, secret: str | None) -> None:
        self.enabled = bool(secret)
        self._signer = Signer(secret, salt="ono99.state.v1", digest_method=hashlib.sha256) if secret else None

    def sign(self, canonical: bytes) -> str | None:
        """The signature of a state's canonical bytes (``dumps_state``), or None unsigned."""
        if self._signer is None:
            return None
        return self._signer.get_signature(canonical).decode()

    def verify(self, state: GameState, signature: str | None) -> None:
        """Raise ``invalid_request`` unless ``signature`` signs ``state`` (signed mode only)."""
        if self._signer is None:
            return
        if not signature:
            raise ServiceError("invalid_request", "this service only accepts states it signed: "
                               "send back the state_signature that came with the state",
                               field="state_signature", reason="signature_missing")
        # Only the exact signature sign() issues: itsdangerous' own check decodes the
        # base64 leniently (extra characters, padding, unused bits) before comparing.
        try:
            expected = self._signer.get_signature(dumps_state(state))
            ok = hmac.compare_digest(expected, signature.encode("ascii"))
        except UnicodeError:
            ok = False
        if not ok:
            raise ServiceError("invalid_request", "state_signature does not match the state: "
                               "the state was changed or signed by another service",
                               field="state_signature", reason="signature_invalid")
