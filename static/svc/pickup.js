// The pickup box: a handover code prepared by an agent opens its session here.
"use strict";

document.getElementById("pickup").addEventListener("submit", async (event) => {
  event.preventDefault();
  const input = document.getElementById("pickup-code");
  const status = document.getElementById("pickup-status");
  status.textContent = "picking up…";
  try {
    const session = await svc.api("POST", "handover/pickup", { code: input.value.trim() });
    status.textContent = `picked up ${session.agent} session`;
    input.value = "";
    openSession(session);
  } catch (error) {
    status.textContent = error.message;
  }
});
