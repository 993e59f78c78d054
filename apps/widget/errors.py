from apps.core.errors import ApiError, NotFound, ServiceUnavailable


class WidgetNotFound(NotFound):
    """Unknown, rotated and inactive embed keys: all the same 404."""

    code = "NOT_FOUND"
    message = "This chat widget does not exist."


class VisitorUnknown(ApiError):
    status_code = 401
    code = "WIDGET_VISITOR_UNKNOWN"
    message = "The visitor token is missing, unknown or of another widget; start a new visitor."


class OriginNotAllowed(ApiError):
    status_code = 403
    code = "WIDGET_ORIGIN_NOT_ALLOWED"
    message = "This website is not allowed to use the chat widget."


class WidgetNotStored(ServiceUnavailable):
    code = "WIDGET_NOT_STORED"
    message = "The message could not be stored; send it again shortly."
    retry_after = 10


class NotWidgetConversation(ApiError):
    status_code = 409
    code = "NOT_A_WIDGET_CONVERSATION"
    message = "This conversation is not a chat widget's."
