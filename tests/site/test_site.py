"""Checks on the built site: pages, internal links, Colab links, self-hosted JavaScript."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from tools import notebook_meta
from tools.execution import report as timing_report
from tools.execution import runs

CONFIG = notebook_meta.load_config()
COLAB = re.compile(
    r"https://colab\.research\.google\.com/github/([^/]+/[^/]+)/blob/([^/]+)/(.+\.ipynb)"
)
NBSP = "\u00a0"  # what holds a unit to its number on the pages (tools/sphinx_ext/numbers.py)


class _Links(HTMLParser):
    """Collects href/src attributes, script sources and element ids of one page."""

    def __init__(self):
        super().__init__()
        self.links: list[str] = []
        self.scripts: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for name in ("href", "src"):
            if attrs.get(name):
                self.links.append(attrs[name])
        if tag == "script" and attrs.get("src"):
            self.scripts.append(attrs["src"])
        if attrs.get("id"):
            self.ids.add(attrs["id"])


def _parse(page: Path) -> _Links:
    parser = _Links()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser


def _pages(site: Path) -> list[Path]:
    """The site's pages (the theme's template fragments under _static/ are not pages)."""
    return sorted(p for p in site.rglob("*.html") if "_static" not in p.relative_to(site).parts)


def test_every_notebook_has_a_page(site):
    """Each notebook and lab solution found by the pipeline was rendered as a page."""
    missing = [
        str(nb.relative_to(runs.ROOT))
        for nb in runs.discover()
        if not (site / nb.relative_to(runs.ROOT)).with_suffix(".html").exists()
    ]
    assert not missing, f"notebooks without a page (add them to _toc.yml): {missing}"


@pytest.mark.parametrize("page", ["book/intro.html", "book/setup.html", "index.html"])
def test_prose_pages_exist(site, page):
    """The intro and the setup chapter are on the site."""
    assert (site / page).exists()


def test_no_broken_internal_link(site):
    """Every relative link and resource resolves to a file, and every #anchor to an element."""
    broken = []
    ids = {page: _parse(page).ids for page in _pages(site)}
    for page in _pages(site):
        for link in _parse(page).links:
            parts = urlsplit(link)
            if parts.scheme or link.startswith(("//", "mailto:", "javascript:")):
                continue
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                broken.append(f"{page.relative_to(site)} -> {link}")
            elif (
                parts.fragment
                and target.suffix == ".html"
                and parts.fragment not in ids.get(target, set())
            ):
                broken.append(f"{page.relative_to(site)} -> {link} (no such anchor)")
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_colab_links_name_existing_notebooks(site):
    """Every "Open in Colab" link points to a notebook that exists in the configured repository."""
    repo = CONFIG["repository"]
    owner_repo = repo["url"].rstrip("/").removeprefix("https://github.com/")
    found = []
    for page in _pages(site):
        for link in _parse(page).links:
            match = COLAB.match(link)
            if match:
                found.append((page, *match.groups()))
    assert found, "no Colab link on the site"
    for page, repository, branch, path in found:
        assert repository == owner_repo and branch == repo["branch"], (
            f"{page.name}: {repository}@{branch}"
        )
        assert (runs.ROOT / path).is_file(), f"{page.name} links to {path}, not in the repository"
    linked = {path for *_, path in found}
    for notebook in runs.discover():
        assert str(notebook.relative_to(runs.ROOT)) in linked, (
            f"{notebook.name} has no Colab button"
        )


def test_site_loads_no_third_party_script(site):
    """Every script the pages load is served by the site itself (no CDN)."""
    remote = [
        (p.name, s)
        for p in _pages(site)
        for s in _parse(p).scripts
        if urlsplit(s).scheme or s.startswith("//")
    ]
    assert not remote, f"scripts from other hosts: {remote}"


def test_widget_pages_carry_the_sites_own_widget_javascript(site):
    """A page with a saved widget loads require.js and the widget manager from _static."""
    page = site / "notebooks" / "00_check_your_setup.html"
    html = page.read_text(encoding="utf-8")
    assert "application/vnd.jupyter.widget-state+json" in html, "the widget state was not saved"
    scripts = [urlsplit(s).path for s in _parse(page).scripts]
    for name in ("require.js", "embed-amd.js"):
        local = [s for s in scripts if s.endswith(f"_static/{name}")]
        assert local, f"{name} is not loaded from the site's _static"
        assert (page.parent / local[0]).resolve().is_file()


