// The live page: the server sends the page's changing part whenever the record changes (server-sent events).
(function () {
  var main = document.getElementById("record");
  var url = main && main.getAttribute("data-events");
  if (!url || !window.EventSource) return;
  var status = document.getElementById("live");
  var source = new EventSource(url);
  source.addEventListener("open", function () { if (status) { status.textContent = "live"; status.className = "live on"; } });
  source.addEventListener("error", function () { if (status) { status.textContent = "reconnecting…"; status.className = "live"; } });
  // The markup was rendered and escaped by the server from the record; nothing here reads record text.
  source.addEventListener("update", function (event) { main.innerHTML = event.data; });
})();
