/*
 * Practice CRM chat widget: the script a practice pastes into its website, before </body>:
 *
 *   <script src="{base}/static/widget/widget.js" data-embed-key="wk_…" defer></script>
 *
 * Plain JavaScript, no build step, no dependencies. The API base is the origin of this script's own src; the embed
 * key is its data-embed-key. Everything is drawn in a Shadow DOM (the page's CSS does not reach it) and every text
 * from the server or the visitor is set with textContent (never as HTML).
 *
 * Flow: GET /widget/{key}/config (greeting, online or away); the visitor token kept in localStorage (POST
 * /widget/{key}/visitors the first time; a token the server no longer knows is replaced); GET …/thread resumes the
 * thread, or a pre-chat form (name and an e-mail or phone) opens it (POST …/thread). Messages are sent with POST
 * …/thread/messages (header X-Widget-Visitor, a clientMessageId kept across retries so a retry never duplicates).
 * The practice's replies and typing arrive over the socket ws(s)://{base}/widget/{key}/ws (first frame
 * {"type": "auth", "visitorToken"}); it reconnects with backoff, and while it is down the thread is polled with
 * GET …/thread/messages?after={cursor}. The visitor's typing is sent as {"type": "typing"}, at most once per 3 s.
 *
 * A page with a Content-Security-Policy: allow this script's origin in script-src and connect-src (https: and wss:),
 * and give the script tag a nonce that style-src allows (the widget's stylesheet carries the same nonce).
 */
