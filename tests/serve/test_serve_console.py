"""The web console of ``rsep serve`` in a real headless Chromium (Debian's, driven by
Playwright), used as a user would: a query loaded from the examples and registered, a
syntax error underlined at its line and column, a background graph PUT and updated, events
pasted in two formats, the clock moved, the results' table (prefixed names, paging), chart
and downloads, the streams panel and the dead letters, explain and a SPASEQ automaton, and
a SPASEQ query's trace of one key.
With ``RSEP_SCREENSHOT=1`` the screenshots of docs/serve.md are refreshed
(docs/img/console-*.png); a plain run leaves docs/ untouched."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect, sync_playwright
from serve_server import serve
from starlette.testclient import TestClient

from rsep.serve import app
from rsep.serve.hub import Hub, Settings
from rsep.testing.snippets import ROOT

BUNDLE = ROOT / "rsep" / "serve" / "static" / "console.js"
READINGS = "http://example.org/readings"


# three readings of sensor :s1, the second 2.5 °F warmer than the first (docs/examples/spaseq.rq)
WARMING = "".join(f"""
:g{t} prov:generatedAtTime {t} .
:g{t} {{ :o{t} om-owl:observedProperty weather:_AirTemperature ; om-owl:procedure :s1 ;
    om-owl:result [ om-owl:floatValue "{v}"^^xsd:double ] . }}""" for t, v in ((1000, 80.5), (3000, 83), (5000, 82)))
WARMING = """@prefix : <http://example.org/> .
@prefix prov: <http://www.w3.org/ns/prov#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
@prefix om-owl: <http://knoesis.wright.edu/ssw/ont/sensor-observation.owl#> .
@prefix weather: <http://knoesis.wright.edu/ssw/ont/weather.owl#> .""" + WARMING


def chromium() -> str:
    """Debian's chromium, installed by make system-deps when missing."""
    exe = shutil.which("chromium")
    if exe is None:
        subprocess.run(["make", "-C", str(ROOT), "system-deps"], check=True)
        exe = shutil.which("chromium")
    assert exe is not None, "make system-deps did not install chromium"
    return exe


@pytest.fixture(scope="module", autouse=True)
def bundle() -> None:
    """The console's bundle, built by ``make console`` (make test depends on it)."""
    if not BUNDLE.is_file():
        subprocess.run(["make", "-C", str(ROOT), "console"], check=True)


def shoot(page: Page, tmp_path: Path, name: str, **kw: object) -> None:
    shot = (ROOT / "docs" / "img" if os.environ.get("RSEP_SCREENSHOT") else tmp_path) / f"console-{name}.png"
    page.screenshot(path=str(shot), **kw)  # type: ignore[arg-type]
    assert shot.stat().st_size > 5_000


def example(page: Page, select: str, path: str) -> None:
    page.select_option(select, label=path)


