"""The Data Docs assets kept with the engine (streamjoin/data_docs.py) are the ones Great
Expectations' templates load, byte for byte where the templates pin a hash."""

import base64
import hashlib
import re
from pathlib import Path

import great_expectations
from streamjoin.data_docs import ASSETS, CDN, EXTRA, local_name, localize, remote_assets

TEMPLATES = Path(great_expectations.__file__).parent / "render" / "view" / "templates"


def template_assets() -> set[str]:
    return {url for template in TEMPLATES.rglob("*.j2") for url in remote_assets(template.read_text())
            if "greatexpectations.io" not in url and "great-expectations-web-assets" not in url}


def test_every_script_and_stylesheet_the_data_docs_templates_load_from_a_cdn_has_a_local_copy():
    assert template_assets()  # the templates were found and read
    assert template_assets() <= set(CDN), sorted(template_assets() - set(CDN))
    for package, version, path in [*CDN.values(), *EXTRA]:
        assert (ASSETS / local_name(package, version, path)).is_file(), (package, version, path)


def test_the_local_copies_match_the_integrity_hashes_the_templates_pin():
    pinned = {url: digest for template in TEMPLATES.rglob("*.j2")
              for url, digest in re.findall(r'src="(https?://[^"]+)" integrity="([^"]+)"', template.read_text())}
    assert len(pinned) >= 2  # popper and Bootstrap's script
    for url, digest in pinned.items():
        algorithm, expected = digest.split("-", 1)
        data = (ASSETS / local_name(*CDN[url])).read_bytes()
        assert base64.b64encode(hashlib.new(algorithm, data).digest()).decode() == expected, url


def test_a_built_site_points_every_page_at_its_local_copies_without_cross_origin_attributes(tmp_path):
    url = "https://stackpath.bootstrapcdn.com/bootstrap/4.3.1/js/bootstrap.min.js"
    (tmp_path / "validations" / "a").mkdir(parents=True)
    page = tmp_path / "validations" / "a" / "page.html"
    page.write_text(f'<script src="{url}" integrity="sha384-x" crossorigin="anonymous"></script>'
                    '<script src="https://cdn.jsdelivr.net/npm/vega@5"></script>'
                    '<a href="https://greatexpectations.io">GX</a>')
    assert localize(tmp_path) == []
    html = page.read_text()
    assert ('<script src="../../static/vendor/bootstrap@4.3.1/dist/js/bootstrap.min.js"></script>'
            '<script src="../../static/vendor/vega@5.33.1/build/vega.min.js"></script>') in html
    assert '<a href="https://greatexpectations.io">GX</a>' in html  # a link is not an asset
    assert (tmp_path / "static" / "vendor" / "vega@5.33.1" / "build" / "vega.min.js").is_file()
