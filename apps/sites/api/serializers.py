from rest_framework import serializers

from apps.core.fields import StrictUUIDField
from apps.core.serializers import OffsetQuerySerializer, StrictSerializer, offset_page_serializer
from apps.sites import selectors
from apps.sites.domains import MAX_DOMAINS, normalize_domain, normalize_page_url
from apps.sites.models import MAX_FORM_KEY, MAX_PAGE_URL, FormDiscovery, Website

MAX_SITE_FORMS = 100
MAX_REPORT_FORMS = 20
MAX_REPORT_FIELDS = 100
MAX_FIELD_NAME = 200
ELIGIBLE = "a public capture form for form submissions of this practice (not archived)"


class DomainField(serializers.CharField):
    def __init__(self, **kwargs):
        super().__init__(max_length=253, **kwargs)

    def to_internal_value(self, data):
        try:
            return normalize_domain(super().to_internal_value(data))
        except ValueError as exc:
            raise serializers.ValidationError(str(exc)) from None


def _eligible(context, ids: list) -> list:
    """These ids as capture forms a website may use, in one query; any other id (another practice's, a signed or
    call-tracking form, an archived one, an unknown one) is the same 400."""
    forms = selectors.eligible_forms(organization=context["organization"]).filter(id__in=ids)
    found = {form.id: form for form in forms}
    missing = [str(form_id) for form_id in ids if form_id not in found]
    if missing:
        raise serializers.ValidationError(f"{', '.join(missing[:5])}: must each be {ELIGIBLE}")
    return [found[form_id] for form_id in dict.fromkeys(ids)]


class SiteWriteSerializer(StrictSerializer):
    name = serializers.CharField(min_length=1, max_length=200)
    allowed_domains = serializers.ListField(
        child=DomainField(),
        max_length=MAX_DOMAINS,
        required=False,
        help_text="Hostnames the site's pages live on (example.com also allows its subdomains). Form-discovery "
        "reports from any other page or Origin are refused; a site without domains accepts none.",
    )
    form_ids = serializers.ListField(
        child=StrictUUIDField(),
        max_length=MAX_SITE_FORMS,
        required=False,
        help_text="The capture forms the site's pages use (public mode, form submissions); replaces the list.",
    )

    def validate_allowed_domains(self, value):
        return list(dict.fromkeys(value))

    def validate_form_ids(self, value):
        return _eligible(self.context, value)

    def validate(self, attrs):
        if "form_ids" in attrs:
            attrs["forms"] = attrs.pop("form_ids")
        return attrs


class SiteListQuerySerializer(OffsetQuerySerializer):
    status = serializers.ChoiceField(choices=Website.Status.choices, required=False)
    include_archived = serializers.BooleanField(default=False, help_text="Archived sites are left out unless true.")


class SiteSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    site_key = serializers.CharField(help_text="Public, for the site's pages; regenerate it to retire the old one.")
    status = serializers.ChoiceField(choices=Website.Status.choices)
    allowed_domains = serializers.ListField(child=serializers.CharField())
    form_ids = serializers.ListField(child=serializers.UUIDField())
    config_url = serializers.CharField(help_text="GET: the form configuration the site's pages read.")
    discovery_url = serializers.CharField(help_text="POST: form-discovery reports from the site's pages.")
    new_discoveries = serializers.IntegerField(help_text="Discovered forms waiting for review.")
    archived_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    class Meta:
        ref_name = "Website"


SitePageSerializer = offset_page_serializer(SiteSerializer, "WebsitePage")


class DiscoveredFieldSerializer(StrictSerializer):
    name = serializers.CharField(min_length=1, max_length=MAX_FIELD_NAME)
    type = serializers.CharField(max_length=40, required=False, allow_blank=True, default="")
    label = serializers.CharField(max_length=500, required=False, allow_blank=True, default="")

    class Meta:
        ref_name = "DiscoveredFormField"


class DiscoveryListQuerySerializer(OffsetQuerySerializer):
    status = serializers.ChoiceField(choices=FormDiscovery.Status.choices, required=False)


class DiscoverySerializer(serializers.Serializer):
    id = serializers.UUIDField()
    website_id = serializers.UUIDField()
    page_url = serializers.CharField()
    form_key = serializers.CharField(help_text="The form's id or name attribute on the page, or a fingerprint.")
    fields = DiscoveredFieldSerializer(many=True)
    status = serializers.ChoiceField(choices=FormDiscovery.Status.choices)
    linked_form_id = serializers.UUIDField(allow_null=True)
    first_seen_at = serializers.DateTimeField()
    last_seen_at = serializers.DateTimeField()
    times_seen = serializers.IntegerField()

    class Meta:
        ref_name = "FormDiscovery"


DiscoveryPageSerializer = offset_page_serializer(DiscoverySerializer, "FormDiscoveryPage")


class DiscoveryLinkSerializer(StrictSerializer):
    capture_form_id = StrictUUIDField(help_text=f"The capture form this discovered form posts to: {ELIGIBLE}.")

    def validate_capture_form_id(self, value):
        return _eligible(self.context, [value])[0]


# --- public ---------------------------------------------------------------------------------------------------------


class ReportedFormSerializer(StrictSerializer):
    form_key = serializers.CharField(min_length=1, max_length=MAX_FORM_KEY)
    fields = serializers.ListField(child=DiscoveredFieldSerializer(), max_length=MAX_REPORT_FIELDS, default=list)

    class Meta:
        ref_name = "ReportedForm"


class DiscoveryReportSerializer(StrictSerializer):
    page_url = serializers.CharField(max_length=MAX_PAGE_URL, help_text="The page's URL (http or https).")
    forms = serializers.ListField(child=ReportedFormSerializer(), max_length=MAX_REPORT_FORMS)

    def validate_page_url(self, value):
        try:
            url, _host = normalize_page_url(value)
        except ValueError as exc:
            raise serializers.ValidationError(str(exc)) from None
        if len(url) > MAX_PAGE_URL:
            raise serializers.ValidationError(f"at most {MAX_PAGE_URL} characters")
        return url


class DiscoveryAcceptedSerializer(serializers.Serializer):
    accepted = serializers.IntegerField(help_text="Forms recorded from this report.")

    class Meta:
        ref_name = "FormDiscoveryAccepted"


class SiteConfigFieldSerializer(serializers.Serializer):
    name = serializers.CharField()
    type = serializers.CharField()
    label = serializers.CharField()
    required = serializers.BooleanField()

    class Meta:
        ref_name = "SiteConfigField"


class SiteConfigFormSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    capture_url = serializers.CharField(help_text="POST submissions here.")
    form_page_url = serializers.CharField(help_text="The hosted form page, to link or embed in an iframe.")
    fields = SiteConfigFieldSerializer(many=True)

    class Meta:
        ref_name = "SiteConfigForm"


class SiteConfigSiteSerializer(serializers.Serializer):
    name = serializers.CharField()

    class Meta:
        ref_name = "SiteConfigSite"


class SiteConfigSerializer(serializers.Serializer):
    site = SiteConfigSiteSerializer()
    forms = SiteConfigFormSerializer(many=True)

    class Meta:
        ref_name = "SiteConfig"
