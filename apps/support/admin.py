"""The back office's side of support chat: the threads (those awaiting a reply first), their messages, and a reply
box. A reply goes through apps.support.services.support_reply, so the person sees it at once."""

from django import forms
from django.contrib import admin

from apps.support import services
from apps.support.models import BODY_MAX, SupportMessage, SupportThread


class SupportMessageInline(admin.TabularInline):
    """The conversation so far, read-only (what was said stays as it was said)."""

    model = SupportMessage
    fields = ("created_at", "from_staff", "author", "organization", "body")
    readonly_fields = fields
    ordering = ("created_at", "id")
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


class SupportThreadForm(forms.ModelForm):
    reply = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4}),
        required=False,
        max_length=BODY_MAX,
        strip=True,
        help_text="Your reply to this person; they see it in their support chat at once.",
    )

    class Meta:
        model = SupportThread
        fields = ()


@admin.register(SupportThread)
class SupportThreadAdmin(admin.ModelAdmin):
    form = SupportThreadForm
    list_display = ("user", "organization", "last_message_at", "awaiting_reply")
    list_filter = ("awaiting_reply",)
    list_select_related = ("user", "organization")
    search_fields = ("user__email", "user__name", "organization__name")
    ordering = ("-awaiting_reply", "-last_message_at")
    readonly_fields = ("user", "organization", "last_message_at", "awaiting_reply", "user_read_at", "created_at")
    fields = (*readonly_fields, "reply")
    inlines = [SupportMessageInline]

    def has_add_permission(self, request):
        return False  # a thread starts with the person's first message

    def save_model(self, request, obj, form, change):
        reply = form.cleaned_data.get("reply")
        if reply:
            services.support_reply(thread=obj, staff=request.user, body=reply)
            self.message_user(request, "Reply sent.")
