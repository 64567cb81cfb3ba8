// The proof of work (docs/API.md), off the page's thread: the smallest n whose
// SHA-256("<value>.<n>") begins with `bits` zero bits. Digests go out in
// batches: awaited one by one, WebCrypto would wait more than it hashes.
"use strict";
var BATCH = 2048;
onmessage = function (e) {
  var prefix = e.data.value + ".", bits = e.data.bits, enc = new TextEncoder(), n = 0;
  function zeros(sum) {
    var b = new Uint8Array(sum), z = 0;
    for (var i = 0; i < b.length && !b[i]; i++) z += 8;
    return i < b.length ? z + Math.clz32(b[i]) - 24 : z;
  }
  (function batch() {
    var sums = [];
    for (var i = 0; i < BATCH; i++) sums.push(crypto.subtle.digest("SHA-256", enc.encode(prefix + (n + i))));
    Promise.all(sums).then(function (done) {
      for (var i = 0; i < done.length; i++) {
        if (zeros(done[i]) >= bits) return postMessage({ solution: prefix + (n + i), tried: n + i + 1 });
      }
      n += BATCH;
      postMessage({ tried: n });
      batch();
    }, function (err) { postMessage({ error: String(err) }); });
  })();
};
