// The dashboard's one entry point (docs/dashboard.md): the store starts listening to svc's live
// lists, the application is drawn once into #app, and the URL hash says what it shows. Every
// other module is imported from here, through the import map in templates/dashboard.html.
import { startNav } from "./nav.js";
import { startPush } from "./push.js";
import { App } from "./shell.js";
import { startStore } from "./store.js";
import { html, render } from "./ui.js";

startStore();
render(html`<${App} />`, document.getElementById("app"));
startNav();
startPush();
