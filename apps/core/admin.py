from django.contrib import admin


class TenantScopedAdminMixin:
    """Back office for tenant rows: staff see every practice, so the sweep is spelled out as unscoped()."""

    def get_queryset(self, request):
        queryset = self.model.objects.unscoped()
        ordering = self.get_ordering(request)
        return queryset.order_by(*ordering) if ordering else queryset


class TenantAdmin(TenantScopedAdminMixin, admin.ModelAdmin):
    list_select_related = ("organization",)


class TenantInline(TenantScopedAdminMixin, admin.TabularInline):
    """Inline rows are still narrowed to their parent by the formset."""
