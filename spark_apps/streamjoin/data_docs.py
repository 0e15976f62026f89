"""Data Docs that open offline: the scripts, styles and fonts Great Expectations' pages load from
CDNs are kept in this package (`data_docs_assets/`) and every page of a built site points at its
own copy under `static/vendor/`.

Without it a Data Docs page opened where the CDNs cannot be reached (an operator's laptop
offline, a locked-down network, a file copied out of S3) shows unstyled text with no tables'
sorting and no charts (issue 21). The assets are the exact versions GX 1.24's templates name
(every CDN URL in great_expectations/render/view/templates; a test checks each page of a site),
taken from the npm registry (`python -m streamjoin.data_docs fetch` fetches them again, checking
each package's published integrity hash); their licences are in `data_docs_assets/NOTICE.md`.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import re
import shutil
import sys
import tarfile
import urllib.request
from pathlib import Path

ASSETS = Path(__file__).resolve().parent / "data_docs_assets"
VENDOR = "static/vendor"  # where a built site keeps them, relative to its root (beside GX's own static/)
REGISTRY = "https://registry.npmjs.org"

# the URL GX's templates load -> (npm package, version, file in the package); the local name is
# "<package>@<version>/<file>", so two versions of one file never collide
CDN = {
    "https://maxcdn.bootstrapcdn.com/bootstrap/4.3.1/css/bootstrap.min.css": ("bootstrap", "4.3.1", "dist/css/bootstrap.min.css"),
    "https://stackpath.bootstrapcdn.com/bootstrap/4.3.1/js/bootstrap.min.js": ("bootstrap", "4.3.1", "dist/js/bootstrap.min.js"),
    "https://unpkg.com/bootstrap-table@1.19.1/dist/bootstrap-table.min.js": ("bootstrap-table", "1.19.1", "dist/bootstrap-table.min.js"),
    "https://unpkg.com/bootstrap-table@1.19.1/dist/bootstrap-table.min.css": ("bootstrap-table", "1.19.1", "dist/bootstrap-table.min.css"),
    "https://unpkg.com/bootstrap-table@1.19.1/dist/extensions/filter-control/bootstrap-table-filter-control.min.js":
        ("bootstrap-table", "1.19.1", "dist/extensions/filter-control/bootstrap-table-filter-control.min.js"),
    "https://unpkg.com/bootstrap-table@1.19.0/dist/extensions/filter-control/bootstrap-table-filter-control.css":
        ("bootstrap-table", "1.19.0", "dist/extensions/filter-control/bootstrap-table-filter-control.css"),
    "https://unpkg.com/bootstrap-table@1.19.0/dist/extensions/filter-control/bootstrap-table-filter-control.min.css":
        ("bootstrap-table", "1.19.0", "dist/extensions/filter-control/bootstrap-table-filter-control.min.css"),
    "https://code.jquery.com/jquery-3.7.1.min.js": ("jquery", "3.7.1", "dist/jquery.min.js"),
    "https://cdnjs.cloudflare.com/ajax/libs/popper.js/1.12.9/umd/popper.min.js": ("popper.js", "1.12.9", "dist/umd/popper.min.js"),
    "https://cdnjs.cloudflare.com/ajax/libs/font-awesome/6.6.0/css/all.min.css": ("@fortawesome/fontawesome-free", "6.6.0", "css/all.min.css"),
    "https://cdnjs.cloudflare.com/ajax/libs/bootstrap-datepicker/1.9.0/js/bootstrap-datepicker.min.js":
        ("bootstrap-datepicker", "1.9.0", "dist/js/bootstrap-datepicker.min.js"),
    "https://cdnjs.cloudflare.com/ajax/libs/bootstrap-datepicker/1.9.0/css/bootstrap-datepicker.min.css":
        ("bootstrap-datepicker", "1.9.0", "dist/css/bootstrap-datepicker.min.css"),
    # "vega@5" etc. are ranges: the CDN serves the newest 5.x; pinned here to what was newest when fetched
    "https://cdn.jsdelivr.net/npm/vega@5": ("vega", "5.33.1", "build/vega.min.js"),
    "https://cdn.jsdelivr.net/npm/vega-lite@5": ("vega-lite", "5.23.0", "build/vega-lite.min.js"),
    "https://cdn.jsdelivr.net/npm/vega-embed@6": ("vega-embed", "6.29.0", "build/vega-embed.min.js"),
    "https://cdn.jsdelivr.net/npm/@forevolve/bootstrap-dark@1.1.0/dist/css/bootstrap-prefers-dark.css":
        ("@forevolve/bootstrap-dark", "1.1.0", "dist/css/bootstrap-prefers-dark.min.css"),  # the same, minified
}
# files a stylesheet above loads by relative URL (Font Awesome's ../webfonts/)
EXTRA = [("@fortawesome/fontawesome-free", "6.6.0", f"webfonts/{name}") for name in (
    "fa-brands-400.woff2", "fa-regular-400.woff2", "fa-solid-900.woff2", "fa-v4compatibility.woff2")]
# GX's logos come from its web site; its package ships the same picture, which GX copies to static/images/
LOGOS = re.compile(r"https://great-expectations-web-assets\.s3\.us-east-2\.amazonaws\.com/"
                   r"(?:logo-long\.png|full_logo_dark\.png)(?:\?[^\"' )]*)?")
TAG = re.compile(r"<(?:script|link)\b[^>]*>")


def local_name(package: str, version: str, path: str) -> str:
    return f"{package}@{version}/{path}"


def localize(site: Path) -> list[str]:
    """Point every page of the Data Docs site in `site` at local copies of its CDN assets (copied
    to `site/static/vendor/`). Returns the remote URLs pages still load (links excluded), which
    should be none."""
    site = Path(site)
    used, remote = set(), set()
    for page in sorted(site.rglob("*.html")):
        text = page.read_text(encoding="utf-8")
        up = "../" * (len(page.relative_to(site).parts) - 1)
        for url, (package, version, path) in CDN.items():
            if url in text:
                text = _replace_url(text, url, f"{up}{VENDOR}/{local_name(package, version, path)}")
                used.add(package)
        text = LOGOS.sub(f"{up}static/images/logo-long.png", text)
        text = TAG.sub(_without_cors, text)
        page.write_text(text, encoding="utf-8")
        remote.update(remote_assets(text))
    if used:
        shutil.copytree(ASSETS, site / VENDOR, dirs_exist_ok=True, ignore=shutil.ignore_patterns("NOTICE.md"))
    return sorted(remote)


def remote_assets(html: str) -> list[str]:
    """The remote URLs a page loads as scripts, styles or images (not plain links to other sites)."""
    loads = re.findall(r"""<(?:script|img)\b[^>]*\bsrc=["'](https?://[^"']+)["']""", html)
    loads += [url for tag, url in re.findall(r"""(<link\b[^>]*\bhref=["'](https?://[^"']+)["'][^>]*>)""", html)
              if "stylesheet" in tag or "icon" in tag]
    return loads


def _without_cors(tag: re.Match) -> str:
    """A local copy is no cross-origin fetch: `crossorigin` would make a file:// page refuse it,
    and with it the `integrity` check (the copy was checked against the registry's hash, and a test
    checks it against the template's)."""
    if f"{VENDOR}/" not in tag.group(0):
        return tag.group(0)
    return re.sub(r"""\s+(?:integrity|crossorigin)=(["'])[^"']*\1""", "", tag.group(0))


def _replace_url(text: str, url: str, local: str) -> str:
    # whole attribute values only: "vega@5" must not match inside "vega@5.x/..." or a longer URL
    return re.sub(r"""(["'])""" + re.escape(url) + r"""\1""", lambda m: f"{m.group(1)}{local}{m.group(1)}", text)


def fetch(into: Path = ASSETS) -> None:
    """Fetch every asset from the npm registry into `into` (a maintainer's step, when GX's
    templates change): each package's tarball, checked against its published integrity hash."""
    wanted: dict[tuple[str, str], list[str]] = {}
    for package, version, path in [*CDN.values(), *EXTRA]:
        wanted.setdefault((package, version), []).append(path)
    for (package, version), paths in sorted(wanted.items()):
        with urllib.request.urlopen(f"{REGISTRY}/{package}/{version}", timeout=60) as answer:
            dist = json.load(answer)["dist"]
        with urllib.request.urlopen(dist["tarball"], timeout=120) as answer:
            data = answer.read()
        algorithm, digest = dist["integrity"].split("-", 1)
        if base64.b64encode(hashlib.new(algorithm, data).digest()).decode() != digest:
            raise RuntimeError(f"{package}@{version}: the tarball does not match the registry's integrity hash")
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
            members = {m.name.split("/", 1)[1]: m for m in archive.getmembers() if "/" in m.name}
            for path in sorted(set(paths)):
                target = into / local_name(package, version, path)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(archive.extractfile(members[path]).read())
                print(f"{package}@{version}/{path}: {target.stat().st_size:,} bytes", flush=True)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] != ["fetch"]:
        print("usage: python -m streamjoin.data_docs fetch [DIR]", file=sys.stderr)
        return 2
    fetch(Path(argv[1]) if len(argv) > 1 else ASSETS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
