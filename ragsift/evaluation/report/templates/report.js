// report.html's only script (inline, no network): sortable tables, the compare view's choice of
// two compressors and its filter, links from the results table. The page reads the same without it.
(function () {
  "use strict";
  document.querySelectorAll("table.sortable").forEach(function (table) {
    table.querySelectorAll("thead th").forEach(function (th, col) {
      th.addEventListener("click", function () {
        var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
        var down = th.getAttribute("data-order") !== "desc";
        th.setAttribute("data-order", down ? "desc" : "asc");
        var key = function (row) {
          var cell = row.cells[col], v = cell ? cell.getAttribute("data-v") : null;
          var n = v === null ? NaN : parseFloat(v);
          return isNaN(n) ? (v || (cell ? cell.textContent : "")) : n;
        };
        rows.sort(function (x, y) {
          var a = key(x), b = key(y);
          var c = typeof a === "number" && typeof b === "number" ? a - b : String(a).localeCompare(String(b));
          return down ? -c : c;
        });
        rows.forEach(function (row) { body.appendChild(row); });
      });
    });
  });

  var data = document.getElementById("compare-data");
  if (!data) { return; }
  data = JSON.parse(data.textContent);
  var selA = document.getElementById("compare-a"), selB = document.getElementById("compare-b");
  var filter = document.getElementById("compare-filter"), body = document.getElementById("compare-body");

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) { node.className = cls; }
    if (text !== undefined) { node.textContent = text; }
    return node;
  }
  function prompt(q, context) {
    var t = data.template;
    if (!t) { return null; }
    var unbrace = function (s) { return s.replace(/\{\{/g, "{").replace(/\}\}/g, "}"); };
    var fill = function (s) {
      return s.split("{context}").map(function (part) { return part.split("{query}").map(unbrace).join(q.q); }).join(context);
    };
    return [t.system ? fill(t.system) : "", fill(t.user)].filter(Boolean).join("\n");
  }
  function side(label, q) {
    var s = q.sides[label], box = el("div", "side");
    if (!s) { box.appendChild(el("p", "muted", label + ": not run on this question")); return box; }
    var who = el("div", "who", label + ": ");
    who.appendChild(s.prediction === null ? el("span", "muted", "not read") :
      el("span", s.em === 1 ? "right" : (s.em === 0 ? "wrong" : ""), s.prediction));
    if (s.em !== null) { who.appendChild(el("span", "muted", " (EM " + Math.round(100 * s.em) + ", F1 " + Math.round(100 * s.f1) + ")")); }
    box.appendChild(who);
    if (s.all_kept) { box.appendChild(el("p", "muted", "keeps all " + s.sentences + " sentences (the full documents)")); }
    else if (!s.kept.length) { box.appendChild(el("p", "muted", "keeps nothing")); }
    else {
      var list = el("ol", "kept");
      s.kept.forEach(function (k) {
        var text = typeof k[0] === "number" ? s.context.substr(k[0], k[4]) : k[0];
        var li = el("li", "lv" + k[1] + (k[3] ? " gold" : ""), text);
        if (k[2]) { li.title = k[2]; }
        list.appendChild(li);
      });
      box.appendChild(list);
    }
    var shown = s.all_kept ? "[the full documents: all " + s.sentences + " sentences]" : s.context;
    var text = shown === null ? null : prompt(q, shown);
    if (text) {
      var d = el("details", "prompt");
      d.appendChild(el("summary", "", "reader prompt"));
      d.appendChild(el("pre", "", text));
      box.appendChild(d);
    }
    return box;
  }
  function kind(q, a, b) {
    var x = q.sides[a], y = q.sides[b];
    if (!x || !y || x.em === null || y.em === null || x.em === y.em) { return "same"; }
    return x.em > y.em ? "a-right" : "b-right";
  }
  var KIND = {"a-right": "A right, B wrong", "b-right": "B right, A wrong", "same": ""};
  function render() {
    var a = selA.value, b = selB.value, want = filter.value;
    document.getElementById("compare-head-a").textContent = "A: " + a;
    document.getElementById("compare-head-b").textContent = "B: " + b;
    var rows = data.questions.map(function (q) {
      var x = q.sides[a], y = q.sides[b], f1 = x && y && x.f1 !== null && y.f1 !== null ? Math.abs(x.f1 - y.f1) : 0;
      return {q: q, kind: kind(q, a, b), f1: f1};
    });
    var rank = {"a-right": 0, "b-right": 1, "same": 2};
    rows.sort(function (r, s) { return rank[r.kind] - rank[s.kind] || s.f1 - r.f1 || r.q.pos - s.q.pos; });
    rows = rows.filter(function (r) {
      return want === "all" || r.kind === want || (want === "em" && r.kind !== "same");
    });
    body.textContent = "";
    rows.forEach(function (r) {
      var tr = el("tr", r.kind), first = el("td"), link = el("a", "", r.q.q);
      tr.setAttribute("data-id", r.q.id);
      link.href = "#ex-" + r.q.id;
      first.appendChild(link);
      first.appendChild(el("div", "muted", KIND[r.kind]));
      tr.appendChild(first);
      [a, b].forEach(function (label) { var td = el("td"); td.appendChild(side(label, r.q)); tr.appendChild(td); });
      body.appendChild(tr);
    });
  }
  function highlight(label) {
    document.querySelectorAll("details.ex input[type=radio]").forEach(function (r) {
      if (r.getAttribute("data-label") === label) { r.checked = true; }
    });
  }
  function fromHash() {
    var m = /^#compare=(.*)$/.exec(location.hash);
    if (!m) { return; }
    var pair = decodeURIComponent(m[1]).split(",");
    if (data.labels.indexOf(pair[0]) >= 0) { selA.value = pair[0]; highlight(pair[0]); }
    if (pair.length > 1 && data.labels.indexOf(pair[1]) >= 0) { selB.value = pair[1]; }
    render();
  }
  [selA, selB, filter].forEach(function (s) { s.addEventListener("change", render); });
  window.addEventListener("hashchange", fromHash);
  fromHash();
})();
