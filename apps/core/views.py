"""Base API views. The practice is resolved once per request, here, and every tenant queryset starts from it.

Subclasses declare `permission`, `scope_area` (or `public = True`), optional `browser_session_only`,
`rate_limits` and `max_body_bytes`, and read `self.organization` / `self.membership`. They never pick the
organization themselves.
"""

from djangorestframework_camel_case.util import underscoreize
from rest_framework.views import APIView

from apps.core.access import access_backend
from apps.core.errors import NoOrganization, NotFound, ValidationFailed
from apps.core.limits import API_CREDENTIAL_LIMIT
from apps.core.naming import to_camel
from apps.core.permissions import AUTHENTICATED, declared_permission
from apps.core.uuids import InvalidUuid

ACCESS_GENERATION_HEADER = "X-Service-Access-Generation"


def lacks_method(view, request) -> bool:
    """True when the view has no handler for the request's method (Django's own dispatch rule)."""
    method = request.method.lower()
    return method not in view.http_method_names or not hasattr(view, method)


class BaseApiView(APIView):
    public = False
    permission: str | dict | None = None
    scope_area: str | None = None
    browser_session_only = False
    rate_limits: tuple = ()
    max_body_bytes: int | None = None
    # Extra error statuses this route documents beyond the common ones (e.g. "409").
    error_statuses: tuple[str, ...] = ()

    _choice = None

    def get_authenticators(self):
        # Public routes take no credential: a stray cookie or header must not turn them into 401/403.
        return [] if self.public else super().get_authenticators()

    def check_permissions(self, request):
        for limit in self.rate_limits:
            limit.check(request, self)
        if request.auth is not None:
            API_CREDENTIAL_LIMIT.check(request, self)
        super().check_permissions(request)

    def initial(self, request, *args, **kwargs):
        # A method the route does not have is 405 (with Allow) before credentials, permissions or limits are weighed.
        if lacks_method(self, request):
            self.http_method_not_allowed(request)
        super().initial(request, *args, **kwargs)
        for name, value in kwargs.items():
            if isinstance(value, InvalidUuid):
                raise ValidationFailed.for_field(to_camel(name), "must be a UUID")

    # --- practice selection -------------------------------------------------------------------------------
    def organization_choice(self, request):
        """The practice this request acts in (may be none for account routes); resolved once."""
        if self._choice is None:
            self._choice = access_backend().resolve_organization(
                user=request.user,
                credential=request.auth,
                header=request.headers.get("X-Organization-ID"),
                session=getattr(request._request, "session", None),
            )
        return self._choice

    def resolve_membership(self, request):
        choice = self.organization_choice(request)
        if choice.membership is None:
            raise NoOrganization()
        return choice.membership

    @property
    def membership(self):
        return self.resolve_membership(self.request)

    @property
    def organization(self):
        return self.membership.organization

    # --- tenant-scoped reads and validated input ---------------------------------------------------------------
    def get_tenant_object(self, model, pk, *, queryset=None):
        """The record with this id in the request's practice; any other (or none) is the same 404."""
        queryset = queryset if queryset is not None else model.objects.for_org(self.organization)
        record = queryset.filter(pk=pk).first()
        if record is None:
            raise NotFound(f"No such {model._meta.verbose_name}.")
        return record

    def serializer_context(self) -> dict:
        context = {"request": self.request, "view": self}
        # Account routes (public, or the caller's own identity) act in no practice; the others always do.
        if not self.public and declared_permission(self, self.request.method) not in (None, AUTHENTICATED):
            context["organization"] = self.organization
        return context

    def parse_body(self, serializer_class, *, partial: bool = False, instance=None):
        """The JSON object body, validated. An empty body is refused: the contract's bodies are objects."""
        if not int(self.request.META.get("CONTENT_LENGTH") or 0):
            raise ValidationFailed.for_field("body", "a JSON object is required")
        serializer = serializer_class(
            instance, data=self.request.data, partial=partial, context=self.serializer_context()
        )
        serializer.is_valid(raise_exception=True)
        return serializer

    def parse_query(self, serializer_class):
        """Query parameters (camelCase on the wire) validated by a serializer; repeated names take the last."""
        data = underscoreize(dict(self.request.query_params.items()))
        serializer = serializer_class(data=data, context=self.serializer_context())
        serializer.is_valid(raise_exception=True)
        return serializer

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        choice = self._choice
        credential = getattr(request, "_auth", None)
        if choice is not None and choice.membership is not None and credential and not credential.is_machine:
            generation = access_backend().access_generation(choice.membership)
            response[ACCESS_GENERATION_HEADER] = f"{choice.organization.id}:{generation}"
        return response
