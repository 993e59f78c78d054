"""The three opaque tokens of /referral/*: random, unguessable, kind-prefixed, stored as issued (unique).

Only a token of the kind's prefix followed by URL-safe base64 characters (the alphabet of secrets.token_urlsafe) is
ever looked up: anything else (NUL, other characters, too long) is no token at all, the same 404 as an unknown one."""

import re
import secrets

SHARE = "rfs_"  # the advocate's share token: the friends' page config and submit
STATUS = "rft_"  # the advocate's status token: their anonymised progress and rewards
PATIENT = "rfp_"  # the referred friend's own token (returned on submit): their referral's state

MAX_LENGTH = 64
_SHAPE = re.compile(r"(rfs_|rft_|rfp_)[A-Za-z0-9_-]{1,60}")


def new_token(kind: str) -> str:
    return kind + secrets.token_urlsafe(32)


def kind_of(token: str) -> str | None:
    """The token's kind (its prefix), or None when it is not shaped like one of ours (then it is never looked up)."""
    if not isinstance(token, str) or len(token) > MAX_LENGTH:
        return None
    shaped = _SHAPE.fullmatch(token)
    return shaped.group(1) if shaped else None
