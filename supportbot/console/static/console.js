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

// The inbox reloads itself every so often unless the operator turns that off (WCAG 2.2.1: a
// time limit the user can turn off); the choice is kept for the browser session.
document.addEventListener("DOMContentLoaded", () => {
  const toggle = document.getElementById("auto-refresh");
  if (!toggle) return;
  const remembered = sessionStorage.getItem("supportbot.autoRefresh");
  if (remembered !== null) toggle.checked = remembered === "on";
  let timer = null;
  const arm = () => {
    clearTimeout(timer);
    if (toggle.checked) timer = setTimeout(() => window.location.reload(), Number(toggle.dataset.seconds) * 1000);
  };
  toggle.addEventListener("change", () => {
    sessionStorage.setItem("supportbot.autoRefresh", toggle.checked ? "on" : "off");
    arm();
  });
  arm();
});
