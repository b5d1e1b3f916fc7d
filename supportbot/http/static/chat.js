// The chat page: a person types as a customer; each message goes to the HTTP API with
// "Accept: text/event-stream", and the round's progress and reply arrive as events on the
// response (fetch, since EventSource cannot POST). Plain JavaScript, no build step.
"use strict";
(() => {
  const texts = JSON.parse(document.getElementById("texts").textContent);
  const form = document.getElementById("chat");
  const log = document.getElementById("log");
  const status = document.getElementById("status");
  const button = document.getElementById("send");
  let ticket = sessionStorage.getItem("supportbot.ticket");

  const say = (role, text) => {
    const item = document.createElement("li");
    item.className = role;
    const who = document.createElement("span");
    who.className = "who";
    who.textContent = role === "customer" ? texts.you : texts.agent;
    item.append(who, document.createTextNode(text));
    log.append(item);
  };
  const showTicket = () => {
    document.getElementById("ticket").textContent = ticket ? texts.ticket.replace("{ticket}", ticket) : "";
  };

  // Server-Sent Events from a fetch body: "event: name\ndata: json\n\n" blocks.
  async function* events(response) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffered = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffered += decoder.decode(value, { stream: true });
      let end;
      while ((end = buffered.indexOf("\n\n")) >= 0) {
        const block = buffered.slice(0, end);
        buffered = buffered.slice(end + 2);
        let name = "message";
        let data = "";
        for (const line of block.split("\n")) {
          if (line.startsWith("event: ")) name = line.slice(7);
          else if (line.startsWith("data: ")) data += line.slice(6);
        }
        if (data) yield [name, JSON.parse(data)];
      }
    }
  }

  form.addEventListener("submit", async (submitted) => {
    submitted.preventDefault();
    const message = form.message.value.trim();
    if (!message || !form.key.value || !form.email.value) return;
    button.disabled = true;
    say("customer", message);
    form.message.value = "";
    const headers = {
      "Authorization": `Bearer ${form.key.value}`,
      "Content-Type": "application/json",
      "Accept": "text/event-stream",
    };
    const request = ticket
      ? { url: `/v1/tickets/${encodeURIComponent(ticket)}/messages`, body: { message } }
      : { url: "/v1/tickets", body: { email: form.email.value, message } };
    if (ticket) headers["Idempotency-Key"] = crypto.randomUUID();
    try {
      const response = await fetch(request.url, { method: "POST", headers, body: JSON.stringify(request.body) });
      if (!response.ok) {
        const problem = await response.json().catch(() => ({}));
        status.textContent = texts.failed + (problem.message || response.status);
        return;
      }
      for await (const [name, data] of events(response)) {
        if (name === "ticket") {
          ticket = data.ticket_id;
          sessionStorage.setItem("supportbot.ticket", ticket);
          showTicket();
        } else if (name === "step") {
          status.textContent = texts[`step_${data.step}`] || "";
        } else if (name === "error") {
          status.textContent = texts.failed + data.message;
        } else {
          if (data.reply) say("agent", data.reply);
          status.textContent = name === "waiting" ? texts.waiting : name === "queued" ? texts.queued : "";
        }
      }
    } catch (error) {
      status.textContent = texts.failed + error.message;
    } finally {
      button.disabled = false;
    }
  });
  showTicket();
})();
