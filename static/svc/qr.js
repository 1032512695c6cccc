// A text (a URL) as a QR code for a phone to scan (the Remote view's tunnels, invites and the LAN
// listener).
import qrcode from "qrcode-generator";
import { html } from "./ui.js";

// The URL as a QR code, drawn as SVG: dark on white in both colour schemes, with the 4-module
// quiet zone scanners need.
export function QRCode({ text }) {
  const qr = qrcode(0, "M");
  qr.addData(text);
  qr.make();
  const count = qr.getModuleCount();
  const size = count + 8;
  let path = "";
  for (let row = 0; row < count; row++) {
    for (let col = 0; col < count; col++) if (qr.isDark(row, col)) path += `M${col + 4} ${row + 4}h1v1h-1z`;
  }
  return html`<svg viewBox=${`0 0 ${size} ${size}`} class="qr" role="img" aria-label=${`QR code of ${text}`}>
    <rect width=${size} height=${size} fill="#fff" /><path d=${path} fill="#000" /></svg>`;
}
