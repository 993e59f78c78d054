"""The three opaque tokens of /referral/*: random, unguessable, kind-prefixed, stored as issued (unique)."""

import secrets

SHARE = "rfs_"  # the advocate's share token: the friends' page config and submit
STATUS = "rft_"  # the advocate's status token: their anonymised progress and rewards
PATIENT = "rfp_"  # the referred friend's own token (returned on submit): their referral's state

MAX_LENGTH = 64


def new_token(kind: str) -> str:
    return kind + secrets.token_urlsafe(32)


def kind_of(token: str) -> str | None:
    if not isinstance(token, str) or len(token) > MAX_LENGTH:
        return None
    for kind in (SHARE, STATUS, PATIENT):
        if token.startswith(kind):
            return kind
    return None