@pytest.mark.parametrize(
    "page, least", [("labs/01_roofline_lab.html", 3), ("notebooks/00_check_your_setup.html", 1)]
)
def test_plots_appear_on_the_site(site, page, least):
    """The lab's sweeps and roofline are rendered as images on its page."""
    images = [link for link in _parse(site / page).links if "_images/" in link]
    assert len(images) >= least, f"{page}: {len(images)} plots, expected at least {least}"


@pytest.mark.parametrize("edition", ["", "zh_CN/"])
@pytest.mark.parametrize("page", sorted(Path("book").rglob("*.md")), ids=lambda p: p.name)
def test_the_site_shows_every_figure_the_library_computes(site, page, edition):
    """Every {fig} of a page, in both editions, is on the built page with the library's value
    (its words in Chinese in the Chinese edition), named by the role; no raw role is left."""
    from tools import editions
    from tools.checks import page_figures

    rel = page.as_posix()
    # a number's unit is held to it by a no-break space (tools/sphinx_ext/numbers.py)
    html = (
        (site / edition / rel).with_suffix(".html").read_text(encoding="utf-8").replace(NBSP, " ")
    )
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))
    assert "{fig}" not in text and "{claim}" not in text and "{verdict}" not in text
    pasted = re.findall(r'<span class="pasted-text" data-fig="([^"]*)">([^<]*)</span>', html)
    language = edition.rstrip("/") or "en"
    expected = [
        (
            f"{r.name}:{r.spec}" if r.spec else r.name,
            editions.glued_text(page_figures.resolve_ref(r), language),
        )
        for r in page_figures.parse(page.read_text(encoding="utf-8"), rel)
    ]
    # a translation may put a paragraph's figures in another order, so the pairs are compared
    # as a multiset in Chinese; in English they are in the page's order
    assert (pasted if not edition else sorted(pasted)) == (
        expected if not edition else sorted(expected)
    )


@pytest.mark.parametrize("notebook", runs.discover(), ids=lambda p: str(p.relative_to(runs.ROOT)))
def test_every_exercise_is_a_block_with_a_collapsed_executed_solution(site, notebook):
    """Each exercise of the notebook is a sphinx-exercise block on its page, labelled, and its
    solution a collapsed dropdown that holds the solution's executed code cells."""
    import json

    from tools.authoring import exercises

    nb = json.loads(notebook.read_text(encoding="utf-8"))
    groups = exercises.exercises(nb)
    page = (site / notebook.relative_to(runs.ROOT)).with_suffix(".html").read_text(encoding="utf-8")
    assert page.count('class="exercise admonition"') == len(groups)
    assert page.count('class="solution dropdown admonition"') == len(groups)
    ids = _parse((site / notebook.relative_to(runs.ROOT)).with_suffix(".html")).ids
    assert {g.label for g in groups} <= ids
    # the solution's code ran: its cells are on the page with their outputs, inside the dropdown
    for block in re.findall(
        r'class="solution dropdown admonition".*?(?=class="exercise admonition"|$)', page, re.S
    ):
        assert "tag_exercise-solution" in block


EN_DASH_FLAG = re.compile(
    r"[\u2013\u2014][a-z][a-z0-9-]+"
)  # –medvram: a flag whose -- became a dash


def test_no_flag_lost_its_double_hyphen(site):
    """Sphinx's smart quotes turn `--flag` into `–flag`, which no shell accepts; none is left."""
    found = {}
    for page in _pages(site):
        text = re.sub(r"<[^>]+>", "", page.read_text(encoding="utf-8"))
        hits = EN_DASH_FLAG.findall(text)
        if hits:
            found[str(page.relative_to(site))] = sorted(set(hits))[:5]
    assert found == {}


def test_the_flag_check_can_fail():
    assert EN_DASH_FLAG.findall("python launch.py \u2013medvram") == ["\u2013medvram"]
    assert EN_DASH_FLAG.findall("pages 3\u20135 and 2024\u20132025") == []


@pytest.mark.parametrize("notebook", runs.discover(), ids=lambda p: str(p.relative_to(runs.ROOT)))
def test_a_page_shows_one_parameters_cell_with_the_values_it_ran_with(site, notebook):
    """papermill's injected cell is hidden; the notebook's own cell names the values used."""
    page = (site / notebook.relative_to(runs.ROOT)).with_suffix(".html").read_text(encoding="utf-8")
    assert "tag_injected-parameters" not in page
    assert page.count("tag_parameters") == 1 and "this page was built with" in page


