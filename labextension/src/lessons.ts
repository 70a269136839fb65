/**
 * Opening the lessons in one of their languages: ask the server extension
 * where they are under the server root (its lessons/ folder, or the root
 * itself when JupyterLab was started in the lessons folder; then `dir` is "";
 * a translation is in the `<lang>/` folder below), then open the first
 * lesson, or that folder in the file browser, or explain how to get them.
 */
import { showErrorMessage } from '@jupyterlab/apputils';
import { CommandRegistry } from '@lumino/commands';

import { ILessonsInfo, requestAPI } from './api';
import { Trans } from './translation';

/** A language the lessons are written in: its code and its name in itself. */
export interface ILessonLanguage {
  code: string;
  nativeName: string;
}

/** The lessons' languages, English first (the default). */
export const LESSON_LANGUAGES: ReadonlyArray<ILessonLanguage> = [
  { code: 'en', nativeName: 'English' },
  { code: 'ko', nativeName: '한국어' },
  { code: 'zh', nativeName: '中文' },
  { code: 'ru', nativeName: 'Русский' }
];

/** The API path of the lessons in `lang` (English: no query, as before). */
export function lessonsPath(lang: string): string {
  return lang === 'en' ? 'lessons' : `lessons?lang=${encodeURIComponent(lang)}`;
}

export async function openLessons(
  commands: CommandRegistry,
  trans: Trans,
  lang = 'en'
): Promise<void> {
  const info = await requestAPI<ILessonsInfo>(lessonsPath(lang));
  if (info.first) {
    await commands.execute('docmanager:open', { path: info.first });
  } else if (info.dir !== null) {
    await commands.execute('filebrowser:go-to-path', { path: info.dir });
  } else {
    await showErrorMessage(trans.__('tfteach lessons'), info.message);
  }
}
