// Refresh the dashboard without reloading: fetch this same URL, parse it
// and swap its <main>; the page works without this script, just static.
(() => {
  "use strict";
  const every = 2000;
  const refresh = async () => {
    if (!document.hidden) {
      try {
        // A hung server must not stop the refresh: give up after two
        // intervals, show the page as stale, and try again.
        const res = await fetch(location.href, {
          headers: { Accept: "text/html", "X-Worksteal-Refresh": "1" }, cache: "no-store", signal: AbortSignal.timeout(2 * every),
        });
        if (!res.ok) throw new Error("HTTP " + res.status);
        const page = new DOMParser().parseFromString(await res.text(), "text/html");
        const next = page.getElementById("dashboard");
        const current = document.getElementById("dashboard");
        if (!next || !current) throw new Error("no dashboard in the response");
        // Details the reader opened stay open through the swap.
        for (const d of current.querySelectorAll("details[id][open]")) next.querySelector("#" + CSS.escape(d.id))?.setAttribute("open", "");
        current.replaceWith(document.adoptNode(next));
        document.body.classList.remove("stale");
      } catch (err) {
        document.body.classList.add("stale");
      }
    }
    setTimeout(refresh, every);
  };
  setTimeout(refresh, every);
})();
