/* The map of the papers (/map): every placed paper as a dot on a 2-D canvas.
 *
 * Data: GET /api/map/points (binary; the layout is in web/topic_map.py's encode_points), fetched without
 * credentials so every reader shares the public cached copy. Drawing writes the dots straight into an
 * ImageData buffer (one 32-bit store per pixel, no path per dot), which keeps a frame of 200,000 dots to
 * a few milliseconds without a GPU; the same pass fills a pick buffer (which dot is at which pixel), so
 * hovering needs no search structure. Labels are drawn on top: coarse topics when zoomed out, fine ones
 * when zoomed in. No inline script or style: the site's CSP allows neither.
 *
 * Topics: clicking a label (or T over a dot) opens a small panel about that topic. For a signed-in reader
 * the page carries data-picks-url (/api/me/topics) and a Pick button: the picks are read from that URL
 * (private to the reader; the page itself and the points stay the same for everyone and publicly cached)
 * and changed with PUT/DELETE, sending the page's CSRF token as X-CSRF-Token like every script here.
 * Picked topics' labels are always drawn, first, on an accent-coloured pill with a check mark.
 *
 * Colours: each fine topic gets one of PALETTE's 12 well-separated colours, chosen so that topics near each
 * other on the map differ (greedily, biggest topic first: the colour whose nearest topic already wearing
 * it is farthest away). A search's matches are drawn bigger in the page's ink (near-black, near-white in
 * the dark theme), which no topic wears, ringed in the map's background, and every other dot fades while
 * they are shown. Labels stay whole inside the canvas (shifted in from the edges, shortened when a name is
 * wider than the map, never under the zoom buttons), never overlap (a label that would is not drawn,
 * bigger topics first) and sit on a plate of the map's background, so the dots under a name never cross
 * its letters. Zoom 1 fits the middle 99 % of the papers (a few outliers do not shrink the rest to a
 * corner), and on a phone the map's box takes the layout's proportions, so the dots fill it.
 * On a touch screen one finger pans, two pinch-zoom, a tap on a dot shows its title and a second tap
 * opens the paper.
 */
