// Waitroom's waiting page: joins the line on load, then follows its live
// stream, or else the room's public line (GET /queue/line, one cacheable
// answer per room) and its own number, asking its own standing (at the
// server's pace, pollAfterMs) only when the line cannot say or its turn is
// near. The ticket that keeps the visitor's place is an HttpOnly
// cookie the server renews with every answer; this script only keeps a copy
// in memory for browsers that refuse the cookie. When enter answers 202
// ACCEPTED (INTAKE broker or fallback) the page keeps the receipt and sends it
// with each poll until the entry is in line (PROCESSING until then). A proof
// of work asked for (428) is solved in a Worker (pow.js), then sent along.
"use strict";
(function () {
  var T = {
    en: {
      "title.loading": "Joining the line…", "title.waiting": "You are in line", "title.ready": "It's your turn",
      "title.expired": "Your turn has passed", "title.out": "You are not in line", "title.problem": "Please wait",
      room: "Room", position: "Your place in line:", "keep.open": "Keep this page open: it updates by itself and you keep your place if you reload.",
      "turn.text": "Continue now to place your order.", "turn.left": "Time left:", "continue": "Continue", rejoin: "Join the line again",
      "wait.now": "You are next, any moment now", "wait.lt1": "Estimated wait: less than a minute",
      "wait.min": "Estimated wait: about {n} minutes", "wait.min1": "Estimated wait: about 1 minute",
      "wait.hour": "Estimated wait: about {h} h {m} min", progress: "{p}% of the way to the front",
      updated: "Last updated {t}", "updated.live": "Live updates · last update {t}",
      "e.queue_full": "The line is full right now. We will try again for you.",
      "e.unavailable": "The waiting room is briefly unavailable. We will retry automatically.",
      "e.invalid_ticket": "We could not confirm your place in line. Join again to get a new place.",
      "e.rate": "Many people are trying at once. We will retry for you.",
      "e.offline": "You seem to be offline. We will reconnect as soon as the network is back.",
      "e.unauthenticated": "Please sign in to the shop first, then come back to this page.",
      "e.invalid_room": "This waiting room does not exist. Check the link you followed.",
      "e.other": "Something went wrong. We will retry automatically.",
      "out.text": "Your place has ended, or your turn expired.", "retry.in": "Retrying in {n} s…", "retry.now": "Retrying…",
      "no.continue": "Your entry token: {token}",
      "title.prequeue": "The sale opens soon", "prequeue.text": "It opens at {t}. Everyone who is here before then gets a random place in line at the opening: keep this page open.",
      paused: "Admission is paused for a moment; you keep your place.",
      processing: "You're in; finding your place…",
      "e.invalid_receipt": "We could not confirm your entry. Joining the line again for you.",
      "title.solving": "Just a moment", solving: "Your browser is doing a short check that keeps bots out.",
      "e.challenge": "This browser cannot do the check that keeps bots out. Try another browser.",
      "title.closed": "This sale has ended", "closed.text": "Nobody can join the line any more. Thank you for waiting."
    },
    ko: {
      "title.loading": "대기열에 들어가는 중…", "title.waiting": "대기 중입니다", "title.ready": "입장하실 차례입니다",
      "title.expired": "입장 시간이 지났습니다", "title.out": "대기열에 없습니다", "title.problem": "잠시만 기다려 주세요",
      room: "대기실", position: "현재 대기 순번:", "keep.open": "이 페이지를 열어 두세요. 자동으로 갱신되며, 새로 고침해도 순번은 유지됩니다.",
      "turn.text": "지금 계속하여 주문을 완료하세요.", "turn.left": "남은 시간:", "continue": "계속하기", rejoin: "다시 줄 서기",
      "wait.now": "곧 입장하실 차례입니다", "wait.lt1": "예상 대기 시간: 1분 미만",
      "wait.min": "예상 대기 시간: 약 {n}분", "wait.min1": "예상 대기 시간: 약 1분",
      "wait.hour": "예상 대기 시간: 약 {h}시간 {m}분", progress: "맨 앞까지 {p}% 진행",
      updated: "마지막 갱신 {t}", "updated.live": "실시간 갱신 · 마지막 갱신 {t}",
      "e.queue_full": "지금은 대기열이 가득 찼습니다. 자동으로 다시 시도합니다.",
      "e.unavailable": "대기실을 잠시 사용할 수 없습니다. 자동으로 다시 시도합니다.",
      "e.invalid_ticket": "대기 순번을 확인할 수 없습니다. 다시 줄을 서 주세요.",
      "e.rate": "접속자가 많습니다. 자동으로 다시 시도합니다.",
      "e.offline": "인터넷 연결이 끊어졌습니다. 연결되면 바로 다시 접속합니다.",
      "e.unauthenticated": "먼저 쇼핑몰에 로그인한 뒤 이 페이지로 돌아와 주세요.",
      "e.invalid_room": "존재하지 않는 대기실입니다. 링크를 확인해 주세요.",
      "e.other": "문제가 발생했습니다. 자동으로 다시 시도합니다.",
      "out.text": "대기 순번이 끝났거나 입장 시간이 지났습니다.", "retry.in": "{n}초 후 다시 시도…", "retry.now": "다시 시도하는 중…",
      "no.continue": "입장 토큰: {token}",
      "title.prequeue": "곧 판매가 시작됩니다", "prequeue.text": "{t}에 시작합니다. 그 전에 오신 모든 분은 시작 시각에 무작위로 순번을 받습니다. 이 페이지를 열어 두세요.",
      paused: "입장이 잠시 멈췄습니다. 순번은 그대로 유지됩니다.",
      processing: "입장이 접수되었습니다. 순번을 확인하는 중…",
      "e.invalid_receipt": "입장을 확인할 수 없습니다. 다시 줄을 서는 중입니다.",
      "title.solving": "잠시만 기다려 주세요", solving: "봇을 막기 위해 브라우저가 잠깐 확인하고 있습니다.",
      "e.challenge": "이 브라우저로는 봇 방지 확인을 할 수 없습니다. 다른 브라우저를 사용해 주세요.",
      "title.closed": "판매가 종료되었습니다", "closed.text": "더 이상 대기열에 들어갈 수 없습니다. 기다려 주셔서 감사합니다."
    }
  };

  var params = new URLSearchParams(location.search);
  var asked = askedLang();  // "" when the visitor asks for neither: the room's language
  var lang = asked || "en";
  var brandTitle = "";
  var room = params.get("room") || "default";
  var conf = { continueUrl: "", stream: false };
  var ticket = "";          // the latest ticket, sent as X-Queue-Ticket
  var receipt = "";         // an accepted entry's receipt, sent as X-Queue-Receipt until it is in line
  var solution = "", worker = null; // the proof of work's, sent as X-Queue-Challenge until an enter succeeds
  var start = 0;            // the first position seen, for the progress bar
  var number = null;        // the visitor's number in line (WAITING answers)
  var NEAR = 2;             // seconds from the turn: ask position (the line may be a second old)
  var timer = 0, tick = 0, stream = null, backoff = 0;
  var $ = function (id) { return document.getElementById(id); };
  // Headless chromium (screenshot tools) polls, as in AWS: an open stream
  // holds --virtual-time-budget and network-idle waits forever.
  var tool = /HeadlessChrome/.test(navigator.userAgent);
  var release = holdLoad();

  // holdLoad delays the load event (a child frame left open does) until the
  // first state is shown, at most 10 s: a capture at load shows the standing.
  function holdLoad() {
    var frame = document.createElement("iframe");
    frame.hidden = true;
    document.body.appendChild(frame);
    try { frame.contentDocument.open(); } catch (e) { /* no hold, the page as before */ }
    var done = function () {
      if (!frame) return;
      try { frame.contentDocument.close(); } catch (e) { /* nothing held */ }
      frame.remove();
      frame = null;
    };
    setTimeout(done, 10000);
    return function () { setTimeout(done, 0); }; // once the state's text is in
  }

  function askedLang() {
    var asked = [params.get("lang"), document.documentElement.getAttribute("data-lang")].concat(navigator.languages || [navigator.language]);
    for (var i = 0; i < asked.length; i++) {
      var l = (asked[i] || "").toLowerCase().slice(0, 2);
      if (T[l]) return l;
    }
    return "";
  }

  function t(key, vars) {
    var s = T[lang][key] || T.en[key] || key;
    return s.replace(/\{(\w+)\}/g, function (_, k) { return vars && vars[k] !== undefined ? vars[k] : ""; });
  }

  function pageTitle(text) {
    return text + " · " + (brandTitle || "Waitroom");
  }

  function translate() {
    document.documentElement.lang = lang;
    document.title = pageTitle(t("title.loading").replace("…", ""));
    var els = document.querySelectorAll("[data-t]");
    for (var i = 0; i < els.length; i++) els[i].textContent = t(els[i].getAttribute("data-t"));
    $("room-name").textContent = room;
  }

  function show(state, title) {
    release();
    $("main").setAttribute("data-state", state);
    ["waiting", "ready", "problem", "solving"].forEach(function (id) { $(id).hidden = id !== state; });
    if ($("title").textContent !== t(title)) {
      $("title").textContent = t(title);
      document.title = pageTitle(t(title));
    }
  }

  function clock() {
    return new Date().toLocaleTimeString(lang === "ko" ? "ko-KR" : "en-GB", { hour: "2-digit", minute: "2-digit", second: "2-digit" });
  }

  function waitWords(s) {
    if (s <= 0) return t("wait.now");
    if (s < 60) return t("wait.lt1");
    var m = Math.round(s / 60);
    if (m === 1) return t("wait.min1");
    if (m < 60) return t("wait.min", { n: m });
    return t("wait.hour", { h: Math.floor(m / 60), m: m % 60 });
  }

  function stopTimers() {
    clearTimeout(timer); clearInterval(tick); timer = tick = 0;
  }

  function closeStream() {
    if (stream) { stream.close(); stream = null; }
  }

  // brand: the room's page from enter's answer, once per load. Text, never HTML.
  function brand(b) {
    if (!asked && (b.language === "en" || b.language === "ko") && b.language !== lang) {
      lang = b.language;
      translate();
    }
    if (/^#[0-9a-fA-F]{6}$/.test(b.brandColor || "")) document.documentElement.style.setProperty("--brand", b.brandColor);
    if (b.title) { // the shop's name replaces the room's
      brandTitle = b.title;
      $("brand-title").textContent = b.title;
      $("room").hidden = true;
      document.title = pageTitle($("title").textContent);
    }
    var logo = $("logo");
    // A logo that fails goes (no broken image); the title stays and names
    // the shop, so the logo is decorative (alt="").
    logo.onerror = function () {
      logo.hidden = true;
      logo.removeAttribute("src");
      $("brand").hidden = !b.title;
    };
    if (/^https:\/\//.test(b.logoUrl || "")) { logo.alt = ""; logo.src = b.logoUrl; logo.hidden = false; }
    $("brand").hidden = !b.title && logo.hidden;
  }

  function message(text) {
    var m = $("message");
    if (m.textContent !== (text || "")) m.textContent = text || "";
    m.hidden = !text;
  }

  function closed(b) { // sold out: the message says the rest
    closeStream();
    stopTimers();
    message(b.message);
    show("problem", "title.closed");
    problem(t("closed.text"), "final");
  }

  // render shows one answer of enter, position or the stream.
  function render(b) {
    backoff = 0;
    solution = "";
    if (b.ticket) ticket = b.ticket;
    message(b.message);
    $("updated").textContent = t(stream ? "updated.live" : "updated", { t: clock() });
    if (b.status === "ACCEPTED" || b.status === "PROCESSING") return processing(b);
    receipt = "";
    $("position").parentNode.hidden = false;
    if (b.status === "WAITING") return waiting(b);
    closeStream();
    stopTimers();
    if (b.status === "READY") return ready(b);
    if (b.status === "PREQUEUE") return prequeue(b);
    if (b.status === "CLOSED") return closed(b);
    show("problem", "title.out");
    problem(t("out.text"), "rejoin");
  }

  function waiting(b) {
    show("waiting", "title.waiting");
    if (!start || b.position > start) start = b.position;
    $("position").textContent = b.position.toLocaleString(lang === "ko" ? "ko-KR" : "en-US");
    $("wait").textContent = b.paused ? t("paused") : waitWords(b.estimatedWaitSeconds || 0);
    var pct = start > 1 ? Math.round(100 * (start - b.position) / (start - 1)) : 100;
    $("progress").value = pct;
    $("progress-label").textContent = t("progress", { p: pct });
    if (stream) return;
    if (conf.stream && window.EventSource && !tool) return listen();
    next(b);
  }

  // next: position near the turn (or without a number), else the line;
  // either at the server's pace (pollAfterMs, never faster).
  function next(b) {
    clearTimeout(timer);
    number = typeof b.number === "number" ? b.number : null;
    var near = number === null || (!b.paused && !b.stalled && (b.estimatedWaitSeconds || 0) <= NEAR);
    timer = setTimeout(near ? position : line, Math.max(b.pollAfterMs || 0, 100));
  }

  // line: public, cached, no cookie; on any failure position, which has
  // the error states.
  function line() {
    fetch("/queue/line?room=" + encodeURIComponent(room), { headers: { Accept: "application/json" }, credentials: "omit" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(follow, function () { follow(null); });
  }

  // follow shows the place number - front + 1, or asks position when the
  // line cannot say (not exact, nobody waiting) or the turn is near or came.
  function follow(l) {
    if (l && l.status === "CLOSED") return closed(l);
    var ok = l && l.status === "OPEN" && l.exact && typeof l.front === "number" && l.ratePerSec > 0;
    var place = ok ? number - l.front + 1 : 0, wait = place / (ok ? l.ratePerSec : 1);
    if (place < 1 || (!l.paused && !l.stalled && wait <= NEAR)) return position();
    render({ status: "WAITING", number: number, position: place, estimatedWaitSeconds: Math.ceil(wait),
      paused: l.paused, stalled: l.stalled, message: l.message, pollAfterMs: pace(l, Math.ceil(wait), wait) });
  }

  // pace is pollAfterMs as the server reckons it (docs/API.md): the tier of
  // the wait ±20 % (the farthest while nothing moves), at the turn at the
  // latest, and within half the claim window (a number admitted meanwhile
  // is still claimed).
  function pace(l, eta, wait) {
    var tiers = l.pollTiers || [], i = 0, still = l.paused || l.stalled;
    while (!still && i < tiers.length - 1 && eta < tiers[i].minWaitSeconds) i++;
    var ms = (tiers.length ? tiers[i].pollMs : 60000) * (0.8 + 0.4 * Math.random());
    if (l.claimWindowMs > 0) ms = Math.min(ms, l.claimWindowMs / 2);
    return still ? ms : Math.min(ms, wait * 1000 + (l.batchIntervalMs || 100) * (0.5 + 0.5 * Math.random()));
  }

  // processing: the entry is accepted but not yet in line; shown like
  // waiting, without a number, and asked again at the server's pace.
  function processing(b) {
    if (b.receipt) receipt = b.receipt;
    show("waiting", "title.waiting");
    $("position").parentNode.hidden = true;
    $("wait").textContent = t("processing");
    $("progress").value = 0;
    $("progress-label").textContent = "";
    clearTimeout(timer);
    timer = setTimeout(position, Math.max(b.pollAfterMs || 0, 100));
  }

  // prequeue: the room opens at b.opensAt; ask again when the server says
  // (just after the opening), then the line's answers take over.
  function prequeue(b) {
    show("problem", "title.prequeue");
    var at = new Date(Date.parse(b.opensAt)).toLocaleTimeString(lang === "ko" ? "ko-KR" : "en-GB", { hour: "2-digit", minute: "2-digit" });
    problem(t("prequeue.text", { t: at }), "final");
    timer = setTimeout(position, Math.max(b.pollAfterMs || 0, 100));
  }

  function ready(b) {
    show("ready", "title.ready");
    var link = $("continue");
    if (conf.continueUrl) {
      link.href = conf.continueUrl.split("{entryToken}").join(encodeURIComponent(b.entryToken)).split("{room}").join(encodeURIComponent(room));
      link.removeAttribute("aria-disabled");
    } else {
      link.removeAttribute("href");
      link.setAttribute("aria-disabled", "true");
      $("turn-text").textContent = t("no.continue", { token: b.entryToken });
    }
    var until = Date.parse(b.expiresAt);
    var count = function () {
      var left = Math.max(0, Math.round((until - Date.now()) / 1000));
      $("countdown").textContent = Math.floor(left / 60) + ":" + ("0" + left % 60).slice(-2);
      if (left === 0) {
        clearInterval(tick);
        show("problem", "title.expired");
        problem(t("out.text"), "rejoin");
      }
    };
    count();
    tick = setInterval(count, 1000);
    link.focus();
  }

  // problem shows a human state: "rejoin" offers a button, "final" nothing,
  // a number of seconds counts down to retry().
  var pending = null;
  function problem(text, then, retry) {
    $("problem-text").textContent = text;
    $("rejoin").hidden = then !== "rejoin";
    $("retry-in").textContent = "";
    pending = null;
    if (then === "rejoin") { $("rejoin").focus(); return; }
    if (then === "final") return;
    pending = retry;
    var left = Math.max(1, Math.round(then));
    var count = function () {
      $("retry-in").textContent = left > 0 ? t("retry.in", { n: left }) : t("retry.now");
      if (left-- <= 0) { clearInterval(tick); pending = null; retry(); }
    };
    clearInterval(tick);
    count();
    tick = setInterval(count, 1000);
  }

  function failed(status, body, retryAfter, retry) {
    closeStream();
    stopTimers();
    var code = (body && body.error) || "";
    if (code === "room_closed") { brand(body); return closed({ message: body.message }); }
    backoff = Math.min(60, backoff ? backoff * 2 : 2);
    var wait = retryAfter > 0 ? retryAfter : backoff;
    if (code === "challenge_required" && body.challenge) return solve(body.challenge);
    show("problem", "title.problem");
    if (status === 0) return problem(t("e.offline"), wait, retry);
    if (code === "invalid_ticket") { ticket = ""; start = 0; return problem(t("e.invalid_ticket"), "rejoin"); }
    // An expired or unknown receipt: its entry will not be applied; enter again.
    if (code === "invalid_receipt") { receipt = ""; start = 0; return problem(t("e.invalid_receipt"), wait, enter); }
    if (code === "unauthenticated" || code === "invalid_room") return problem(t("e." + code), "final");
    if (code === "queue_full" || code === "unavailable") return problem(t("e." + code), wait, retry);
    if (status === 429) return problem(t("e.rate"), wait, retry);
    problem(t("e.other"), wait, retry);
  }

  function call(method, path, retry, branded) {
    var headers = { Accept: "application/json" };
    if (ticket) headers["X-Queue-Ticket"] = ticket;
    if (receipt && method === "GET") headers["X-Queue-Receipt"] = receipt;
    if (solution && method === "POST") headers["X-Queue-Challenge"] = solution;
    return fetch(path + "?room=" + encodeURIComponent(room), { method: method, headers: headers, credentials: "same-origin", cache: "no-store" })
      .then(function (resp) {
        return resp.json().catch(function () { return {}; }).then(function (body) {
          if (resp.ok && branded) brand(body);
          if (resp.ok) return render(body);
          failed(resp.status, body, parseInt(resp.headers.get("Retry-After"), 10) || 0, retry);
        });
      }, function () { failed(0, null, 0, retry); });
  }

  function enter() { call("POST", "/queue/enter", enter, true); }
  function position() { call("GET", "/queue/position", position); }

  // solve shows how far the Worker has come: the chance it would be done by
  // now, from the expected 2^bits tries.
  function solve(c) {
    var fail = function () {
      if (worker) worker.terminate();
      worker = null;
      show("problem", "title.problem");
      problem(t("e.challenge"), "rejoin");
    };
    var done = function (p) { $("solving-progress").value = p; $("solving-pct").textContent = p + "%"; };
    if (worker) worker.terminate();
    if (!window.Worker || !window.crypto || !crypto.subtle) return fail();
    show("solving", "title.solving");
    done(0);
    var w = worker = new Worker("/waitroom/pow.js");
    w.onerror = function (e) { e.preventDefault(); fail(); };
    w.onmessage = function (e) {
      var m = e.data;
      if (m.error) return fail();
      if (!m.solution) return done(Math.min(99, Math.floor(100 - 100 * Math.exp(-m.tried / Math.pow(2, c.bits)))));
      done(100);
      w.terminate();
      worker = null;
      solution = m.solution;
      enter();
    };
    w.postMessage(c);
  }

  // listen follows the live stream; when it fails before telling anything
  // (a deployment without streams) the page polls instead.
  function listen() {
    var told = false;
    stream = new EventSource("/queue/events?room=" + encodeURIComponent(room));
    stream.addEventListener("standing", function (e) {
      told = true;
      render(JSON.parse(e.data));
    });
    stream.onerror = function () {
      closeStream();
      if (!told) conf.stream = false;
      clearTimeout(timer);
      timer = setTimeout(position, told ? 1000 : 0);
    };
  }

  function loadConfig() {
    return fetch("/waitroom/config.json", { cache: "no-store" })
      .then(function (r) { return r.ok ? r.json() : {}; })
      .then(function (c) { conf.continueUrl = c.continueUrl || ""; conf.stream = !!c.stream; }, function () {});
  }

  translate();
  $("rejoin").addEventListener("click", function () { stopTimers(); show("loading", "title.loading"); start = 0; enter(); });
  window.addEventListener("online", function () {
    var retry = pending;
    if (retry) { stopTimers(); pending = null; retry(); }
  });
  loadConfig().then(enter);
})();
