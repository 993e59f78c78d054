from django.contrib import admin


class TenantAdmin(admin.ModelAdmin):
    """Back office for tenant rows: staff see every practice, so the sweep is spelled out as unscoped()."""

    list_select_related = ("organization",)

    def get_queryset(self, request):
        queryset = self.model.objects.unscoped()
        ordering = self.get_ordering(request)
        return queryset.order_by(*ordering) if ordering else queryset
