from apps.core.errors import ApiError, PermissionDenied


class ChannelNameTaken(ApiError):
    status_code = 409
    code = "CHANNEL_NAME_TAKEN"
    message = "Another channel of the practice already has this name."

    def __init__(self, name: str):
        super().__init__(details={"name": name})


class ChannelArchived(ApiError):
    status_code = 409
    code = "CHANNEL_ARCHIVED"
    message = "The channel is archived: unarchive it first."


class ChannelMembershipRequired(ApiError):
    status_code = 409
    code = "CHANNEL_MEMBERSHIP_REQUIRED"
    message = "Join the channel first (POST /team-chat/channels/{id}/join)."


class MessageDeleted(ApiError):
    status_code = 409
    code = "MESSAGE_DELETED"
    message = "The message was deleted and cannot be edited."


class NotChannelManager(PermissionDenied):
    """An ordinary 403: renaming, archiving and removing others is for the channel's creator or teamchat:manage."""

    message = "Only the channel's creator, or a member whose role holds teamchat:manage, may do this."

    def __init__(self):
        super().__init__(details={"permission": "teamchat:manage", "orChannelCreator": True})


class NotMessageAuthor(PermissionDenied):
    message = "Only the message's author may change or delete it."

    def __init__(self):
        super().__init__(details={"reason": "not_author"})
