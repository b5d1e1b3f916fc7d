// Times in the operator's own time zone: the server writes each one in its zone, with the
// moment in the datetime attribute; the browser knows where its operator is.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  const format = new Intl.DateTimeFormat("en-CA", {
    year: "numeric", month: "2-digit", day: "2-digit",
    hour: "2-digit", minute: "2-digit", hourCycle: "h23", timeZone: zone,
  });
  for (const element of document.querySelectorAll("time[datetime]")) {
    const moment = new Date(element.getAttribute("datetime"));
    if (Number.isNaN(moment.getTime())) continue;
    const parts = Object.fromEntries(format.formatToParts(moment).map((p) => [p.type, p.value]));
    element.textContent = `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}`;
    element.title = zone;
  }
});