def test_console_drives_a_whole_session(tmp_path: Path) -> None:
    exe = chromium()
    with serve() as client, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1500, "height": 1000}, accept_downloads=True)
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(str(client.base_url))
        editor = page.locator("#q-editor .cm-content")
        expect(editor).to_be_visible()

        # a syntax error: the located message, and the editor underlines line 3 there
        editor.fill("PREFIX : <http://example.org/>\nSELECT ?room\nWHERE { ?s :in ?room . FILTER( }")
        page.fill("#q-name", "broken")
        page.click("#q-register")
        expect(page.locator("#q-error")).to_contain_text("broken:3:")
        message = page.locator("#q-error").inner_text()
        col = int(message.split(":")[2])
        mark = page.locator("#q-editor .cm-line").nth(2).locator(".cm-lintRange-error")
        expect(mark).to_have_count(1)
        line3 = "WHERE { ?s :in ?room . FILTER( }"
        assert line3[col - 1:].startswith(mark.inner_text()), (message, mark.inner_text())
        mark.hover()
        expect(page.locator(".cm-tooltip-lint")).to_contain_text("syntax error")
        # the token classes of the stream mode: keywords, variables, prefixed names
        assert page.locator("#q-editor .cm-line").nth(1).locator("span").count() >= 2
        shoot(page, tmp_path, "error", clip={"x": 0, "y": 0, "width": 620, "height": 480})

        # the RSP-QL rooms example: its background graph, the query, then its readings
        page.set_input_files("#g-file", str(ROOT / "docs" / "examples" / "rooms" / "rooms.ttl"))
        page.click("#g-send")
        expect(page.locator("#g-result")).to_contain_text("<http://example.org/rooms>: 2 triples")
        example(page, "#q-example", "docs/examples/rooms/rooms.rq")
        expect(page.locator("#q-error")).to_be_empty()  # (an edit clears the mark)
        assert page.locator("#q-name").input_value() == "rooms"
        page.click("#q-register")
        section = page.locator("section.query[data-name=rooms]")
        expect(section).to_be_visible()
        assert [q["name"] for q in client.get("/queries").json()] == ["rooms"]
        expect(section.locator("pre.explain")).to_contain_text("RANGE")

        example(page, "#e-example", "docs/examples/rooms/readings.trig")
        assert page.locator("#e-stream").input_value() == READINGS
        page.click("#e-post")
        expect(page.locator("#e-result")).to_have_text("5 taken in, 0 rejected")
        # the sensor moves at 11 (a SPARQL Update), more readings as JSON lines
        example(page, "#g-example", "docs/examples/rooms/rooms.ru")
        assert page.locator("#g-mode").input_value() == "update"
        page.click("#g-send")
        expect(page.locator("#g-result")).to_contain_text("at time 11")
        lines = [json.dumps({"graph": f"http://example.org/g{t}", "time": t, "triples":
                             f"<http://example.org/r{t}> <http://example.org/by> <http://example.org/s{1 + t % 2}> ; "
                             f"<http://example.org/temp> {10 + t} ."}) for t in range(12, 41)]
        page.select_option("#e-format", "jsonl")
        page.fill("#e-text", "\n".join(lines))
        page.click("#e-post")
        expect(page.locator("#e-result")).to_have_text("29 taken in, 0 rejected")
        page.fill("#c-until", "60")
        page.click("#c-move")
        expect(page.locator("#c-result")).to_have_text("engine time 60")

        # the table: the same results as the server pushes, prefixed names, 15 a page
        got = client.get("/queries/rooms").json()["results_out"]
        assert got > 30
        expect(section.locator(".page")).to_contain_text(f"{got} results")
        rows = section.locator("tr.result")
        expect(rows).to_have_count(got % 15 or 15)  # the last page, following the results
        assert section.locator("table.results th").all_inner_texts() == ["time", "op", "room", "t"]
        section.locator("button.prev").click()
        expect(section.locator(".page")).to_contain_text(f"page {(got + 14) // 15 - 1} of")
        expect(rows).to_have_count(15)
        assert {r.locator("td").nth(2).inner_text() for r in rows.all()} <= {":kitchen", ":hall", ":office"}
        while section.locator(".page").inner_text().split()[1] != "1":
            section.locator("button.prev").click()
        first = rows.first.locator("td").all_inner_texts()
        assert first == ["5", "insert", ":hall", "18"] or first[1:3] == ["insert", ":kitchen"], first
        # the chart: one series, ?t over the results' time
        expect(section.locator(".chart canvas")).to_be_visible()
        assert "t" in section.locator(".chart .u-legend").inner_text()

        # downloads: every result, not only the page shown
        with page.expect_download() as dl:
            section.locator("button.download-csv").click()
        table = list(csv.reader(io.StringIO(Path(dl.value.path()).read_text())))
        assert table[0] == ["time", "op", "room", "t"] and len(table) == got + 1
        assert table[1][2].startswith("<http://example.org/")  # full terms, as rsep run writes
        with page.expect_download() as dl:
            section.locator("button.download-jsonl").click()
        items = [json.loads(x) for x in Path(dl.value.path()).read_text().splitlines()]
        assert len(items) == got and items[0]["time"] == 5 and "bindings" in items[0]

        # the streams panel, and a late event's dead letter with its reason
        stream = page.locator("#streams tr.stream")
        expect(stream).to_have_count(1)
        expect(stream.locator("td").nth(1)).to_have_text("34")
        page.select_option("#e-format", "trig")
        page.fill("#e-text", "@prefix : <http://example.org/> .\n@prefix prov: <http://www.w3.org/ns/prov#> .\n"
                             ":late prov:generatedAtTime 3 .\n:late { :r0 :by :s1 ; :temp 1 . }\n")
        page.click("#e-post")
        expect(page.locator("#e-result")).to_contain_text("none was taken in")  # 422: nothing taken in
        expect(page.locator("#deadletters tr.dead")).to_have_count(1)
        expect(page.locator("#deadletters td.reason")).to_contain_text("timestamp 3")
        expect(stream.locator("td").nth(2)).to_have_text("1")
        shoot(page, tmp_path, "session", full_page=True)
        section.screenshot(path=str(tmp_path / "q.png"))
        shoot(page, tmp_path, "query", clip=section.bounding_box())  # type: ignore[arg-type]

        # a SPASEQ query: its explanation and its automaton beside its table
        example(page, "#q-example", "docs/examples/spaseq.rq")
        page.click("#q-register")
        spaseq = page.locator("section.query[data-name=spaseq]")
        expect(spaseq.locator(".automaton svg")).to_be_visible()
        expect(spaseq.locator("pre.explain")).to_contain_text("skip-till-next")
        page.fill("#e-stream", "http://example.org/srbench")
        page.fill("#e-text", WARMING)
        page.click("#e-post")
        expect(page.locator("#e-result")).to_have_text("3 taken in, 0 rejected")
        expect(spaseq.locator("tr.result")).to_have_count(1)
        # a match's interval in its columns; no PREFIX for the sensor, so the whole IRI
        assert spaseq.locator("table.results th").all_inner_texts() == [
            "time", "from", "to", "op", "sensor", "before", "after"]
        assert spaseq.locator("tr.result td").all_inner_texts() == [
            "3000", "1000", "3000", "insert", "<http://example.org/s1>", "80.5", "83"]
        expect(page.locator("#streams tr.stream")).to_have_count(2)
        # (the rooms query does not read <http://example.org/srbench>: its count stays)
        expect(spaseq.locator(".stats")).to_contain_text("3 events in")
        assert client.get("/queries/rooms").json()["events_in"] == 34
        spaseq.scroll_into_view_if_needed()
        shoot(page, tmp_path, "automaton", clip=spaseq.bounding_box())  # type: ignore[arg-type]

        section.locator("button.unregister").click()
        expect(section).to_have_count(0)
        assert [q["name"] for q in client.get("/queries").json()] == ["spaseq"]
        assert errors == []
        browser.close()


