"""GET /wiki/{page}/claims: one page's ``lint --claims`` findings over HTTP, on a wiki written
from real ingested papers (real SQLite, Chroma, embedder and verifier), for the wiki view's
inline marks.  A number changed in a section is reported contradicted with the paper's
quote; a second request is answered from the cache; a wiki with nothing ingested answers an
empty list with a reason; the page argument is path-checked like GET /wiki/{page}."""

from __future__ import annotations

import json
import shutil

from ingested_wiki import wiki_settings
from serverlive import LiveServer, request, written_template  # noqa: F401  (a fixture)
from uibrowser import ALTERED, corrupt

ATT = "attention_1706.03762v5.pdf"
def test_a_changed_number_is_reported_contradicted_then_cached(written_template, tmp_path):  # noqa: F811
    wiki = tmp_path / "wiki"
    shutil.copytree(written_template / "wiki", wiki)
    rel = corrupt(wiki)
    other_cache = {"sec_999": {"key": "k", "shas": {}, "results": []}}
    cache = wiki / ".episteme" / "claims-cache.json"
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps({"version": 1, "sections": other_cache}), encoding="utf-8")
    with LiveServer(wiki_settings(wiki), warm=False) as srv:
        status, body, _ = request("GET", srv.url + "/wiki/papers/attention-is-all-you-need-machine-translation/claims")
        assert status == 200, body
        assert body["page"] == rel and body["reason"] is None
        assert body["sections_verified"] >= 1
        # the sentence is in the writer's own words: the contradiction is a "check this" warning
        contra = [f for f in body["findings"] if f["rule"] == "claim-check"]
        assert len(contra) == 1, [f["message"] for f in body["findings"]]
        f = contra[0]
        assert "26.1" in f["claim"] and f["verdict"] == "contradicted"
        lines = (wiki / rel).read_text(encoding="utf-8").split("\n")
        assert ALTERED[:40] in lines[f["line"] - 1]
        ev = f["evidence"]
        assert ev["paper"] == ATT and ev["page"] and "28.4" in ev["quote"]
        assert f["reason"]["text"] and f["section_id"].startswith("sec_")
        assert body["summary"]["contradicted"] == 1
        # the other pages' cache entries are kept (only this page was checked)
        kept = json.loads(cache.read_text(encoding="utf-8"))["sections"]
        assert "sec_999" in kept and f["section_id"] in kept

        # unchanged: answered from the cache, the same findings
        status, again, _ = request("GET", srv.url + f"/wiki/{rel}/claims")
        assert status == 200
        assert again["sections_verified"] == 0 and again["sections_cached"] >= 1
        assert again["findings"] == body["findings"]

        # the page argument is checked like GET /wiki/{page}
        for bad in ("../etc/passwd", "raw/x.pdf", ".episteme/claims-cache.json"):
            status, err, _ = request("GET", srv.url + f"/wiki/{bad}/claims")
            assert status in (400, 404), (bad, status, err)
        status, err, _ = request("GET", srv.url + "/wiki/no-such-page-at-all/claims")
        assert status == 404


def test_a_wiki_without_stores_answers_an_empty_list_with_a_reason(tmp_path):
    wiki = tmp_path / "wiki"
    wiki.mkdir()
    (wiki / "notes.md").write_text(
        '---\ntitle: Notes\n---\n<!-- section {"id": "sec_001", "description": "d", "sources": ["a.pdf"]} -->\n'
        "## Notes\n\nThe model reaches 99.9 BLEU on every task ever measured.\n", encoding="utf-8")
    with LiveServer(wiki_settings(wiki), warm=False, token="claims-token") as srv:
        status, body, _ = request("GET", srv.url + "/wiki/notes/claims")
        assert status == 401  # the same bearer token as GET /wiki/{page}
        auth = {"Authorization": "Bearer claims-token"}
        status, body, _ = request("GET", srv.url + "/wiki/notes/claims", headers=auth)
        assert status == 200, body
        assert body["findings"] == [] and "no papers are ingested" in body["reason"]
        assert body["page"] == "notes.md"
        # a page that is itself named "claims" is still served as a page
        (wiki / "topics").mkdir()
        (wiki / "topics" / "claims.md").write_text("---\ntitle: Claims\n---\nA page about claims.\n",
                                                    encoding="utf-8")
        status, body, _ = request("GET", srv.url + "/wiki/topics/claims", headers=auth)
        assert status == 200 and body["page"] == "topics/claims.md" and "markdown" in body
