/**
 * The tfteach JupyterLab plugins: the cluster sidebar and the lessons
 * launcher, one card per lesson language. Their labels go through
 * JupyterLab's translator when there is one. (The MIME renderers are
 * registered from mime.ts.)
 */
import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { ILauncher } from '@jupyterlab/launcher';
import { ITranslator } from '@jupyterlab/translation';

import { tfteachIcon } from './icons';
import { ILessonLanguage, LESSON_LANGUAGES, openLessons } from './lessons';
import { ClusterListModel } from './sidebar/model';
import { ClusterPanel } from './sidebar/panel';
import { CommandIDs } from './tokens';
import { loadTrans, Trans } from './translation';

const PALETTE_CATEGORY = 'tfteach';

const clustersPlugin: JupyterFrontEndPlugin<void> = {
  id: 'tfteach:clusters',
  description: 'Left sidebar panel listing live tfteach LocalClusters.',
  autoStart: true,
  optional: [ICommandPalette, ILayoutRestorer, ITranslator],
  activate: (
    app: JupyterFrontEnd,
    palette: ICommandPalette | null,
    restorer: ILayoutRestorer | null,
    translator: ITranslator | null
  ) => {
    const trans = loadTrans(translator);
    const panel = new ClusterPanel(new ClusterListModel(trans), trans);
    panel.title.icon = tfteachIcon;
    panel.title.caption = trans.__('tfteach clusters');
    app.shell.add(panel, 'left', { rank: 600 });
    restorer?.add(panel, panel.id);
    app.commands.addCommand(CommandIDs.showClusters, {
      label: trans.__('Show tfteach clusters'),
      execute: () => app.shell.activateById(panel.id)
    });
    palette?.addItem({ command: CommandIDs.showClusters, category: PALETTE_CATEGORY });
  }
};

/** The language a command call asks for (English when it names none we have). */
function lessonLanguage(args: { lang?: unknown }): ILessonLanguage {
  return LESSON_LANGUAGES.find(l => l.code === args.lang) ?? LESSON_LANGUAGES[0];
}

/** The lessons command's label: the launcher card's or the palette's, per language. */
function lessonsLabel(trans: Trans, lang: ILessonLanguage, isLauncher: boolean): string {
  if (lang.code === 'en') {
    return isLauncher ? trans.__('tfteach lessons') : trans.__('Open tfteach lessons');
  }
  return isLauncher
    ? trans.__('tfteach lessons (%1)', lang.nativeName)
    : trans.__('Open tfteach lessons in %1', lang.nativeName);
}

/** What the lessons command does, as a launcher card's tooltip. */
function lessonsCaption(trans: Trans, lang: ILessonLanguage): string {
  return lang.code === 'en'
    ? trans.__('Open the tfteach lessons notebooks')
    : trans.__('Open the tfteach lessons notebooks in %1', lang.nativeName);
}

const lessonsPlugin: JupyterFrontEndPlugin<void> = {
  id: 'tfteach:lessons',
  description: 'Launcher cards and commands that open the tfteach lessons, one per language.',
  autoStart: true,
  optional: [ILauncher, ICommandPalette, ITranslator],
  activate: (
    app: JupyterFrontEnd,
    launcher: ILauncher | null,
    palette: ICommandPalette | null,
    translator: ITranslator | null
  ) => {
    const trans = loadTrans(translator);
    app.commands.addCommand(CommandIDs.openLessons, {
      label: args => lessonsLabel(trans, lessonLanguage(args), !!args.isLauncher),
      caption: args => lessonsCaption(trans, lessonLanguage(args)),
      icon: tfteachIcon,
      execute: args => openLessons(app.commands, trans, lessonLanguage(args).code)
    });
    LESSON_LANGUAGES.forEach((lang, rank) => {
      const args = { lang: lang.code };
      palette?.addItem({ command: CommandIDs.openLessons, category: PALETTE_CATEGORY, args });
      launcher?.add({
        command: CommandIDs.openLessons,
        category: 'tfteach',
        rank,
        args: { ...args, isLauncher: true }
      });
    });
  }
};

const plugins: JupyterFrontEndPlugin<void>[] = [clustersPlugin, lessonsPlugin];

export default plugins;
