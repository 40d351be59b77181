// A live page: the server sends the part of the page that changed (server-sent events), and it is swapped in.
(function () {
  var main = document.getElementById("live-part");
  var url = main && main.getAttribute("data-events");
  if (!url || !window.EventSource) return;
  var status = document.getElementById("live");
  var source = new EventSource(url);
  source.addEventListener("open", function () { if (status) { status.textContent = "live"; status.className = "live on"; } });
  // A refused stream (the server's limit of live pages) is closed for good; a dropped one reconnects by itself.
  source.addEventListener("error", function () {
    if (!status) return;
    status.textContent = source.readyState === EventSource.CLOSED ? "not live: reload to try again" : "reconnecting…";
    status.className = "live";
  });
  // The markup was rendered and escaped by the server from the record; nothing here reads a record.
  // A folded part the reader opened stays open across the swap.
  source.addEventListener("update", function (event) {
    var open = Array.prototype.map.call(main.querySelectorAll("details[id][open]"), function (d) { return d.id; });
    main.innerHTML = event.data;
    open.forEach(function (id) { var d = document.getElementById(id); if (d) d.open = true; });
  });
})();
