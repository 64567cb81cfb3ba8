// The local runner's demo checkout: places the order through the gate
// (POST /orders) with the entry token from the URL fragment (never sent to
// any server or log) and an Idempotency-Key kept for this token, so that a
// retry or a reload can never order twice.
"use strict";
(function () {
  var T = {
    en: { demo: "Demo shop (local runner)", title: "Checkout", item: "Item", "item.name": "55-inch TV", price: "Price",
      place: "Place order", placing: "Placing your order…", placed: "Order placed: {id}", back: "Back to the waiting room",
      "e.entry_token_invalid": "Your entry has expired or was already used. Join the line again.",
      "e.order_in_progress": "Your order is still being placed. Try again in a moment.",
      "e.no_token": "No entry token: come here from the waiting room.",
      "e.other": "The order could not be placed ({code}). Try again: you will not be charged twice." },
    ko: { demo: "데모 쇼핑몰 (로컬 실행)", title: "주문하기", item: "상품", "item.name": "55인치 TV", price: "가격",
      place: "주문하기", placing: "주문하는 중…", placed: "주문 완료: {id}", back: "대기실로 돌아가기",
      "e.entry_token_invalid": "입장 시간이 지났거나 이미 사용되었습니다. 다시 줄을 서 주세요.",
      "e.order_in_progress": "주문을 처리하는 중입니다. 잠시 후 다시 시도하세요.",
      "e.no_token": "입장 토큰이 없습니다. 대기실을 거쳐 들어와 주세요.",
      "e.other": "주문하지 못했습니다 ({code}). 다시 시도하세요. 중복 결제되지 않습니다." }
  };
  var params = new URLSearchParams(location.search);
  var asked = [params.get("lang")].concat(navigator.languages || [navigator.language]);
  var lang = "en";
  for (var i = 0; i < asked.length; i++) {
    var l = (asked[i] || "").toLowerCase().slice(0, 2);
    if (T[l]) { lang = l; break; }
  }
  var t = function (k, v) {
    return (T[lang][k] || k).replace(/\{(\w+)\}/g, function (_, n) { return v && v[n] !== undefined ? v[n] : ""; });
  };
  var $ = function (id) { return document.getElementById(id); };
  document.documentElement.lang = lang;
  var els = document.querySelectorAll("[data-t]");
  for (var j = 0; j < els.length; j++) els[j].textContent = t(els[j].getAttribute("data-t"));
  var room = params.get("room") || "default";
  $("back").href = "/?room=" + encodeURIComponent(room);

  var token = new URLSearchParams(location.hash.slice(1)).get("entryToken") || "";
  if (!token) {
    $("place").hidden = true;
    $("result").textContent = t("e.no_token");
    $("back").hidden = false;
    return;
  }
  var keyName = "waitroom-idem-" + token;
  var key = sessionStorage.getItem(keyName);
  if (!key) {
    key = crypto.randomUUID ? crypto.randomUUID() : Array.prototype.map.call(crypto.getRandomValues(new Uint8Array(16)), function (b) { return ("0" + b.toString(16)).slice(-2); }).join("");
    sessionStorage.setItem(keyName, key);
  }

  $("place").addEventListener("click", function () {
    var button = $("place");
    button.disabled = true;
    $("result").textContent = t("placing");
    fetch("/orders", {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-Entry-Token": token, "Idempotency-Key": key },
      body: JSON.stringify({ sku: "tv-55", quantity: 1 })
    }).then(function (resp) {
      return resp.json().catch(function () { return {}; }).then(function (body) {
        if (resp.ok) {
          $("main").setAttribute("data-state", "placed");
          button.hidden = true;
          $("result").textContent = t("placed", { id: body.orderId || "" });
          return;
        }
        var code = body.error || String(resp.status);
        $("result").textContent = T[lang]["e." + code] ? t("e." + code) : t("e.other", { code: code });
        button.disabled = code === "entry_token_invalid";
        $("back").hidden = code !== "entry_token_invalid";
      });
    }, function () {
      $("result").textContent = t("e.other", { code: "network" });
      button.disabled = false;
    });
  });
})();