def test_console_traces_a_key_of_an_event_query(tmp_path: Path) -> None:
    """The trace panel of docs/examples/warming: a key, *trace*, the readings posted, the
    lines of rsep run --trace in time order (tests/serve/test_serve_trace.py has them all),
    *stop*."""
    exe = chromium()
    with serve() as client, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1500, "height": 1000})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(str(client.base_url))
        example(page, "#q-example", "docs/examples/warming/warming.rq")
        page.click("#q-register")
        warming = page.locator("section.query[data-name=warming]")
        expect(warming).to_be_visible()
        warming.locator("input.trace-key").fill("?sensor=:s1")
        warming.locator("button.trace-start").click()
        expect(warming.locator(".trace-status")).to_have_text("tracing ?sensor=:s1")
        example(page, "#e-example", "docs/examples/warming/readings.trig")
        assert page.locator("#e-stream").input_value() == "http://example.org/station"
        page.click("#e-post")
        expect(page.locator("#e-result")).to_have_text("6 taken in, 0 rejected")
        page.fill("#c-until", "13")
        page.click("#c-move")
        lines = warming.locator("tr.trace-line")
        expect(lines).to_have_count(10)  # (refreshed with the results: within a second)
        assert lines.nth(1).locator("td").all_inner_texts() == [
            "2", "run 1 discarded for ?sensor=:s1 (?before=20): skip-till-next (';') takes "
            "the run's next event that joins any of its mappings, and B@2 joined only other "
            "values of ?sensor"]
        expect(warming.locator("tr.result")).to_have_count(2)
        warming.scroll_into_view_if_needed()
        shoot(page, tmp_path, "trace", clip=warming.bounding_box())  # type: ignore[arg-type]
        page.reload()  # a trace running when the page opens is shown
        expect(lines).to_have_count(10)
        expect(warming.locator("input.trace-key")).to_have_value("?sensor=:s1")
        warming.locator("button.trace-stop").click()
        expect(warming.locator(".trace-status")).to_have_text("stopped")
        assert client.get("/queries/warming/trace").status_code == 404
        expect(lines).to_have_count(10)  # (what was shown stays)
        assert errors == []
        browser.close()


def test_console_without_its_bundle_says_to_run_make(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the bundle (no `make console` yet) the API is served, and the page says how
    to build the console."""
    monkeypatch.setattr(app, "STATIC", tmp_path)
    with TestClient(app.build_app(Hub(Settings())), base_url="http://localhost") as client:
        r = client.get("/")
        assert r.status_code == 503 and "make console" in r.text
        assert client.get("/health").json()["status"] == "ok"
        assert client.get("/console/console.js").status_code == 404


def test_console_passes_its_token_to_its_own_files() -> None:
    """Behind --token the page's script and style are fetched with the ?token= the page was
    opened with (a <script> sends no Authorization header)."""
    with TestClient(app.build_app(Hub(Settings()), token="s3cret"), base_url="http://localhost") as client:
        html = client.get("/", params={"token": "s3cret"}).text
        assert 'src="/console/console.js?token=s3cret"' in html
        assert client.get("/console/console.js").status_code == 401
        if BUNDLE.is_file():
            assert client.get("/console/console.js", params={"token": "s3cret"}).status_code == 200
