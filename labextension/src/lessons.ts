/**
 * Opening the lessons: ask the server extension where they are under the
 * server root (its lessons/ folder, or the root itself when JupyterLab was
 * started in the lessons folder; then `dir` is ""), then open the first
 * lesson, or that folder in the file browser, or explain how to get them.
 */
import { showErrorMessage } from '@jupyterlab/apputils';
import { CommandRegistry } from '@lumino/commands';

import { ILessonsInfo, requestAPI } from './api';

export async function openLessons(commands: CommandRegistry): Promise<void> {
  const info = await requestAPI<ILessonsInfo>('lessons');
  if (info.first) {
    await commands.execute('docmanager:open', { path: info.first });
  } else if (info.dir !== null) {
    await commands.execute('filebrowser:go-to-path', { path: info.dir });
  } else {
    await showErrorMessage('tfteach lessons', info.message);
  }
}
