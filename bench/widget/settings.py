"""Settings of the chat-widget benchmark's server: bench.settings with the widget's buckets and the public abuse screen
raised so that 500 sockets of one widget, each sending a frame a second, are never refused (all still checked)."""

from bench.settings import *  # noqa: F403

SVC_WIDGET_CONFIG_BUCKET = (10**9, 10**6)
SVC_WIDGET_READ_BUCKET = (10**9, 10**6)
SVC_WIDGET_SEND_BUCKET = (10**9, 10**6)
SVC_WIDGET_HANDSHAKE_BUCKET = (10**9, 10**6)
SVC_WIDGET_FRAME_BUCKET = (10**6, 10**3)
SVC_PUBLIC_SCREEN_RATE = "1000000/m"
