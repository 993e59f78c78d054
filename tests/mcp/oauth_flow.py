"""The real OAuth flow against the live server, for the MCP tests that drive the official SDK.

The `deployment` fixture (tests/mcp/conftest.py) points the service's public URLs at the live server first.
`PersonAtTheBrowser` is the person: an httpx2 browser signed in through POST /auth/sign-in/email that reads the
consent page and presses Approve with a practice. `grant` runs the whole flow for a chosen scope (dynamic
registration, authorize with PKCE and resource, consent, code exchange) and returns the token response; the SDK's
own OAuthClientProvider always asks for the scopes of the 401 challenge, so a read-only connection is granted here.
"""

import secrets
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

import httpx2
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthToken

from tests.factories import DEFAULT_PASSWORD
from tests.oauth.conftest import pkce, read_page

CALLBACK = "http://127.0.0.1:53682/callback"


class MemoryStorage:
    """The SDK's TokenStorage, in memory: what an assistant would keep on disk."""

    def __init__(self):
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client_info

    async def set_client_info(self, client_info):
        self.client_info = client_info


class PersonAtTheBrowser:
    """The redirect and callback handlers: a browser session signed in as the practice owner opens the authorize
    URL, reads the consent page, approves with the practice, and hands the redirect's code and state back."""

    def __init__(self, base: str, member, organization_id: str):
        self.base, self.member, self.organization_id = base, member, organization_id
        self.seen: dict = {}
        self.result: AuthorizationCodeResult | None = None

    async def redirect(self, authorization_url: str) -> None:
        self.seen["authorize"] = parse_qs(urlsplit(authorization_url).query)
        async with httpx2.AsyncClient(base_url=self.base, follow_redirects=False, timeout=30.0) as browser:
            signed_in = await browser.post(
                "/auth/sign-in/email", json={"email": self.member.user.email, "password": DEFAULT_PASSWORD}
            )
            assert signed_in.status_code == 200, signed_in.text
            page = await browser.get(authorization_url)
            assert page.status_code == 200, page.text
            reader = read_page(page)
            self.seen["page"] = " ".join(" ".join(reader.text).split())
            assert len(reader.forms) == 1
            form = reader.forms[0]
            self.seen["practices"] = form["radios"].get("organization_id")
            answer = await browser.post(
                urljoin(str(page.url), form["action"]),
                data=form["fields"] | {"organization_id": self.organization_id, "allow": "true"},
            )
        assert answer.status_code == 302, answer.text
        location = answer.headers["Location"]
        assert location.startswith(CALLBACK), location
        params = {key: values[-1] for key, values in parse_qs(urlsplit(location).query).items()}
        self.seen["callback"] = params
        self.result = AuthorizationCodeResult(code=params["code"], state=params.get("state"), iss=params.get("iss"))

    async def callback(self) -> AuthorizationCodeResult:
        assert self.result is not None, "the redirect handler ran first"
        return self.result


async def grant(base: str, member, scope: str) -> dict:
    """The token response of a connection `member` approves for their practice, with `scope`, for {base}/mcp."""
    verifier, challenge = pkce()
    state = secrets.token_urlsafe(8)
    async with httpx2.AsyncClient(base_url=base, timeout=30.0) as http:
        registered = await http.post(
            "/auth/oauth2/register",
            json={"client_name": "SDK Agent", "redirect_uris": [CALLBACK], "token_endpoint_auth_method": "none"},
        )
        assert registered.status_code == 201, registered.text
        client_id = registered.json()["client_id"]
        person = PersonAtTheBrowser(base, member, str(member.organization.id))
        authorize = {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": CALLBACK,
            "scope": scope,
            "state": state,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "resource": f"{base}/mcp",
        }
        await person.redirect(f"{base}/auth/oauth2/authorize?{urlencode(authorize)}")
        assert person.result is not None and person.result.state == state
        token = await http.post(
            "/auth/oauth2/token",
            data={
                "grant_type": "authorization_code",
                "client_id": client_id,
                "code": person.result.code,
                "code_verifier": verifier,
                "redirect_uri": CALLBACK,
                "resource": f"{base}/mcp",
            },
        )
    assert token.status_code == 200, token.text
    return token.json()
