"""A plain-text PDF (A4, Helvetica, wrapped lines, as many pages as needed) of a filled patient form: what the clinical
record keeps as the form's document. Laid out by fpdf2."""

from fpdf import FPDF

MARGIN_MM = 20
FONT_SIZE = 10
TITLE_SIZE = 14
LINE_MM = 5


def _latin(text: str) -> str:
    # The standard Helvetica font encodes Latin-1 only; anything else becomes "?" rather than failing the form.
    return text.encode("latin-1", "replace").decode("latin-1")


def render_pdf(title: str, lines: list[str]) -> bytes:
    """The PDF's bytes: the title in bold, then each line wrapped to the page width."""
    document = FPDF(format="A4")
    document.set_margins(MARGIN_MM, MARGIN_MM, MARGIN_MM)
    document.set_auto_page_break(auto=True, margin=MARGIN_MM)
    document.set_title(_latin(title))
    document.add_page()
    document.set_font("Helvetica", style="B", size=TITLE_SIZE)
    document.multi_cell(0, LINE_MM * 1.5, _latin(title), new_x="LMARGIN", new_y="NEXT")
    document.ln(LINE_MM)
    document.set_font("Helvetica", size=FONT_SIZE)
    for line in lines:
        document.multi_cell(0, LINE_MM, _latin(line) or " ", new_x="LMARGIN", new_y="NEXT")
    return bytes(document.output())
