/**
 * The tfteach JupyterLab plugins: the cluster sidebar and the lessons
 * launcher. (The MIME renderers are registered from mime.ts.)
 */
import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { ILauncher } from '@jupyterlab/launcher';

import { tfteachIcon } from './icons';
import { openLessons } from './lessons';
import { ClusterListModel } from './sidebar/model';
import { ClusterPanel } from './sidebar/panel';
import { CommandIDs } from './tokens';

const PALETTE_CATEGORY = 'tfteach';

const clustersPlugin: JupyterFrontEndPlugin<void> = {
  id: 'tfteach:clusters',
  description: 'Left sidebar panel listing live tfteach LocalClusters.',
  autoStart: true,
  optional: [ICommandPalette, ILayoutRestorer],
  activate: (
    app: JupyterFrontEnd,
    palette: ICommandPalette | null,
    restorer: ILayoutRestorer | null
  ) => {
    const panel = new ClusterPanel(new ClusterListModel());
    panel.title.icon = tfteachIcon;
    panel.title.caption = 'tfteach clusters';
    app.shell.add(panel, 'left', { rank: 600 });
    restorer?.add(panel, panel.id);
    app.commands.addCommand(CommandIDs.showClusters, {
      label: 'Show tfteach clusters',
      execute: () => app.shell.activateById(panel.id)
    });
    palette?.addItem({ command: CommandIDs.showClusters, category: PALETTE_CATEGORY });
  }
};

const lessonsPlugin: JupyterFrontEndPlugin<void> = {
  id: 'tfteach:lessons',
  description: 'Launcher card and command that open the tfteach lessons.',
  autoStart: true,
  optional: [ILauncher, ICommandPalette],
  activate: (app: JupyterFrontEnd, launcher: ILauncher | null, palette: ICommandPalette | null) => {
    app.commands.addCommand(CommandIDs.openLessons, {
      label: args => (args.isLauncher ? 'tfteach lessons' : 'Open tfteach lessons'),
      caption: 'Open the tfteach lessons notebooks',
      icon: tfteachIcon,
      execute: () => openLessons(app.commands)
    });
    palette?.addItem({ command: CommandIDs.openLessons, category: PALETTE_CATEGORY });
    launcher?.add({
      command: CommandIDs.openLessons,
      category: 'tfteach',
      rank: 0,
      args: { isLauncher: true }
    });
  }
};

const plugins: JupyterFrontEndPlugin<void>[] = [clustersPlugin, lessonsPlugin];

export default plugins;
