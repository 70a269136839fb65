/**
 * The extension's words in the learner's language, through JupyterLab's own
 * translation system: every label goes through a bundle of the `tfteach`
 * domain (`trans.__` with the English text, `trans._n` with its singular,
 * plural and count). The
 * plugins get JupyterLab's ITranslator, the MIME renderers the translator the
 * rendermime registry hands them; without one the bundle is English.
 *
 * The translations live in ../locale/<lang>.po; `npm run build:locale` turns
 * them into the Jed JSON that the Python package ships for JupyterLab's
 * `jupyterlab.locale` entry point. Each msgid must be a string literal at the
 * call (the tests read them from the source).
 */
import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { nullTranslator } from '@jupyterlab/translation';

import { lessonTrans } from './lessonTrans';

export { viewLang } from './lessonTrans';

/** The translation domain: the name of the Jed JSON the server loads. */
export const DOMAIN = 'tfteach';

/** A bundle of translated strings (gettext-style, placeholders `%1`, `%2`). */
export type Trans = IRenderMime.TranslationBundle;

/**
 * The tfteach bundle of `translator` (English without one) or, when `lang`
 * names a language of the lessons (`ko`, `zh`, `ru`: the `lang` a view's JSON
 * carries), that language's bundle, whatever JupyterLab's own language is: a
 * Korean lesson's views speak Korean in an English JupyterLab.
 */
export function loadTrans(translator?: IRenderMime.ITranslator | null, lang?: string): Trans {
  return (lessonTrans(lang) as Trans | null) ?? (translator ?? nullTranslator).load(DOMAIN);
}