(function () {
  "use strict";

  var root = document.getElementById("paper-map");
  if (!root) return;
  var canvas = document.getElementById("map-canvas");
  var ctx = canvas.getContext("2d");
  var frame = canvas.parentNode;
  var tip = document.getElementById("map-tip");
  var statusLine = document.getElementById("map-status");
  var fromInput = document.getElementById("map-from");
  var toInput = document.getElementById("map-to");
  var catSelect = document.getElementById("map-cat");
  var searchForm = document.getElementById("map-search");
  var searchInput = document.getElementById("map-q");
  var clearButton = document.getElementById("map-clear");
  var panel = document.getElementById("map-topic");
  var panelLink = document.getElementById("map-topic-link");
  var panelSize = document.getElementById("map-topic-size");
  var pickButton = document.getElementById("map-topic-pick"); // only for a signed-in reader
  var pickNote = document.getElementById("map-topic-note");
  var picksUrl = root.dataset.picksUrl || "";
  root.hidden = false;

  // 12 colours far apart in hue and lightness, none too pale for a white map nor too dark for a dark one
  var PALETTE = [
    "#e6194b", "#3cb44b", "#4363d8", "#f58231", "#911eb4", "#42d4f4",
    "#f032e6", "#a9d134", "#9a6324", "#469990", "#808000", "#ff8fa3"
  ];
  var EDGE = 4; // CSS pixels kept free between a label and the canvas's edge
  var DARK = window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;
  var INK = DARK ? "#f4f5f7" : "#111318"; // a search's matches: the page's ink, which no topic wears
  var PAPER = DARK ? "#161920" : "#ffffff"; // the map's background: rings around matches, label plates
  var FADED = 70; // the alpha (of 255) of the other dots while matches are shown
  var FIT_SHARE = 0.99; // zoom 1 fits this share of the papers along each axis
  var PHONE = window.matchMedia ? window.matchMedia("(max-width: 40rem)") : null;
  var FINE_ZOOM = 2.5; // fine topic labels from this zoom on, coarse ones below it
  var MIN_ZOOM = 0.5, MAX_ZOOM = 512;

  var data = null; // the decoded answer
  var visible = null; // Uint8Array: passes the filters
  var highlighted = []; // indices of search matches
  var focusIndex = -1; // the paper of ?paper=
  var view = { cx: 0, cy: 0, zoom: 1 }; // centre in quantised units, zoom 1 fits the map
  var image = null, pixels = null, pick = null;
  var width = 0, height = 0, dpr = 1, baseScale = 1;
  var pending = false;
  var hoverIndex = -1;
  var titles = new Map();
  var picked = new Set(); // the reader's picked topic ids (empty when anonymous)
  var labelBoxes = []; // the labels drawn last frame: {topic, box: [x0, y0, x1, y1] in canvas pixels}
  var selected = null; // the topic shown in the panel
  var idIndex = null;
  var stats = { firstRender: null, renders: [] };
  canvas.paperMapStats = stats;

  function say(text) { statusLine.textContent = text; }

  // -- decoding -------------------------------------------------------------------------------------------

  function decode(buffer) {
    var bytes = new Uint8Array(buffer);
    var magic = String.fromCharCode.apply(null, bytes.subarray(0, 6));
    if (magic !== "PFMAP1") throw new Error("not a map answer");
    var headerLength = new DataView(buffer).getUint32(8, true);
    var header = JSON.parse(new TextDecoder().decode(bytes.subarray(12, 12 + headerLength)));
    var n = header.count;
    var offset = 12 + headerLength;
    function column() {
      var c = new Uint16Array(buffer, offset, n);
      offset += 2 * n;
      return c;
    }
    var out = {
      header: header, n: n, x: column(), y: column(), topic: column(), day: column(), cat: column(),
      ids: new Array(n)
    };
    var decoder = new TextDecoder();
    var previous = new Uint8Array(0);
    for (var i = 0; i < n; i++) {
      var shared = bytes[offset], rest = bytes[offset + 1];
      var id = new Uint8Array(shared + rest);
      id.set(previous.subarray(0, shared));
      id.set(bytes.subarray(offset + 2, offset + 2 + rest), shared);
      offset += 2 + rest;
      out.ids[i] = decoder.decode(id);
      previous = id;
    }
    var b = header.bounds;
    out.spanX = Math.max(b[2] - b[0], 1e-12);
    out.spanY = Math.max(b[3] - b[1], 1e-12);
    out.colors = new Uint32Array(header.topics.length + 1);
    var little = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;
    var tones = topicColors(header.topics);
    header.topics.forEach(function (t, k) {
      out.colors[k] = packColor(tones.get(t.id) || "#888888", little);
    });
    out.tones = tones;
    out.colors[header.topics.length] = packColor("#888888", little);
    out.faded = new Uint32Array(out.colors.length); // the same colours, faded: while matches are shown
    for (var c = 0; c < out.colors.length; c++) out.faded[c] = withAlpha(out.colors[c], FADED, little);
    out.highlight = packColor(INK, little);
    out.ring = packColor(PAPER, little);
    out.little = little;
    return out;
  }

  function topicColors(topics) { // fine topic id -> colour; neighbours on the map get different ones
    var fine = topics.filter(function (t) { return t.level !== 1; })
      .sort(function (a, b) { return b.size - a.size || a.id - b.id; });
    var wearing = PALETTE.map(function () { return []; }); // per colour, the topics given it so far
    var out = new Map();
    fine.forEach(function (t) {
      var best = 0, bestDistance = -1;
      for (var c = 0; c < PALETTE.length; c++) {
        var nearest = Infinity;
        wearing[c].forEach(function (o) {
          var d = (o.x - t.x) * (o.x - t.x) + (o.y - t.y) * (o.y - t.y);
          if (d < nearest) nearest = d;
        });
        if (nearest > bestDistance) { bestDistance = nearest; best = c; }
        if (nearest === Infinity) break; // an unused colour: the first one is as good as any
      }
      wearing[best].push(t);
      out.set(t.id, PALETTE[best]);
    });
    return out;
  }

  function withAlpha(packed, alpha, little) {
    return little ? (((packed & 0x00ffffff) | (alpha << 24)) >>> 0) : (((packed & 0xffffff00) | alpha) >>> 0);
  }

  function packColor(hex, little) {
    var r = parseInt(hex.slice(1, 3), 16), g = parseInt(hex.slice(3, 5), 16), b = parseInt(hex.slice(5, 7), 16);
    return little ? ((255 << 24) | (b << 16) | (g << 8) | r) >>> 0 : ((r << 24) | (g << 16) | (b << 8) | 255) >>> 0;
  }

  // -- geometry: quantised map units (0..quant, y up) <-> canvas pixels ----------------------------------

  function scale() { return baseScale * view.zoom; }

  function resize() {
    var rect = canvas.getBoundingClientRect();
    dpr = window.devicePixelRatio || 1;
    width = Math.max(1, Math.round(rect.width * dpr));
    height = Math.max(1, Math.round(rect.height * dpr));
    canvas.width = width;
    canvas.height = height;
    image = ctx.createImageData(width, height);
    pixels = new Uint32Array(image.data.buffer);
    pick = new Int32Array(width * height);
    if (data && data.fit) {
      // zoom 1: the middle of the papers fits with a margin (scale in pixels per map unit)
      var q = data.header.quant, f = data.fit;
      baseScale = 0.94 * Math.min(width / (data.spanX * (f[2] - f[0]) / q), height / (data.spanY * (f[3] - f[1]) / q));
    }
    request();
  }

  function fitBox() { // [x0, y0, x1, y1] in quantised units holding FIT_SHARE of the papers on each axis
    var n = data.n, q = data.header.quant;
    if (n < 20) return [0, 0, q, q];
    var xs = Array.from(data.x).sort(function (a, b) { return a - b; });
    var ys = Array.from(data.y).sort(function (a, b) { return a - b; });
    var lo = Math.floor((1 - FIT_SHARE) / 2 * (n - 1)), hi = Math.ceil((1 + FIT_SHARE) / 2 * (n - 1));
    var box = [xs[lo], ys[lo], xs[hi], ys[hi]];
    var minSpan = q / 50; // a degenerate layout (all papers on a line) still gets a box
    for (var a = 0; a < 2; a++) {
      if (box[a + 2] - box[a] < minSpan) {
        var mid = (box[a] + box[a + 2]) / 2;
        box[a] = mid - minSpan / 2;
        box[a + 2] = mid + minSpan / 2;
      }
    }
    return box;
  }

  function shapeFrame() { // a phone: the box takes the layout's proportions (between 280 px and 70 % of the screen)
    if (!PHONE || !PHONE.matches) {
      frame.style.height = "";
      return;
    }
    var f = data.fit, q = data.header.quant;
    var aspect = (data.spanY * (f[3] - f[1])) / (data.spanX * (f[2] - f[0]));
    var wanted = frame.clientWidth * aspect / 0.94 + 8;
    frame.style.height = Math.round(Math.max(280, Math.min(window.innerHeight * 0.7, wanted))) + "px"; // CSSOM: allowed by the CSP
  }

  function transform() {
    var q = data.header.quant, s = scale();
    var ax = s * data.spanX / q, ay = -s * data.spanY / q;
    return { ax: ax, bx: width / 2 - view.cx * ax, ay: ay, by: height / 2 - view.cy * ay };
  }

  function mapPoint(x, y) { // a topic's centre in map coordinates -> quantised units
    var b = data.header.bounds, q = data.header.quant;
    return [(x - b[0]) / data.spanX * q, (y - b[1]) / data.spanY * q];
  }

  // -- drawing ---------------------------------------------------------------------------------------------

  function request() {
    if (!pending && data) {
      pending = true;
      window.requestAnimationFrame(render);
    }
  }

  function dotSize() {
    var base = data.n < 5000 ? 4 : data.n < 50000 ? 2 : 1;
    var grow = Math.floor(Math.log2(Math.max(view.zoom, 1)) / 2);
    return Math.min(6, Math.round((base + grow) * Math.max(1, dpr * 0.75)));
  }

  function render() {
    pending = false;
    var started = performance.now();
    var t = transform();
    var n = data.n, xs = data.x, ys = data.y, topic = data.topic;
    var colors = highlighted.length ? data.faded : data.colors;
    var dot = dotSize(), half = dot >> 1;
    var maxX = width - dot, maxY = height - dot;
    pixels.fill(0);
    pick.fill(-1);
    var drawn = 0;
    for (var i = 0; i < n; i++) {
      if (!visible[i]) continue;
      var px = (xs[i] * t.ax + t.bx - half) | 0;
      var py = (ys[i] * t.ay + t.by - half) | 0;
      if (px < 0 || py < 0 || px > maxX || py > maxY) continue;
      var color = colors[topic[i]];
      var row = py * width + px;
      for (var dy = 0; dy < dot; dy++) {
        var at = row + dy * width;
        for (var dx = 0; dx < dot; dx++) {
          pixels[at + dx] = color;
          pick[at + dx] = i;
        }
      }
      drawn++;
    }
    var big = dot + 4, bigHalf = big >> 1, rim = Math.max(1, Math.round(dpr));
    var shown = 0;
    for (var h = 0; h < highlighted.length; h++) {
      var k = highlighted[h];
      if (!visible[k]) continue;
      var hx = (xs[k] * t.ax + t.bx - bigHalf) | 0;
      var hy = (ys[k] * t.ay + t.by - bigHalf) | 0;
      if (hx < rim || hy < rim || hx > width - big - rim || hy > height - big - rim) continue;
      for (var ey = -rim; ey < big + rim; ey++) {
        for (var ex = -rim; ex < big + rim; ex++) {
          var inside = ey >= 0 && ex >= 0 && ey < big && ex < big;
          var at2 = (hy + ey) * width + hx + ex;
          if (!inside && pixels[at2] === data.highlight) continue; // a neighbouring match's ink stays
          pixels[at2] = inside ? data.highlight : data.ring;
          pick[at2] = k;
        }
      }
      shown++;
    }
    ctx.putImageData(image, 0, 0);
    drawLabels(t);
    drawRing(t, focusIndex, INK, 11);
    drawRing(t, hoverIndex, "#111111", 7);
    canvas.dataset.drawn = String(drawn);
    canvas.dataset.highlighted = String(shown);
    canvas.dataset.zoom = view.zoom.toFixed(3);
    var took = performance.now() - started;
    if (stats.firstRender === null) {
      stats.firstRender = performance.now();
      canvas.dataset.ready = "1";
    }
    stats.renders.push(took);
    if (stats.renders.length > 2000) stats.renders.splice(0, 1000);
  }

  function drawRing(t, index, color, radius) {
    if (index < 0 || !visible[index]) return;
    var x = data.x[index] * t.ax + t.bx, y = data.y[index] * t.ay + t.by;
    ctx.beginPath();
    ctx.arc(x, y, radius * dpr, 0, 2 * Math.PI);
    ctx.lineWidth = 2 * dpr;
    ctx.strokeStyle = color;
    ctx.stroke();
  }

  function labelTopics() {
    var topics = data.header.topics;
    var coarse = topics.filter(function (t) { return t.level === 1; });
    var fine = topics.filter(function (t) { return t.level !== 1; });
    if (view.zoom >= FINE_ZOOM) return fine;
    if (coarse.length) return coarse;
    return fine.slice().sort(function (a, b) { return b.size - a.size; }).slice(0, 12);
  }

  function blocked() { // canvas-pixel boxes no label may cover: the zoom buttons over the map
    var frameRect = canvas.getBoundingClientRect();
    return Array.prototype.map.call(frame.querySelectorAll(".map-zoom"), function (el) {
      var r = el.getBoundingClientRect();
      return [(r.left - frameRect.left - EDGE) * dpr, (r.top - frameRect.top - EDGE) * dpr,
        (r.right - frameRect.left + EDGE) * dpr, (r.bottom - frameRect.top + EDGE) * dpr];
    });
  }

  function fitted(text, room, pad) { // ``text`` shortened with an ellipsis until it fits ``room`` pixels
    if (ctx.measureText(text).width + pad <= room) return text;
    var cut = text;
    while (cut.length > 3 && ctx.measureText(cut + "…").width + pad > room) cut = cut.slice(0, -1);
    return cut.length > 3 ? cut.replace(/[\s,;]+$/, "") + "…" : null;
  }

  function drawLabels(t) {
    var chosen = labelTopics();
    var coarse = view.zoom < FINE_ZOOM;
    var bySize = function (a, b) { return b.size - a.size || a.id - b.id; }; // big topics win a clash
    var mine = data.header.topics.filter(function (tp) { return picked.has(tp.id); }).sort(bySize);
    var rest = chosen.filter(function (tp) { return !picked.has(tp.id); }).sort(bySize);
    var size = Math.round((coarse ? 15 : 12) * dpr);
    var dark = window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;
    ctx.textAlign = "center";
    ctx.textBaseline = "middle";
    ctx.lineJoin = "round";
    var buttons = blocked();
    var taken = buttons.slice();
    var labelled = 0, pickedShown = 0;
    var edge = EDGE * dpr;
    labelBoxes = [];
    function place(topic, isPicked) {
      ctx.font = (coarse || isPicked ? "600 " : "") + size + "px system-ui, sans-serif";
      var q = mapPoint(topic.x, topic.y);
      var x = q[0] * t.ax + t.bx, y = q[1] * t.ay + t.by;
      if (x < 0 || x > width || y < 0 || y > height) return; // its topic is off the map's view
      var pad = (isPicked ? 14 : 6) * dpr;
      var text = topic.label.length > 40 ? topic.label.slice(0, 39) + "…" : topic.label;
      text = fitted(isPicked ? "✓ " + text : text, width - 2 * edge, pad);
      if (text === null) return;
      var w = ctx.measureText(text).width + pad, hgt = size + (isPicked ? 8 : 4) * dpr;
      if (hgt > height - 2 * edge) return;
      // centred on its topic and shifted in just enough to stay whole inside the canvas; where that spot
      // is taken, just below or above it (a label under the zoom buttons moves off them, not away)
      var box = null;
      var step = hgt + 2 * dpr;
      var spots = [[0, 0], [0, step], [0, -step]];
      buttons.forEach(function (b) { spots.push([Math.min(0, b[0] - (x + w / 2)), 0]); }); // left of them
      for (var k = 0; k < spots.length && box === null; k++) {
        var left = Math.min(Math.max(x - w / 2 + spots[k][0], edge), width - edge - w);
        var top = Math.min(Math.max(y - hgt / 2 + spots[k][1], edge), height - edge - hgt);
        var tried = [left, top, left + w, top + hgt];
        var clash = taken.some(function (o) { return tried[0] < o[2] && o[0] < tried[2] && tried[1] < o[3] && o[1] < tried[3]; });
        if (!clash) box = tried;
      }
      if (box === null) return; // no room near its topic: a bigger topic's name is there
      x = box[0] + w / 2;
      y = box[1] + hgt / 2;
      taken.push(box);
      labelBoxes.push({ topic: topic, box: box, picked: isPicked });
      if (isPicked) {
        ctx.beginPath();
        if (ctx.roundRect) ctx.roundRect(box[0], box[1], w, hgt, hgt / 2);
        else ctx.rect(box[0], box[1], w, hgt);
        ctx.fillStyle = dark ? "#a5b4fc" : "#4338ca";
        ctx.fill();
        ctx.lineWidth = 1.5 * dpr;
        ctx.strokeStyle = dark ? "#161920" : "#ffffff";
        ctx.stroke();
        ctx.fillStyle = dark ? "#11131a" : "#ffffff";
        ctx.fillText(text, x, y);
        pickedShown++;
      } else {
        // a plate of the map's background under the name (a halo the dots cannot cross), then the name
        ctx.beginPath();
        if (ctx.roundRect) ctx.roundRect(box[0], box[1], w, hgt, 4 * dpr);
        else ctx.rect(box[0], box[1], w, hgt);
        ctx.fillStyle = dark ? "rgba(22,25,32,0.86)" : "rgba(255,255,255,0.86)";
        ctx.fill();
        ctx.fillStyle = dark ? "#e7e9ee" : "#1a1d23";
        ctx.fillText(text, x, y);
      }
      labelled++;
    }
    mine.forEach(function (tp) { place(tp, true); });
    rest.forEach(function (tp) { place(tp, false); });
    canvas.dataset.labels = String(labelled);
    canvas.dataset.pickedLabels = String(pickedShown);
    canvas.dataset.labelLevel = coarse ? "coarse" : "fine";
    canvas.paperMapLabels = labelBoxes.map(function (l) { // CSS pixels within the canvas, for tests
      return { id: l.topic.id, label: l.topic.label, picked: l.picked,
        left: l.box[0] / dpr, top: l.box[1] / dpr, right: l.box[2] / dpr, bottom: l.box[3] / dpr };
    });
    canvas.paperMapBlocked = buttons.map(function (b) {
      return { left: b[0] / dpr, top: b[1] / dpr, right: b[2] / dpr, bottom: b[3] / dpr };
    });
  }

  function labelAt(clientX, clientY) { // the topic whose label is under the pointer, or null
    if (!data) return null;
    var rect = canvas.getBoundingClientRect();
    var x = (clientX - rect.left) * dpr, y = (clientY - rect.top) * dpr;
    for (var i = labelBoxes.length - 1; i >= 0; i--) {
      var b = labelBoxes[i].box;
      if (x >= b[0] && x <= b[2] && y >= b[1] && y <= b[3]) return labelBoxes[i].topic;
    }
    return null;
  }

  // -- a topic's panel and picking it for "For you" -------------------------------------------------------

  function topicById(id) {
    var found = null;
    data.header.topics.forEach(function (tp) { if (tp.id === id) found = tp; });
    return found;
  }

  function plural(n, word) { return n.toLocaleString() + " " + word + (n === 1 ? "" : "s"); }

  function openTopic(topic, byKeyboard) {
    selected = topic;
    panelLink.textContent = topic.label;
    panelLink.href = topic.url;
    var about = plural(topic.size, "paper");
    if (topic.level === 1) about += " · a broad topic";
    else if (topic.parent !== null && topic.parent !== undefined) {
      var parent = topicById(topic.parent);
      if (parent && parent.id !== topic.id) about += " · part of " + parent.label;
    }
    panelSize.textContent = about;
    panel.dataset.topic = String(topic.id);
    if (pickNote) pickNote.textContent = "";
    syncPickButton();
    panel.hidden = false;
    if (byKeyboard) panelLink.focus();
  }

  function closeTopic() {
    var hadFocus = panel.contains(document.activeElement);
    panel.hidden = true;
    selected = null;
    delete panel.dataset.topic;
    if (hadFocus) canvas.focus();
  }

  function syncPickButton() {
    if (!pickButton || !selected) return;
    var on = picked.has(selected.id);
    pickButton.setAttribute("aria-pressed", on ? "true" : "false");
    pickButton.textContent = on ? "Picked for you ✓" : "Pick for “For you”";
    pickButton.title = on ? "Picked for “For you”: click to remove it" : "Show recent papers of this topic in “For you”";
  }

  function setPicked(list) {
    picked = new Set(list.map(function (p) { return p.id; }));
    root.dataset.picked = list.map(function (p) { return p.id; }).join(",");
    syncPickButton();
    request();
  }

  function answer(r) { // the JSON body, or an Error carrying the API's message
    return r.json().catch(function () { return {}; }).then(function (body) {
      if (!r.ok) throw new Error(body.error || ("the server answered " + r.status));
      return body;
    });
  }

  function loadPicks() {
    fetch(picksUrl, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(answer)
      .then(setPicked)
      .catch(function (e) {
        if (pickNote) pickNote.textContent = "Your picks could not be read: " + String(e.message || e);
      });
  }

  function togglePick() {
    if (!selected || !picksUrl) return;
    var topic = selected, on = picked.has(topic.id);
    var meta = document.querySelector('meta[name="csrf-token"]');
    pickButton.disabled = true;
    pickNote.textContent = on ? "Removing…" : "Picking…";
    fetch(picksUrl + "/" + encodeURIComponent(String(topic.id)), {
      method: on ? "DELETE" : "PUT",
      credentials: "same-origin",
      headers: { Accept: "application/json", "X-CSRF-Token": meta ? meta.content : "" }
    })
      .then(answer)
      .then(function (body) {
        setPicked(body.topics);
        if (on) pickNote.textContent = "Removed from “For you”.";
        else if (body.picked && body.picked.id !== topic.id) pickNote.textContent = "This topic became “" + body.picked.label + "”: picked that one.";
        else pickNote.textContent = "Picked: “For you” shows recent papers of this topic.";
      })
      .catch(function (e) {
        pickNote.textContent = String(e.message || e);
        loadPicks(); // another tab may have changed them: show what is stored
      })
      .then(function () { pickButton.disabled = false; });
  }

  // -- filters ---------------------------------------------------------------------------------------------

  function dayOf(value) { // "YYYY-MM-DD" -> days since the epoch, or null
    if (!value) return null;
    var ms = Date.parse(value + "T00:00:00Z");
    return isNaN(ms) ? null : Math.floor(ms / 86400000);
  }

  function applyFilters() {
    var from = dayOf(fromInput.value), to = dayOf(toInput.value);
    var cat = catSelect.value === "" ? -1 : Number(catSelect.value);
    var n = data.n, days = data.day, cats = data.cat, count = 0;
    for (var i = 0; i < n; i++) {
      var ok = true;
      if (from !== null && (days[i] === 0 || days[i] < from)) ok = false;
      else if (to !== null && (days[i] === 0 || days[i] > to)) ok = false;
      else if (cat >= 0 && cats[i] !== cat) ok = false;
      visible[i] = ok ? 1 : 0;
      count += ok ? 1 : 0;
    }
    canvas.dataset.visible = String(count);
    say(count === n ? n.toLocaleString() + " papers on the map."
      : count.toLocaleString() + " of " + n.toLocaleString() + " papers shown.");
    request();
  }

  function fillFilters() {
    var cats = data.header.categories;
    var counts = new Uint32Array(cats.length);
    var minDay = Infinity, maxDay = 0;
    for (var i = 0; i < data.n; i++) {
      counts[data.cat[i]]++;
      var d = data.day[i];
      if (d) { if (d < minDay) minDay = d; if (d > maxDay) maxDay = d; }
    }
    cats.forEach(function (name, k) {
      var option = document.createElement("option");
      option.value = String(k);
      option.textContent = (name || "(none)") + " (" + counts[k].toLocaleString() + ")";
      catSelect.appendChild(option);
    });
    if (maxDay) {
      var first = new Date(minDay * 86400000).toISOString().slice(0, 10);
      var last = new Date(maxDay * 86400000).toISOString().slice(0, 10);
      [fromInput, toInput].forEach(function (input) { input.min = first; input.max = last; });
    }
  }

  // -- hover, click, search ------------------------------------------------------------------------------

  function pointAt(clientX, clientY, reach) { // ``reach``: CSS pixels around the pointer (a finger: more)
    var rect = canvas.getBoundingClientRect();
    var x = Math.round((clientX - rect.left) * dpr), y = Math.round((clientY - rect.top) * dpr);
    var r = Math.round((reach || 6) * dpr), best = -1, bestD = Infinity;
    for (var dy = -r; dy <= r; dy++) {
      var yy = y + dy;
      if (yy < 0 || yy >= height) continue;
      for (var dx = -r; dx <= r; dx++) {
        var xx = x + dx;
        if (xx < 0 || xx >= width) continue;
        var k = pick[yy * width + xx];
        if (k >= 0) {
          var d = dx * dx + dy * dy;
          if (d < bestD) { bestD = d; best = k; }
        }
      }
    }
    return best;
  }

  var titleTimer = 0;

  function showTip(index, clientX, clientY) {
    if (index < 0) {
      tip.hidden = true;
      canvas.classList.remove("over-point");
      return;
    }
    canvas.classList.add("over-point");
    var id = data.ids[index];
    var topic = data.header.topics[data.topic[index]];
    tip.textContent = "";
    var title = document.createElement("span");
    title.className = "map-tip-title";
    title.textContent = titles.has(id) ? titles.get(id) : "…";
    var small = document.createElement("small");
    small.textContent = id + (topic ? " · " + topic.label : "");
    tip.appendChild(title);
    tip.appendChild(small);
    var rect = frame.getBoundingClientRect();
    var left = clientX - rect.left + 14, top = clientY - rect.top + 14;
    tip.hidden = false;
    if (left + tip.offsetWidth > rect.width) left = Math.max(0, clientX - rect.left - tip.offsetWidth - 14);
    if (top + tip.offsetHeight > rect.height) top = Math.max(0, clientY - rect.top - tip.offsetHeight - 14);
    tip.style.left = left + "px"; // CSSOM, which the CSP allows (unlike a style attribute)
    tip.style.top = top + "px";
    tip.dataset.paper = id;
    if (!titles.has(id)) {
      window.clearTimeout(titleTimer);
      titleTimer = window.setTimeout(function () { fetchTitle(id); }, 60);
    }
  }

  function fetchTitle(id) {
    var url = root.dataset.titlesUrl + "?ids=" + encodeURIComponent(id);
    fetch(url, { credentials: "omit" })
      .then(function (r) { return r.ok ? r.json() : { titles: {} }; })
      .then(function (body) {
        titles.set(id, body.titles[id] || "(title unavailable)");
        if (hoverIndex >= 0 && data.ids[hoverIndex] === id) {
          var span = tip.querySelector(".map-tip-title");
          if (span) span.textContent = titles.get(id);
        }
      })
      .catch(function () { titles.delete(id); });
  }

  function paperHref(id) {
    return "/papers/" + encodeURIComponent(id).replace(/%2F/g, "/").replace(/%3A/g, ":");
  }

  function indexOf(id) {
    if (idIndex === null) {
      idIndex = new Map();
      for (var i = 0; i < data.n; i++) idIndex.set(data.ids[i], i);
    }
    var found = idIndex.get(id);
    return found === undefined ? -1 : found;
  }

  function search(q) {
    var url = root.dataset.searchUrl + "?q=" + encodeURIComponent(q) + "&limit=120";
    say("Searching…");
    fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) {
        if (!r.ok) return r.json().then(function (b) { throw new Error(b.error || ("search failed: " + r.status)); });
        return r.json();
      })
      .then(function (items) {
        var found = [];
        items.forEach(function (item) {
          var k = indexOf(item.paper.id);
          if (k >= 0) found.push(k);
        });
        highlighted = found;
        clearButton.hidden = false;
        var onMap = found.filter(function (k) { return visible[k]; }).length;
        say(items.length + " result" + (items.length === 1 ? "" : "s") + " for “" + q + "”: " + found.length +
          " on the map" + (onMap < found.length ? " (" + onMap + " within the filters)" : "") + ", drawn large in " + (DARK ? "white" : "black") + " while the others fade.");
        request();
      })
      .catch(function (e) { say(String(e.message || e)); });
  }

  // -- moving ----------------------------------------------------------------------------------------------

  function zoomAround(factor, px, py) { // px, py in canvas pixels; keep that point still
    var t = transform();
    var qx = (px - t.bx) / t.ax, qy = (py - t.by) / t.ay;
    view.zoom = Math.min(MAX_ZOOM, Math.max(MIN_ZOOM, view.zoom * factor));
    var t2 = transform();
    view.cx += qx - (px - t2.bx) / t2.ax;
    view.cy += qy - (py - t2.by) / t2.ay;
    request();
  }

  function panBy(dx, dy) { // canvas pixels
    var t = transform();
    view.cx -= dx / t.ax;
    view.cy -= dy / t.ay;
    request();
  }

  function reset() {
    var f = data.fit;
    view.cx = (f[0] + f[2]) / 2;
    view.cy = (f[1] + f[3]) / 2;
    view.zoom = 1;
    request();
  }

  var drag = null;
  var fingers = new Map(); // pointerId -> [clientX, clientY] of the pointers down on the canvas
  var pinch = null; // two fingers: the distance and midpoint between them at the last move

  function twoFingers() {
    var p = Array.from(fingers.values());
    var rect = canvas.getBoundingClientRect();
    return {
      distance: Math.max(1, Math.hypot(p[0][0] - p[1][0], p[0][1] - p[1][1])),
      x: ((p[0][0] + p[1][0]) / 2 - rect.left) * dpr,
      y: ((p[0][1] + p[1][1]) / 2 - rect.top) * dpr
    };
  }

  function endPointer(e) {
    fingers.delete(e.pointerId);
    if (fingers.size < 2) pinch = null;
  }

  canvas.addEventListener("pointerdown", function (e) {
    if (!data) return;
    fingers.set(e.pointerId, [e.clientX, e.clientY]);
    canvas.setPointerCapture(e.pointerId);
    if (fingers.size === 2) { // a pinch: neither finger's lift is a tap
      pinch = twoFingers();
      drag = null;
      return;
    }
    drag = { x: e.clientX, y: e.clientY, startX: e.clientX, startY: e.clientY, moved: false, touch: e.pointerType === "touch" };
  });

  canvas.addEventListener("pointermove", function (e) {
    if (!data) return;
    if (fingers.has(e.pointerId)) fingers.set(e.pointerId, [e.clientX, e.clientY]);
    if (pinch && fingers.size === 2) {
      var now = twoFingers();
      panBy(now.x - pinch.x, now.y - pinch.y);
      zoomAround(now.distance / pinch.distance, now.x, now.y);
      canvas.dataset.pinched = "1";
      pinch = now;
      return;
    }
    if (drag) {
      var dx = e.clientX - drag.x, dy = e.clientY - drag.y;
      if (Math.abs(e.clientX - drag.startX) + Math.abs(e.clientY - drag.startY) > 4) {
        drag.moved = true;
        canvas.classList.add("dragging");
        tip.hidden = true;
      }
      if (drag.moved) {
        panBy(dx * dpr, dy * dpr);
        drag.x = e.clientX;
        drag.y = e.clientY;
        return;
      }
    }
    if (e.pointerType === "touch") return; // no hovering with a finger: a tap shows the title
    var overLabel = labelAt(e.clientX, e.clientY) !== null;
    canvas.classList.toggle("over-label", overLabel);
    var index = overLabel ? -1 : pointAt(e.clientX, e.clientY);
    if (index !== hoverIndex) {
      hoverIndex = index;
      request();
    }
    showTip(index, e.clientX, e.clientY);
  });

  canvas.addEventListener("pointerup", function (e) {
    endPointer(e);
    if (!drag) return;
    var clicked = !drag.moved, touch = drag.touch;
    drag = null;
    canvas.classList.remove("dragging");
    if (clicked) {
      var topic = labelAt(e.clientX, e.clientY);
      if (topic) {
        openTopic(topic, false);
        return;
      }
      var index = pointAt(e.clientX, e.clientY, touch ? 14 : 6);
      if (touch && index !== hoverIndex) { // a finger cannot hover: the first tap shows the title
        hoverIndex = index;
        showTip(index, e.clientX, e.clientY);
        request();
        return;
      }
      if (index >= 0) window.location.assign(paperHref(data.ids[index]));
    }
  });

  canvas.addEventListener("pointercancel", function (e) {
    endPointer(e);
    drag = null;
    canvas.classList.remove("dragging");
  });

  canvas.addEventListener("pointerleave", function (e) {
    if (e.pointerType === "touch") return; // a lifted finger "leaves": keep the title it tapped
    if (!drag) {
      hoverIndex = -1;
      showTip(-1);
      request();
    }
  });

  canvas.addEventListener("wheel", function (e) {
    if (!data) return;
    e.preventDefault();
    var rect = canvas.getBoundingClientRect();
    var unit = e.deltaMode === 1 ? 16 : e.deltaMode === 2 ? 400 : 1;
    zoomAround(Math.exp(-e.deltaY * unit * 0.0015), (e.clientX - rect.left) * dpr, (e.clientY - rect.top) * dpr);
  }, { passive: false });

  canvas.addEventListener("keydown", function (e) {
    if (!data) return;
    var step = 60 * dpr;
    var keys = {
      ArrowLeft: function () { panBy(step, 0); }, ArrowRight: function () { panBy(-step, 0); },
      ArrowUp: function () { panBy(0, step); }, ArrowDown: function () { panBy(0, -step); },
      "+": function () { zoomAround(1.5, width / 2, height / 2); }, "=": function () { zoomAround(1.5, width / 2, height / 2); },
      "-": function () { zoomAround(1 / 1.5, width / 2, height / 2); }, "0": reset,
      Enter: function () {
        var k = hoverIndex >= 0 ? hoverIndex : focusIndex;
        if (k >= 0) window.location.assign(paperHref(data.ids[k]));
      },
      t: function () {
        var k = hoverIndex >= 0 ? hoverIndex : focusIndex;
        var topic = k >= 0 ? data.header.topics[data.topic[k]] : null;
        if (topic) openTopic(topic, true);
        else say("Point at a dot (or open the map on a paper) first: T shows its topic.");
      },
      Escape: function () { if (!panel.hidden) closeTopic(); }
    };
    var key = e.key === "T" ? "t" : e.key;
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (keys[key]) {
      e.preventDefault();
      keys[key]();
    }
  });

  document.getElementById("map-zoom-in").addEventListener("click", function () { if (data) zoomAround(1.6, width / 2, height / 2); });
  document.getElementById("map-zoom-out").addEventListener("click", function () { if (data) zoomAround(1 / 1.6, width / 2, height / 2); });
  document.getElementById("map-reset").addEventListener("click", function () { if (data) reset(); });
  [fromInput, toInput, catSelect].forEach(function (el) { el.addEventListener("change", function () { if (data) applyFilters(); }); });
  searchForm.addEventListener("submit", function (e) {
    e.preventDefault();
    var q = searchInput.value.trim();
    if (!data) return;
    if (!q) { clearButton.click(); return; }
    search(q);
  });
  clearButton.addEventListener("click", function () {
    highlighted = [];
    clearButton.hidden = true;
    searchInput.value = "";
    if (data) applyFilters();
  });
  window.addEventListener("resize", function () { if (data && data.fit) { shapeFrame(); resize(); } });
  document.getElementById("map-topic-close").addEventListener("click", closeTopic);
  panel.addEventListener("keydown", function (e) { if (e.key === "Escape") closeTopic(); });
  if (pickButton) pickButton.addEventListener("click", togglePick);
  if (picksUrl) loadPicks();

  // -- start -----------------------------------------------------------------------------------------------

  fetch(root.dataset.pointsUrl, { credentials: "omit" })
    .then(function (r) {
      if (!r.ok) throw new Error("the map could not be loaded (" + r.status + ")");
      return r.arrayBuffer();
    })
    .then(function (buffer) {
      data = decode(buffer);
      canvas.dataset.points = String(data.n);
      canvas.paperMapColors = Object.fromEntries(data.tones); // topic id -> colour, for tests
      if (!data.n) {
        say("No papers are on the map yet: topics have not been built.");
        return;
      }
      visible = new Uint8Array(data.n);
      data.fit = fitBox();
      canvas.paperMapHighlight = INK; // for tests: the matches' colour
      fillFilters();
      shapeFrame();
      reset();
      resize();
      applyFilters();
      var wanted = root.dataset.paper;
      if (wanted) {
        focusIndex = indexOf(wanted);
        if (focusIndex >= 0) {
          view.cx = data.x[focusIndex];
          view.cy = data.y[focusIndex];
          view.zoom = 8;
          canvas.dataset.focus = wanted;
          say("Centred on " + wanted + " (ringed). " + data.n.toLocaleString() + " papers on the map.");
        } else {
          say(wanted + " is not on the map (yet): it is placed once it is embedded and the topics job has run.");
        }
      }
    })
    .catch(function (e) { say(String(e.message || e)); });
})();
