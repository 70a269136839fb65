/**
 * The MIME renderer extensions: placed graphs and step timelines.
 */
import { IRenderMime } from '@jupyterlab/rendermime-interfaces';

import { PLACEMENT_MIME } from './placement/model';
import { PlacementView } from './placement/widget';
import { TIMELINE_MIME } from './timeline/model';
import { TimelineView } from './timeline/widget';

const placementExtension: IRenderMime.IExtension = {
  id: 'tfteach:placement-renderer',
  description: 'Interactive device placement graphs from tfteach.',
  rendererFactory: {
    safe: true,
    mimeTypes: [PLACEMENT_MIME],
    createRenderer: options => new PlacementView(options)
  },
  rank: 0,
  dataType: 'json'
};

const timelineExtension: IRenderMime.IExtension = {
  id: 'tfteach:timeline-renderer',
  description: 'Per-device step timelines from tfteach.',
  rendererFactory: {
    safe: true,
    mimeTypes: [TIMELINE_MIME],
    createRenderer: options => new TimelineView(options)
  },
  rank: 0,
  dataType: 'json'
};

const extensions: IRenderMime.IExtension[] = [placementExtension, timelineExtension];

export default extensions;
