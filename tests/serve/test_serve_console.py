"""The web console of ``rsep serve`` in a real headless Chromium (Debian's, driven by
Playwright): a query registered through the form, events posted, its result rows on the
page; a SPASEQ query's automaton drawn. The screenshot is kept as docs/serve-console.png."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from playwright.sync_api import expect, sync_playwright
from serve_server import COUPON, SPARQL, TRIG, serve

from rsep.testing.snippets import ROOT

SPASEQ = (ROOT / "docs" / "examples" / "spaseq.rq").read_text()


def chromium() -> str:
    """Debian's chromium, installed by make system-deps when missing."""
    exe = shutil.which("chromium")
    if exe is None:
        subprocess.run(["make", "-C", str(ROOT), "system-deps"], check=True)
        exe = shutil.which("chromium")
    assert exe is not None, "make system-deps did not install chromium"
    return exe


def test_console_registers_a_query_and_shows_its_results_live(tmp_path: Path) -> None:
    exe = chromium()
    with serve("--time-unit", "1m", "--graph", f"http://products={COUPON / 'products.ttl'}") \
            as client, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1200, "height": 1100})
        page.goto(str(client.base_url))
        page.fill("#q-name", "offers")
        page.select_option("#q-dialect", "cqels")
        page.fill("#q-text", (COUPON / "q2-cqels.rq").read_text())
        page.click("button[type=submit]")
        section = page.locator("section.query[data-name=offers]")
        expect(section).to_be_visible()
        assert [q["name"] for q in client.get("/queries").json()] == ["offers"]
        # a wrong query gets the located message in the form
        page.fill("#q-name", "bad")
        page.fill("#q-text", "SELECT * WHERE {")
        page.click("button[type=submit]")
        expect(page.locator("#register-error")).to_contain_text("bad:1:16: syntax error")
        client.post("/queries", headers=SPARQL, params={"name": "warming"}, content=SPASEQ)
        for name in ("coupons", "locations"):
            r = client.post("/events", headers=TRIG, params={"stream": f"http://{name}"},
                            content=(COUPON / f"{name}.trig").read_bytes())
            assert r.json()["rejected"] == 0
        client.post("/clock", json={"until": 30})
        rows = section.locator("tr.result")
        expect(rows).to_have_count(1)
        assert rows.first.locator("td").all_inner_texts() == [
            "18", "insert", "<http://example.org/b>", "<http://example.org/rayban>",
            '"25"^^<http://www.w3.org/2001/XMLSchema#integer>']
        # the SPASEQ query's automaton, drawn by Graphviz: one node per state
        svg = page.locator("section.query[data-name=warming] .automaton svg")
        expect(svg).to_be_visible()
        dot = client.get("/queries/warming/automaton", params={"format": "dot"}).text
        states = re.findall(r"^  (?!node\b)(\w+) \[shape=", dot, re.M)
        assert len(states) == 4 and svg.locator("g.node").count() == len(states)
        expect(section.locator(".stats")).to_contain_text("3 events in, 1 results out")
        # RSEP_SCREENSHOT=1 refreshes docs/serve-console.png; a test run leaves the tree clean
        shot = ROOT / "docs" / "serve-console.png" if os.environ.get("RSEP_SCREENSHOT") else tmp_path / "console.png"
        page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 10_000
        browser.close()
