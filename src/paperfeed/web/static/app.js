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

  function init() {
    var buttons = document.querySelectorAll("button[data-copy-target]");
    for (var i = 0; i < buttons.length; i++) setupCopy(buttons[i]);
    setupSlash();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
