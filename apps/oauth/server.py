"""oauthlib server that knows only S256 PKCE, so plain or missing methods are refused before the consent screen
(DOT's RFC 9700 gate alone fires only after "Allow"). Touches a private oauthlib attribute: oauthlib is pinned and
tests cover it. Authorization codes carry the issuing region (apps.oauth.tokens) for the developer front door."""

from oauthlib.oauth2 import Server
from oauthlib.oauth2.rfc6749.grant_types.authorization_code import code_challenge_method_s256

from apps.oauth.tokens import authorization_code_generator


def _region_marked_code(grant: dict, token_handler, request) -> dict:
    grant["code"] = authorization_code_generator()
    return grant


class S256OnlyServer(Server):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.auth_grant._code_challenge_methods = {"S256": code_challenge_method_s256}
        self.auth_grant.register_code_modifier(_region_marked_code)
