// Times in the operator's own time zone: the server writes each one in its zone, with the
// moment in the datetime attribute; the browser knows where its operator is.
"use strict";
function localTimes(root) {
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  const format = new Intl.DateTimeFormat("en-CA", {
    year: "numeric", month: "2-digit", day: "2-digit",
    hour: "2-digit", minute: "2-digit", hourCycle: "h23", timeZone: zone,
  });
  for (const element of root.querySelectorAll("time[datetime]")) {
    const moment = new Date(element.getAttribute("datetime"));
    if (Number.isNaN(moment.getTime())) continue;
    const parts = Object.fromEntries(format.formatToParts(moment).map((p) => [p.type, p.value]));
    element.textContent = `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}`;
    element.title = zone;
  }
}
document.addEventListener("DOMContentLoaded", () => localTimes(document));

// The live inbox: the server's event stream (/inbox/events) says when the rows this page shows
// changed; the page then fetches itself and swaps the rows in place, the count in its title and
// a polite announcement for screen readers. Without the stream (a proxy that refuses it) the page
// polls. The operator can turn it off; the choice is kept for the browser session.
document.addEventListener("DOMContentLoaded", () => {
  const region = document.getElementById("inbox-region");
  const toggle = document.getElementById("live-updates");
  const status = document.getElementById("inbox-live-status");
  if (!region || !toggle) return;
  const remembered = sessionStorage.getItem("supportbot.live");
  if (remembered !== null) toggle.checked = remembered === "on";
  let source = null;
  let poller = null;
  let busy = false;
  let again = false; // news that came while a refresh was under way: its fetch may predate it

  const refresh = async () => {
    if (busy) {
      again = true;
      return;
    }
    busy = true;
    try {
      const response = await fetch(window.location.href, { headers: { Accept: "text/html" }, cache: "no-store" });
      if (response.redirected && new URL(response.url).pathname === "/login") {
        window.location.assign(response.url);
        return;
      }
      if (!response.ok) return;
      const page = new DOMParser().parseFromString(await response.text(), "text/html");
      const fresh = page.getElementById("inbox-region");
      if (!fresh || fresh.dataset.mark === region.dataset.mark) return;
      region.innerHTML = fresh.innerHTML;
      region.dataset.mark = fresh.dataset.mark;
      document.title = page.title;
      localTimes(region);
      if (status) status.textContent = fresh.dataset.summary;
    } finally {
      busy = false;
      // An event that arrived during the fetch may be about rows the fetched page does not show
      // yet, and the stream sends no second event for them: fetch once more.
      if (again) {
        again = false;
        refresh();
      }
    }
  };

  const stop = () => {
    if (source) source.close();
    clearInterval(poller);
    source = null;
    poller = null;
  };

  const start = () => {
    stop();
    if (!toggle.checked) return;
    if (!window.EventSource) {
      poller = setInterval(refresh, 5000);
      return;
    }
    const query = new URLSearchParams(window.location.search);
    query.set("shown", region.dataset.mark);
    source = new EventSource(`/inbox/events?${query}`);
    source.addEventListener("inbox", refresh);
    source.addEventListener("signed-out", () => window.location.assign("/login?expired=1"));
    source.addEventListener("error", () => {
      // The browser retries a dropped stream by itself; a refused one (CLOSED) falls back to polling.
      if (source && source.readyState === EventSource.CLOSED && poller === null) {
        poller = setInterval(refresh, 5000);
      }
    });
  };

  toggle.addEventListener("change", () => {
    sessionStorage.setItem("supportbot.live", toggle.checked ? "on" : "off");
    start();
  });
  window.addEventListener("pagehide", stop);
  start();
});