(function () {
  "use strict";

  var script = document.currentScript || document.querySelector("script[data-embed-key]");
  if (!script) return;
  var EMBED_KEY = script.getAttribute("data-embed-key") || "";
  if (!EMBED_KEY || window.__practiceCrmWidget && window.__practiceCrmWidget[EMBED_KEY]) return;
  var BASE = new URL(script.src, document.baseURI).origin;
  var WS_URL = BASE.replace(/^http/, "ws") + "/widget/" + encodeURIComponent(EMBED_KEY) + "/ws";
  var API = BASE + "/widget/" + encodeURIComponent(EMBED_KEY);
  var STORE_KEY = "practiceCrmWidget:" + EMBED_KEY;
  var NONCE = script.nonce || script.getAttribute("nonce") || "";
  var TYPING_EVERY_MS = 3000;
  var TYPING_SHOWN_MS = 5000;
  var POLL_MS = 5000;
  var BACKOFF_MIN_MS = 1000;
  var BACKOFF_MAX_MS = 30000;
  var NO_RECONNECT = { 4401: true, 4403: true, 4404: true };

  window.__practiceCrmWidget = window.__practiceCrmWidget || {};
  window.__practiceCrmWidget[EMBED_KEY] = true;

  var CSS = [
    ":host { all: initial; }",
    "* { box-sizing: border-box; font-family: system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif; }",
    ".root { position: fixed; right: 20px; bottom: 20px; z-index: 2147483000; font-size: 15px; color: #1f2933; }",
    ".launcher { width: 60px; height: 60px; border-radius: 50%; border: none; background: #1d4ed8; color: #fff;",
    "  cursor: pointer; box-shadow: 0 4px 14px rgba(0,0,0,.25); display: flex; align-items: center;",
    "  justify-content: center; float: right; }",
    ".launcher:focus-visible, button:focus-visible, input:focus-visible, textarea:focus-visible {",
    "  outline: 3px solid #f59e0b; outline-offset: 2px; }",
    ".launcher svg { width: 28px; height: 28px; fill: currentColor; }",
    ".badge { position: absolute; top: -2px; right: -2px; min-width: 20px; height: 20px; border-radius: 10px;",
    "  background: #dc2626; color: #fff; font-size: 12px; line-height: 20px; text-align: center; padding: 0 5px; }",
    ".panel { width: 340px; max-width: calc(100vw - 40px); height: 480px; max-height: calc(100vh - 110px);",
    "  background: #fff; border-radius: 12px; box-shadow: 0 8px 30px rgba(0,0,0,.25); display: flex;",
    "  flex-direction: column; overflow: hidden; margin-bottom: 12px; }",
    ".head { background: #1d4ed8; color: #fff; padding: 12px 14px; display: flex; align-items: flex-start; gap: 8px; }",
    ".head .titles { flex: 1; min-width: 0; }",
    ".head h2 { margin: 0; font-size: 16px; font-weight: 600; }",
    ".head p { margin: 2px 0 0; font-size: 13px; opacity: .9; }",
    ".dot { display: inline-block; width: 8px; height: 8px; border-radius: 50%; margin-right: 6px;",
    "  background: #9ca3af; }",
    ".dot.on { background: #34d399; }",
    ".close { background: transparent; border: none; color: #fff; font-size: 22px; line-height: 1; cursor: pointer;",
    "  padding: 2px 6px; border-radius: 4px; }",
    ".body { flex: 1; overflow-y: auto; padding: 12px; background: #f3f4f6; }",
    ".greeting { background: #fff; border-radius: 10px; padding: 10px 12px; margin: 0 0 10px; }",
    ".log { list-style: none; margin: 0; padding: 0; display: flex; flex-direction: column; gap: 6px; }",
    ".msg { max-width: 80%; padding: 8px 11px; border-radius: 12px; white-space: pre-wrap;",
    "  overflow-wrap: anywhere; }",
    ".msg.visitor { align-self: flex-end; background: #1d4ed8; color: #fff; border-bottom-right-radius: 3px; }",
    ".msg.practice { align-self: flex-start; background: #fff; border-bottom-left-radius: 3px; }",
    ".msg.pending { opacity: .6; }",
    ".msg.failed { background: #fee2e2; color: #7f1d1d; }",
    ".msg .retry { display: block; margin-top: 4px; font-size: 12px; background: none; border: none; padding: 0;",
    "  color: inherit; text-decoration: underline; cursor: pointer; }",
    ".sr { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }",
    ".typing { font-size: 13px; color: #4b5563; padding: 4px 12px; min-height: 22px; background: #f3f4f6; }",
    ".status { font-size: 12px; color: #92400e; background: #fef3c7; padding: 4px 12px; }",
    "[hidden] { display: none !important; }",
    "form.prechat { display: flex; flex-direction: column; gap: 8px; background: #fff; padding: 12px;",
    "  border-radius: 10px; }",
    "form.prechat label { font-size: 13px; font-weight: 600; display: flex; flex-direction: column; gap: 3px; }",
    "input, textarea { font-size: 15px; padding: 8px 10px; border: 1px solid #9ca3af; border-radius: 8px;",
    "  width: 100%; color: #111827; background: #fff; }",
    ".error { color: #b91c1c; font-size: 13px; margin: 0; }",
    ".primary { background: #1d4ed8; color: #fff; border: none; border-radius: 8px; padding: 9px 14px;",
    "  font-size: 15px; cursor: pointer; }",
    ".primary[disabled] { opacity: .6; cursor: default; }",
    ".compose { display: flex; gap: 8px; padding: 10px; border-top: 1px solid #e5e7eb; background: #fff; }",
    ".compose textarea { flex: 1; resize: none; height: 42px; }",
  ].join("\n");

  var ICON =
    '<svg viewBox="0 0 24 24" aria-hidden="true" focusable="false"><path d="M4 4h16a2 2 0 0 1 2 2v10a2 2 0 0 1-2 ' +
    '2H8l-4 4V6a2 2 0 0 1 2-2z"/></svg>'; // a constant: the only markup not made with createElement

  // --- tiny DOM helpers (text only through textContent) ------------------------------------------------------------

  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    if (attrs) {
      for (var name in attrs) {
        if (Object.prototype.hasOwnProperty.call(attrs, name)) node.setAttribute(name, attrs[name]);
      }
    }
    if (text != null) node.textContent = String(text);
    return node;
  }

  function uuid() {
    if (window.crypto && crypto.randomUUID) return crypto.randomUUID();
    var bytes = new Uint8Array(16);
    (window.crypto || window.msCrypto).getRandomValues(bytes);
    return Array.prototype.map.call(bytes, function (b) { return ("0" + b.toString(16)).slice(-2); }).join("");
  }

  function storeGet() {
    try { return window.localStorage.getItem(STORE_KEY); } catch (e) { return null; }
  }
  function storeSet(value) {
    try {
      if (value) window.localStorage.setItem(STORE_KEY, value);
      else window.localStorage.removeItem(STORE_KEY);
    } catch (e) { /* storage refused (private mode): the token lives for this page only */ }
  }

  // --- state --------------------------------------------------------------------------------------------------------

  var state = {
    config: null,
    token: storeGet(),
    open: false, // the thread (pre-chat form done)
    cursor: null,
    seen: {}, // message ids shown
    socket: null,
    socketReady: false,
    backoff: BACKOFF_MIN_MS,
    reconnectTimer: null,
    pollTimer: null,
    lastTypingSent: 0,
    typingTimer: null,
    unread: 0,
    panelOpen: false,
    started: false,
    stopped: false, // the widget was refused for good (unknown key, origin not allowed)
  };

  // --- the UI ---------------------------------------------------------------------------------------------------------

  var host = el("div", { "data-practice-crm-widget": "" });
  var shadow = host.attachShadow({ mode: "open" });
  var style = el("style");
  if (NONCE) style.setAttribute("nonce", NONCE);
  style.textContent = CSS;
  shadow.appendChild(style);

  var root = el("div", { class: "root" });
  var panel = el("div", { class: "panel", role: "dialog", "aria-modal": "false", "aria-labelledby": "pcw-title" });
  panel.hidden = true;
  panel.id = "pcw-panel";

  var head = el("div", { class: "head" });
  var titles = el("div", { class: "titles" });
  var title = el("h2", { id: "pcw-title" }, "Chat with us");
  var presence = el("p");
  var dot = el("span", { class: "dot", "aria-hidden": "true" });
  var presenceText = el("span", null, "");
  presence.appendChild(dot);
  presence.appendChild(presenceText);
  titles.appendChild(title);
  titles.appendChild(presence);
  var closeButton = el("button", { type: "button", class: "close", "aria-label": "Close chat" }, "\u00d7");
  head.appendChild(titles);
  head.appendChild(closeButton);

  var body = el("div", { class: "body" });
  var greeting = el("p", { class: "greeting" });
  greeting.hidden = true;
  var log = el("ol", { class: "log", role: "log", "aria-live": "polite", "aria-label": "Messages" });

  var form = el("form", { class: "prechat", novalidate: "", "aria-label": "Start a chat" });
  form.hidden = true;
  var intro = el("p", null, "Tell us who you are and we will reply here.");
  var nameInput = el("input", { type: "text", name: "name", autocomplete: "name", maxlength: "200", required: "" });
  var emailInput = el("input", { type: "email", name: "email", autocomplete: "email", maxlength: "254" });
  var phoneInput = el("input", { type: "tel", name: "phone", autocomplete: "tel", maxlength: "40" });
  var formError = el("p", { class: "error", role: "alert" });
  var startButton = el("button", { type: "submit", class: "primary" }, "Start chat");
  function labelled(text, input) {
    var label = el("label", null, text);
    label.appendChild(input);
    return label;
  }
  form.appendChild(intro);
  form.appendChild(labelled("Your name", nameInput));
  form.appendChild(labelled("E-mail", emailInput));
  form.appendChild(labelled("or phone", phoneInput));
  form.appendChild(formError);
  form.appendChild(startButton);

  body.appendChild(greeting);
  body.appendChild(form);
  body.appendChild(log);

  var typing = el("div", { class: "typing", "aria-live": "polite" });
  var statusLine = el("div", { class: "status", role: "status" });
  statusLine.hidden = true;

  var compose = el("form", { class: "compose", "aria-label": "Send a message" });
  compose.hidden = true;
  var textarea = el("textarea", { name: "body", maxlength: "4096", "aria-label": "Your message", rows: "1" });
  textarea.setAttribute("placeholder", "Type your message…");
  var sendButton = el("button", { type: "submit", class: "primary" }, "Send");
  compose.appendChild(textarea);
  compose.appendChild(sendButton);

  panel.appendChild(head);
  panel.appendChild(body);
  panel.appendChild(typing);
  panel.appendChild(statusLine);
  panel.appendChild(compose);

  var launcher = el("button", {
    type: "button",
    class: "launcher",
    "aria-label": "Open chat",
    "aria-expanded": "false",
    "aria-controls": "pcw-panel",
  });
  launcher.innerHTML = ICON;
  var badge = el("span", { class: "badge", "aria-hidden": "true" });
  badge.hidden = true;
  launcher.appendChild(badge);
  var launcherWrap = el("div");
  launcherWrap.style.position = "relative";
  launcherWrap.appendChild(launcher);

  root.appendChild(panel);
  root.appendChild(launcherWrap);
  shadow.appendChild(root);

  function setStatus(text) {
    statusLine.textContent = text || "";
    statusLine.hidden = !text;
  }

  function setUnread(count) {
    state.unread = count;
    badge.textContent = String(count);
    badge.hidden = count === 0;
    launcher.setAttribute("aria-label", count ? "Open chat, " + count + " new" : "Open chat");
  }

  function scrollDown() {
    body.scrollTop = body.scrollHeight;
  }

  function showPresence() {
    var config = state.config;
    if (!config) return;
    title.textContent = config.practiceName || config.name || "Chat with us";
    dot.className = config.online ? "dot on" : "dot";
    presenceText.textContent = config.online ? "Online now" : "Away";
    var text = config.online ? config.greeting : config.awayMessage || config.greeting;
    greeting.textContent = text || "";
    greeting.hidden = !text;
  }

  function showThreadOpen(open) {
    state.open = open;
    form.hidden = open;
    compose.hidden = !open;
  }

  /** A message in the log (once per id); `pending` ones are the visitor's own, not yet stored. */
  function addMessage(message, options) {
    options = options || {};
    if (message.id && state.seen[message.id]) return null;
    if (message.id) state.seen[message.id] = true;
    var sender = message.sender || message.from || "practice";
    var item = el("li", { class: "msg " + (sender === "visitor" ? "visitor" : "practice") });
    var who = el("span", { class: "sr" }, sender === "visitor" ? "You: " : "Practice: ");
    var text = el("span", { class: "text" }, message.body || "");
    item.appendChild(who);
    item.appendChild(text);
    if (options.pending) item.classList.add("pending");
    log.appendChild(item);
    scrollDown();
    if (sender !== "visitor") {
      hideTyping();
      if (!state.panelOpen) setUnread(state.unread + 1);
    }
    return item;
  }

  function showTyping() {
    typing.textContent = "The practice is typing…";
    clearTimeout(state.typingTimer);
    state.typingTimer = setTimeout(hideTyping, TYPING_SHOWN_MS);
  }

  function hideTyping() {
    clearTimeout(state.typingTimer);
    typing.textContent = "";
  }

  // --- HTTP -----------------------------------------------------------------------------------------------------------

  function request(method, path, data) {
    var headers = { Accept: "application/json" };
    if (state.token) headers["X-Widget-Visitor"] = state.token;
    if (data !== undefined) headers["Content-Type"] = "application/json";
    return fetch(API + path, {
      method: method,
      headers: headers,
      body: data === undefined ? undefined : JSON.stringify(data),
      credentials: "omit",
      mode: "cors",
    }).then(function (response) {
      return response.text().then(function (text) {
        var json = null;
        try { json = text ? JSON.parse(text) : null; } catch (e) { json = null; }
        if (!response.ok) {
          var error = new Error((json && json.message) || "HTTP " + response.status);
          error.status = response.status;
          error.code = json && json.code;
          error.details = json && json.details;
          throw error;
        }
        return json;
      });
    });
  }

  function newVisitor() {
    state.token = null;
    return request("POST", "/visitors").then(function (answer) {
      state.token = answer.visitorToken;
      storeSet(state.token);
    });
  }

  /** The thread (GET …/thread), starting a visitor first when there is no token or it is no longer known. */
  function resume() {
    var ready = state.token ? Promise.resolve() : newVisitor();
    return ready
      .then(function () { return request("GET", "/thread"); })
      .catch(function (error) {
        if (error.status !== 401) throw error;
        return newVisitor().then(function () { return request("GET", "/thread"); });
      })
      .then(function (thread) {
        showThreadOpen(thread.open);
        if (thread.name && !nameInput.value) nameInput.value = thread.name;
        (thread.messages || []).forEach(function (m) { addMessage(m); });
        state.cursor = thread.nextCursor || state.cursor;
        if (thread.open) connect();
      });
  }

  function poll() {
    clearTimeout(state.pollTimer);
    state.pollTimer = null;
    if (!state.open || state.stopped) return Promise.resolve();
    var query = "?limit=100" + (state.cursor ? "&after=" + encodeURIComponent(state.cursor) : "");
    return request("GET", "/thread/messages" + query)
      .then(function (page) {
        (page.items || []).forEach(function (m) { addMessage(m); });
        if (page.nextCursor) state.cursor = page.nextCursor;
      })
      .catch(function () { /* offline: the next poll tries again */ })
      .then(schedulePoll);
  }

  function schedulePoll() {
    if (state.socketReady || state.pollTimer || !state.open || state.stopped) return;
    state.pollTimer = setTimeout(poll, POLL_MS);
  }

  // --- the socket -----------------------------------------------------------------------------------------------------

  function connect() {
    if (state.socket || state.stopped || !state.token || !window.WebSocket) {
      schedulePoll();
      return;
    }
    clearTimeout(state.reconnectTimer);
    var socket;
    try {
      socket = new WebSocket(WS_URL);
    } catch (e) {
      return reconnectLater();
    }
    state.socket = socket;
    socket.onopen = function () {
      socket.send(JSON.stringify({ type: "auth", visitorToken: state.token }));
    };
    socket.onmessage = function (event) {
      var frame;
      try { frame = JSON.parse(event.data); } catch (e) { return; }
      if (!frame || typeof frame !== "object") return;
      if (frame.type === "ready") {
        state.socketReady = true;
        host.setAttribute("data-connection", "live");
        state.backoff = BACKOFF_MIN_MS;
        clearTimeout(state.pollTimer);
        state.pollTimer = null;
        setStatus("");
        if (state.config && typeof frame.online === "boolean") {
          state.config.online = frame.online;
          showPresence();
        }
        poll(); // what arrived while the socket was down
      } else if (frame.type === "message" && frame.message) {
        addMessage(frame.message); // the cursor stays the last polled one: a later poll skips ids already shown
      } else if (frame.type === "typing") {
        showTyping();
      } else if (frame.type === "ack" && frame.message) {
        addMessage(frame.message);
      }
    };
    socket.onclose = function (event) {
      state.socket = null;
      state.socketReady = false;
      host.setAttribute("data-connection", "down");
      if (event.code === 4401) {
        // The token is no longer known: a new visitor fills in the form again (the old thread stays with the practice).
        storeSet(null);
        showThreadOpen(false);
        newVisitor().catch(function () {});
        return;
      }
      if (NO_RECONNECT[event.code]) {
        state.stopped = true;
        setStatus(event.code === 4403 ? "Chat is not available on this website." : "Chat is not available.");
        return;
      }
      setStatus(state.open ? "Reconnecting…" : "");
      reconnectLater();
    };
    socket.onerror = function () { /* onclose follows */ };
  }

  function reconnectLater() {
    state.socket = null;
    state.socketReady = false;
    schedulePoll();
    if (state.stopped) return;
    var delay = Math.min(state.backoff, BACKOFF_MAX_MS);
    delay = delay / 2 + Math.random() * delay / 2; // jitter: many pages do not reconnect together
    state.backoff = Math.min(state.backoff * 2, BACKOFF_MAX_MS);
    clearTimeout(state.reconnectTimer);
    state.reconnectTimer = setTimeout(connect, delay);
  }

  function sendTyping() {
    var now = Date.now();
    if (!state.socketReady || now - state.lastTypingSent < TYPING_EVERY_MS) return;
    state.lastTypingSent = now;
    try { state.socket.send(JSON.stringify({ type: "typing" })); } catch (e) { /* closed meanwhile */ }
  }

  // --- sending --------------------------------------------------------------------------------------------------------

  /** POST the message; on a network failure, 429 or 503 retried with the same clientMessageId (never doubled). */
  function deliver(text, clientId, item, attempt) {
    return request("POST", "/thread/messages", { body: text, clientMessageId: clientId })
      .then(function (message) {
        item.classList.remove("pending");
        if (message && message.id) {
          if (state.seen[message.id]) item.remove(); // the socket was quicker (an ack)
          else state.seen[message.id] = true;
        }
      })
      .catch(function (error) {
        var transient = !error.status || error.status === 429 || error.status >= 500;
        if (transient && attempt < 4) {
          return new Promise(function (resolve) {
            setTimeout(resolve, 1000 * Math.pow(2, attempt));
          }).then(function () { return deliver(text, clientId, item, attempt + 1); });
        }
        item.classList.remove("pending");
        item.classList.add("failed");
        var retry = el("button", { type: "button", class: "retry" }, "Not sent. Try again");
        retry.addEventListener("click", function () {
          retry.remove();
          item.classList.remove("failed");
          item.classList.add("pending");
          deliver(text, clientId, item, 0);
        });
        item.appendChild(retry);
      });
  }

  compose.addEventListener("submit", function (event) {
    event.preventDefault();
    var text = textarea.value.trim();
    if (!text) return;
    textarea.value = "";
    var item = addMessage({ sender: "visitor", body: text }, { pending: true });
    deliver(text, uuid().replace(/[^A-Za-z0-9-]/g, ""), item, 0);
    textarea.focus();
  });

  textarea.addEventListener("keydown", function (event) {
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      compose.requestSubmit ? compose.requestSubmit() : compose.dispatchEvent(new Event("submit"));
    }
  });
  textarea.addEventListener("input", sendTyping);

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    var name = nameInput.value.trim();
    var email = emailInput.value.trim();
    var phone = phoneInput.value.trim();
    formError.textContent = "";
    if (!name) return (formError.textContent = "Please enter your name.");
    if (!email && !phone) return (formError.textContent = "Please enter an e-mail or a phone number.");
    var details = { name: name };
    if (email) details.email = email;
    if (phone) details.phone = phone;
    startButton.disabled = true;
    var ready = state.token ? Promise.resolve() : newVisitor();
    ready
      .then(function () { return request("POST", "/thread", details); })
      .catch(function (error) {
        if (error.status !== 401) throw error;
        return newVisitor().then(function () { return request("POST", "/thread", details); });
      })
      .then(function (thread) {
        showThreadOpen(true);
        (thread.messages || []).forEach(function (m) { addMessage(m); });
        state.cursor = thread.nextCursor || state.cursor;
        connect();
        textarea.focus();
      })
      .catch(function (error) {
        var fields = error.details && error.details.fields;
        var first = fields && Object.keys(fields)[0];
        formError.textContent = first
          ? "Please check " + (first === "name" ? "your name" : first === "email" ? "the e-mail" : "the phone") + "."
          : "Sorry, the chat could not be started. Please try again.";
      })
      .then(function () { startButton.disabled = false; });
  });

  // --- opening and closing ----------------------------------------------------------------------------------------

  function start() {
    if (state.started) return;
    state.started = true;
    resume().catch(function (error) {
      state.started = false;
      if (error.status === 404 || error.status === 403) {
        state.stopped = true;
        setStatus("Chat is not available on this website.");
      } else {
        setStatus("Could not reach the practice. Trying again…");
        setTimeout(start, 5000);
      }
    });
  }

  function openPanel() {
    state.panelOpen = true;
    panel.hidden = false;
    launcher.setAttribute("aria-expanded", "true");
    setUnread(0);
    start();
    scrollDown();
    (state.open ? textarea : nameInput).focus();
  }

  function closePanel() {
    state.panelOpen = false;
    panel.hidden = true;
    launcher.setAttribute("aria-expanded", "false");
    launcher.focus();
  }

  launcher.addEventListener("click", function () {
    if (state.panelOpen) closePanel();
    else openPanel();
  });
  closeButton.addEventListener("click", closePanel);
  panel.addEventListener("keydown", function (event) {
    if (event.key === "Escape") closePanel();
  });

  function mount() {
    document.body.appendChild(host);
    request("GET", "/config")
      .then(function (config) {
        state.config = config;
        showPresence();
        // A visitor who already chatted gets their thread (and live replies) without opening the panel.
        if (state.token) start();
      })
      .catch(function (error) {
        if (error.status === 404 || error.status === 403) {
          state.stopped = true;
          setStatus("Chat is not available on this website.");
        }
      });
  }

  if (document.body) mount();
  else document.addEventListener("DOMContentLoaded", mount);
})();
