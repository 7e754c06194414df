// paperfeed: small enhancements only. Every page works without this file.
(function () {
  "use strict";

  // "Copy BibTeX": the entry stays selectable text without JavaScript; with it, one click copies it.
  function setupCopy(button) {
    var target = document.getElementById(button.getAttribute("data-copy-target"));
    if (!target) return;
    var status = button.closest("section") && button.closest("section").querySelector(".copy-status");
    button.hidden = false;
    button.addEventListener("click", function () {
      var text = target.textContent || "";
      var done = function (message) {
        if (status) status.textContent = message;
      };
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(text).then(
          function () { done("BibTeX copied to the clipboard."); },
          function () { selectText(target); done("Press Ctrl+C (⌘C) to copy the selected entry."); }
        );
      } else {
        selectText(target);
        var copied = false;
        try { copied = document.execCommand("copy"); } catch (e) { copied = false; }
        done(copied ? "BibTeX copied to the clipboard." : "Press Ctrl+C (⌘C) to copy the selected entry.");
      }
    });
  }

  function selectText(node) {
    var range = document.createRange();
    range.selectNodeContents(node);
    var selection = window.getSelection();
    if (!selection) return;
    selection.removeAllRanges();
    selection.addRange(range);
  }

  // "/" focuses the search box, as on many sites; ignored while typing in a field.
  function setupSlash() {
    document.addEventListener("keydown", function (event) {
      if (event.key !== "/" || event.ctrlKey || event.metaKey || event.altKey) return;
      var active = document.activeElement;
      if (active && (active.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(active.tagName))) return;
      var box = document.getElementById("q") || document.getElementById("site-search");
      if (!box) return;
      event.preventDefault();
      box.focus();
      box.select();
    });
  }

  // An administrator's upload form (form[data-dropzone]): a file dropped anywhere on the page goes into
  // the form's file input and the form is submitted, as if it had been chosen with the picker.
  function setupDropzone(form) {
    var input = form.querySelector("input[type=file]");
    var status = form.querySelector(".dropzone-status");
    if (!input) return;
    var depth = 0;
    var say = function (message) { if (status) status.textContent = message; };
    var hasFiles = function (event) {
      var types = event.dataTransfer && event.dataTransfer.types;
      return !!types && Array.prototype.indexOf.call(types, "Files") !== -1;
    };
    document.addEventListener("dragenter", function (event) {
      if (!hasFiles(event)) return;
      depth += 1;
      form.classList.add("dragging");
    });
    document.addEventListener("dragleave", function () {
      depth = Math.max(0, depth - 1);
      if (depth === 0) form.classList.remove("dragging");
    });
    document.addEventListener("dragover", function (event) {
      if (!hasFiles(event)) return;
      event.preventDefault(); // without this the browser would open the file instead
      event.dataTransfer.dropEffect = "copy";
    });
    document.addEventListener("drop", function (event) {
      var files = event.dataTransfer && event.dataTransfer.files;
      depth = 0;
      form.classList.remove("dragging");
      if (!files || files.length === 0) return;
      event.preventDefault();
      if (files.length > 1) {
        say("Drop one file at a time.");
        return;
      }
      input.files = files;
      say("Uploading " + files[0].name + "… (a large file takes a while to import)");
      form.submit();
    });
    input.addEventListener("change", function () {
      if (input.files && input.files.length === 1) say(input.files[0].name + " is ready: press Import.");
    });
  }

  // A time zone list (<select data-browser-zone>, a new session or a new digest) starts on the reader's own
  // zone, which the browser knows; without JavaScript it stays on UTC. The server checks the name anyway.
  function setupZone(select) {
    var zone = "";
    try { zone = Intl.DateTimeFormat().resolvedOptions().timeZone || ""; } catch (e) { zone = ""; }
    for (var i = 0; i < select.options.length; i++) {
      if (select.options[i].value === zone) {
        select.value = zone;
        return;
      }
    }
  }

  function init() {
    var zones = document.querySelectorAll("select[data-browser-zone]");
    for (var z = 0; z < zones.length; z++) setupZone(zones[z]);
    var buttons = document.querySelectorAll("button[data-copy-target]");
    for (var i = 0; i < buttons.length; i++) setupCopy(buttons[i]);
    setupSlash();
    var zone = document.querySelector("form[data-dropzone]");
    if (zone) setupDropzone(zone);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
