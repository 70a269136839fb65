/**
 * The extension's words in a lesson's own language: a view's JSON names its
 * lesson's language (`lang`: `ko`, `zh`, `ru`), which JupyterLab's language
 * setting does not know, so a Korean lesson in an English JupyterLab would
 * otherwise show English labels. `lessonTrans(lang)` is a translation bundle
 * over the same catalogs JupyterLab loads (locale.json, written by
 * `python locale/build.py` from ../locale/<lang>.po): gettext lookup, the
 * language's plural rule, `%1`-style placeholders, English where a message
 * has no translation. No state but the parsed catalogs.
 */
import BUNDLED from './locale.json';

/** What a label needs from a bundle (a subset of JupyterLab's TranslationBundle). */
export interface ILessonTrans {
  __(msgid: string, ...args: unknown[]): string;
  _n(msgid: string, plural: string, n: number, ...args: unknown[]): string;
  _p(context: string, msgid: string, ...args: unknown[]): string;
  _np(context: string, msgid: string, plural: string, n: number, ...args: unknown[]): string;
  gettext(msgid: string, ...args: unknown[]): string;
  ngettext(msgid: string, plural: string, n: number, ...args: unknown[]): string;
  pgettext(context: string, msgid: string, ...args: unknown[]): string;
  npgettext(context: string, msgid: string, plural: string, n: number, ...args: unknown[]): string;
  dcnpgettext(
    domain: string,
    context: string,
    msgid: string,
    plural: string,
    n: number,
    ...args: unknown[]
  ): string;
}

type Catalog = Record<string, string[] | { plural_forms: string }>;

/** `%1`, `%2`, … replaced by the arguments. */
function fill(text: string, args: unknown[]): string {
  return text.replace(/%(\d+)/g, (whole, i) =>
    Number(i) <= args.length ? String(args[Number(i) - 1]) : whole
  );
}

/** The plural rule of a `Plural-Forms` header (`nplurals=3; plural=(n%10==1 ...)`). */
function pluralRule(header: string): (n: number) => number {
  const expression = /plural=([^;]+)/.exec(header)?.[1] ?? '0';
  if (!/^[\sn0-9%=!<>&|?:()]+$/.test(expression)) {
    return () => 0;
  }
  const rule = new Function('n', `return Number(${expression});`) as (n: number) => number;
  return rule;
}

/** The bundle of a lesson language, or null when the extension ships none for it. */
export function lessonTrans(lang: string | undefined): ILessonTrans | null {
  const catalog = lang
    ? (BUNDLED as unknown as Record<string, Catalog | undefined>)[lang]
    : undefined;
  if (!catalog) {
    return null;
  }
  const rule = pluralRule((catalog[''] as { plural_forms: string }).plural_forms);
  const lookup = (msgid: string, plural: string | null, n: number): string => {
    const forms = catalog[msgid];
    const english = plural !== null && n !== 1 ? plural : msgid;
    if (!Array.isArray(forms)) {
      return english;
    }
    return (plural === null ? forms[0] : forms[rule(n)]) || english;
  };
  const single = (msgid: string, ...args: unknown[]) => fill(lookup(msgid, null, 1), args);
  const plural = (msgid: string, many: string, n: number, ...args: unknown[]) =>
    fill(lookup(msgid, many, n), [n, ...args]);
  return {
    __: single,
    gettext: single,
    _n: plural,
    ngettext: plural,
    _p: (_context, msgid, ...args) => single(msgid, ...args),
    pgettext: (_context, msgid, ...args) => single(msgid, ...args),
    _np: (_context, msgid, many, n, ...args) => plural(msgid, many, n, ...args),
    npgettext: (_context, msgid, many, n, ...args) => plural(msgid, many, n, ...args),
    dcnpgettext: (_domain, _context, msgid, many, n, ...args) => plural(msgid, many, n, ...args)
  };
}

/** The lesson language a view's JSON names (`lang`), if any. */
export function viewLang(data: unknown): string | undefined {
  const lang = (data as { lang?: unknown } | null | undefined)?.lang;
  return typeof lang === 'string' ? lang : undefined;
}