@pytest.mark.parametrize(
    "lab", [p for p in runs.discover() if p.parent.name == "labs"], ids=lambda p: p.name
)
def test_a_lab_page_opens_the_exercise_before_the_solution(site, lab):
    """The page is the solution; the learner's copy is offered first, in Colab and to download."""
    page = (site / "labs" / lab.with_suffix(".html").name).read_text(encoding="utf-8")
    exercise = notebook_meta.colab_url(CONFIG, f"labs/learner/{lab.name}")
    assert exercise in page, "no Colab launch of the exercise copy"
    download = re.search(
        r'class="reference download internal" download="" href="([^"]*'
        + re.escape(lab.name)
        + ')"',
        page,
    )
    assert download, "no download link of the exercise copy"
    assert (site / "labs" / download.group(1)).resolve().exists()
    assert page.index(exercise) < page.index('class="cell docutils container"')


def test_machine_times_come_from_the_timing_report(site):
    """Each notebook page states its machine time apart from its reading time, and the
    instructor guide's agendas show the same figures: both read the build's timing report."""
    run = runs.RunConfig.from_env(mode="quick")
    times = timing_report.machine_times(run)
    assert set(times) == {str(p.relative_to(runs.ROOT)) for p in runs.discover()}
    for notebook, shown in times.items():
        page = (site / notebook).with_suffix(".html").read_text(encoding="utf-8").replace(NBSP, " ")
        assert re.search(
            r"Machine time:</strong> " + re.escape(shown) + r" to run every cell", page
        )
    guide = re.sub(
        r"<[^>]+>",
        "",
        (site / "book" / "workshop" / "instructor_guide.html").read_text(encoding="utf-8"),
    ).replace(NBSP, " ")
    assert "{{" not in guide
    rows = re.findall(r"((?:notebooks|labs)/\w+\.ipynb)\s*\d+ min\s*(\d+ s)", guide)
    source = (runs.ROOT / "book" / "workshop" / "instructor_guide.md").read_text(encoding="utf-8")
    agenda_rows = re.findall(r"\{\{ time_(?:nb|lab)_\w+ \}\}", source)
    assert len(rows) == len(agenda_rows) > 0  # every agenda row that names a notebook
    assert [(nb, t) for nb, t in rows if times[nb] != t] == []
    assert timing_report.time_key("notebooks/02_will_it_fit.ipynb") == "time_nb_02_will_it_fit"


def test_backend_pages_say_where_the_course_has_run(site):
    """Chapter 4 states each GPU backend's status from the stored measured figures; a backend
    nothing was measured on reads 'not yet verified on this hardware' (ROCm and MPS, and CUDA
    until the GPU check's figures are committed); chapter 7 says a multi-GPU ring is untested."""
    from gpulab.reference import measured

    text = re.sub(
        r"\s+", " ", re.sub(r"<[^>]+>", "", (site / "book" / "04_backends.html").read_text())
    )
    for label, kind in (("NVIDIA (CUDA)", "cuda"), ("AMD (ROCm)", "rocm"), ("Apple (MPS)", "mps")):
        assert f"{label}, {measured.backend_status(kind)}" in text, label
    assert measured.backend_status("rocm") == measured.NOT_VERIFIED  # no ROCm machine has run it
    chapter7 = re.sub(
        r"\s+", " ", re.sub(r"<[^>]+>", "", (site / "book" / "07_beyond_one_gpu.html").read_text())
    )
    assert "several GPUs is not yet verified on this hardware" in chapter7


class _Images(HTMLParser):
    """Collects the alt text of every image in a page's cell outputs."""

    def __init__(self):
        super().__init__()
        self.depth, self.alts = 0, []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "div" and "cell_output" in (attrs.get("class") or ""):
            self.depth += 1
        elif tag == "div" and self.depth:
            self.depth += 1
        if tag == "img" and self.depth:
            self.alts.append(attrs.get("alt") or "")

    def handle_endtag(self, tag):
        if tag == "div" and self.depth:
            self.depth -= 1


def test_every_figure_on_the_site_says_what_it_shows(site):
    """Each image a notebook cell output shows carries the alt text gpulab.ui.alt_text read off
    the figure: a kind of chart and its axes, never empty and never a file name."""
    figures = 0
    for page in _pages(site):
        parser = _Images()
        parser.feed(page.read_text(encoding="utf-8"))
        for alt in parser.alts:
            figures += 1
            where = page.relative_to(site).as_posix()
            assert alt and not alt.endswith(".png"), f"{where}: an image without alt text"
            assert "axis" in alt or alt.startswith("An empty figure"), f"{where}: {alt[:80]}"
    assert figures >= 10  # the check can fail: the notebooks show some twenty plots
