"""The AI assist bucket (spec Limits: per organization, 60 burst, 6 per minute; 429 RATE_LIMITED with Retry-After).
It guards money spent at the provider, so it fails closed: without Redis the answer is 503, not a free pass."""

from apps.core.limits import TokenBucketLimit

ASSIST_LIMIT = TokenBucketLimit(
    "ai-assist",
    setting="SVC_AI_ASSIST_BUCKET",
    key=lambda _request, view: f"org:{view.organization.pk}",
    fail_open=False,
    code="RATE_LIMITED",
)
