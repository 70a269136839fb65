"""The extension's translations: from labextension/locale/<lang>.po to the Jed JSON that
JupyterLab's server loads for a package's own locale data.

JupyterLab (jupyterlab_server's translation_utils) finds packages with translations through
the ``jupyterlab.locale`` entry point group (``tfteach = "tfteach.notebook.lab_locale"``)
and reads ``<that module's folder>/locale/<ll_CC>/LC_MESSAGES/tfteach.json`` for the
learner's JupyterLab language (Settings > Language, offered once a language pack is
installed). The .po files are the one reviewable source per language; this script writes
the JSON from them (``python labextension/locale/build.py``, or ``npm run build:locale``),
``--check`` says whether the JSON is up to date, ``--template`` prints a .pot of every
string the TypeScript passes to ``trans.__`` / ``trans._n`` (read with :func:`extract`).

Placeholders are JupyterLab's ``%1``, ``%2``, …; in ``_n`` the count is ``%1``. JupyterLab
takes a plural entry only when it has at least two forms, so languages with one form
(Korean, Chinese) get an empty second one.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
PACKAGE_JSON = HERE.parent / "package.json"
OUT = HERE.parents[1] / "tfteach" / "notebook" / "lab_locale" / "locale"
# The same data for every language in one file the extension bundles: a view draws its labels
# in its lesson's language (the ``lang`` of its JSON), whatever JupyterLab's own language is.
BUNDLED = SRC / "locale.json"
DOMAIN = "tfteach"
# The lessons' languages and the JupyterLab locale each one is shipped for.
LOCALES = {"ko": "ko_KR", "zh": "zh_CN", "ru": "ru_RU"}

_LITERAL = r"""'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*\""""
_CALL = re.compile(r"\b_?trans\.(__|_n)\(")
_ARGS = {"__": re.compile(rf"\s*({_LITERAL})\s*[,)]"),
         "_n": re.compile(rf"\s*({_LITERAL})\s*,\s*({_LITERAL})\s*,")}
_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", "'": "'", '"': '"'}
PLACEHOLDER = re.compile(r"%\d+")


@dataclass
class Message:
    """One string to translate: its English (``msgid``, and ``plural`` for ``_n``), its
    translations (``msgstr``: one per plural form) and where the source uses it."""
    msgid: str
    plural: str | None = None
    msgstr: list[str] = field(default_factory=list)
    where: list[str] = field(default_factory=list)
    fuzzy: bool = False

    @property
    def translated(self) -> bool:
        return bool(self.msgstr) and all(self.msgstr) and not self.fuzzy


def _unquote(literal: str) -> str:
    body = literal[1:-1]
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), body)


def extract(src: Path = SRC) -> tuple[dict[str, Message], list[str]]:
    """The strings ``trans.__(...)`` / ``trans._n(...)`` calls in ``src`` translate, by
    msgid, and the calls whose English is not a string literal (``file:line``)."""
    found: dict[str, Message] = {}
    bad: list[str] = []
    for path in sorted(src.rglob("*.ts")):
        text = path.read_text(encoding="utf-8")
        for call in _CALL.finditer(text):
            where = f"{path.relative_to(src.parent)}:{text.count(chr(10), 0, call.start()) + 1}"
            args = _ARGS[call.group(1)].match(text, call.end())
            if args is None:
                bad.append(where)
                continue
            msgid = _unquote(args.group(1))
            plural = _unquote(args.group(2)) if call.group(1) == "_n" else None
            found.setdefault(msgid, Message(msgid, plural)).where.append(where)
    return found, bad


def _po_string(line: str) -> str:
    return json.loads(line) if line.startswith('"') else ""


def read_po(path: Path) -> tuple[dict[str, str], dict[str, Message]]:
    """A .po file's header fields and its messages by msgid (the header entry left out)."""
    messages: dict[str, Message] = {}
    header: dict[str, str] = {}
    for block in re.split(r"\n\s*\n", path.read_text(encoding="utf-8")):
        fields: dict[str, str] = {}
        key = None
        fuzzy = False
        for line in block.splitlines():
            line = line.strip()
            if line.startswith("#,") and "fuzzy" in line:
                fuzzy = True
            if not line or line.startswith("#"):
                continue
            if line.startswith('"') and key is not None:
                fields[key] += _po_string(line)
                continue
            key, _, rest = line.partition(" ")
            fields[key] = _po_string(rest.strip())
        if "msgid" not in fields:
            continue
        if fields["msgid"] == "":
            header = dict(h.split(": ", 1) for h in fields.get("msgstr", "").splitlines() if h)
            continue
        forms = sorted(k for k in fields if k.startswith("msgstr["))
        msgstr = [fields[k] for k in forms] if forms else [fields.get("msgstr", "")]
        messages[fields["msgid"]] = Message(fields["msgid"], fields.get("msgid_plural"),
                                            msgstr, fuzzy=fuzzy)
    return header, messages


def jed(header: dict[str, str], messages: dict[str, Message], locale: str,
        version: str) -> dict:
    """JupyterLab's Jed JSON for one locale: the metadata under "" and each translated
    message as a list of its forms (two at least for a plural)."""
    data: dict = {"": {"domain": DOMAIN, "language": locale.replace("_", "-"),
                       "plural_forms": header["Plural-Forms"], "version": version}}
    for msgid, message in sorted(messages.items()):
        if not message.translated:
            continue
        forms = list(message.msgstr)
        if message.plural is not None and len(forms) < 2:
            forms.append("")
        data[msgid] = forms
    return data


def outputs() -> dict[Path, str]:
    """Every JSON file this script writes, with its text."""
    version = json.loads(PACKAGE_JSON.read_text(encoding="utf-8"))["version"]
    out, bundled = {}, {}
    for lang, locale in LOCALES.items():
        header, messages = read_po(HERE / f"{lang}.po")
        bundled[lang] = jed(header, messages, locale, version)
        text = json.dumps(bundled[lang], ensure_ascii=False, indent=1)
        out[OUT / locale / "LC_MESSAGES" / f"{DOMAIN}.json"] = text + "\n"
    out[BUNDLED] = json.dumps(bundled, ensure_ascii=False, indent=1) + "\n"
    return out


def files(message: Message) -> list[str]:
    """The source files that use a message, each once."""
    return list(dict.fromkeys(where.rsplit(":", 1)[0] for where in message.where))


def template() -> str:
    """A .pot of every string the source translates."""
    def q(text: str) -> str:
        return json.dumps(text, ensure_ascii=False)

    lines = ['msgid ""', 'msgstr ""', q("Content-Type: text/plain; charset=UTF-8\n"), ""]
    for message in extract()[0].values():
        lines += [f"#: {' '.join(files(message))}", f"msgid {q(message.msgid)}"]
        if message.plural is None:
            lines.append('msgstr ""')
        else:
            lines += [f"msgid_plural {q(message.plural)}", 'msgstr[0] ""', 'msgstr[1] ""']
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the JSON is stale")
    parser.add_argument("--template", action="store_true", help="print a .pot")
    args = parser.parse_args(argv)
    if args.template:
        print(template())
        return 0
    stale = [p for p, text in outputs().items()
             if not p.exists() or p.read_text(encoding="utf-8") != text]
    if args.check:
        for path in stale:
            print(f"stale: {path} (run python labextension/locale/build.py)", file=sys.stderr)
        return 1 if stale else 0
    for path in stale:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(outputs()[path], encoding="utf-8")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
